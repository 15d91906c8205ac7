"""The document store both pipelines share, configured from arguments or the environment: Qdrant Edge in
process for a local folder (the default), qdrant-haystack's ``QdrantDocumentStore`` for a Qdrant server."""

from __future__ import annotations

from typing import Any

from haystack.utils import Secret

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.stores.edge_document_store import EdgeDocumentStore
from adaptive_retrieval.components.stores.edge_shards import DEFAULT_PAYLOAD_INDEXES
from adaptive_retrieval.components.stores.graph_store import GraphStore
from adaptive_retrieval.components.stores.locations import (
    GRAPH_FILE,
    GRAPH_PATH_ENV,
    NEO4J_DATABASE_ENV,
    NEO4J_URI_ENV,
    QDRANT_PATH_ENV,
    QDRANT_URL_ENV,
    graph_file,
    qdrant_folder,
)
from adaptive_retrieval.components.stores.neo4j_graph_store import Neo4jGraphStore
from adaptive_retrieval.components.stores.sqlite_graph_store import SQLiteGraphStore

DEFAULT_INDEX = "adaptive"
DEFAULT_DIM = 384
__all__ = [
    "GRAPH_FILE",
    "GRAPH_PATH_ENV",
    "NEO4J_URI_ENV",
    "QDRANT_PATH_ENV",
    "QDRANT_URL_ENV",
    "make_graph_store",
    "make_store",
    "qdrant_folder",
]


def make_store(
    path: str | None = None,
    url: str | None = None,
    index: str = DEFAULT_INDEX,
    embedding_dim: int = DEFAULT_DIM,
    **extra: Any,
) -> Any:
    """The document store: a Qdrant server at ``url`` (or ``$QDRANT_URL``) through qdrant-haystack's
    ``QdrantDocumentStore`` (extra keyword arguments such as ``shard_number``, ``replication_factor``, ``on_disk``
    pass through to it), else an embedded :class:`EdgeDocumentStore` at ``path`` (``None``: the store reads
    ``$ADAPTIVE_QDRANT_PATH`` when it opens, default ``$XDG_DATA_HOME/adaptive-retrieval/qdrant``); ``create=False``
    (the query side) makes a missing embedded index an error instead of an empty store."""
    url = url or settings.text(QDRANT_URL_ENV)
    if url:
        extra.pop("create", None)  # a server creates collections itself
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        return QdrantDocumentStore(
            url=url,
            api_key=Secret.from_env_var("QDRANT_API_KEY", strict=False),
            index=index,
            embedding_dim=embedding_dim,
            use_sparse_embeddings=True,
            sparse_idf=True,
            progress_bar=False,
            payload_fields_to_index=[
                {"field_name": field, "field_schema": schema} for field, schema in DEFAULT_PAYLOAD_INDEXES.items()
            ],
            **extra,
        )
    return EdgeDocumentStore(path=path, index=index, embedding_dim=embedding_dim, **extra)


def default_graph_path(qdrant_path: str | None = None) -> str:
    """The embedded graph file beside the Qdrant folder: ``/data/idx/qdrant`` → ``/data/idx/graph.sqlite``."""
    return str(qdrant_folder(qdrant_path).parent / GRAPH_FILE)


def make_graph_store(
    path: str | None = None, url: str | None = None, qdrant_path: str | None = None, **extra: Any
) -> GraphStore:
    """The graph store: Neo4j at ``url`` (or, when neither ``url`` nor ``path`` is given, ``$NEO4J_URI``;
    credentials from ``$NEO4J_USERNAME`` / ``$NEO4J_PASSWORD`` as Secrets), else SQLite at ``path``
    (``$ADAPTIVE_GRAPH_PATH``, or next to the Qdrant folder ``qdrant_path``; with neither, ``path`` stays ``None``
    and the store resolves it when it opens). ``create=False`` (the query side) makes a missing file an error."""
    if url is None and path is None:
        url = settings.text(NEO4J_URI_ENV)
    if url:
        extra.pop("create", None)  # a server creates its database itself
        return Neo4jGraphStore(url=url, database=settings.text(NEO4J_DATABASE_ENV) or "neo4j", **extra)
    if path is None and qdrant_path and not settings.is_set(GRAPH_PATH_ENV):
        path = str(graph_file(None, qdrant_path))
    return SQLiteGraphStore(path=path, **extra)
