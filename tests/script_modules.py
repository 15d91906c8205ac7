"""Load a script of ``scripts/`` or of the lab, ``scripts/lab/``, as a module (the scripts are not a package: a lab
script runs with ``scripts/lab/`` first on ``sys.path``, which pytest's ``pythonpath`` option in ``pyproject.toml``
gives the tests too, so a lab script's sibling and ``evaluation`` imports resolve the same way)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

SCRIPTS = Path(__file__).resolve().parents[1] / "scripts"
LAB = SCRIPTS / "lab"


def script_path(name: str) -> Path:
    """``scripts/<name>.py`` (a product tool) or ``scripts/lab/<name>.py`` (the lab)."""
    for folder in (SCRIPTS, LAB):
        if (folder / f"{name}.py").is_file():
            return folder / f"{name}.py"
    msg = f"No script {name}.py in {SCRIPTS} or {LAB}"
    raise FileNotFoundError(msg)


def load_script(name: str) -> ModuleType:
    """``scripts/<name>.py`` or ``scripts/lab/<name>.py`` as a fresh module named ``<name>_script``."""
    spec = importlib.util.spec_from_file_location(f"{name}_script", script_path(name))
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve their annotations through sys.modules
    spec.loader.exec_module(module)
    return module
