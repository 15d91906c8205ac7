"""Write extracted entities into the knowledge graph, replacing what each document held before."""

from __future__ import annotations

import logging
from typing import Any

from haystack import component, default_from_dict

from adaptive_retrieval.components.indexing.faults import fault_point
from adaptive_retrieval.components.stores.graph.graph_store import (
    ChunkEntities,
    GraphStore,
    graph_store_from_init_parameters,
)
from adaptive_retrieval.components.stores.serialization import to_dict_with_stores

logger = logging.getLogger(__name__)


@component
class GraphWriter:
    """Writes ``Entity —MENTIONED_IN→ Chunk`` (with counts and salience weights) and the co-occurrence
    ``Entity —RELATES_TO— Entity`` weights of the chunks it receives.

    Writes are incremental per ``doc_id``: a document's previous chunks, mentions and co-occurrences are
    replaced by the new ones (the relation weights change by the difference), so re-indexing one document never
    rebuilds the graph. ``chunks_changed`` feeds :class:`CommunityDetector`, which recomputes communities once
    enough of the graph changed.

    Usage::

        writer = GraphWriter(graph_store=SQLiteGraphStore(".adaptive/graph.sqlite"))
        writer.run(entities=extractor.run(documents=chunks)["entities"])
    """

    def __init__(self, graph_store: GraphStore) -> None:
        """:param graph_store: any :class:`~adaptive_retrieval.components.stores.graph.graph_store.GraphStore`."""
        if not isinstance(graph_store, GraphStore):
            msg = f"graph_store must implement the GraphStore protocol, got {type(graph_store).__name__}"
            raise TypeError(msg)
        self.graph_store = graph_store

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the graph store's own dictionary."""
        return to_dict_with_stores(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GraphWriter:
        """Deserialise, rebuilding the graph store from its type."""
        return default_from_dict(cls, graph_store_from_init_parameters(data))

    @component.output_types(chunks_written=int, chunks_deleted=int, chunks_changed=int, relations_changed=int)
    def run(self, entities: list[ChunkEntities]) -> dict[str, int]:
        """Replace the graph records of every document that ``entities`` covers.

        :raises TypeError: when ``entities`` is not a list of :class:`ChunkEntities`.
        """
        if not isinstance(entities, list) or any(not isinstance(e, ChunkEntities) for e in entities):
            msg = "GraphWriter expects the list of ChunkEntities that EntityExtractor outputs"
            raise TypeError(msg)
        result = self.graph_store.replace_chunks(entities)
        fault_point("graph.after_write")
        if result.chunks_deleted:
            logger.info(
                "Graph: %d document(s) replaced, %d stale chunk(s) removed", len(result.doc_ids), result.chunks_deleted
            )
        return {
            "chunks_written": result.chunks_written,
            "chunks_deleted": result.chunks_deleted,
            "chunks_changed": result.chunks_written + result.chunks_deleted,
            "relations_changed": result.relations_changed,
        }
