"""What every retrieval channel shares: the skip rule for per-query channel weights, failing softly (the reason
sent on as data), and documents that are cheap to pass down the pipeline: without their vectors (MMR reads the
vectors of its candidates from the store by id). The contract a channel component follows, and the registry of
channels, are in :mod:`adaptive_retrieval.components.retrieval.channels`."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from haystack import Document, component

from adaptive_retrieval.components.blas_threads import one_blas_thread
from adaptive_retrieval.components.document_copy import copy_document
from adaptive_retrieval.components.shared_documents import RankedDocuments, SharedDocuments
from adaptive_retrieval.components.strategy import WeightsInput

logger = logging.getLogger(__name__)


def channel_enabled(channel: str, weights: WeightsInput) -> bool:
    """A channel runs unless the router gave it a weight of zero (no weights at all means run)."""
    return weights is None or weights.get(channel, 0.0) > 0.0


class SharedEmbeddingDocument(Document):
    """A ``Document`` whose deep copy shares its (read-only) embedding list.

    Haystack deep-copies every component input. A channel's documents travel without their vectors; the few that
    MMR selects go on with theirs through the reranker and the gate: copying 384 floats per document at each hop
    cost 22 ms per 150 documents (1.6 ms with the vector shared). Nothing downstream changes an embedding in
    place; everything else is copied.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> SharedEmbeddingDocument:
        return copy_document(self, shared=_SHARED_FIELDS)  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        """Equal to any ``Document`` with the same fields (``Document`` itself also compares the class)."""
        return isinstance(other, Document) and self.to_dict(flatten=False) == other.to_dict(flatten=False)

    __hash__ = Document.__hash__


_SHARED_FIELDS = frozenset({"embedding"})


def channel_documents(documents: list[Document], dense: bool = False) -> list[Document]:
    """A channel's output as it travels on: no sparse vector (nothing downstream reads it) and no dense one
    (MMR reads its candidates' vectors from the store by id,
    :meth:`~adaptive_retrieval.components.stores.documents.vector_search.VectorSearch.dense_vectors`; a channel hands a
    few hundred documents per query to the joiner and to the channels that read its list). ``dense=True`` keeps the
    dense vector, shared on a copy (see :class:`SharedEmbeddingDocument`). The store's documents are fresh
    objects, so their fields move over as they are."""
    out = []
    for document in documents:
        shared = object.__new__(SharedEmbeddingDocument)
        # Filled directly, as a deep copy is: no __init__ or mutation warning per field.
        shared.__dict__.update(document.__dict__, sparse_embedding=None)
        if not dense:
            shared.__dict__["embedding"] = None
        out.append(shared)
    return out


def declare_outputs(instance: Any, share_documents: bool, **extra: Any) -> None:
    """Declare a channel's outputs (in its ``__init__``): ``documents`` and ``failure``, and ``extra`` ones.

    ``documents`` is ``list[Document] | None`` by default, what any Haystack component takes. With
    ``share_documents`` it is ``RankedDocuments | None`` (``Iterable[Document]``) and its value one
    :class:`~adaptive_retrieval.components.shared_documents.SharedDocuments`: Haystack copies it as one value
    instead of document by document (the query pipeline's channels hand the joiner ~150 documents a query). Only a
    receiver typed ``Iterable[Document]`` (the joiner) connects to it: a list receiver fails at ``connect``.
    """
    documents = (RankedDocuments if share_documents else list[Document]) | None
    component.set_output_types(instance, documents=documents, failure=str | None, **extra)


def found_output(documents: list[Document] | None, share_documents: bool) -> dict[str, Any]:
    """A channel's ``documents`` as :func:`declare_outputs` declared them (``None`` when the channel failed)."""
    if documents is None or not share_documents:
        return {"documents": documents}
    return {"documents": SharedDocuments(documents)}


def skipped_output(share_documents: bool) -> dict[str, Any]:
    """A channel's ``documents`` when it does not search (no weight for this query, nothing to search for)."""
    return found_output([], share_documents)


def search_or_failure(
    channel: str, search: Callable[[], list[Document]], share_documents: bool = False
) -> dict[str, Any]:
    """Run a channel's search: ``{"documents": [...]}`` (as :func:`found_output` hands them on), or when the store
    fails (server down, timeout, closed client) ``{"documents": None, "failure": "<error type>: <message>"}``.
    The joiner skips a ``None`` list (renormalising the other weights, so one channel never fails the query) and
    reports the failure it receives on the channel's ``<channel>_failure`` socket in its ``fusion`` output: the
    reason travels as data, and is logged.

    ``ValueError`` and ``TypeError`` still raise: they mean a wrong call or configuration (e.g. an embedding
    dimension the collection does not hold), which retrying or skipping would only hide.
    """
    try:
        with one_blas_thread():  # section, graph and feedback scores multiply small matrices
            found = search()
        return found_output(channel_documents(found), share_documents)
    except (ValueError, TypeError):
        raise
    except Exception as err:
        logger.warning("Channel '%s' failed and is skipped for this query: %s: %s", channel, type(err).__name__, err)
        return {"documents": None, "failure": f"{type(err).__name__}: {err}"}
