"""A ranked list of documents handed on as one value: Haystack's copy of a component input takes it as it is.

``Pipeline.run`` deep-copies every input of every component before it runs, one protocol check and one deep copy
per document of a list. A query's channels hand the joiner five lists (~150 documents) and the joiner hands MMR
its fused list (~80): most of what Haystack's copies cost a query. :class:`SharedDocuments` is an immutable
sequence, so its deep copy is itself and a hop costs one check. Its documents are shared between the sender and
every receiver: a component that takes one reads it and makes a new document for what it changes (the joiner and
MMR do, with :func:`~adaptive_retrieval.components.document_copy.with_fields`), never changes it in place.

With ``share_documents=True`` (the query pipeline's) the channels and the joiner send it on ``documents``, typed
``Iterable[Document]``: a receiver typed ``Iterable[Document]`` (the joiner's channel inputs, MMR's ``documents``)
takes it and a plain ``list[Document]`` alike, so a stock retriever or a YAML saved before still connects; a
receiver typed ``list[Document]`` refuses it at ``connect`` (without the flag they send a list, as before).

Usage::

    ranked = SharedDocuments(documents)     # what a sharing channel sends on `documents`
    ranked[0].id, len(ranked), list(ranked)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from haystack import Document

from adaptive_retrieval.components.frozen_sequence import FrozenSequence

#: The type a sharing ``documents`` output declares, and the inputs that take it.
RankedDocuments = Iterable[Document]


class SharedDocuments(FrozenSequence[Document]):
    """An immutable ranked list of documents (see the module docstring): indexing, slicing, ``len`` and iteration
    as a list; its copies, deep or shallow, are itself (the documents are shared by contract: no receiver changes
    one in place).

    :param documents: the documents, best first.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return f"SharedDocuments({[d.id for d in self]})"

    def to_dict(self) -> dict[str, Any]:
        """``{"documents": [document.to_dict(), ...]}`` (Haystack serialises a pipeline's inputs with it in a
        snapshot)."""
        return {"documents": [d.to_dict() for d in self]}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SharedDocuments:
        """The inverse of :meth:`to_dict`."""
        return cls(Document.from_dict(d) for d in data.get("documents", []))


def documents_type(share_documents: bool) -> Any:
    """The type a ``documents`` output declares: :data:`RankedDocuments` when shared, else ``list[Document]``."""
    return RankedDocuments if share_documents else list[Document]


def hand_on(documents: Iterable[Document], share_documents: bool) -> Iterable[Document]:
    """``documents`` as a ``documents`` output of :func:`documents_type` sends them: one :class:`SharedDocuments`,
    or a list (a list given is sent as it is)."""
    if share_documents:
        return documents if isinstance(documents, SharedDocuments) else SharedDocuments(documents)
    return documents if isinstance(documents, list) else list(documents)
