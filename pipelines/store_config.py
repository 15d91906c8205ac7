"""The document store both pipelines share, configured from arguments or the environment."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from haystack.utils import Secret

from components.stores.graph_store import GraphStore
from components.stores.neo4j_graph_store import Neo4jGraphStore
from components.stores.qdrant_store import SharedQdrantDocumentStore
from components.stores.sqlite_graph_store import SQLiteGraphStore

DEFAULT_PATH = ".adaptive/qdrant"
DEFAULT_INDEX = "adaptive"
DEFAULT_DIM = 384
QDRANT_URL_ENV = "QDRANT_URL"
QDRANT_PATH_ENV = "ADAPTIVE_QDRANT_PATH"
#: The embedded graph store is a SQLite file next to the Qdrant folder (``.adaptive/graph.sqlite``).
GRAPH_FILE = "graph.sqlite"
GRAPH_PATH_ENV = "ADAPTIVE_GRAPH_PATH"
NEO4J_URI_ENV = "NEO4J_URI"
NEO4J_DATABASE_ENV = "NEO4J_DATABASE"

#: Payload indexes that make the filters the pipelines use (source replacement, sections, levels) fast.
PAYLOAD_INDEXES = [
    {"field_name": "meta.doc_id", "field_schema": "keyword"},
    {"field_name": "meta.source", "field_schema": "keyword"},
    {"field_name": "meta.section_id", "field_schema": "keyword"},
    {"field_name": "meta.level", "field_schema": "integer"},
]


def store_parameters(
    path: str | None = None,
    url: str | None = None,
    index: str = DEFAULT_INDEX,
    embedding_dim: int = DEFAULT_DIM,
    **extra: Any,
) -> dict[str, Any]:
    """Init parameters of the shared store: ``url`` (or ``$QDRANT_URL``) for a server, else a local ``path``
    (``$ADAPTIVE_QDRANT_PATH`` or ``.adaptive/qdrant``). Extra keyword arguments (``shard_number``,
    ``replication_factor``, ``on_disk``...) pass through to ``QdrantDocumentStore``."""
    url = url or os.environ.get(QDRANT_URL_ENV) or None
    params: dict[str, Any] = {
        "index": index,
        "embedding_dim": embedding_dim,
        "use_sparse_embeddings": True,
        "sparse_idf": True,
        "progress_bar": False,
    }
    if url:
        # Local mode ignores payload indexes (and warns); a server needs them for fast filtered deletes.
        params["payload_fields_to_index"] = PAYLOAD_INDEXES
        params["url"] = url
        params["api_key"] = Secret.from_env_var("QDRANT_API_KEY", strict=False)
    else:
        params["path"] = path or os.environ.get(QDRANT_PATH_ENV) or DEFAULT_PATH
    params.update(extra)
    return params


def make_store(**kwargs: Any) -> SharedQdrantDocumentStore:
    """A :class:`SharedQdrantDocumentStore` built from :func:`store_parameters`."""
    return SharedQdrantDocumentStore(**store_parameters(**kwargs))


def default_graph_path(qdrant_path: str | None = None) -> str:
    """The embedded graph file beside the Qdrant folder: ``.adaptive/qdrant`` → ``.adaptive/graph.sqlite``."""
    base = qdrant_path or os.environ.get(QDRANT_PATH_ENV) or DEFAULT_PATH
    return str(Path(base).parent / GRAPH_FILE)


def make_graph_store(
    path: str | None = None, url: str | None = None, qdrant_path: str | None = None, **extra: Any
) -> GraphStore:
    """The graph store: Neo4j at ``url`` (or, when neither ``url`` nor ``path`` is given, ``$NEO4J_URI``;
    credentials from ``$NEO4J_USERNAME`` / ``$NEO4J_PASSWORD`` as Secrets), else SQLite at ``path``
    (``$ADAPTIVE_GRAPH_PATH``, or next to the Qdrant folder ``qdrant_path``)."""
    if url is None and path is None:
        url = os.environ.get(NEO4J_URI_ENV) or None
    if url:
        return Neo4jGraphStore(url=url, database=os.environ.get(NEO4J_DATABASE_ENV) or "neo4j", **extra)
    return SQLiteGraphStore(path=path or os.environ.get(GRAPH_PATH_ENV) or default_graph_path(qdrant_path), **extra)
