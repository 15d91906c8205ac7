"""Opening Qdrant Edge shards, and the process-wide registry of open ones.

:func:`open_shard` opens (or creates) the shard a :class:`ShardSpec` describes, refusing with a clear error what
it cannot open. The registry holds one open shard per folder, shared by every store instance that names it (a
pipeline loaded from YAML builds one store per component), with the lock that orders its writes: Edge locks a
shard's write-ahead log, so a folder can be open once per process, and the store asks the registry first
(:meth:`EdgeDocumentStore._share`).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.locations import INDEX_COMMAND, QDRANT_PATH_ENV
from adaptive_retrieval.components.stores.caches.point_cache import CAPACITY_ENV as POINT_CACHE_ENV
from adaptive_retrieval.components.stores.caches.point_cache import PointCache
from adaptive_retrieval.components.stores.disk_space import open_need, require_space
from adaptive_retrieval.components.stores.documents.edge_checks import missing_segments
from adaptive_retrieval.components.stores.documents.edge_conversion import DENSE_VECTORS_NAME, SPARSE_VECTORS_NAME
from adaptive_retrieval.components.stores.documents.edge_errors import (
    IndexNotFoundError,
    StoreDamagedError,
    StoreFormatError,
    open_error,
)

logger = logging.getLogger(__name__)

#: Payload indexes for the fields the pipelines filter on (levels, sources, sections).
DEFAULT_PAYLOAD_INDEXES: dict[str, str] = {
    "meta.level": "integer",
    "meta.doc_id": "keyword",
    "meta.source": "keyword",
    "meta.section_id": "keyword",
}
#: Payload index schemas by the names ``payload_fields_to_index`` uses.
SCHEMAS = {
    "keyword": qe.PayloadSchemaType.Keyword,
    "integer": qe.PayloadSchemaType.Integer,
    "float": qe.PayloadSchemaType.Float,
    "bool": qe.PayloadSchemaType.Bool,
    "datetime": qe.PayloadSchemaType.Datetime,
    "text": qe.PayloadSchemaType.Text,
}
#: Edge distances by Haystack's similarity names.
DISTANCES = {"cosine": qe.Distance.Cosine, "dot_product": qe.Distance.Dot, "l2": qe.Distance.Euclid}


@dataclass(frozen=True)
class ShardSpec:
    """What a store asks of its shard: where, its vectors, its payload indexes, and whether it may create it."""

    folder: Path
    index: str
    embedding_dim: int
    similarity: str
    use_sparse: bool
    sparse_idf: bool
    payload_fields: dict[str, str]
    create: bool
    #: How the folder was chosen (the store's path, the variable, the default), for a missing-index error.
    named_by: str


class ShardClosedError(RuntimeError):
    """The open shard a read started on was closed meanwhile (a store reopens it on its next use)."""


class OpenShard:
    """One open ``EdgeShard`` shared by every store instance on its folder, with the lock that orders writes."""

    def __init__(self, shard: qe.EdgeShard, settings: tuple[int, str, bool, bool]) -> None:
        self.shard = shard
        #: (embedding_dim, similarity, use_sparse_embeddings, sparse_idf) the shard was opened with.
        self.settings = settings
        self.refs = 0
        self.write_lock = threading.RLock()
        #: Points written since the last optimisation (decides whether :meth:`optimize` has work to do).
        self.unoptimized_writes = 0
        self.closed = False
        #: Twice the writes so far, odd while one runs (see :meth:`begin_write`), and the count at which the
        #: manifest ledger was last checked with its finding.
        self.writes = 0
        self.ledger: tuple[int, str | None] | None = None
        #: Documents read from the shard, of the generation ``writes`` (:mod:`.point_cache`); ``None``: none kept.
        self.points = _point_cache()
        #: Reads running now, and the condition :meth:`close` waits on until there are none.
        self._readers = 0
        self._idle = threading.Condition()

    @contextlib.contextmanager
    def reading(self) -> Iterator[qe.EdgeShard]:
        """The shard, for one read; :meth:`close` waits until no read holds it.

        :raises ShardClosedError: when the shard was closed (open it again through the store).
        """
        with self._idle:
            if self.closed:
                raise ShardClosedError
            self._readers += 1
        try:
            yield self.shard
        finally:
            with self._idle:
                self._readers -= 1
                if not self._readers:
                    self._idle.notify_all()

    def begin_write(self) -> None:
        """Count a write that starts: ``writes`` is odd until :meth:`end_write`, so that nothing read meanwhile
        is kept as the state of either side of it."""
        self.writes += 1

    def end_write(self) -> None:
        """Count the end of the write :meth:`begin_write` started (whether it succeeded or not)."""
        self.writes += 1

    def stable_generation(self) -> int | None:
        """The write count when no write runs, else ``None`` (what is read now belongs to no one state)."""
        writes = self.writes
        return None if writes % 2 else writes

    def close(self) -> None:
        """Flush and close the shard once the reads running now have ended (no new one starts): closed under a
        read, the engine refused ("Already borrowed") and left the shard open."""
        with self.write_lock:
            with self._idle:
                self.closed = True
                while self._readers:
                    self._idle.wait()
            self.shard.flush()
            self.shard.close()


def _point_cache() -> PointCache | None:
    capacity = settings.whole(POINT_CACHE_ENV)
    return PointCache(capacity) if capacity else None


#: Open shards by resolved folder path.
OPEN_SHARDS: dict[str, OpenShard] = {}
#: Guards :data:`OPEN_SHARDS` (opening, sharing and closing).
OPEN_LOCK = threading.Lock()


def release_all_clients() -> None:
    """Flush and close every open shard of this process (tests use it to simulate a fresh process)."""
    with OPEN_LOCK:
        for opened in OPEN_SHARDS.values():
            opened.close()
        OPEN_SHARDS.clear()


def edge_config(spec: ShardSpec) -> qe.EdgeConfig:
    """Edge's collection config for ``spec``: the named dense vector, and the sparse one when used."""
    sparse = (
        {SPARSE_VECTORS_NAME: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if spec.sparse_idf else None)}
        if spec.use_sparse
        else None
    )
    return qe.EdgeConfig(
        vectors={DENSE_VECTORS_NAME: qe.EdgeVectorParams(size=spec.embedding_dim, distance=DISTANCES[spec.similarity])},
        sparse_vectors=sparse,
    )


@contextlib.contextmanager
def _one_opener(root: Path, create: bool) -> Iterator[None]:
    """Let one process at a time decide whether the index in ``root`` exists and create it: two ``index`` runs
    creating the same new store wrote its first files over each other (one died with a traceback, or both failed).
    With this lock (``flock`` on the folder itself: no file is added) the second finds the index the first created
    and is refused cleanly, as the store is open in another process. Reading an existing index takes no lock."""
    if not create:
        yield
        return
    root.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(root, os.O_RDONLY)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # releases the lock


def open_shard(spec: ShardSpec) -> qe.EdgeShard:
    """Open the shard of ``spec`` (or create it when ``spec.create``), with its payload indexes.

    :raises StoreError: a clear error for a folder of the old format, a missing index (query side), a lost
        segments folder, a full disk, a lock held by another process, or a damaged shard.
    """
    with _one_opener(spec.folder.parent, spec.create):
        return _open_shard(spec)


def _open_shard(spec: ShardSpec) -> qe.EdgeShard:
    folder = spec.folder
    root = folder.parent
    if (root / "meta.json").is_file() and (root / "collection").is_dir():
        msg = (
            f"'{root}' is a qdrant-client local-mode folder written by an earlier version of this package; the "
            f"embedded engine is now Qdrant Edge. Re-index your files into a new folder, e.g. "
            f"`adaptive-retrieval index --store {root}-edge PATHS...` (or move '{root}' away and index again)."
        )
        raise StoreFormatError(msg)
    exists = folder.is_dir() and any(folder.iterdir())
    if not exists and not spec.create:
        msg = (
            f"No index '{spec.index}' in the folder '{root}' ({spec.named_by}). Set ${QDRANT_PATH_ENV} to the folder "
            f"you indexed into, or index your files first: `{INDEX_COMMAND.replace('FOLDER', str(root))}`."
        )
        raise IndexNotFoundError(msg)
    if exists and missing_segments(folder):
        if not spec.create:
            raise StoreDamagedError(
                f"The index '{folder}' has lost its 'segments' folder, which holds the data: index your files "
                f"again (`adaptive-retrieval index --store {root} FILES...`), or restore a copy of the folder."
            )
        logger.warning("The index %s lost its segments folder: every source will be indexed again", folder)
    # Loading writes (segment state) and maps files in: on a full disk Edge dies of SIGBUS, so check first.
    require_space(
        folder,
        "open the index" if exists else "create the index",
        need=open_need(folder),
        need_for="the pages of its files a load allocates on tmpfs",
    )
    try:
        if exists:
            shard = qe.EdgeShard.load(str(folder), edge_config(spec))
        else:
            folder.mkdir(parents=True, exist_ok=True)
            shard = qe.EdgeShard.create(str(folder), edge_config(spec))
    except Exception as err:
        raise open_error(folder, err, exists) from err
    ensure_payload_indexes(shard, spec.payload_fields)
    return shard


def ensure_payload_indexes(shard: qe.EdgeShard, fields: dict[str, str]) -> None:
    """Create the payload indexes ``fields`` (name → schema) that the shard does not have yet."""
    present = set(shard.info().payload_schema)
    for field, schema in fields.items():
        if field not in present:
            shard.update(qe.UpdateOperation.create_field_index(field, SCHEMAS[schema]))


def check_store_settings(
    similarity: str, embedding_dim: Any, hnsw_ef: Any, payload_fields: dict[str, str] | None
) -> None:
    """Refuse store settings no shard can have.

    :raises ValueError: naming the bad setting.
    """
    if similarity not in DISTANCES:
        msg = f"similarity must be one of {sorted(DISTANCES)}, got {similarity!r}"
        raise ValueError(msg)
    if not isinstance(embedding_dim, int) or embedding_dim <= 0:
        msg = f"embedding_dim must be a positive integer, got {embedding_dim!r}"
        raise ValueError(msg)
    if hnsw_ef is not None and (not isinstance(hnsw_ef, int) or hnsw_ef < 1):
        msg = f"hnsw_ef must be a positive integer or None, got {hnsw_ef!r}"
        raise ValueError(msg)
    unknown = {s for s in (payload_fields or {}).values()} - set(SCHEMAS)
    if unknown:
        msg = f"Unknown payload index schema(s) {sorted(unknown)}: use {sorted(SCHEMAS)}"
        raise ValueError(msg)


def folder_origin(path: str | None) -> str:
    """How a store's folder was chosen, for an error about it: its ``path``, the variable, or the default."""
    if path:
        return "the store's path"
    if settings.is_set(QDRANT_PATH_ENV):
        return f"${QDRANT_PATH_ENV}"
    return f"the default, as ${QDRANT_PATH_ENV} is not set"
