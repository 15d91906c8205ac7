"""BM25 term weights for Qdrant sparse vectors (fastembed's ``Qdrant/bm25``, loaded with no download).

The bundled stop-word list (``data/english.txt``) keeps words such as *while*, *if*, *with*, *not* and
*in*: they are keywords in technical text, and the IDF already discounts them where they are common.

Qdrant applies the IDF at search time (collection created with ``sparse_idf=True``), so documents carry BM25
term-frequency weights and queries carry one weight per distinct term.
"""

from __future__ import annotations

import threading
from functools import cache
from pathlib import Path
from typing import Any

_DATA_DIR = Path(__file__).resolve().parent / "data"
_LOCK = threading.Lock()


@cache
def _load(language: str, k: float, b: float, avg_len: float) -> Any:
    from fastembed import SparseTextEmbedding

    # specific_model_path points at the bundled stopword lists, so fastembed never reaches the model hub.
    return SparseTextEmbedding(
        "Qdrant/bm25", specific_model_path=str(_DATA_DIR), language=language, k=k, b=b, avg_len=avg_len
    )


def bm25_model(language: str = "english", k: float = 1.2, b: float = 0.75, avg_len: float = 256.0) -> Any:
    """The process-wide fastembed BM25 model for these parameters."""
    with _LOCK:
        return _load(language, k, b, avg_len)
