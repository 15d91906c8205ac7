"""A thin ONNX Runtime encoder for sentence-transformers models: tokenise, run, mean-pool, normalise.

It imports neither torch nor transformers, so query-time processes stay small and start fast. Sessions are
cached per (file, device) inside a process: the text embedder, the document embedder and the router share one.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence

import numpy as np

from components.models.paths import PRECISION_FILES, model_file, resolve_model_dir

logger = logging.getLogger(__name__)

_CACHE: dict[tuple[str, str, str], OnnxEncoder] = {}
_CACHE_LOCK = threading.Lock()


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


class OnnxEncoder:
    """Runs one exported ONNX model with its ``tokenizer.json``.

    Use :meth:`get` rather than the constructor so that components in the same process share the session.
    """

    def __init__(self, model: str, precision: str = "int8", device: str = "cpu", max_length: int | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.model_dir = resolve_model_dir(model)
        self.precision = precision
        if precision not in PRECISION_FILES and precision not in ("bf16", "fp8"):
            msg = f"Unknown precision '{precision}'. Choose one of fp32, int8 (CPU) or fp16, bf16, fp8 (GPU)."
            raise ValueError(msg)
        if device == "cpu" and precision not in ("fp32", "int8"):
            msg = f"precision '{precision}' needs a GPU; on CPU choose 'fp32' or 'int8' (see README, 'GPU' section)."
            raise ValueError(msg)
        path = model_file(self.model_dir, precision)
        options = ort.SessionOptions()
        threads = int(os.environ.get("ADAPTIVE_ORT_THREADS", "0"))
        if threads:
            options.intra_op_num_threads = threads
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = ort.InferenceSession(str(path), sess_options=options, providers=_providers(device))
        self._input_names = {i.name for i in self.session.get_inputs()}
        outputs = {o.name: o for o in self.session.get_outputs()}
        # optimum names the token output after the sentence-transformers module or the HF model.
        token_output = next((n for n in ("token_embeddings", "last_hidden_state") if n in outputs), None)
        self._token_output = token_output or self.session.get_outputs()[0].name
        self.dimension = int(outputs[self._token_output].shape[-1])
        self.max_length = max_length or self._configured_max_length()
        self.tokenizer = Tokenizer.from_file(str(self.model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.tokenizer.no_padding()
        pad_id = self.tokenizer.token_to_id("[PAD]")
        self._pad_id = 0 if pad_id is None else pad_id
        self._lock = threading.Lock()
        logger.info("Loaded %s (%s, %s, dim=%d)", path, precision, device, self.dimension)

    @classmethod
    def get(cls, model: str, precision: str = "int8", device: str = "cpu") -> OnnxEncoder:
        """The process-wide encoder for ``(model, precision, device)``, loaded on first use."""
        key = (str(resolve_model_dir(model)), precision, device)
        with _CACHE_LOCK:
            if key not in _CACHE:
                _CACHE[key] = cls(model, precision, device)
            return _CACHE[key]

    def _configured_max_length(self) -> int:
        config = self.model_dir / "sentence_bert_config.json"
        if config.exists():
            return int(json.loads(config.read_text()).get("max_seq_length", 256))
        return 256

    def _batch_inputs(self, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        encodings = self.tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds, mask

    def token_embeddings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Contextual token embeddings ``[batch, tokens, dim]`` and the attention mask ``[batch, tokens]``."""
        feeds, mask = self._batch_inputs(texts)
        # InferenceSession.run is thread-safe, but serialising keeps CPU threads from oversubscribing.
        with self._lock:
            hidden = self.session.run([self._token_output], feeds)[0]
        return hidden.astype(np.float32, copy=False), mask

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        normalize: bool = True,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Mean-pooled sentence embeddings ``[len(texts), dim]`` (L2-normalised by default).

        Texts are sorted by length before batching so each batch pads to similar lengths; the output keeps the
        input order. ``progress`` is called with the number of texts done after each batch.
        """
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            hidden, mask = self.token_embeddings([texts[i] for i in idx])
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            out[idx] = pooled
            if progress is not None:
                progress(len(idx))
        if normalize:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out

    def is_truncated(self, text: str) -> bool:
        """Whether ``text`` is longer than the model's window (its tail is then ignored)."""
        return bool(self.tokenizer.encode(text).overflowing)
