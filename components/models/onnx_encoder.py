"""ONNX Runtime back end of the text encoders: runs an exported model, no torch or transformers import.

Query-time processes stay small and start fast. Obtain instances through
:func:`adaptive_retrieval.components.models.encoder.get_encoder` so that embedders, router and rankers share one
session.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.models.ort_runtime import onnxruntime_quiet
from adaptive_retrieval.components.models.paths import build_hint, model_file, resolve_model_dir, weights_file
from adaptive_retrieval.components.models.token_encoder import ONNX_PRECISIONS, TokenEncoder

logger = logging.getLogger(__name__)


def _providers(device: str) -> list[str]:
    import onnxruntime as ort

    available = ort.get_available_providers()
    if device == "cpu":
        return ["CPUExecutionProvider"]
    if device == "cuda":
        if "CUDAExecutionProvider" not in available:
            msg = (
                "device='cuda' needs onnxruntime-gpu and a CUDA device "
                f"(available providers: {available}). Install the 'gpu' extra or use device='cpu'."
            )
            raise RuntimeError(msg)
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    msg = f"Unknown device '{device}'. Choose 'cpu' or 'cuda'."
    raise ValueError(msg)


def open_session(path: Path, options: Any, device: str) -> Any:
    """An ONNX Runtime session of the graph at ``path`` on ``device`` (the encoders' and the rerankers' one way in).

    :raises FileNotFoundError: when the graph keeps its weights in a file beside it that is missing (a graph copied
        alone), naming that file rather than ONNX Runtime's "External data path validation failed".
    """
    ort = onnxruntime_quiet()
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=_providers(device))
    except Exception as err:
        weights = weights_file(path)
        if "external data" in str(err).lower() and not weights.is_file():
            msg = (
                f"{path} keeps its weights in a file beside it ({weights.name}), which is missing: copy the "
                f"whole model folder, or build it again. {build_hint()}"
            )
            raise FileNotFoundError(msg) from err
        raise


class OnnxEncoder(TokenEncoder):
    """Runs one exported ONNX model (``model.onnx`` or ``model_int8.onnx``) with its ``tokenizer.json``."""

    def __init__(self, model: str, precision: str = "int8", device: str = "cpu", max_length: int | None = None):
        ort = onnxruntime_quiet()

        if precision not in ONNX_PRECISIONS:
            hint = "; fp16/bf16/fp8 run on a GPU through get_encoder(..., device='cuda')"
            msg = f"Unknown ONNX precision '{precision}'. Choose one of {list(ONNX_PRECISIONS)}{hint}."
            raise ValueError(msg)
        model_dir = resolve_model_dir(model)
        path = model_file(model_dir, precision)
        super().__init__(model_dir, precision, max_length)
        options = ort.SessionOptions()
        threads = settings.whole("ADAPTIVE_ORT_THREADS")
        if threads:
            options.intra_op_num_threads = threads
        # ORT's intra-op threads busy-wait after every run by default. A query runs the model once on a few
        # tokens, then numpy and the store work: the spinning threads only take CPU from them and from
        # concurrent queries (CPU per query -35 % under load). ADAPTIVE_ORT_SPIN=1 restores ORT's default.
        if not settings.flag("ADAPTIVE_ORT_SPIN"):
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = open_session(path, options, device)
        self._input_names = {i.name for i in self.session.get_inputs()}
        outputs = {o.name: o for o in self.session.get_outputs()}
        # optimum names the token output after the sentence-transformers module or the HF model.
        token_output = next((n for n in ("token_embeddings", "last_hidden_state") if n in outputs), None)
        self._token_output = token_output or self.session.get_outputs()[0].name
        self.dimension = int(outputs[self._token_output].shape[-1])
        logger.info("Loaded %s (%s, %s, dim=%d)", path, precision, device, self.dimension)

    def token_embeddings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Contextual token embeddings ``[batch, tokens, dim]`` and the attention mask ``[batch, tokens]``."""
        ids, mask = self.batch_ids(texts)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        # InferenceSession.run is thread-safe, but serialising keeps CPU threads from oversubscribing.
        with self._lock:
            hidden = self.session.run([self._token_output], feeds)[0]
        return hidden.astype(np.float32, copy=False), mask
