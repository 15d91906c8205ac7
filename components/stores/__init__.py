"""Document and graph stores, in rooms by role, each importing only the rooms below it:

- this folder (the ground floor): the stores' error family, disk space, serialising components that hold stores;
- ``caches/``: the per-process caches of vectors, points and generations the stores keep;
- ``graph/``: the ``GraphStore`` contract, the SQLite and Neo4j graph stores, where a graph file lives;
- ``documents/``: the Qdrant Edge document store and its parts, the remote store of ``serve --workers N``, and the
  vector-search interface the channels use.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.stores import EdgeDocumentStore
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "documents.edge_document_store": ["EdgeDocumentStore"],
    "documents.remote_document_store": ["RemoteDocumentStore"],
    "graph.sqlite_graph_store": ["SQLiteGraphStore"],
    "graph.neo4j_graph_store": ["Neo4jGraphStore"],
    "graph.graph_store": ["GraphStore"],
    "store_errors": ["StoreError"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.stores.documents.edge_document_store import (
        EdgeDocumentStore as EdgeDocumentStore,
    )
    from adaptive_retrieval.components.stores.documents.remote_document_store import (
        RemoteDocumentStore as RemoteDocumentStore,
    )
    from adaptive_retrieval.components.stores.graph.graph_store import GraphStore as GraphStore
    from adaptive_retrieval.components.stores.graph.neo4j_graph_store import Neo4jGraphStore as Neo4jGraphStore
    from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore as SQLiteGraphStore
    from adaptive_retrieval.components.stores.store_errors import StoreError as StoreError

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
