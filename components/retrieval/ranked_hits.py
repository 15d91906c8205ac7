"""A channel's ranked list as the channels that read it take it: each document's id and text, in rank order.

The graph and bridge channels start from the dense and sparse channels' top hits (``graph_local`` reads the ids
of the first ten, ``bridge`` fuses both lists and reads the text of the best three). Haystack copies every
component input, one ``isinstance`` check and one deep copy per document: handing them the documents cost three
lists of ~36 documents per query. :class:`RankedHits` is one immutable value instead, so its deep copy is itself
(as ``copy.deepcopy`` treats a tuple of strings), and it reads like the list it stands for (``hits[0].id``,
``hits[:5]``, ``for hit in hits``).

Usage::

    hits = RankedHits.of(documents)     # what DenseRetriever and SparseRetriever send on `hits`
    hits[0].id, hits[0].content         # the best hit
    [h.id for h in hits[:10]]
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, NamedTuple

from haystack import Document

from adaptive_retrieval.components.frozen_sequence import FrozenSequence


class Hit(NamedTuple):
    """One ranked document: its id and its text (what the reading channels use of it)."""

    id: str
    content: str | None


class RankedHits(FrozenSequence[Hit]):
    """An immutable ranked list of :class:`Hit` (see the module docstring).

    :param hits: the hits, best first.
    """

    __slots__ = ()

    def __init__(self, hits: Iterable[Hit] = ()) -> None:
        super().__init__(Hit(*hit) for hit in hits)

    @classmethod
    def of(cls, documents: Iterable[Document]) -> RankedHits:
        """The hits of ``documents``, in their order."""
        return cls(Hit(d.id, d.content) for d in documents)

    def __hash__(self) -> int:  # a tuple of tuples of strings
        return hash(self._items)

    def __repr__(self) -> str:
        return f"RankedHits({[h.id for h in self]})"

    def to_dict(self) -> dict[str, Any]:
        """``{"hits": [[id, content], ...]}`` (Haystack serialises a pipeline's inputs with it in a snapshot)."""
        return {"hits": [list(hit) for hit in self]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RankedHits:
        """The inverse of :meth:`to_dict`."""
        return cls(Hit(*hit) for hit in data.get("hits", []))


#: What a reading channel's input takes: another channel's hits, or its documents (a call from Python, or YAML
#: written before the hits existed). In this order: Haystack pairs a union sender's members with the receiver's in
#: order, so ``list[Document] | None`` (a channel's ``documents``) connects, and so does a plain ``RankedHits``.
HitsInput = list[Document] | None | RankedHits
