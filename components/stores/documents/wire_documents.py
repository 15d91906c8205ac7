"""Documents as a store host sends them to its workers: each document's fields pickled once, unpacked by the worker.

A store host that answered a search with ``Document`` objects made each of them from its point cache (one unpickle
of the kept fields, :mod:`~adaptive_retrieval.components.stores.caches.point_cache`) only to pickle it again for
the wire: 0.40 ms of the host's CPU for 30 hits, against 0.014 ms to send the kept bytes as they are
(``scripts/lab/profile_server.py``). The host answers its searches and fetches with :class:`WireDocuments`; the worker
makes the ``Document`` objects once, as the embedded store would have.

Usage::

    wire = WireDocuments.of_points([(kept_point, score), ...], with_vector=False)   # on the host
    documents = wire.documents()                                                    # on the worker
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable

import numpy as np
from haystack import Document

from adaptive_retrieval.components.stores.caches.point_cache import KeptPoint, document_of_fields

#: One document on the wire: its fields pickled (from the point cache: all but the score and the vectors), the score
#: when the fields lack it, and the dense vector as stored (float32) when it travels apart from them. A plain tuple:
#: a search answers with a few dozen, and a named tuple costs its making on the host and its class name on the wire.
WireRow = tuple[bytes, float | None, np.ndarray | None]


class WireDocuments:
    """A store host's answer that is a list of documents (see the module docstring)."""

    __slots__ = ("rows",)

    def __init__(self, rows: list[WireRow]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    def __reduce__(self) -> tuple[type[WireDocuments], tuple[list[WireRow]]]:
        return WireDocuments, (self.rows,)

    @classmethod
    def of_points(cls, hits: Iterable[tuple[KeptPoint, float | None]], with_vector: bool) -> WireDocuments:
        """The kept points of a search or fetch with their scores, their vectors only when ``with_vector``."""
        return cls([(point.fields, score, point.vector if with_vector else None) for point, score in hits])

    @classmethod
    def of_documents(cls, documents: Iterable[Document]) -> WireDocuments:
        """Documents read from the shard without the cache: every field pickled, vectors and score included."""
        return cls([(pickle.dumps(d.__dict__, pickle.HIGHEST_PROTOCOL), None, None) for d in documents])

    def documents(self) -> list[Document]:
        """New ``Document`` objects, as the embedded store returns them: their own ``meta``, the score, the dense
        vector as a new list of its floats when it travelled apart, and no vector a row did not carry."""
        return [document_of_fields(fields, score, vector) for fields, score, vector in self.rows]
