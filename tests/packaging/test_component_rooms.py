"""The floors of ``components/`` import only floors below them (any import, at module level or in a function): the
ground floor (``components/*.py``: settings, errors, locations, channel names …) imports no family; ``models/``,
``text/``, ``fusion/`` and ``stores/`` only the ground floor (so ``models/`` never imports ``stores/``); the
families that build on them (routing, ranking, selection, gating, retrieval, indexing) only those below, never
each other. Inside ``stores/`` the rooms stack the same way: its ground floor (errors, disk space, serialisation)
< ``caches/`` < ``graph/`` and ``documents/``, which do not import each other. A family's ``__init__.py`` is its
public face (lazy exports of its own classes) and is not a floor."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COMPONENTS = ROOT / "components"
#: The families on each floor, bottom up; a family may import the floors below its own.
FLOORS = (
    ("ground",),
    ("models", "text", "fusion", "stores"),
    ("routing", "ranking", "selection", "gating", "retrieval", "indexing"),
)
#: The rooms of ``stores/`` and the rooms each may import (besides itself and the floors below the family).
STORES_MAY_IMPORT = {
    "stores": set(),
    "stores.caches": {"stores"},
    "stores.graph": {"stores", "stores.caches"},
    "stores.documents": {"stores", "stores.caches"},
}
FAMILIES = {name for floor in FLOORS[1:] for name in floor}


def _room(module: str) -> str:
    """``ground``, a family, or ``stores.<room>`` for ``adaptive_retrieval.components...`` module paths."""
    parts = module.split(".")[2:]
    if not parts or parts[0] not in FAMILIES:
        return "ground"
    if parts[0] == "stores" and len(parts) > 1 and f"stores.{parts[1]}" in STORES_MAY_IMPORT:
        return f"stores.{parts[1]}"
    return parts[0]


def _floor(room: str) -> int:
    family = room.split(".")[0]
    return next(i for i, floor in enumerate(FLOORS) if family in floor)


def _may_import(room: str, target: str) -> bool:
    if target == room:
        return True
    if target.split(".")[0] == room.split(".")[0]:  # two rooms of stores/
        return target in STORES_MAY_IMPORT[room]
    return _floor(target) < _floor(room)


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("adaptive_retrieval.components"):
            if node.module == "adaptive_retrieval.components":  # from adaptive_retrieval.components import settings
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("adaptive_retrieval.components")]
    return found


def test_every_family_directory_is_on_a_floor() -> None:
    families = {p.name for p in COMPONENTS.iterdir() if (p / "__init__.py").is_file()}
    assert families == FAMILIES
    rooms = {f"stores.{p.name}" for p in (COMPONENTS / "stores").iterdir() if (p / "__init__.py").is_file()}
    assert rooms | {"stores"} == set(STORES_MAY_IMPORT)


def test_every_floor_imports_only_floors_below_it() -> None:
    upward = []
    for path in sorted(COMPONENTS.rglob("*.py")):
        if path.name == "__init__.py":
            continue
        module = "adaptive_retrieval." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        room = _room(module)
        for line, imported in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            target = _room(imported)
            if not _may_import(room, target):
                upward.append(f"{path.relative_to(ROOT)}:{line} ({room}) imports {imported} ({target})")
    assert not upward, "\n".join(upward)


def test_the_rule_catches_an_upward_import() -> None:
    assert not _may_import("models", "stores")
    assert not _may_import("stores.graph", "stores.documents")
    assert not _may_import("stores.caches", "stores.graph")
    assert not _may_import("ground", "stores")
    assert not _may_import("retrieval", "indexing")
    assert _may_import("retrieval", "stores.documents") and _may_import("stores.documents", "stores.caches")
