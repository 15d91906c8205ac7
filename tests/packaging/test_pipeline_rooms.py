"""The rooms of ``pipelines/`` import only rooms below them (any import, at module level or in a function): the
pipelines floor < ``processes/`` < ``serving/`` < ``cli/``; ``diagrams/`` uses only the pipelines floor. A room
above is reached by a process it starts (``python -m``), never imported."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: Each room, and the rooms it may import (besides itself).
MAY_IMPORT = {
    "floor": set(),
    "diagrams": {"floor"},
    "processes": {"floor"},
    "serving": {"floor", "processes", "diagrams"},
    "cli": {"floor", "processes", "serving", "diagrams"},
}


def _room(module: str) -> str:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[2] in MAY_IMPORT else "floor"


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("adaptive_retrieval.pipelines"):
            if node.module == "adaptive_retrieval.pipelines":  # from adaptive_retrieval.pipelines import x
                found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
            else:
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("adaptive_retrieval.pipelines")]
    return found


def test_every_room_imports_only_rooms_below_it() -> None:
    upward = []
    for path in sorted((ROOT / "pipelines").rglob("*.py")):
        module = "adaptive_retrieval." + ".".join(path.relative_to(ROOT).with_suffix("").parts)
        room = _room(module)
        for line, imported in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            target = _room(imported)
            if target != room and target not in MAY_IMPORT[room]:
                upward.append(f"{path.relative_to(ROOT)}:{line} ({room}) imports {imported} ({target})")
    assert not upward, "\n".join(upward)


def test_the_hayhooks_folder_holds_only_wrappers() -> None:
    wrappers = ROOT / "pipelines" / "serving" / "wrappers"
    entries = sorted(p.name for p in wrappers.iterdir() if p.name != "__pycache__")
    assert entries == ["diagrams", "indexing", "query"]
    assert all((wrappers / name / "pipeline_wrapper.py").is_file() for name in entries)


def test_the_pipelines_public_entry_points_are_their_modules_names() -> None:
    """``from adaptive_retrieval.pipelines import run_query`` (and the rest of ``__all__``) is the function its module
    defines; importing the package loads none of them (nor Haystack) until one is asked for."""
    import importlib
    import subprocess
    import sys

    package = importlib.import_module("adaptive_retrieval.pipelines")
    for module, names in package._import_structure.items():
        defined = importlib.import_module(f"adaptive_retrieval.pipelines.{module}")
        assert all(getattr(package, name) is getattr(defined, name) for name in names), module
    code = "import sys, adaptive_retrieval.pipelines\nprint('haystack' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "False", done.stdout
