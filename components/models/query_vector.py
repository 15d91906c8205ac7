"""The query embedding as it travels between components: one read-only ``float32`` vector.

Haystack deep-copies every input of every component. A ``list[float]`` is copied element by element, and each
float passes an ``isinstance`` check against Haystack's runtime ``Component`` protocol on the way: for a
384-float query embedding that is milliseconds per copy, and the query pipeline hands the embedding to seven
components (more on a retry). An ``ndarray`` is copied in one step. So the query embedder's ``vector`` output
carries this form to the router, the channels, MMR and the gate, while its ``embedding`` output stays the
``list[float]`` Haystack's stock components expect. Every consumer accepts either (:data:`QueryEmbedding`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

#: What a component's ``query_embedding`` input accepts: the stock ``list[float]`` or the embedder's ``vector``.
QueryEmbedding = list[float] | np.ndarray


def query_vector(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """A read-only 1-d ``float32`` copy of ``values`` (read-only: a consumer that writes into it fails loudly)."""
    vector = np.array(values, dtype=np.float32).reshape(-1)
    vector.setflags(write=False)
    return vector


def as_float_list(embedding: Sequence[float] | np.ndarray | None) -> list[float] | None:
    """``embedding`` as a list of Python floats (what the stores' search calls take); ``None`` stays ``None``."""
    if embedding is None:
        return None
    if isinstance(embedding, np.ndarray):
        return embedding.astype(np.float64).reshape(-1).tolist()
    return list(embedding)
