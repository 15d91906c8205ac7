"""Haystack document store that sends every call to the process owning an embedded Qdrant Edge index.

An Edge folder has one owner (Edge locks its write-ahead log). ``adaptive-retrieval serve --workers N`` starts one
store host (:mod:`adaptive_retrieval.pipelines.processes.store_host`) that opens the shard, and N serving workers whose
pipelines hold this store instead: each call (search, fetch, count, write, delete) goes to the host over a private
Unix socket (:mod:`~adaptive_retrieval.components.stores.documents.store_wire`) and runs there on the one open shard, so
every worker sees every write as soon as the host has made it, and the host stays the only writer. Edge releases
the GIL while it searches, so the host answers several workers at once.

The store has the same contract as
:class:`~adaptive_retrieval.components.stores.documents.edge_document_store.EdgeDocumentStore`
(``tests/test_store_contract.py`` runs on both), and errors come back as the same exceptions (a damaged index is a
``StoreDamagedError`` here too). When the host cannot be reached (it is restarting), a call retries for
``$ADAPTIVE_STORE_HOST_WAIT_S`` seconds (default 30), then raises :class:`StoreHostUnavailableError`.

Usage::

    store = RemoteDocumentStore(socket="/run/user/1000/adaptive-x/store.sock", path="/data/qdrant")
    hits = store.search_dense(query_vector, top_k=10)
"""

from __future__ import annotations

import logging
import socket as socket_module
import threading
import time
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
from haystack import Document, default_from_dict, default_to_dict
from haystack.dataclasses import SparseEmbedding
from haystack.document_stores.errors import DocumentStoreError
from haystack.document_stores.types import DuplicatePolicy

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.locations import STORE_SOCKET_ENV, qdrant_folder
from adaptive_retrieval.components.stores.caches.vector_cache import CAPACITY_ENV, shared_vector_cache, vector_row
from adaptive_retrieval.components.stores.documents.edge_document_store import (
    DEFAULT_HNSW_EF,
    DEFAULT_OPTIMIZE_THRESHOLD,
)
from adaptive_retrieval.components.stores.documents.edge_shards import check_store_settings
from adaptive_retrieval.components.stores.documents.store_wire import recv_message, send_message
from adaptive_retrieval.components.stores.documents.vector_search import check_query_dimension
from adaptive_retrieval.components.stores.documents.wire_documents import WireDocuments
from adaptive_retrieval.components.stores.store_errors import StoreError

logger = logging.getLogger(__name__)

#: Environment variable naming the store host's socket (set by ``serve --workers`` in each worker).
SOCKET_ENV = STORE_SOCKET_ENV
#: Seconds a call keeps trying to reach a host that does not answer (a restarting host).
WAIT_ENV = "ADAPTIVE_STORE_HOST_WAIT_S"
#: Methods a host runs for a remote store: the DocumentStore protocol, the channels' searches, maintenance.
REMOTE_METHODS = frozenset(
    {
        "count_documents",
        "count_documents_by_filter",
        "filter_documents",
        "write_documents",
        "delete_documents",
        "delete_by_filter",
        "delete_all_documents",
        "search_dense",
        "search_sparse",
        "fetch_documents",
        "get_documents_by_id",
        "optimize",
        "flush",
        "info",
        "dense_vectors",
    }
)
#: Methods whose documents the host sends packed (:mod:`.wire_documents`): the host runs the ``wire_`` form, the
#: worker makes the documents.
WIRE_METHODS = MappingProxyType({name: f"wire_{name}" for name in ("search_dense", "search_sparse", "fetch_documents")})


#: The search option without and with the dense vectors (see RemoteDocumentStore._with_kept_vectors).
_EMBEDDING = ({"return_embedding": False}, {"return_embedding": True})


class StoreHostUnavailableError(StoreError, ConnectionError):
    """The store host did not answer within the wait (stopped, or restarting for too long)."""


class RemoteDocumentStore:
    """A document store whose index is open in another process, the store host (see the module docstring).

    :param socket: the host's Unix socket (``None``: ``$ADAPTIVE_STORE_SOCKET`` when the store first calls).
    :param path: the index folder the host serves (``None``: ``$ADAPTIVE_QDRANT_PATH`` or the default), used for
        the files kept with the index (gate calibration, uploads) and checked by the host.
    :param index, embedding_dim, similarity, use_sparse_embeddings, sparse_idf, payload_fields_to_index,
        optimize_threshold, hnsw_ef, create: as :class:`EdgeDocumentStore`; the host opens its store with them.
    """

    def __init__(
        self,
        socket: str | None = None,
        path: str | None = None,
        index: str = "adaptive",
        embedding_dim: int = 384,
        similarity: Literal["cosine", "dot_product", "l2"] = "cosine",
        use_sparse_embeddings: bool = True,
        sparse_idf: bool = True,
        payload_fields_to_index: dict[str, str] | None = None,
        optimize_threshold: int = DEFAULT_OPTIMIZE_THRESHOLD,
        hnsw_ef: int | None = DEFAULT_HNSW_EF,
        create: bool = True,
    ) -> None:
        # The same settings check as the embedded store the host opens with these parameters.
        check_store_settings(similarity, embedding_dim, hnsw_ef, payload_fields_to_index)
        self.socket = socket
        self.path = path
        self.index = index
        self.embedding_dim = embedding_dim
        self.similarity = similarity
        self.use_sparse_embeddings = use_sparse_embeddings
        self.sparse_idf = sparse_idf
        self.payload_fields_to_index = payload_fields_to_index
        self.optimize_threshold = optimize_threshold
        self.hnsw_ef = hnsw_ef
        self.create = create
        self._local = threading.local()
        self._connections: list[socket_module.socket] = []
        self._connections_lock = threading.Lock()
        capacity = settings.whole(CAPACITY_ENV)
        self._vectors = shared_vector_cache((socket, path, index), capacity) if capacity else None

    def _params(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "index": self.index,
            "embedding_dim": self.embedding_dim,
            "similarity": self.similarity,
            "use_sparse_embeddings": self.use_sparse_embeddings,
            "sparse_idf": self.sparse_idf,
            "payload_fields_to_index": self.payload_fields_to_index,
            "optimize_threshold": self.optimize_threshold,
            "hnsw_ef": self.hnsw_ef,
            "create": self.create,
        }

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters as given."""
        return default_to_dict(self, socket=self.socket, **self._params())

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RemoteDocumentStore:
        """Deserialise a store written by :meth:`to_dict`."""
        return default_from_dict(cls, data)

    @property
    def folder(self) -> Path:
        """The index folder (as :attr:`EdgeDocumentStore.folder`): files kept with the index live here."""
        return qdrant_folder(self.path).expanduser()

    @property
    def socket_path(self) -> str:
        """The host's socket: ``socket``, else ``$ADAPTIVE_STORE_SOCKET``."""
        path = self.socket or settings.text(SOCKET_ENV)
        if not path:
            msg = f"RemoteDocumentStore needs the store host's socket: pass socket= or set ${SOCKET_ENV}"
            raise DocumentStoreError(msg)
        return path

    # -- the call ------------------------------------------------------------------------------------------------

    def _connect(self) -> socket_module.socket:
        sock = socket_module.socket(socket_module.AF_UNIX, socket_module.SOCK_STREAM)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        with self._connections_lock:
            self._connections.append(sock)
        return sock

    def _drop(self, sock: socket_module.socket | None) -> None:
        self._local.sock = None
        if sock is not None:
            with self._connections_lock:
                if sock in self._connections:
                    self._connections.remove(sock)
            sock.close()

    def _call(self, method: str, *args: Any, **kwargs: Any) -> Any:
        """``method(*args, **kwargs)`` on the host's store (see :meth:`_call_tagged`)."""
        return self._call_tagged(method, *args, **kwargs)[0]

    def _call_tagged(self, method: str, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        """``method(*args, **kwargs)`` on the host's store, and the host's generation before it ran; every method is
        idempotent, so a call whose connection broke is sent again on a new one until the wait runs out."""
        wait = settings.number(WAIT_ENV)
        deadline = time.monotonic() + wait
        delay = 0.05
        while True:
            sock = getattr(self._local, "sock", None)
            try:
                if sock is None:
                    sock = self._local.sock = self._connect()
                send_message(sock, (self._params(), method, args, kwargs))
                status, value, generation = recv_message(sock)
                break
            except OSError as err:
                self._drop(sock)
                if time.monotonic() + delay > deadline:
                    msg = (
                        f"The store host at {self.socket_path} did not answer for {wait:.0f} s ({err}): the server's "
                        f"store process stopped; restart `adaptive-retrieval serve`"
                    )
                    raise StoreHostUnavailableError(msg) from err
                time.sleep(delay)
                delay = min(delay * 2, 1.0)
        if status == "error":
            raise value
        if isinstance(value, WireDocuments):  # a search's or a fetch's documents (see WIRE_METHODS)
            value = value.documents()
        if self._vectors is not None:
            self._vectors.observe(generation)
        return value, generation

    def _with_kept_vectors(self, method: str, without: dict, with_: dict, *args: Any, **kwargs: Any) -> list[Document]:
        """A search or fetch whose answer carries no dense vectors (``without``: the option that says so): those
        this worker keeps (:mod:`.vector_cache`) are filled in, the others fetched in one more call. A write between
        the two calls, or one running: the call again with its vectors (``with_``)."""
        assert self._vectors is not None
        documents, generation = self._call_tagged(method, *args, **without, **kwargs)
        if generation is None:  # answered while a write ran: its vectors are asked for with it
            return self._call(method, *args, **with_, **kwargs)
        vectors, missing = self._vectors.lookup(generation, [d.id for d in documents])
        if missing:
            fetched, again = self._call_tagged("dense_vectors", missing)
            if again != generation or len(fetched) != len(missing):
                return self._call(method, *args, **with_, **kwargs)
            vectors.update(self._vectors.keep(generation, fetched))
        for document in documents:
            # As the host's Document would hold it (set directly, as unpickling does: no mutation warning).
            document.__dict__["embedding"] = vectors[document.id]
        return documents

    # -- DocumentStore protocol ----------------------------------------------------------------------------------

    def count_documents(self) -> int:
        """Number of documents in the store."""
        return self._call("count_documents")

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """Number of documents that match ``filters``."""
        return self._call("count_documents_by_filter", filters)

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Every document that matches ``filters``, with its vectors."""
        return self._call("filter_documents", filters)

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write ``documents`` (see :meth:`EdgeDocumentStore.write_documents`); returns how many were written."""
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            msg = "write_documents takes a list of haystack Document objects"
            raise ValueError(msg)
        return self._call("write_documents", documents, policy)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the documents with these ids (unknown ids are ignored)."""
        self._call("delete_documents", document_ids)

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete every document that matches ``filters``; returns how many were deleted."""
        return self._call("delete_by_filter", filters)

    def delete_all_documents(self) -> None:
        """Delete every document."""
        self._call("delete_all_documents")

    # -- searches (VectorSearch) ---------------------------------------------------------------------------------

    def search_dense(
        self,
        query_embedding: list[float],
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """The ``top_k`` documents nearest to ``query_embedding`` among those matching ``filters``."""
        check_query_dimension(query_embedding, self.embedding_dim, f"index '{self.index}'")
        vector = [float(v) for v in query_embedding]
        options = {"top_k": top_k, "filters": filters, "score_threshold": score_threshold}
        if return_embedding and self._vectors is not None:
            return self._with_kept_vectors("search_dense", *_EMBEDDING, vector, **options)
        return self._call("search_dense", vector, return_embedding=return_embedding, **options)

    def search_sparse(
        self,
        query_sparse_embedding: SparseEmbedding,
        *,
        top_k: int = 10,
        filters: dict[str, Any] | None = None,
        return_embedding: bool = True,
        score_threshold: float | None = None,
    ) -> list[Document]:
        """The ``top_k`` documents by sparse (BM25 with IDF) score among those matching ``filters``."""
        options = {"top_k": top_k, "filters": filters, "score_threshold": score_threshold}
        if return_embedding and self._vectors is not None:
            return self._with_kept_vectors("search_sparse", *_EMBEDDING, query_sparse_embedding, **options)
        return self._call("search_sparse", query_sparse_embedding, return_embedding=return_embedding, **options)

    def fetch_documents(self, ids: list[str], *, sparse: bool = False, dense: bool = True) -> list[Document]:
        """Documents by id, in the order given (missing ids left out), with the dense vector unless ``dense`` is
        False and the sparse one if ``sparse``."""
        if not ids:
            return []
        if dense and not sparse and self._vectors is not None:
            return self._with_kept_vectors("fetch_documents", {"dense": False}, {}, list(ids))
        return self._call("fetch_documents", list(ids), sparse=sparse, **({} if dense else {"dense": False}))

    def dense_vectors(self, ids: list[str]) -> dict[str, np.ndarray | None]:
        """The dense vector of each of ``ids`` the host's store holds (as
        :meth:`EdgeDocumentStore.dense_vectors`): those this worker keeps (:mod:`.vector_cache`, as of the latest
        answer any store of this index had from the host) without a call, the others in one call. When that
        answer shows a write since, every vector is asked for again (of one generation)."""
        wanted = list(dict.fromkeys(ids))
        if not wanted:
            return {}
        if self._vectors is None:
            return {i: vector_row(v) for i, v in self._call("dense_vectors", wanted).items()}
        generation = self._vectors.generation
        kept, missing = self._vectors.rows(generation, wanted) if generation is not None else ({}, wanted)
        if not missing:
            return kept
        fetched, again = self._call_tagged("dense_vectors", missing)
        if again is None or (again != generation and kept):  # a write ran, or ran since the kept ones were read
            fetched, again = self._call_tagged("dense_vectors", wanted)
            kept = {}
        if again is None:
            return {i: vector_row(v) for i, v in fetched.items()}
        return {**kept, **self._vectors.keep_rows(again, fetched)}

    def get_documents_by_id(self, ids: list[str]) -> list[Document]:
        """Documents by id with all their vectors."""
        return self._call("get_documents_by_id", list(ids))

    # -- maintenance ---------------------------------------------------------------------------------------------

    def optimize(self, force: bool = False) -> bool:
        """Build HNSW on the host (see :meth:`EdgeDocumentStore.optimize`)."""
        return self._call("optimize", force)

    def flush(self) -> None:
        """Persist everything written so far."""
        self._call("flush")

    def info(self) -> dict[str, int]:
        """``points``, ``indexed_vectors`` and ``segments`` of the host's shard."""
        return self._call("info")

    def close(self) -> None:
        """Close this store's connections to the host (the host keeps the index open)."""
        with self._connections_lock:
            connections, self._connections = self._connections, []
        for sock in connections:
            sock.close()
        self._local = threading.local()
