"""The built wheel in a fresh virtualenv: plain Haystack loads both shipped YAML files from a user's project that
has its own ``pipelines/`` and ``components/`` packages, and neither name is taken by this package.

The fresh venv gets the wheel (``--no-deps``) and sees the dependencies through a ``.pth`` line naming the shared
venv's site-packages: a path line does not run that folder's own ``.pth`` files, so the repository's editable
install stays invisible and the import must come from the wheel.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
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


@pytest.mark.slow  # about 20 s on two busy cores: a wheel build and a fresh venv
def test_wheel_in_a_fresh_venv_loads_the_yaml_beside_a_users_pipelines_package(tmp_path: Path) -> None:
    source = tmp_path / "src"
    # A copy of the source tree, so that the in-tree build leaves no build/ or egg-info in the repository.
    shutil.copytree(REPO, source, ignore=_ignore, symlinks=True)
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", str(wheels), str(source)], check=True, env=env
    )
    (wheel,) = wheels.glob("adaptive_retrieval-*.whl")

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
