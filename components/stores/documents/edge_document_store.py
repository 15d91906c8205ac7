"""Haystack document store on Qdrant Edge: Qdrant's own engine inside the process, for a local folder.

Qdrant Edge (``qdrant-edge-py``) runs the server's segment format, HNSW, sparse vectors with IDF, payload indexes
and a write-ahead log in process. This store implements Haystack's ``DocumentStore`` protocol over one ``EdgeShard``
per folder, plus the searches the channels need (:class:`~.vector_search.VectorSearch`): dense and sparse top-k
with native payload filters, and documents by id. Requests are built in :mod:`.edge_queries`.

One process owns a shard (Edge locks its write-ahead log): every store instance in the process that names the same
folder shares one open shard (a pipeline loaded from YAML builds one store per component; the registry is
:mod:`.edge_shards`), and a second process gets :class:`StoreLockedError` (the errors and the mapping of engine
failures to them: :mod:`.edge_errors`). Searches run concurrently (Edge releases the GIL); writes are serialised
by a lock of this store, never the searches.

Usage::

    store = EdgeDocumentStore(path="/data/qdrant", embedding_dim=384)   # path=None: $ADAPTIVE_QDRANT_PATH
    store.write_documents(documents)
    store.optimize()                                   # after a bulk index: builds HNSW
    hits = store.search_dense(query_vector, top_k=10, filters={"field": "meta.level", "operator": "==", "value": 0})
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import qdrant_edge as qe
from haystack import Document, default_from_dict, default_to_dict
from haystack.document_stores.errors import DocumentStoreError, DuplicateDocumentError
from haystack.document_stores.types import DuplicatePolicy

from adaptive_retrieval.components.locations import qdrant_folder
from adaptive_retrieval.components.stores.disk_space import occupied_bytes, require_space
from adaptive_retrieval.components.stores.documents.edge_checks import ledger_problem
from adaptive_retrieval.components.stores.documents.edge_conversion import (
    check_documents,
    document_to_point,
    first_per_id,
    last_per_id,
    point_id,
    point_to_document,
    write_bytes,
)
from adaptive_retrieval.components.stores.documents.edge_errors import (
    IndexNotFoundError,
    StoreDamagedError,
    StoreFormatError,
    StoreLockedError,
    ledger_damage,
    read_failure,
    settings_mismatch,
)
from adaptive_retrieval.components.stores.documents.edge_filters import convert_filters
from adaptive_retrieval.components.stores.documents.edge_queries import scroll_request
from adaptive_retrieval.components.stores.documents.edge_searches import EdgeSearches
from adaptive_retrieval.components.stores.documents.edge_shards import (
    DEFAULT_PAYLOAD_INDEXES,
    OPEN_LOCK,
    OPEN_SHARDS,
    OpenShard,
    ShardClosedError,
    ShardSpec,
    check_store_settings,
    folder_origin,
    open_shard,
    release_all_clients,
)

logger = logging.getLogger(__name__)

# The store's public surface: its errors and the registry's reset live in their own modules, named here too.
__all__ = [
    "EdgeDocumentStore",
    "IndexNotFoundError",
    "StoreDamagedError",
    "StoreFormatError",
    "StoreLockedError",
    "release_all_clients",
]

#: HNSW search breadth of dense queries (see ``EdgeDocumentStore(hnsw_ef=...)``).
DEFAULT_HNSW_EF = 256
#: Points written since the last HNSW build above which :meth:`EdgeDocumentStore.optimize` rebuilds it. Below
#: it, the unindexed points are few enough that Edge's exact scan of them costs less than a rebuild.
DEFAULT_OPTIMIZE_THRESHOLD = 5000
_WRITE_BATCH = 256


class EdgeDocumentStore(EdgeSearches):
    """A Haystack document store on an embedded Qdrant Edge shard (see the module docstring).

    :param path: index folder; ``None`` (what the shipped YAML holds) reads ``$ADAPTIVE_QDRANT_PATH`` when the store
        first opens, else ``$XDG_DATA_HOME/adaptive-retrieval/qdrant``. The shard lives in ``<path>/<index>``.
    :param index: collection name (a sub-folder of ``path``).
    :param embedding_dim: dimension of the dense vectors.
    :param similarity: ``cosine``, ``dot_product`` or ``l2``.
    :param use_sparse_embeddings: keep a sparse (BM25) vector per document, scored with IDF when ``sparse_idf``.
    :param payload_fields_to_index: ``{field: schema}`` payload indexes (keyword, integer, float, bool, datetime,
        text); default: the fields the pipelines filter on.
    :param optimize_threshold: see :meth:`optimize`.
    :param hnsw_ef: candidates the HNSW graph search keeps per dense query (``None``: Edge's default). The channels
        search with a filter (``meta.level == 0``), which costs a graph search recall: on the 9,798-chunk MuSiQue +
        2Wiki index the default found 98.1 % of the exact top 20 (80 % at worst), 256 finds 99.85 % for 0.1 ms
        more per search (0.73 → 0.83 ms; exact search 0.96 ms). Points not yet in an HNSW graph are always
        searched exactly.
    :param create: create the index when the folder holds none (the indexing side). ``False`` (the query side)
        makes opening a missing index an :class:`IndexNotFoundError` naming the folder, instead of an empty store.
    """

    def __init__(
        self,
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
        check_store_settings(similarity, embedding_dim, hnsw_ef, payload_fields_to_index)
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
        self._open: OpenShard | None = None
        self._key: str | None = None

    # -- serialisation -------------------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters as given (``path`` stays ``None`` when it was: resolved at open time, so
        the YAML does not depend on the environment it was written in)."""
        return default_to_dict(
            self,
            path=self.path,
            index=self.index,
            embedding_dim=self.embedding_dim,
            similarity=self.similarity,
            use_sparse_embeddings=self.use_sparse_embeddings,
            sparse_idf=self.sparse_idf,
            payload_fields_to_index=self.payload_fields_to_index,
            optimize_threshold=self.optimize_threshold,
            hnsw_ef=self.hnsw_ef,
            create=self.create,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EdgeDocumentStore:
        """Deserialise a store written by :meth:`to_dict`."""
        return default_from_dict(cls, data)

    # -- opening -------------------------------------------------------------------------------------------------

    @property
    def folder(self) -> Path:
        """The index folder (``path`` resolved): the shard, and files kept with the index, live here."""
        return qdrant_folder(self.path)  # path, else $ADAPTIVE_QDRANT_PATH, else the per-user data folder

    @property
    def shard_path(self) -> Path:
        """The shard's folder, ``<path>/<index>``."""
        return self.folder / self.index

    @property
    def shard(self) -> qe.EdgeShard:
        """The open shard (opened, or created, on first use)."""
        return self._opened().shard

    def _opened(self) -> OpenShard:
        return self._open if self._open is not None and not self._open.closed else self._share()

    def _share(self) -> OpenShard:
        """The process's open shard of this folder, opened (or created) by the first instance that needs it."""
        key = str(self.shard_path.resolve())
        with OPEN_LOCK:
            opened = OPEN_SHARDS.get(key)
            if opened is None:
                opened = OpenShard(self._open_shard(), self._settings())
                OPEN_SHARDS[key] = opened
                logger.info("Opened Qdrant Edge shard %s (%d points)", key, opened.shard.info().points_count)
            elif opened.settings != self._settings():
                raise settings_mismatch(key, opened.settings, self._settings())
            opened.refs += 1
        self._open, self._key = opened, key
        return opened

    def _check_ledger(self) -> None:
        """On the query side (``create=False``), before a search: refuse an index whose manifest records count more
        nodes than it holds. Checked on the first search and, once found damaged, again after writes (the re-index
        that repairs it); ``stats`` reads without searching, so it still shows what is there."""
        if self.create:
            return
        opened = self._opened()
        if opened.ledger is None or (opened.ledger[1] and opened.ledger[0] != opened.writes):
            opened.ledger = (opened.writes, None)  # no recursion through the reads below
            opened.ledger = (opened.writes, ledger_problem(self))
        if opened.ledger[1]:
            raise ledger_damage(self.shard_path, self.folder, opened.ledger[1])

    def _settings(self) -> tuple[int, str, bool, bool]:
        return (self.embedding_dim, self.similarity, self.use_sparse_embeddings, self.sparse_idf)

    def _open_shard(self) -> qe.EdgeShard:
        spec = ShardSpec(
            folder=self.shard_path,
            index=self.index,
            embedding_dim=self.embedding_dim,
            similarity=self.similarity,
            use_sparse=self.use_sparse_embeddings,
            sparse_idf=self.sparse_idf,
            payload_fields=DEFAULT_PAYLOAD_INDEXES
            if self.payload_fields_to_index is None
            else self.payload_fields_to_index,
            create=self.create,
            named_by=folder_origin(self.path),
        )
        return open_shard(spec)

    def close(self) -> None:
        """Release this instance; the shard is flushed and closed with the last instance on its folder."""
        if self._open is None:
            return
        with OPEN_LOCK:
            opened = self._open
            opened.refs -= 1
            if opened.refs <= 0 and OPEN_SHARDS.get(self._key or "") is opened:
                del OPEN_SHARDS[self._key or ""]
                opened.close()
        self._open = self._key = None

    # -- DocumentStore protocol ----------------------------------------------------------------------------------

    def count_documents(self) -> int:
        """Number of documents in the store."""
        return self._read(self.shard.count, qe.CountRequest(exact=True))

    def count_documents_by_filter(self, filters: dict[str, Any]) -> int:
        """Number of documents that match ``filters``."""
        return self._read(self.shard.count, qe.CountRequest(exact=True, filter=convert_filters(filters)))

    def filter_documents(self, filters: dict[str, Any] | None = None) -> list[Document]:
        """Every document that matches ``filters`` (Haystack filter syntax), with its vectors."""
        return [point_to_document(record) for record in self._scroll(convert_filters(filters), vectors=True)]

    def write_documents(self, documents: list[Document], policy: DuplicatePolicy = DuplicatePolicy.NONE) -> int:
        """Write ``documents``; ``NONE``/``OVERWRITE`` replace documents with the same id, ``SKIP`` keeps the stored
        ones, ``FAIL`` raises :class:`DuplicateDocumentError` (nothing written) if any id is already stored.

        :returns: the number of documents written.
        :raises ValueError: for input that is not a list of Documents, or a dense vector of the wrong dimension.
        """
        check_documents(documents, self.embedding_dim, self.index)
        opened = self._opened()
        with opened.write_lock:
            if policy == DuplicatePolicy.FAIL:
                counts = Counter(d.id for d in documents)
                clash = sorted(self._stored_ids(list(counts)) | {i for i, n in counts.items() if n > 1})
                if clash:
                    msg = f"ID(s) already stored or given twice: {', '.join(clash[:5])}"
                    raise DuplicateDocumentError(msg)
                unique = documents
            elif policy == DuplicatePolicy.SKIP:
                first = first_per_id(documents)
                stored = self._stored_ids([d.id for d in first])
                unique = [d for d in first if d.id not in stored]
            else:
                unique = last_per_id(documents)
            for start in range(0, len(unique), _WRITE_BATCH):
                documents_batch = unique[start : start + _WRITE_BATCH]
                need = write_bytes(documents_batch, self.embedding_dim)
                require_space(self.shard_path, "write to the index", need=need, need_for="this batch")
                batch = [document_to_point(d) for d in documents_batch]
                self._update(qe.UpdateOperation.upsert_points(batch))
                opened.unoptimized_writes += len(batch)
        return len(unique)

    def delete_documents(self, document_ids: list[str]) -> None:
        """Delete the documents with these ids (unknown ids are ignored)."""
        if document_ids:
            with self._opened().write_lock:
                require_space(self.shard_path, "delete from the index")  # a delete is a write-ahead log entry too
                self._update(qe.UpdateOperation.delete_points([point_id(i) for i in document_ids]))

    def delete_by_filter(self, filters: dict[str, Any]) -> int:
        """Delete every document that matches ``filters``; returns how many were deleted."""
        edge_filter = convert_filters(filters)
        with self._opened().write_lock:
            count = self.shard.count(qe.CountRequest(exact=True, filter=edge_filter))
            if count:
                require_space(self.shard_path, "delete from the index")
                self._update(qe.UpdateOperation.delete_points_by_filter(edge_filter or qe.Filter()))
        return count

    def delete_all_documents(self) -> None:
        """Delete every document (the shard, its configuration and payload indexes stay)."""
        with self._opened().write_lock:
            require_space(self.shard_path, "delete from the index")
            self._update(qe.UpdateOperation.delete_points_by_filter(qe.Filter()))

    # -- maintenance ---------------------------------------------------------------------------------------------

    def optimize(self, force: bool = False) -> bool:
        """Build HNSW and merge segments when at least ``optimize_threshold`` points were written since the last
        build (or always with ``force``). Blocks; call it after a bulk index, never on the query path. Points
        not yet in an HNSW graph are searched exactly, so every search sees every written point either way.

        :returns: whether anything was optimised.
        """
        opened = self._opened()
        with opened.write_lock:
            if not force and opened.unoptimized_writes < self.optimize_threshold:
                return False
            # Optimising rewrites segments: at most the index's size again.
            need = occupied_bytes(self.shard_path)
            require_space(self.shard_path, "optimise the index", need=need, need_for="a copy of its segments")
            changed = opened.shard.optimize()
            opened.shard.flush()
            opened.unoptimized_writes = 0
        logger.info("Optimised Qdrant Edge shard %s", self.shard_path)
        return changed

    def flush(self) -> None:
        """Persist everything written so far (the write-ahead log already makes each write durable)."""
        self.shard.flush()

    def info(self) -> dict[str, int]:
        """``points``, ``indexed_vectors`` and ``segments`` of the shard."""
        i = self.shard.info()
        return {"points": i.points_count, "indexed_vectors": i.indexed_vectors_count, "segments": i.segments_count}

    @property
    def write_count(self) -> int | None:
        """A count of the writes through this process's open shard since it opened, which changes with every write;
        ``None`` while a write runs (what is read then belongs to neither side of it)."""
        return self._opened().stable_generation()

    def _scroll(self, edge_filter: qe.Filter | None, vectors: bool) -> Iterator[Any]:
        offset = None
        while True:
            records, offset = self._read(self.shard.scroll, scroll_request(offset, edge_filter, vectors))
            yield from records
            if offset is None:
                return

    def _stored_ids(self, ids: list[str]) -> set[str]:
        records = self._read(self.shard.retrieve, [point_id(i) for i in ids], with_payload=["id"], with_vector=False)
        return {r.payload["id"] for r in records if r.payload}

    def _read(self, call: Any, *args: Any, **kwargs: Any) -> Any:
        """``call(*args, **kwargs)`` on the shard; Edge failing to read its own files (a damaged page) becomes a
        :class:`StoreDamagedError` that says what to do, instead of a bare engine exception."""
        try:
            return self._read_once(call, args, kwargs)
        except ShardClosedError:
            # Every shard was released since `call` was bound: once more, on the shard opened anew.
            return self._read_once(call, args, kwargs)

    def _read_once(self, call: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        opened = self._opened()
        try:
            with opened.reading() as shard:  # a close waits for this read to end
                bound = call if getattr(call, "__self__", shard) is shard else getattr(shard, call.__name__)
                return bound(*args, **kwargs)
        except Exception as err:
            if isinstance(err, (DocumentStoreError, ValueError, TypeError, ShardClosedError)):
                raise
            raise read_failure(self.shard_path, err) from err

    def _update(self, operation: qe.UpdateOperation) -> None:
        opened = self._opened()
        opened.begin_write()
        try:
            self.shard.update(operation)
        except Exception as err:
            msg = f"Writing to the index '{self.shard_path}' failed: {err}"
            raise DocumentStoreError(msg) from err
        finally:
            opened.end_write()
