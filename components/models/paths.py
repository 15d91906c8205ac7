"""Where model files live, and the names of their precision variants."""

from __future__ import annotations

import os
from pathlib import Path

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODELS_DIR_ENV = "ADAPTIVE_MODELS_DIR"

#: File name of each exported precision inside a model folder.
PRECISION_FILES: dict[str, str] = {
    "fp32": "model.onnx",
    "int8": "model_int8.onnx",
    "fp16": "model_fp16.onnx",
}
CPU_PRECISIONS = ("fp32", "int8")


def default_models_dir() -> Path:
    """The models folder: ``$ADAPTIVE_MODELS_DIR``, else ``models/`` at the repository root of an editable
    install, else ``~/.cache/adaptive-retrieval/models``."""
    env = os.environ.get(MODELS_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    repo_root = Path(__file__).resolve().parents[2]
    if (repo_root / "pyproject.toml").exists():
        return repo_root / "models"
    return Path.home() / ".cache" / "adaptive-retrieval" / "models"


def resolve_model_dir(model: str) -> Path:
    """Resolve ``model`` (a folder path, or a name inside the models folder) to an existing folder.

    :raises FileNotFoundError: with the command that builds the model when the folder is missing.
    """
    candidate = Path(model).expanduser()
    if not candidate.is_absolute() and not candidate.exists():
        candidate = default_models_dir() / model
    if not candidate.is_dir():
        msg = (
            f"Model folder '{candidate}' not found. Build the ONNX models with "
            f"`python scripts/export_models.py` (or set {MODELS_DIR_ENV} to the folder that holds them)."
        )
        raise FileNotFoundError(msg)
    return candidate


def model_file(model_dir: Path, precision: str) -> Path:
    """The ONNX file of ``precision`` inside ``model_dir``, with a clear error when it is unknown or missing."""
    if precision not in PRECISION_FILES:
        msg = f"Unknown precision '{precision}'. Choose one of {sorted(PRECISION_FILES)}."
        raise ValueError(msg)
    path = model_dir / PRECISION_FILES[precision]
    if not path.exists():
        msg = (
            f"ONNX file for precision '{precision}' not found at '{path}'. "
            "Run `python scripts/export_models.py` to build it."
        )
        raise FileNotFoundError(msg)
    return path
