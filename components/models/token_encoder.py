"""What every text encoder shares: tokenisation with ``tokenizers``, length-sorted batching, mean pooling.

Back ends implement :meth:`TokenEncoder.token_embeddings`: ONNX Runtime on CPU/GPU
(:mod:`adaptive_retrieval.components.models.onnx_encoder`) or PyTorch on CUDA for fp16/bf16/fp8
(:mod:`adaptive_retrieval.components.models.torch_encoder`). The registry that picks a back end and keeps one
instance per process is :mod:`adaptive_retrieval.components.models.encoder` (``get_encoder``); back ends import only
this module, so the two never import each other.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

ONNX_PRECISIONS = ("fp32", "int8")
TORCH_PRECISIONS = ("fp16", "bf16", "fp8")


class TokenEncoder:
    """Base class: tokenises like the model's ``tokenizer.json`` and pools token embeddings into sentences."""

    dimension: int

    def __init__(self, model_dir: Path, precision: str, max_length: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.model_dir = model_dir
        self.precision = precision
        self.max_length = max_length or self._configured_max_length()
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=self.max_length)
        self.tokenizer.no_padding()
        pad_id = self.tokenizer.token_to_id("[PAD]")
        self._pad_id = 0 if pad_id is None else pad_id
        self._lock = threading.Lock()

    def _configured_max_length(self) -> int:
        config = self.model_dir / "sentence_bert_config.json"
        if config.exists():
            return int(json.loads(config.read_text()).get("max_seq_length", 256))
        return 256

    def batch_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Padded ``input_ids`` and ``attention_mask`` (int64, ``[batch, longest]``) for ``texts``."""
        encodings = self.tokenizer.encode_batch(list(texts))
        width = max(len(e.ids) for e in encodings)
        ids = np.full((len(encodings), width), self._pad_id, dtype=np.int64)
        mask = np.zeros((len(encodings), width), dtype=np.int64)
        for row, enc in enumerate(encodings):
            ids[row, : len(enc.ids)] = enc.ids
            mask[row, : len(enc.ids)] = 1
        return ids, mask

    def token_embeddings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Contextual token embeddings ``[batch, tokens, dim]`` (float32) and the attention mask."""
        raise NotImplementedError

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
            out[idx] = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            if progress is not None:
                progress(len(idx))
        if normalize:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out

    def is_truncated(self, text: str) -> bool:
        """Whether ``text`` is longer than the model's window (its tail is then ignored)."""
        return bool(self.tokenizer.encode(text).overflowing)
