"""The process-wide encoder registry: picks the back end for a precision and device and keeps one instance each.

Back ends (:mod:`.onnx_encoder`, :mod:`.torch_encoder`) subclass :class:`.token_encoder.TokenEncoder` and never
import this module, so the registry sits above them and nothing imports in a circle.
"""

from __future__ import annotations

import threading

from adaptive_retrieval.components.models.token_encoder import BACKENDS, ONNX_PRECISIONS, TORCH_PRECISIONS, TokenEncoder

_CACHE: dict[tuple[str, str, str, str], TokenEncoder] = {}
_CACHE_LOCK = threading.Lock()


def default_backend(precision: str) -> str:
    """``onnx`` for fp32/int8 (ONNX Runtime, CPU or CUDA), ``torch`` for fp16/bf16/fp8."""
    return "torch" if precision in TORCH_PRECISIONS else "onnx"


def get_encoder(
    model: str, precision: str | None = None, device: str | None = None, backend: str | None = None
) -> TokenEncoder:
    """The process-wide encoder for ``(model, precision, device, backend)``, loaded on first use (``None``: from
    ``$ADAPTIVE_PRECISION`` / ``$ADAPTIVE_DEVICE``, else ``int8`` on ``cpu``; see :mod:`.runtime`).

    ``fp32``/``int8`` run the exported ONNX files through ONNX Runtime (CPU, or CUDA with onnxruntime-gpu);
    ``fp16``/``bf16``/``fp8`` run the PyTorch weights on a CUDA GPU (``fp8`` runs as fp16 unless the compiled path
    is asked for: :mod:`.torch_runner`). ``backend="torch"`` runs ``fp32`` on the PyTorch weights instead (CPU or
    CUDA); ``backend="onnx"`` with ``fp16`` runs ``model_fp16.onnx`` (CUDA).

    :raises ValueError: for an unknown precision, device or back end, or a GPU precision on CPU.
    """
    from adaptive_retrieval.components.models.paths import resolve_model_dir
    from adaptive_retrieval.components.models.runtime import resolve_device, resolve_precision

    precision, device = resolve_precision(precision), resolve_device(device)
    if precision not in ONNX_PRECISIONS + TORCH_PRECISIONS:
        msg = f"Unknown precision '{precision}'. Choose fp32 or int8 (CPU/GPU), or fp16, bf16, fp8 (GPU)."
        raise ValueError(msg)
    if device not in ("cpu", "cuda"):
        msg = f"Unknown device '{device}'. Choose 'cpu' or 'cuda'."
        raise ValueError(msg)
    if device == "cpu" and precision in TORCH_PRECISIONS:
        msg = f"precision '{precision}' needs a GPU (device='cuda'); on CPU choose 'fp32' or 'int8'."
        raise ValueError(msg)
    backend = backend or default_backend(precision)
    if backend not in BACKENDS:
        msg = f"Unknown back end '{backend}'. Choose one of {list(BACKENDS)}."
        raise ValueError(msg)
    if backend == "torch" and precision == "int8":
        msg = "precision 'int8' runs on ONNX Runtime only (backend='onnx'); the PyTorch back end runs fp32/fp16/bf16."
        raise ValueError(msg)
    if backend == "onnx" and precision in ("bf16", "fp8"):
        msg = f"precision '{precision}' runs on the PyTorch back end only (backend='torch')."
        raise ValueError(msg)
    key = (str(resolve_model_dir(model)), precision, device, backend)
    with _CACHE_LOCK:
        if key not in _CACHE:
            if backend == "onnx":
                from adaptive_retrieval.components.models.onnx_encoder import OnnxEncoder

                _CACHE[key] = OnnxEncoder(model, precision, device)
            else:
                from adaptive_retrieval.components.models.torch_encoder import TorchEncoder

                _CACHE[key] = TorchEncoder(model, precision, device)
        return _CACHE[key]
