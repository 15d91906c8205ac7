"""The pure parts of the section tree: cutting a long section into runs of chunks, and a document's own TF-IDF.

Usage::

    segment_runs(chunk_embeddings, max_size=8)   # [(0, 6), (6, 13)]: cuts at the weakest neighbour links
    Lexicon(chunk_texts).vectors(["a sentence"])  # L2-normalised TF-IDF rows over the document's vocabulary
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np

_WORD = re.compile(r"[^\W\d_]{2,}")


def segment_runs(embeddings: np.ndarray, max_size: int) -> list[tuple[int, int]]:
    """Cut ``n`` consecutive chunks into runs of at most ``max_size`` (at least ``max_size // 2``) chunks.

    Each cut falls on the weakest link (lowest cosine between neighbours) among the positions that keep both
    sides within bounds, recursively; returns ``[(start, end), ...]`` half-open and in order.
    """
    n = len(embeddings)
    if n <= max_size:
        return [(0, n)]
    links = np.einsum("ij,ij->i", embeddings[:-1], embeddings[1:])  # link i joins chunks i and i + 1
    floor = max(1, max_size // 2)
    runs: list[tuple[int, int]] = []

    def cut(start: int, end: int) -> None:
        if end - start <= max_size:
            runs.append((start, end))
            return
        lo, hi = start + floor, end - floor  # a cut at k makes runs [start, k) and [k, end)
        k = lo + int(np.argmin(links[lo - 1 : hi]))
        cut(start, k)
        cut(k, end)

    cut(0, n)
    return runs


class Lexicon:
    """TF-IDF vectors over one document's vocabulary, IDF from its chunks (words common to all weigh ~0)."""

    def __init__(self, texts: list[str]) -> None:
        counts = [Counter(t.lower() for t in _WORD.findall(text)) for text in texts]
        self.vocabulary: dict[str, int] = {}
        for count in counts:
            for term in count:
                self.vocabulary.setdefault(term, len(self.vocabulary))
        df = np.zeros(len(self.vocabulary), dtype=np.float32)
        for count in counts:
            df[[self.vocabulary[t] for t in count]] += 1
        self.idf = np.log1p(len(texts) / np.maximum(df, 1.0)).astype(np.float32)
        self.chunks = np.stack([self._weights(c) for c in counts]) if counts else np.zeros((0, len(df)))

    def _weights(self, count: Counter[str]) -> np.ndarray:
        row = np.zeros(len(self.vocabulary), dtype=np.float32)
        for term, n in count.items():
            index = self.vocabulary.get(term)
            if index is not None:
                row[index] = n
        return row * self.idf

    def vectors(self, texts: list[str]) -> np.ndarray:
        """L2-normalised TF-IDF rows of ``texts`` (terms unknown to the document are ignored)."""
        rows = np.stack([self._weights(Counter(t.lower() for t in _WORD.findall(text))) for text in texts])
        return rows / np.clip(np.linalg.norm(rows, axis=1, keepdims=True), 1e-12, None)
