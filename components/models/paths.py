"""Where model files live, and the names of their precision variants.

The models folder is, in this order: ``$ADAPTIVE_MODELS_DIR``; ``models/`` of a source checkout that the package
runs from (an editable install, as ``scripts/setup`` makes); else the per-user data folder
``$XDG_DATA_HOME/adaptive-retrieval/models`` (``~/.local/share/adaptive-retrieval/models``), beside the default
index. ``adaptive-retrieval models build`` writes there and ``adaptive-retrieval models list`` says which it is.
"""

from __future__ import annotations

from pathlib import Path

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.extras import install_hint
from adaptive_retrieval.components.locations import data_dir

DEFAULT_MODEL = "all-MiniLM-L6-v2"
MODELS_DIR_ENV = "ADAPTIVE_MODELS_DIR"
#: The command that builds the models, quoted in every "model missing" error.
BUILD_COMMAND = "adaptive-retrieval models build"

#: File name of each exported precision inside a model folder.
PRECISION_FILES: dict[str, str] = {
    "fp32": "model.onnx",
    "int8": "model_int8.onnx",
    "fp16": "model_fp16.onnx",
}
CPU_PRECISIONS = ("fp32", "int8")


def weights_file(model_path: Path) -> Path:
    """The file beside an ONNX graph that holds its weights when they are stored apart (``model_int8.onnx.data``
    for ``model_int8.onnx``; see :func:`adaptive_retrieval.components.models.export.weights_beside`)."""
    return model_path.with_name(f"{model_path.name}.data")


def model_bytes(model_path: Path) -> int:
    """Bytes of an ONNX model on disk: the graph and, where they are apart, its weights."""
    weights = weights_file(model_path)
    return model_path.stat().st_size + (weights.stat().st_size if weights.is_file() else 0)


def models_dir_origin() -> tuple[Path, str]:
    """The models folder and why it is that one (``$ADAPTIVE_MODELS_DIR``, the source checkout, the data folder)."""
    env = settings.text(MODELS_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve(), f"${MODELS_DIR_ENV}"
    repo_root = Path(__file__).resolve().parents[2]
    if (repo_root / "pyproject.toml").exists():
        return repo_root / "models", "the source checkout the package runs from"
    return data_dir() / "models", "the per-user data folder"


def default_models_dir() -> Path:
    """The models folder (see the module docstring for the order)."""
    return models_dir_origin()[0]


def build_hint() -> str:
    """How to get the models: the command, its extra, and the variable that points at models built elsewhere."""
    return (
        f"Build them with `{BUILD_COMMAND}` ({install_hint('models')}), or set ${MODELS_DIR_ENV} to a folder that "
        f"holds {DEFAULT_MODEL}/ (check it with `adaptive-retrieval models verify`)"
    )


def resolve_model_dir(model: str) -> Path:
    """Resolve ``model`` (a folder path, or a name inside the models folder) to an existing folder.

    :raises FileNotFoundError: with the command that builds the model when the folder is missing.
    """
    candidate = Path(model).expanduser()
    if not candidate.is_absolute() and not candidate.exists():
        candidate = default_models_dir() / model
    if not candidate.is_dir():
        msg = f"Model folder '{candidate}' not found. {build_hint()}."
        raise FileNotFoundError(msg)
    return candidate


def model_file(model_dir: Path, precision: str) -> Path:
    """The ONNX file of ``precision`` inside ``model_dir``, with a clear error when it is unknown or missing."""
    if precision not in PRECISION_FILES:
        msg = f"Unknown precision '{precision}'. Choose one of {sorted(PRECISION_FILES)}."
        raise ValueError(msg)
    path = model_dir / PRECISION_FILES[precision]
    if not path.exists():
        present = [p for p, name in PRECISION_FILES.items() if (model_dir / name).exists()]
        other = f"; this folder has {', '.join(present)} (set $ADAPTIVE_PRECISION to use it)" if present else ""
        msg = f"ONNX file for precision '{precision}' not found at '{path}'{other}. {build_hint()}."
        raise FileNotFoundError(msg)
    return path
