"""Which index a graph belongs to: an id the document store keeps for itself, recorded in the graph it writes.

Two indexes writing one graph (two folders sharing a graph file, two collections on one Neo4j database) mix their
graph records, and each one's reconciliation drops the other's as orphans. Before it writes anything, indexing
claims the graph for its document store (:func:`claim_graph`): a graph no index claimed yet becomes this one's, a
graph of another index is refused with what to do. ``stats`` asks the same without writing (:func:`graph_problem`).

The id lives in the document collection as one record beside the manifest records (``meta.level = -1``, ``kind =
"index"``), so it moves with the index and works the same on a local folder and a server.

Usage::

    claim_graph(store, graph_store)        # before indexing; raises GraphOwnedError for another index's graph
    graph_problem(store, graph_store)      # None, or why this graph is not this index's
"""

from __future__ import annotations

import uuid
from typing import Any

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from adaptive_retrieval.components.ids import stable_id
from adaptive_retrieval.components.manifest_records import MANIFEST_LEVEL
from adaptive_retrieval.components.stores.graph.graph_store import GraphOwnedError, GraphOwner

#: The record's ``meta.kind`` (manifest records are ``manifest``).
IDENTITY_KIND = "index"
IDENTITY_ID = stable_id("index", "identity")


def where(store: Any) -> str:
    """Where the index of ``store`` is, for messages: its folder, or its server and collection."""
    folder = getattr(store, "folder", None)
    if folder is not None:
        return str(folder)
    place = getattr(store, "url", None) or getattr(store, "path", None) or getattr(store, "location", None)
    collection = getattr(store, "index", None)
    return f"{place or type(store).__name__}" + (f" (collection '{collection}')" if collection else "")


def read_identity(store: Any) -> str | None:
    """The index's id, or ``None`` when it has none yet."""
    for doc in store.get_documents_by_id([IDENTITY_ID]):
        if doc.meta.get("kind") == IDENTITY_KIND and doc.meta.get("index_id"):
            return str(doc.meta["index_id"])
    return None


def write_identity(store: Any, index_id: str) -> None:
    """Record the index's id (no embedding, level -1: never searched, never counted as a node)."""
    record = Document(
        id=IDENTITY_ID, content=None, meta={"level": MANIFEST_LEVEL, "kind": IDENTITY_KIND, "index_id": index_id}
    )
    store.write_documents([record], policy=DuplicatePolicy.OVERWRITE)


def _graph_matches_records(store: Any, graph_store: Any) -> bool:
    """Whether the index's manifest records account for every document of the graph (and there are records):
    the graph is this index's although its id record was lost."""
    from adaptive_retrieval.components.indexing.manifest import read_manifests

    records = read_manifests(store)
    counts = getattr(graph_store, "document_chunk_counts", None)
    if not records or not callable(counts):
        return False
    known = {str(r.get("source_doc_id")) for r in records.values() if r.get("source_doc_id")}
    return set(counts()) <= known


def _owner(graph_store: Any) -> GraphOwner | None:
    owner = getattr(graph_store, "owner", None)
    return owner() if callable(owner) else None


def claim_graph(store: Any, graph_store: Any) -> None:
    """Make sure ``graph_store`` is the graph of the index in ``store`` before indexing writes either: give the
    index an id when it has none, and claim a graph no index claimed yet. A graph store without owners (one of
    your own) is left alone.

    :raises GraphOwnedError: when the graph belongs to another index.
    """
    if graph_store is None or not callable(getattr(graph_store, "claim", None)):
        return
    index_id = read_identity(store)
    owner = _owner(graph_store)
    if owner is not None and owner.id != index_id:
        if index_id is None and _graph_matches_records(store, graph_store):
            write_identity(store, owner.id)  # this index's graph; the index lost its id record
            return
        raise GraphOwnedError(graph_store.owned_message(owner, where(store)))
    if index_id is None:
        index_id = f"index-{uuid.uuid4().hex}"
        write_identity(store, index_id)  # first, so that a graph claimed is always claimed by a recorded id
    if owner is None:
        graph_store.claim(index_id, where(store))


def graph_problem(store: Any, graph_store: Any) -> str | None:
    """Why ``graph_store`` is not the graph of the index in ``store`` (it belongs to another index), or ``None``;
    reads only."""
    owner = _owner(graph_store) if graph_store is not None else None
    if owner is None:
        return None
    index_id = read_identity(store)
    if owner.id == index_id or (index_id is None and _graph_matches_records(store, graph_store)):
        return None
    return graph_store.owned_message(owner, where(store))
