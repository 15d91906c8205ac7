"""Document and graph stores.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.stores import EdgeDocumentStore
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "edge_document_store": ["EdgeDocumentStore"],
    "remote_document_store": ["RemoteDocumentStore"],
    "sqlite_graph_store": ["SQLiteGraphStore"],
    "neo4j_graph_store": ["Neo4jGraphStore"],
    "graph_store": ["GraphStore"],
    "store_errors": ["StoreError"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.stores.edge_document_store import EdgeDocumentStore as EdgeDocumentStore
    from adaptive_retrieval.components.stores.graph_store import GraphStore as GraphStore
    from adaptive_retrieval.components.stores.neo4j_graph_store import Neo4jGraphStore as Neo4jGraphStore
    from adaptive_retrieval.components.stores.remote_document_store import RemoteDocumentStore as RemoteDocumentStore
    from adaptive_retrieval.components.stores.sqlite_graph_store import SQLiteGraphStore as SQLiteGraphStore
    from adaptive_retrieval.components.stores.store_errors import StoreError as StoreError

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
