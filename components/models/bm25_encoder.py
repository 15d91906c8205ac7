"""BM25 term weights for Qdrant sparse vectors: fastembed's ``Qdrant/bm25`` (loaded with no download) or Qdrant
Edge's built-in ``Bm25`` (``engine="edge"``), both with the bundled stop-word list.

The bundled stop-word list (``data/english.txt``) keeps words such as *while*, *if*, *with*, *not* and
*in*: they are keywords in technical text, and the IDF already discounts them where they are common.

Qdrant applies the IDF at search time (collection created with ``sparse_idf=True``), so documents carry BM25
term-frequency weights and queries carry one weight per distinct term.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

_DATA_DIR = Path(__file__).resolve().parent / "data"
_LOCK = threading.Lock()


@cache
def _load(language: str, k: float, b: float, avg_len: float) -> Any:
    from fastembed import SparseTextEmbedding

    # specific_model_path points at the bundled stopword lists, so fastembed never reaches the model hub.
    return SparseTextEmbedding(
        "Qdrant/bm25", specific_model_path=str(_DATA_DIR), language=language, k=k, b=b, avg_len=avg_len
    )


class _Sparse(NamedTuple):
    indices: np.ndarray
    values: np.ndarray


class EdgeBm25:
    """Qdrant Edge's BM25 behind fastembed's ``embed`` / ``query_embed`` calls (English only: the bundled stop
    words replace Edge's list, which drops keywords such as *while* and *if*)."""

    def __init__(self, k: float, b: float, avg_len: float) -> None:
        import qdrant_edge as qe

        words = set((_DATA_DIR / "english.txt").read_text(encoding="utf-8").split())
        config = qe.Bm25Config(k=k, b=b, avg_len=avg_len, language="english", stopwords=qe.StopwordsSet(custom=words))
        self._model = qe.Bm25(config)

    @staticmethod
    def _sparse(vector: Any) -> _Sparse:
        return _Sparse(np.asarray(vector.indices, dtype=np.int64), np.asarray(vector.values, dtype=np.float32))

    def embed(self, texts: list[str], batch_size: int = 256) -> Iterator[_Sparse]:
        """Document vectors (saturated term frequencies)."""
        return (self._sparse(self._model.embed_document(t)) for t in texts)

    def query_embed(self, text: str) -> Iterator[_Sparse]:
        """The query vector (one weight per distinct term)."""
        return iter([self._sparse(self._model.embed_query(text))])


@cache
def _load_edge(k: float, b: float, avg_len: float) -> EdgeBm25:
    return EdgeBm25(k, b, avg_len)


#: The BM25 implementations: ``fastembed`` (default, measured best on hotpotqa100) or ``edge``.
ENGINES = ("fastembed", "edge")


def bm25_model(
    language: str = "english", k: float = 1.2, b: float = 0.75, avg_len: float = 256.0, engine: str = "fastembed"
) -> Any:
    """The process-wide BM25 model for these parameters."""
    if engine not in ENGINES:
        msg = f"Unknown BM25 engine {engine!r}: use one of {ENGINES}"
        raise ValueError(msg)
    if engine == "edge" and language != "english":
        msg = "The edge BM25 engine is set up for English only"
        raise ValueError(msg)
    with _LOCK:
        return _load(language, k, b, avg_len) if engine == "fastembed" else _load_edge(k, b, avg_len)
