"""Document and graph stores, in rooms by role, each importing only the rooms below it:

- this folder (the ground floor): the stores' error family, disk space, serialising components that hold stores;
- ``caches/``: the per-process caches of vectors, points and generations the stores keep;
- ``graph/``: the ``GraphStore`` contract, the SQLite and Neo4j graph stores, where a graph file lives;
- ``documents/``: the Qdrant Edge document store and its parts, the remote store of ``serve --workers N``, and the
  vector-search interface the channels use.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.stores import EdgeDocumentStore

Besides the stores: ``release_all_clients`` and ``release_all_connections`` (close what a process holds open),
``QdrantServerSearch`` (vector search on a Qdrant server), the graph's typed reads (``ChunkEntities``,
``EntityInfo``, ``Subgraph``), ``free_bytes`` and ``margin_bytes`` (the disk space a write checks).
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "documents.edge_document_store": ["EdgeDocumentStore"],
    "documents.edge_shards": ["release_all_clients"],
    "documents.remote_document_store": ["RemoteDocumentStore"],
    "documents.vector_search": ["QdrantServerSearch"],
    "graph.sqlite_graph_store": ["SQLiteGraphStore"],
    "graph.sqlite_schema": ["release_all_connections"],
    "graph.neo4j_graph_store": ["Neo4jGraphStore"],
    "graph.graph_store": ["GraphStore", "ChunkEntities", "EntityInfo", "Subgraph"],
    "store_errors": ["StoreError"],
    "disk_space": ["free_bytes", "margin_bytes"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.stores.disk_space import free_bytes as free_bytes
    from adaptive_retrieval.components.stores.disk_space import margin_bytes as margin_bytes
    from adaptive_retrieval.components.stores.documents.edge_document_store import (
        EdgeDocumentStore as EdgeDocumentStore,
    )
    from adaptive_retrieval.components.stores.documents.edge_shards import (
        release_all_clients as release_all_clients,
    )
    from adaptive_retrieval.components.stores.documents.remote_document_store import (
        RemoteDocumentStore as RemoteDocumentStore,
    )
    from adaptive_retrieval.components.stores.documents.vector_search import QdrantServerSearch as QdrantServerSearch
    from adaptive_retrieval.components.stores.graph.graph_store import ChunkEntities as ChunkEntities
    from adaptive_retrieval.components.stores.graph.graph_store import EntityInfo as EntityInfo
    from adaptive_retrieval.components.stores.graph.graph_store import GraphStore as GraphStore
    from adaptive_retrieval.components.stores.graph.graph_store import Subgraph as Subgraph
    from adaptive_retrieval.components.stores.graph.neo4j_graph_store import Neo4jGraphStore as Neo4jGraphStore
    from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore as SQLiteGraphStore
    from adaptive_retrieval.components.stores.graph.sqlite_schema import (
        release_all_connections as release_all_connections,
    )
    from adaptive_retrieval.components.stores.store_errors import StoreError as StoreError

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
