"""The graph file itself: its schema, the check that a file is this store's database, and the process-wide
registry of shared connections (one per file, as the embedded document store shares one shard per folder).

Usage::

    conn = connect("/data/graph.sqlite", create=True)   # schema created; a damaged or foreign file is refused
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.locations import INDEX_COMMAND, graph_file
from adaptive_retrieval.components.stores.graph.graph_read_cache import GraphReadCache
from adaptive_retrieval.components.stores.store_errors import StoreError

logger = logging.getLogger(__name__)

# Entities and chunks get integer row ids: mentions and co-occurrence edges (the bulk of the graph) then store
# two small varints per row instead of two text keys, which shrinks the file about threefold.
_SCHEMA = """
CREATE TABLE IF NOT EXISTS entities(
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, name TEXT NOT NULL, kind TEXT NOT NULL,
    kind_rank INTEGER NOT NULL, df INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS chunks(
    id INTEGER PRIMARY KEY, chunk_id TEXT NOT NULL UNIQUE, doc_id TEXT NOT NULL, title TEXT NOT NULL,
    text TEXT NOT NULL, relations TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_by_doc ON chunks(doc_id);
-- Clustered by entity: an entity's chunks are one range scan; the covering index serves chunk -> entities.
CREATE TABLE IF NOT EXISTS mentions(
    entity INTEGER NOT NULL, chunk INTEGER NOT NULL, count INTEGER NOT NULL, weight REAL NOT NULL,
    PRIMARY KEY(entity, chunk)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS mentions_by_chunk ON mentions(chunk, entity, weight);
-- Undirected edges stored once (a = the entity with the smaller key); the index serves lookups from b.
CREATE TABLE IF NOT EXISTS relations(
    a INTEGER NOT NULL, b INTEGER NOT NULL, weight REAL NOT NULL, PRIMARY KEY(a, b)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS relations_by_b ON relations(b, a, weight);
CREATE TABLE IF NOT EXISTS communities(
    level INTEGER NOT NULL, id INTEGER NOT NULL, size INTEGER NOT NULL, entities TEXT NOT NULL,
    summary TEXT NOT NULL, embedding BLOB, chunks TEXT NOT NULL, PRIMARY KEY(level, id)
);
CREATE TABLE IF NOT EXISTS entity_communities(
    entity INTEGER NOT NULL, level INTEGER NOT NULL, community INTEGER NOT NULL, PRIMARY KEY(entity, level)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value INTEGER NOT NULL) WITHOUT ROWID;
"""

#: Bumped when the schema changes; a file written with another version is refused with a clear message.
SCHEMA_VERSION = 1

#: Parameters per statement stay well below SQLite's limit (32766) and keep statements cacheable.
BATCH = 500


class SharedConnection:
    """One connection to a graph file shared by every store instance of the process that names it, with the
    answers of its per-key reads (``reads``; ``None``: every read asks SQLite)."""

    def __init__(self, connection: sqlite3.Connection, reads: GraphReadCache | None = None) -> None:
        self.connection = connection
        self.lock = threading.RLock()
        self.refs = 0
        self.reads = reads

    def close(self) -> None:
        """Close the connection between two statements: under its lock, so that a statement another thread is
        running (a background calibration, a query) ends first. Closed under a running statement, SQLite frees
        what that statement still reads: the process crashed. A later use raises ``sqlite3.ProgrammingError``."""
        with self.lock:
            self.connection.close()


#: Shared connections by :func:`storage_key`, and the lock that guards them.
REGISTRY: dict[str, SharedConnection] = {}
REGISTRY_LOCK = threading.Lock()


def storage_key(path: str | None) -> str:
    """The registry key of a graph file: its resolved path (``memory:`` for an in-memory graph)."""
    return "memory:" if path == ":memory:" else str(graph_file(path).resolve())


#: The tables every graph file has (a file holding others, or some of them only, is not this store's).
REQUIRED_TABLES = frozenset(
    {"entities", "chunks", "mentions", "relations", "communities", "entity_communities", "meta"}
)


class GraphStoreDamagedError(StoreError, ValueError):
    """The graph file is not this store's database (damaged, emptied, replaced): graph retrieval would answer
    wrong, so it raises (a ``ValueError``, so the retrieval channels do not skip themselves) with what to do."""


class GraphNotWritableError(StoreError, ValueError):
    """The graph file, or the folder that holds it, cannot be written (permissions, a read-only file system): the
    file is fine, and SQLite needs to write beside it (its write-ahead log) even to read it."""


def not_writable(key: str) -> str | None:
    """What keeps this process from writing the graph file ``key`` and the files SQLite keeps beside it, or
    ``None`` (``os.access`` also says so for root on a read-only file system)."""
    if key == "memory:":
        return None
    file, folder = Path(key), Path(key).parent
    if file.exists() and not os.access(file, os.W_OK):
        return "the file is read-only (its permissions, or a read-only file system)"
    if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
        return "its folder is read-only (its permissions, or a read-only file system)"
    return None


def not_writable_error(key: str, reason: str, err: BaseException | None = None) -> GraphNotWritableError:
    """The error for a graph file this process cannot write: not damaged, only not writable."""
    cause = f" ({err})" if err is not None else ""
    return GraphNotWritableError(
        f"The graph file '{key}' cannot be written: {reason}{cause}. It is not damaged: SQLite writes beside it (its "
        "-wal and -shm files) even to read it, so give this user write permission on the file and its folder, or "
        "copy the index to a writable disk."
    )


class GraphNotFoundError(StoreError, ValueError):
    """A graph store opened for reading only (``create=False``, the query side) names a file that does not exist:
    a configuration error (wrong path or variable, or nothing indexed yet), never an empty graph."""


def release_all_connections() -> None:
    """Close every shared connection (tests use it to simulate a fresh process), each between two statements."""
    with REGISTRY_LOCK:
        released = list(REGISTRY.values())
        REGISTRY.clear()
    # Outside the registry's lock: a thread inside a statement holds its connection's lock and may open another
    # store (which takes the registry's lock) before it lets go.
    for shared in released:
        shared.close()


def batches(items: Sequence[Any], size: int = BATCH) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most ``size`` (one statement each)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


def placeholders(n: int) -> str:
    """``n`` SQL parameter marks."""
    return ",".join("?" * n)


def connect(key: str, create: bool) -> sqlite3.Connection:
    """A connection to the file (schema created when missing), or a :class:`GraphStoreDamagedError` for a file
    that is not this store's database: not SQLite, tables missing, or empty where the query side reads."""
    # One connection used from several threads, always under shared.lock.
    try:
        conn = sqlite3.connect(":memory:" if key == "memory:" else key, check_same_thread=False, isolation_level=None)
    except sqlite3.OperationalError as err:
        if reason := not_writable(key):
            raise not_writable_error(key, reason, err) from err
        raise
    command = INDEX_COMMAND.replace("FOLDER", str(Path(key).parent))
    fix = f"move it away and index your files again (`{command}` redoes the sources the graph lacks)"
    try:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    except sqlite3.DatabaseError as err:
        conn.close()
        # A file SQLite cannot open beside a read-only folder reads as "unable to open database file": that is not
        # damage, and moving the file away would lose a good graph.
        if reason := not_writable(key):
            raise not_writable_error(key, reason, err) from err
        msg = f"The graph file '{key}' cannot be read ({err}): it is damaged or not a graph store; {fix}"
        raise GraphStoreDamagedError(msg) from err
    if tables and version != SCHEMA_VERSION:
        conn.close()
        msg = (
            f"Graph store {key} has schema version {version}, this code needs {SCHEMA_VERSION}: delete the file "
            f"and index your files again (`{command}` redoes the sources the graph lacks)."
        )
        raise RuntimeError(msg)
    missing = sorted(REQUIRED_TABLES - tables)
    if (tables and missing) or (not tables and not create and key != "memory:"):
        conn.close()
        what = f"lacks the table(s) {', '.join(missing)}" if tables else "is empty (no tables)"
        raise GraphStoreDamagedError(f"The graph file '{key}' {what}: it was damaged or replaced; {fix}")
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        if create or not tables:
            # The query side of a complete file writes nothing: several serving workers open it while the indexer
            # (the store host of `serve --workers N`) writes, and a reader must never wait for its write lock.
            conn.executescript(_SCHEMA)
            conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except sqlite3.OperationalError as err:
        conn.close()
        if reason := not_writable(key):
            raise not_writable_error(key, reason, err) from err
        raise
    return conn
