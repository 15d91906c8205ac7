"""The document store both pipelines share, configured from arguments or the environment: Qdrant Edge in
process for a local folder (the default), qdrant-haystack's ``QdrantDocumentStore`` for a Qdrant server.

``$QDRANT_URL`` may also name qdrant-client's *in-process* mode, which speaks the server's client API without a
server: ``:memory:`` (a database in memory, gone when the process ends) or ``file:///abs/folder`` (a local folder).
It is the server path's code (same store class, same retrievers) for tests and CI; it holds one client per
process, which :func:`shared_in_process_store` gives to every component of every pipeline loaded here.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any
from urllib.parse import unquote, urlparse

from haystack.utils import Secret

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.locations import (
    GRAPH_FILE,
    GRAPH_PATH_ENV,
    NEO4J_DATABASE_ENV,
    NEO4J_LABEL_PREFIX_ENV,
    NEO4J_URI_ENV,
    QDRANT_PATH_ENV,
    QDRANT_URL_ENV,
    STORE_SOCKET_ENV,
    graph_file,
    qdrant_folder,
)
from adaptive_retrieval.components.stores.documents.edge_document_store import EdgeDocumentStore
from adaptive_retrieval.components.stores.documents.edge_shards import DEFAULT_PAYLOAD_INDEXES
from adaptive_retrieval.components.stores.graph.graph_store import GraphStore
from adaptive_retrieval.components.stores.graph.neo4j_graph_store import Neo4jGraphStore
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore

DEFAULT_INDEX = "adaptive"
DEFAULT_DIM = 384
#: ``$QDRANT_URL`` for qdrant-client's in-memory database in this process (no server).
IN_MEMORY = ":memory:"
__all__ = [
    "GRAPH_FILE",
    "GRAPH_PATH_ENV",
    "IN_MEMORY",
    "NEO4J_URI_ENV",
    "QDRANT_PATH_ENV",
    "QDRANT_URL_ENV",
    "STORE_SOCKET_ENV",
    "in_process_location",
    "make_graph_store",
    "make_store",
    "qdrant_folder",
    "release_in_process_stores",
    "shared_in_process_store",
]


def in_process_location(url: str) -> dict[str, str] | None:
    """qdrant-client's in-process mode that ``url`` names: ``{"location": ":memory:"}`` for ``:memory:``,
    ``{"path": FOLDER}`` for ``file:///FOLDER``; ``None`` for anything else (a server URL).

    :raises ValueError: for a ``file:`` URL without an absolute folder or with a host.
    """
    if url == IN_MEMORY:
        return {"location": IN_MEMORY}
    parsed = urlparse(url)
    if parsed.scheme != "file":
        return None
    folder = unquote(parsed.path)
    if parsed.netloc not in ("", "localhost") or not os.path.isabs(folder):
        msg = f"QDRANT_URL={url!r}: a local folder is written file:///absolute/folder"
        raise ValueError(msg)
    return {"path": folder}


_SHARED: dict[tuple[str | None, str | None, str], Any] = {}
_SHARED_LOCK = threading.Lock()


def shared_in_process_store(store: Any) -> Any:
    """The process's one ``QdrantDocumentStore`` for the in-process database ``store`` names (same location or
    folder, same collection), ``store`` itself the first time; any other store is returned as it is.

    qdrant-client's in-memory database belongs to the client that made it (a second client sees an empty one)
    and a local folder admits one client (a second is refused): the components of the query and indexing
    pipelines must hold the same store object. The stores are created lazily (no client until first use), so
    the ones replaced here never open anything.
    """
    # A QdrantDocumentStore exists only once its module is loaded: the embedded path never imports qdrant-client
    # (its models take over a second to import, most of a one-shot CLI query).
    module = sys.modules.get("haystack_integrations.document_stores.qdrant")
    if module is None or not isinstance(store, module.QdrantDocumentStore):
        return store
    location = getattr(store, "location", None)
    path = getattr(store, "path", None)
    if location != IN_MEMORY and not path:
        return store
    key = (location, os.path.abspath(path) if path else None, store.index)
    with _SHARED_LOCK:
        return _SHARED.setdefault(key, store)


def release_in_process_stores() -> None:
    """Close and forget the shared in-process stores (the next pipeline loaded starts a fresh database)."""
    with _SHARED_LOCK:
        stores = list(_SHARED.values())
        _SHARED.clear()
    for store in stores:
        store.close()


def make_store(
    path: str | None = None,
    url: str | None = None,
    index: str = DEFAULT_INDEX,
    embedding_dim: int = DEFAULT_DIM,
    **extra: Any,
) -> Any:
    """The document store: a Qdrant server at ``url`` (or ``$QDRANT_URL``) through qdrant-haystack's
    ``QdrantDocumentStore`` (extra keyword arguments such as ``shard_number``, ``replication_factor``, ``on_disk``
    pass through to it; ``:memory:`` or ``file:///folder``: qdrant-client's in-process mode, see
    :func:`in_process_location` and :func:`shared_in_process_store`), else an embedded
    :class:`EdgeDocumentStore` at ``path`` (``None``: the store reads
    ``$ADAPTIVE_QDRANT_PATH`` when it opens, default ``$XDG_DATA_HOME/adaptive-retrieval/qdrant``), or, in a worker of
    ``serve --workers N`` (``socket`` or ``$ADAPTIVE_STORE_SOCKET``), a ``RemoteDocumentStore`` on the store host that
    owns that folder; ``create=False``
    (the query side) makes a missing embedded index an error instead of an empty store."""
    url = url or settings.text(QDRANT_URL_ENV)
    socket = extra.pop("socket", None) or (None if url else settings.text(STORE_SOCKET_ENV))
    if socket and not url:
        # A worker of `serve --workers N`: the index is open in the store host (pipelines/processes/workers.py).
        from adaptive_retrieval.components.stores.documents.remote_document_store import RemoteDocumentStore

        return RemoteDocumentStore(socket=socket, path=path, index=index, embedding_dim=embedding_dim, **extra)
    if url:
        extra.pop("create", None)  # a server creates collections itself
        from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

        # qdrant-client's in-process mode (":memory:", file:///folder), else a server at that URL.
        where: dict[str, Any] = {"url": url}
        local = in_process_location(url)
        if local:
            # A local folder is read by the server's worker threads, not only the thread that opened it.
            where = {**local, "force_disable_check_same_thread": "path" in local}
        return QdrantDocumentStore(
            **where,
            api_key=Secret.from_env_var("QDRANT_API_KEY", strict=False),
            index=index,
            embedding_dim=embedding_dim,
            use_sparse_embeddings=True,
            sparse_idf=True,
            progress_bar=False,
            # Payload indexes are a server's (qdrant-client's in-process mode warns that they do nothing there).
            payload_fields_to_index=None
            if local
            else [{"field_name": field, "field_schema": schema} for field, schema in DEFAULT_PAYLOAD_INDEXES.items()],
            **extra,
        )
    return EdgeDocumentStore(path=path, index=index, embedding_dim=embedding_dim, **extra)


def default_graph_path(qdrant_path: str | None = None) -> str:
    """The embedded graph file in the Qdrant folder: ``/data/idx/qdrant`` → ``/data/idx/qdrant/graph.sqlite`` (a
    graph an earlier version kept beside the folder is moved in when the store opens: see
    :mod:`~adaptive_retrieval.components.stores.graph.graph_location`)."""
    return str(qdrant_folder(qdrant_path) / GRAPH_FILE)


def make_graph_store(
    path: str | None = None, url: str | None = None, qdrant_path: str | None = None, **extra: Any
) -> GraphStore:
    """The graph store: Neo4j at ``url`` (or, when neither ``url`` nor ``path`` is given, ``$NEO4J_URI``;
    credentials from ``$NEO4J_USERNAME`` / ``$NEO4J_PASSWORD`` as Secrets), else SQLite at ``path``
    (``$ADAPTIVE_GRAPH_PATH``, or in the Qdrant folder ``qdrant_path``; with neither, ``path`` stays ``None``
    and the store resolves it when it opens). ``create=False`` (the query side) makes a missing file an error."""
    if url is None and path is None:
        url = settings.text(NEO4J_URI_ENV)
    if url:
        extra.pop("create", None)  # a server creates its database itself
        extra.setdefault("label_prefix", settings.text(NEO4J_LABEL_PREFIX_ENV) or "")
        return Neo4jGraphStore(url=url, database=settings.text(NEO4J_DATABASE_ENV) or "neo4j", **extra)
    if path is None and qdrant_path and not settings.is_set(GRAPH_PATH_ENV):
        path = str(graph_file(None, qdrant_path))
    return SQLiteGraphStore(path=path, **extra)
