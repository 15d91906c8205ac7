"""Embed a query with an exported ONNX model through ONNX Runtime (no torch at query time)."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
from haystack import component

from adaptive_retrieval.components.limits import MAX_QUERY_CHARS, check_query
from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.query_vector import query_vector
from adaptive_retrieval.components.models.token_encoder import TokenEncoder

logger = logging.getLogger(__name__)


@component
class OnnxTextEmbedder:
    """Embeds a query string with an ONNX model folder built by ``adaptive-retrieval models build``.

    The model is loaded in :meth:`warm_up` and shared with every other ONNX component of the process.

    Usage::

        embedder = OnnxTextEmbedder(precision="int8")
        embedder.warm_up()
        embedding = embedder.run("What does the with statement do?")["embedding"]  # 384 floats
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str | None = None,
        device: str | None = None,
        prefix: str = "",
        max_chars: int = MAX_QUERY_CHARS,
        return_list: bool = True,
    ) -> None:
        """
        :param model: model folder, or a name inside the models folder (``$ADAPTIVE_MODELS_DIR`` or ``models/``).
        :param precision: ``int8`` (default on CPU) or ``fp32``; ``fp16``/``fp8`` need a GPU;
            ``None``: ``$ADAPTIVE_PRECISION``, else ``int8`` (read at warm-up).
        :param device: ``cpu`` or ``cuda``; ``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``.
        :param prefix: text prepended to the query (for models trained with instructions, e.g. ``query: ``).
        :param max_chars: queries longer than this are rejected; the model reads at most its window anyway.
        :param return_list: also return ``embedding``, the list Haystack's stock components take. The query
            pipeline turns it off: its components read ``vector``, and an output no component reads is part of
            every answer a served YAML gives (~8 KB of JSON), while reading it costs each consumer ~10 ms of
            Haystack's element-by-element copy (:mod:`~adaptive_retrieval.components.models.query_vector`).
        """
        self.model = model
        self.precision = precision
        self.device = device
        self.prefix = prefix
        self.max_chars = max_chars
        self.return_list = return_list
        self._encoder: TokenEncoder | None = None

    def warm_up(self) -> None:
        """Load (or reuse) the ONNX session."""
        if self._encoder is None:
            self._encoder = get_encoder(self.model, self.precision, self.device)

    def windows(self, text: str) -> list[str]:
        """``text`` as it is embedded: whole when it fits the model's window (with the prefix), else cut at word
        boundaries into consecutive parts that each fit (halving a part's words until it does)."""
        self.warm_up()
        assert self._encoder is not None
        if not self._encoder.is_truncated(self.prefix + text):
            return [text]
        words = text.split()
        out: list[str] = []
        start = 0
        size = max(1, self._encoder.max_length // 2)  # words; English WordPiece runs at ~1.3 tokens a word
        while start < len(words):
            step = min(size, len(words) - start)
            while step > 1 and self._encoder.is_truncated(self.prefix + " ".join(words[start : start + step])):
                step //= 2
            out.append(" ".join(words[start : start + step]))
            start += step
        return out

    @component.output_types(embedding=list[float], vector=np.ndarray, meta=dict[str, Any])
    def run(self, text: str) -> dict[str, Any]:
        """Embed ``text``.

        :raises TypeError: when ``text`` is not a string (pass documents to ``OnnxDocumentEmbedder``).
        :raises ValueError: for an empty or too long query.
        """
        if not isinstance(text, str):
            msg = "OnnxTextEmbedder expects a string; use OnnxDocumentEmbedder for documents."
            raise TypeError(msg)
        check_query(text, self.max_chars)
        self.warm_up()
        assert self._encoder is not None
        full = self.prefix + text
        windows = self.windows(text)
        if len(windows) == 1:
            vector = self._encoder.encode([full])[0]
        else:
            # A query longer than the model window: every part counts, none is cut (the mean of the windows'
            # unit vectors, weighted by their words, renormalised).
            logger.info(
                "Query of %d words embedded in %d windows of the model's %d tokens",
                len(text.split()),
                len(windows),
                self._encoder.max_length,
            )
            parts = self._encoder.encode([self.prefix + w for w in windows])
            weights = np.asarray([len(w.split()) for w in windows], dtype=np.float32)
            vector = (parts * weights[:, None]).sum(axis=0)
            vector /= max(float(np.linalg.norm(vector)), 1e-12)
        out: dict[str, Any] = {
            # the same values for this package's components: Haystack copies an array in one step (query_vector)
            "vector": query_vector(vector),
            "meta": {
                "model": str(self._encoder.model_dir),
                "precision": self._encoder.precision,
                "truncated": False,
                "windows": len(windows),
            },
        }
        if self.return_list:
            out["embedding"] = vector.tolist()
        return out
