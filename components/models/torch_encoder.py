"""PyTorch back end: the model's own weights on a CUDA GPU (fp16 / bf16 / fp32; fp8 see below), or on the CPU
(tests and the CPU benchmark; the package's CPU path is ONNX Runtime).

Pooling and the L2 norm run on the device and only ``[batch, dim]`` crosses to the host; batches are bucketed by
token length and prepared by a thread while the device runs (:mod:`.torch_runner`). The late-interaction ranker's
MaxSim runs on the device too (:meth:`TorchEncoder.maxsim_scores`: only scores cross).

``fp8`` does not pay as torchao's eager dynamic quantisation (:data:`.torch_runner.FP8_MEASURED`): it runs as fp16
and :meth:`TorchEncoder.describe` and a warning say so, unless the compiled static-shape path is asked for
(``compiled=True`` or ``$ADAPTIVE_FP8_COMPILED=1``), which ``scripts/lab/bench_gpu.py`` measures against compiled fp16.
The CPU default is ONNX Runtime (:mod:`adaptive_retrieval.components.models.onnx_encoder`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
from haystack.lazy_imports import LazyImport

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.extras import install_hint
from adaptive_retrieval.components.models.batching import DEFAULT_WINDOW
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL, resolve_model_dir
from adaptive_retrieval.components.models.token_encoder import EncoderDescription, TokenEncoder

logger = logging.getLogger(__name__)

#: Opt-in to the compiled static-shape path (where fp8 runs as fp8).
COMPILED_ENV = "ADAPTIVE_FP8_COMPILED"


def weights_dir(model_dir: Path) -> Path:
    """Folder with the PyTorch weights for ``model_dir``: itself when it holds them, else the folder it was built
    from (its manifest's ``source``), else the packaged model."""
    if any((model_dir / f).exists() for f in ("model.safetensors", "pytorch_model.bin")):
        return model_dir
    from adaptive_retrieval.components.models.manifest import read_manifest

    source = ((read_manifest(model_dir) or {}).get("source") or {}).get("folder")
    if source and any((Path(source) / f).exists() for f in ("model.safetensors", "pytorch_model.bin")):
        return Path(source)
    if model_dir.name == DEFAULT_MODEL:
        from adaptive_retrieval.components.models.export import packaged_minilm_dir

        return packaged_minilm_dir()
    msg = f"No PyTorch weights (model.safetensors) in {model_dir}; the PyTorch back end (fp16/bf16/fp8) needs them."
    raise FileNotFoundError(msg)


def import_torch():  # the torch module (not imported at this module's import)
    """``torch``, with the extra to install when it is missing."""
    with LazyImport(install_hint("gpu")) as torch_import:
        import torch
    torch_import.check()
    return torch


class TorchEncoder(TokenEncoder):
    """Runs the model's PyTorch weights; see the module docstring.

    Usage::

        encoder = TorchEncoder("all-MiniLM-L6-v2", "fp16", "cuda")     # or get_encoder(..., "fp16", "cuda")
        vectors = encoder.encode(passages, batch_size=256)             # [n, 384], unit length, input order

    :param precision: ``fp32``, ``fp16``, ``bf16``, or ``fp8`` (runs fp16 unless ``compiled``).
    :param device: ``cuda``, or ``cpu`` (slow; for tests and comparisons).
    :param compiled: ``torch.compile`` with static shapes (batches padded to a few widths); ``None``:
        ``$ADAPTIVE_FP8_COMPILED``. The first batch of each width compiles (tens of seconds to minutes).
    :param prefetch: batches prepared ahead by a thread (0: none).
    :param window: batches tokenised together and sorted by token count.
    :param static_shapes: the compiled path's shapes (a few widths, full batches) without compiling; ``None``: when
        compiled.
    """

    backend = "torch"

    def __init__(
        self,
        model: str,
        precision: str = "fp16",
        device: str = "cuda",
        max_length: int | None = None,
        compiled: bool | None = None,
        prefetch: int = 2,
        window: int = DEFAULT_WINDOW,
        static_shapes: bool | None = None,
    ):
        torch = import_torch()
        from adaptive_retrieval.components.models.torch_runner import (
            TORCH_DTYPES,
            TorchRunner,
            check_device,
            plan_precision,
        )

        plan = plan_precision(precision, settings.flag(COMPILED_ENV) if compiled is None else compiled)
        torch_device = check_device(device, plan)
        with LazyImport(install_hint("gpu")) as transformers_import:
            from transformers import AutoModel
        transformers_import.check()
        model_dir = resolve_model_dir(model)
        super().__init__(model_dir, plan.runs, max_length)
        self.requested_precision = precision
        self.device = device
        self.plan = plan
        if plan.note:
            logger.warning("%s (%s)", plan.note, model_dir.name)
        self._torch = torch
        weights = AutoModel.from_pretrained(
            weights_dir(model_dir), dtype=getattr(torch, TORCH_DTYPES[plan.runs]), local_files_only=True
        )
        self.runner = TorchRunner(weights, plan, torch_device, prefetch, window, self.max_length, static_shapes)
        self.model = self.runner.model
        self.dimension = int(self.model.config.hidden_size)
        logger.info("Loaded %s on %s in %s (asked: %s)", model_dir, device, plan.runs, precision)

    def describe(self) -> EncoderDescription:
        """Back end, device, precision asked for and run (``fp8`` → ``fp16`` unless compiled), pooling, and why."""
        return EncoderDescription(
            "torch",
            self.device,
            self.requested_precision,
            self.precision,
            self.pooling,
            self.plan.compiled,
            self.plan.note,
        )

    def token_embeddings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Contextual token embeddings ``[batch, tokens, dim]`` (float32 on the host) and the attention mask.

        The whole token matrix crosses to the host here: :meth:`encode` and :meth:`maxsim_scores` keep it on the
        device; this is for a query's few tokens (the late-interaction ranker) and for comparisons.
        """
        torch = self._torch
        ids, mask = self.batch_ids(texts)
        host = {"input_ids": torch.from_numpy(ids), "attention_mask": torch.from_numpy(mask)}
        if self.runner.accepts_token_types:
            host["token_type_ids"] = torch.zeros_like(host["input_ids"])
        with self.runner.lock, torch.inference_mode():
            output, _ = self.runner.forward(host)
            hidden = output.last_hidden_state
        return hidden.float().cpu().numpy(), mask

    def _run(self, items: Sequence[str], batch_size: int, head, tail, progress) -> np.ndarray:
        return self.runner.run(items, self.tokenizer.encode_batch, self._pad_id, batch_size, head, tail, progress)

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        normalize: bool = True,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Sentence embeddings ``[len(texts), dim]`` in input order (L2-normalised by default), pooled on the device.

        Texts are batched by token length; ``progress`` is called with the number of texts done after each batch.
        """
        from adaptive_retrieval.components.models.device_pooling import normalise, pool

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        mode = self.pooling

        def head(output, mask):
            vectors = pool(output.last_hidden_state, mask, mode)
            return normalise(vectors) if normalize else vectors

        return self._run(texts, batch_size, head, (self.dimension,), progress)

    def maxsim_scores(self, query_tokens: np.ndarray, texts: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """Late-interaction score of each text, computed on the device: only the scores cross to the host."""
        from adaptive_retrieval.components.models.device_pooling import maxsim

        if not texts:
            return np.zeros(0, dtype=np.float32)
        query = self._torch.from_numpy(np.ascontiguousarray(query_tokens, dtype=np.float32)).to(self.runner.device)

        def head(output, mask):
            return maxsim(query, output.last_hidden_state, mask)

        return self._run(texts, batch_size, head, (), None)
