"""PyTorch back end for GPUs: fp32 / fp16 / bf16 weights, and FP8 (torchao, Hopper or Ada) on the Linear layers.

FP16 is the baseline FP8 is compared with (``scripts/bench_gpu.py``). On a machine without CUDA every
precision here is a clear error; the CPU path is ONNX Runtime
(:mod:`adaptive_retrieval.components.models.onnx_encoder`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from haystack.lazy_imports import LazyImport

from adaptive_retrieval.components.extras import install_hint
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL, resolve_model_dir
from adaptive_retrieval.components.models.token_encoder import TokenEncoder

logger = logging.getLogger(__name__)

_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8": "bfloat16"}
#: FP8 tensor cores: Ada (8.9) and Hopper (9.0) or newer.
FP8_MIN_CAPABILITY = (8, 9)


def weights_dir(model_dir: Path) -> Path:
    """Folder with the PyTorch weights for ``model_dir``: itself when it holds them, else the packaged model."""
    if any((model_dir / f).exists() for f in ("model.safetensors", "pytorch_model.bin")):
        return model_dir
    if model_dir.name == DEFAULT_MODEL:
        from adaptive_retrieval.components.models.export import packaged_minilm_dir

        return packaged_minilm_dir()
    msg = f"No PyTorch weights (model.safetensors) in {model_dir}; GPU precisions fp16/bf16/fp8 need them."
    raise FileNotFoundError(msg)


def check_fp8_support(capability: tuple[int, int]) -> None:
    """Raise a clear error when the GPU cannot run FP8 matrix multiplies."""
    if capability < FP8_MIN_CAPABILITY:
        msg = (
            f"precision 'fp8' needs a GPU with compute capability >= {FP8_MIN_CAPABILITY} (Ada or Hopper); "
            f"this one has {capability}. Use 'fp16' or 'bf16'."
        )
        raise RuntimeError(msg)


class TorchEncoder(TokenEncoder):
    """Runs the model's PyTorch weights on CUDA in ``fp32``/``fp16``/``bf16``, or ``fp8`` via torchao's
    dynamic float8 quantisation of the Linear layers (per-row scales)."""

    def __init__(self, model: str, precision: str = "fp16", device: str = "cuda", max_length: int | None = None):
        with LazyImport(install_hint("gpu")) as torch_import:
            import torch
        torch_import.check()
        if precision not in _DTYPES:
            msg = f"Unknown GPU precision '{precision}'. Choose one of {sorted(_DTYPES)}."
            raise ValueError(msg)
        if device != "cuda" or not torch.cuda.is_available():
            msg = f"precision '{precision}' runs on a CUDA GPU and none is available here; use fp32 or int8 on CPU."
            raise RuntimeError(msg)
        with LazyImport(install_hint("gpu")) as transformers_import:
            from transformers import AutoModel
        transformers_import.check()
        model_dir = resolve_model_dir(model)
        super().__init__(model_dir, precision, max_length)
        dtype = getattr(torch, _DTYPES[precision])
        self._torch = torch
        self.model = AutoModel.from_pretrained(weights_dir(model_dir), dtype=dtype, local_files_only=True)
        self.model = self.model.to("cuda").eval()
        if precision == "fp8":
            check_fp8_support(torch.cuda.get_device_capability())
            with LazyImport(install_hint("gpu")) as torchao_import:
                from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, quantize_
            torchao_import.check()
            quantize_(self.model, Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()))
        self.dimension = int(self.model.config.hidden_size)
        logger.info("Loaded %s on CUDA in %s", model_dir, precision)

    def token_embeddings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Contextual token embeddings ``[batch, tokens, dim]`` (float32 on the host) and the attention mask."""
        torch = self._torch
        ids, mask = self.batch_ids(texts)
        with self._lock, torch.inference_mode():
            out = self.model(
                input_ids=torch.from_numpy(ids).to("cuda"),
                attention_mask=torch.from_numpy(mask).to("cuda"),
            ).last_hidden_state
        return out.float().cpu().numpy(), mask
