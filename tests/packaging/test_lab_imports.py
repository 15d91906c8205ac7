"""The lab (``scripts/lab/``) imports the package only by its public faces: ``adaptive_retrieval.components`` and
its families, ``adaptive_retrieval.pipelines`` and its rooms, each name one that face exports (``__all__``). The
one exception is a function named like its own module (``text.stopwords.stopwords``, ``cli.main.main``): once the
module loads, the package attribute of that name is the module, so the face cannot export the function."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAB = ROOT / "scripts" / "lab"
FACES = (
    "adaptive_retrieval.components",
    *(f"adaptive_retrieval.components.{p.parent.name}" for p in sorted((ROOT / "components").glob("*/__init__.py"))),
    "adaptive_retrieval.pipelines",
    *(f"adaptive_retrieval.pipelines.{room}" for room in ("serving", "processes", "cli", "diagrams")),
)


def _package_imports(path: Path) -> list[tuple[int, str, list[str]]]:
    """``(line, module, names)`` of every import of the package in ``path`` (module level or in a function)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("adaptive_retrieval"):
            found.append((node.lineno, node.module or "", [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name, []) for a in node.names if a.name.startswith("adaptive_retrieval")]
    return found


def _named_like_its_module(module: str, names: list[str]) -> bool:
    return names == [module.rsplit(".", 1)[-1]] and not names[0].startswith("_")


class TestLabImports:
    def test_the_lab_imports_only_public_faces_and_their_exports(self) -> None:
        wrong = []
        for path in sorted(LAB.rglob("*.py")):
            for line, module, names in _package_imports(path):
                where = f"{path.relative_to(ROOT)}:{line}"
                if module not in FACES:
                    if not _named_like_its_module(module, names):
                        wrong.append(f"{where} imports {module} (not a public face)")
                    continue
                exported = importlib.import_module(module).__dict__.get("__all__", [])
                wrong += [
                    f"{where} imports {n} from {module}, which does not export it" for n in names if n not in exported
                ]
        assert not wrong, "\n".join(wrong)

    def test_the_faces_load_nothing_until_a_name_is_asked_for(self) -> None:
        code = (
            f"import sys\nfor face in {FACES!r}:\n    __import__(face)\n"
            f"print(sorted(m for m in sys.modules if m.startswith('adaptive_retrieval') and m not in {FACES!r}), "
            "'haystack' in sys.modules)"
        )
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
        assert done.stdout.strip() == "['adaptive_retrieval', 'adaptive_retrieval.components.lazy_exports'] False"

    def test_each_export_is_its_modules_name_and_no_module_shadows_one(self) -> None:
        for face in FACES:
            package = importlib.import_module(face)
            for module, names in getattr(package, "_import_structure", {}).items():
                defined = importlib.import_module(f"{face}.{module}")
                assert all(getattr(package, name) is getattr(defined, name) for name in names), (face, module)
            modules = {p.stem for p in Path(package.__path__[0]).iterdir() if p.suffix == ".py" or p.is_dir()}
            assert not modules & set(getattr(package, "__all__", [])), face
