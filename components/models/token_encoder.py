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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ONNX_PRECISIONS = ("fp32", "int8")
TORCH_PRECISIONS = ("fp16", "bf16", "fp8")
BACKENDS = ("onnx", "torch")


@dataclass(frozen=True)
class EncoderDescription:
    """What an encoder runs: its back end and device, the precision asked for and the one that runs (they differ
    where a precision does not pay, e.g. ``fp8`` that runs fp16), the pooling, and ``note`` saying why."""

    backend: str
    device: str
    requested_precision: str
    precision: str
    pooling: str
    compiled: bool = False
    note: str | None = None


def pooling_mode(model_dir: Path) -> str:
    """``cls`` or ``mean``, as the model's sentence-transformers pooling config (``1_Pooling/config.json``) says;
    ``mean`` when there is none."""
    config = model_dir / "1_Pooling" / "config.json"
    if config.exists():
        fields = json.loads(config.read_text(encoding="utf-8"))
        if fields.get("pooling_mode_cls_token"):
            return "cls"
        if not fields.get("pooling_mode_mean_tokens", True):
            modes = [k for k, v in fields.items() if k.startswith("pooling_mode_") and v]
            msg = f"{config} asks for pooling {modes}; this package pools with 'mean' or 'cls' only."
            raise ValueError(msg)
    return "mean"


def pool_numpy(hidden: np.ndarray, mask: np.ndarray, mode: str = "mean") -> np.ndarray:
    """Sentence vectors ``[batch, dim]`` from token vectors and the mask, on the host (the ONNX path)."""
    if mode == "cls":
        return hidden[:, 0].astype(np.float32)
    weights = mask[..., None].astype(np.float32)
    return (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)


def normalise_numpy(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    return vectors / np.clip(np.linalg.norm(vectors, axis=-1, keepdims=True), 1e-12, None)


class TokenEncoder:
    """Base class: tokenises like the model's ``tokenizer.json`` and pools token embeddings into sentences."""

    dimension: int
    #: ``onnx`` or ``torch``; see :meth:`describe`.
    backend = "onnx"
    device = "cpu"

    def __init__(self, model_dir: Path, precision: str, max_length: int | None = None) -> None:
        from tokenizers import Tokenizer

        self.model_dir = model_dir
        self.precision = precision
        self.requested_precision = precision
        self.pooling = pooling_mode(model_dir)
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
            out[idx] = pool_numpy(hidden, mask, self.pooling)
            if progress is not None:
                progress(len(idx))
        if normalize:
            out /= np.clip(np.linalg.norm(out, axis=1, keepdims=True), 1e-12, None)
        return out

    def maxsim_scores(self, query_tokens: np.ndarray, texts: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """Late-interaction score of each text: ``mean_i max_j cos(q_i, d_j)`` over its real tokens.

        :param query_tokens: unit-length query token vectors ``[query_tokens, dim]``.
        """
        scores = np.empty(len(texts), dtype=np.float32)
        order = np.argsort([-len(t) for t in texts], kind="stable")  # longest first: similar lengths per batch
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            hidden, mask = self.token_embeddings([texts[i] for i in idx])
            sims = np.einsum("qd,btd->bqt", query_tokens, normalise_numpy(hidden))
            sims = np.where(mask[:, None, :].astype(bool), sims, -np.inf)
            scores[idx] = sims.max(axis=2).mean(axis=1)
        return scores

    def describe(self) -> EncoderDescription:
        """What this encoder runs (back end, device, precision asked for and run, pooling)."""
        return EncoderDescription(self.backend, self.device, self.requested_precision, self.precision, self.pooling)

    def is_truncated(self, text: str) -> bool:
        """Whether ``text`` is longer than the model's window (its tail is then ignored)."""
        return bool(self.tokenizer.encode(text).overflowing)
