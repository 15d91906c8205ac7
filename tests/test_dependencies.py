"""Dependencies declared exactly as imported: every third-party module that the shipped package (``components/``,
``pipelines/``) imports belongs to a declared runtime dependency, every declared runtime dependency is imported
(or its line in pyproject.toml says why it is needed although nothing imports it), and what only the scripts need
is an extra, not a runtime dependency.

The imports are read with ``ast`` (lazy imports inside functions included) and mapped to distributions through
``importlib.metadata`` (the files each installed distribution provides, so namespace packages such as
``haystack_integrations`` map to the integration that provides the submodule).
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable
from functools import cache
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
PACKAGE_FOLDERS = ("components", "pipelines")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(requirements: Iterable[str]) -> set[str]:
    return {_norm(Requirement(r).name) for r in requirements}


def imported_modules(folders: Iterable[Path]) -> dict[str, set[str]]:
    """``{dotted module: {files importing it}}`` for absolute imports of third-party modules under ``folders``."""
    found: dict[str, set[str]] = {}
    for folder in folders:
        for path in folder.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    modules = [node.module]
                else:
                    continue
                for module in modules:
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top in {"__future__", "adaptive_retrieval"}:
                        continue
                    found.setdefault(module, set()).add(str(path.relative_to(ROOT)))
    return found


@cache
def _top_level() -> dict[str, list[str]]:
    return packages_distributions()


@cache
def _files(dist: str) -> frozenset[str]:
    return frozenset(str(f) for f in distribution(dist).files or ())


def distributions_of(module: str) -> set[str]:
    """The installed distributions an import of ``module`` loads: those providing the module itself or one of
    its parent packages' ``__init__.py`` (a namespace package such as ``haystack_integrations`` has none)."""
    parts = module.split(".")
    candidates = _top_level().get(parts[0], [])
    if len(set(candidates)) == 1:
        return {_norm(candidates[0])}
    used = set()
    for dist in set(candidates):
        files = _files(dist)
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if f"{prefix}/__init__.py" in files or f"{prefix}.py" in files:
                used.add(_norm(dist))
        whole = "/".join(parts) + "/"
        if any(f.startswith(whole) for f in files):
            used.add(_norm(dist))
    return used


def test_the_package_imports_only_declared_runtime_dependencies() -> None:
    project = _pyproject()
    runtime = _names(project["dependencies"])
    gpu = _names(project["optional-dependencies"]["gpu"])
    missing = {}
    for module, where in imported_modules(ROOT / f for f in PACKAGE_FOLDERS).items():
        dists = distributions_of(module) or {_norm(module.split(".")[0])}  # not installed here: by its name
        # The GPU extra's modules (torchao) are imported only on the GPU path.
        if not dists & (runtime | gpu):
            missing[module] = (sorted(dists), sorted(where))
    assert not missing, f"imported but not declared in [project] dependencies: {missing}"


def test_every_runtime_dependency_is_imported_or_says_why() -> None:
    runtime = _names(_pyproject()["dependencies"])
    used = set()
    for module in imported_modules(ROOT / f for f in PACKAGE_FOLDERS):
        used |= distributions_of(module)
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    block = text[text.index("\ndependencies = [") : text.index("\n]", text.index("\ndependencies = ["))]
    comments = {}  # normalised name -> the comment on its line in pyproject.toml
    for line in block.splitlines():
        if match := re.match(r'\s*"([^"]+)",?\s*(#.*)?$', line):
            comments[_norm(Requirement(match.group(1)).name)] = match.group(2) or ""
    unexplained = [name for name in sorted(runtime - used) if "not imported" not in comments.get(name, "").lower()]
    assert not unexplained, (
        f"declared but never imported by components/ or pipelines/: {unexplained}; remove them, or say on their "
        "line in pyproject.toml what needs them ('# not imported: ...')"
    )


def test_what_only_the_scripts_need_is_the_eval_extra() -> None:
    project = _pyproject()
    runtime = _names(project["dependencies"])
    extras = {name: _names(reqs) for name, reqs in project["optional-dependencies"].items()}
    assert "sentence-transformers-haystack" in extras["eval"]
    assert not extras["eval"] & runtime
    # The package never imports what the eval extra brings ...
    package = set()
    for module in imported_modules(ROOT / f for f in PACKAGE_FOLDERS):
        package |= distributions_of(module)
    assert not package & extras["eval"]
    # ... and the scripts import nothing beyond the runtime dependencies and the extras.
    local = {p.stem for p in (ROOT / "scripts").iterdir() if p.suffix == ".py" or p.is_dir()}
    allowed = runtime | extras["eval"] | extras["gpu"] | extras["dev"]
    missing = {}
    for module, where in imported_modules([ROOT / "scripts"]).items():
        if module.split(".")[0] in local:
            continue
        dists = distributions_of(module) or {_norm(module.split(".")[0])}
        if not dists & allowed:
            missing[module] = (sorted(dists), sorted(where))
    assert not missing, f"scripts import undeclared distributions: {missing}"


def test_no_evaluation_code_ships() -> None:
    shipped = [p for folder in PACKAGE_FOLDERS for p in (ROOT / folder).rglob("*.py")]
    assert not [p for p in shipped if p.stem.startswith("eval")], "evaluation code belongs in scripts/evaluation"
    for module, where in imported_modules(ROOT / f for f in PACKAGE_FOLDERS).items():
        assert module.split(".")[0] != "evaluation", f"the package imports scripts/evaluation: {where}"
    assert (ROOT / "scripts" / "evaluation" / "__init__.py").is_file()
    setup = (ROOT / "scripts" / "setup").read_text(encoding="utf-8")
    assert "-e '.[dev,eval]'" in setup, "scripts/setup installs the extras the scripts and tests need"
