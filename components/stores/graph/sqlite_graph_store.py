"""Embedded graph store: the knowledge graph in one SQLite file, with the indexes graph retrieval needs.

Why SQLite (see the README's "Graph store" section): it ships with Python, persists in one file with no server,
is transactional, and the graph queries the retrievers make are all index lookups (an entity's chunks, a
chunk's entities, an entity's strongest neighbours) — a one-hop, bounded access pattern that needs no graph
query language. Whole-graph algorithms (Leiden) run in igraph over an edge scan.

Every instance pointing at the same file shares one connection per process (a pipeline loaded from YAML
deserialises one store per component, and Hayhooks runs sync pipelines in a thread pool); a re-entrant lock
serialises its use.

Usage::

    store = SQLiteGraphStore(path="/data/graph.sqlite")   # path=None: $ADAPTIVE_GRAPH_PATH, else in the index folder
    store.replace_chunks(chunk_entities)          # incremental, per doc_id
    store.entity_chunks(["marie curie"], limit=20)
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from haystack import default_from_dict, default_to_dict

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.locations import GRAPH_PATH_ENV, INDEX_COMMAND, QDRANT_PATH_ENV
from adaptive_retrieval.components.stores.disk_space import require_space
from adaptive_retrieval.components.stores.graph.graph_location import GraphLocationError, adopt_legacy_graph
from adaptive_retrieval.components.stores.graph.graph_read_cache import CAPACITY_ENV as READ_CACHE_ENV
from adaptive_retrieval.components.stores.graph.graph_read_cache import GraphReadCache
from adaptive_retrieval.components.stores.graph.graph_store import (
    ChunkEntities,
    Community,
    EntityMention,
    GraphStoreBase,
)
from adaptive_retrieval.components.stores.graph.sqlite_graph_reads import SQLiteGraphReads
from adaptive_retrieval.components.stores.graph.sqlite_graph_writes import replace_rows
from adaptive_retrieval.components.stores.graph.sqlite_schema import (
    REGISTRY,
    REGISTRY_LOCK,
    GraphNotFoundError,
    GraphNotWritableError,
    GraphStoreDamagedError,
    SharedConnection,
    batches,
    connect,
    placeholders,
    release_all_connections,
    storage_key,
)

logger = logging.getLogger(__name__)

#: The meta keys of the index that owns the graph (see GraphStoreBase.claim); clear() keeps them.
OWNER_ID, OWNER_WHERE = "owner_id", "owner_where"

# The store's public surface: its errors and the registry's reset live in sqlite_schema.py, named here too.
__all__ = [
    "GraphLocationError",
    "GraphNotFoundError",
    "GraphNotWritableError",
    "GraphStoreDamagedError",
    "SQLiteGraphStore",
    "release_all_connections",
]


class SQLiteGraphStore(SQLiteGraphReads, GraphStoreBase):
    """The :class:`~adaptive_retrieval.components.stores.graph.graph_store.GraphStore` in a SQLite file (or
    ``":memory:"``).

    :param path: database file (its folder is created) or ``":memory:"`` (shared within the process); ``None`` (what
        the shipped YAML holds) reads ``$ADAPTIVE_GRAPH_PATH`` when the store first opens, else ``graph.sqlite``
        in the Qdrant folder (``$ADAPTIVE_QDRANT_PATH``, else ``$XDG_DATA_HOME/adaptive-retrieval/qdrant``); a graph an
        earlier version kept beside that folder is moved in (:mod:`.graph_location`).
    :param max_pair_entities: co-occurrence pairs are formed among a chunk's heaviest entities only.
    :param create: create the file when missing (the indexing side); ``False`` (the query side) makes a missing
        file a :class:`GraphNotFoundError` naming it, instead of an empty graph.
    """

    def __init__(self, path: str | None = None, max_pair_entities: int = 20, create: bool = True) -> None:
        if path is not None and (not isinstance(path, str) or not path.strip()):
            msg = "SQLiteGraphStore needs a file path, ':memory:', or None (the environment decides)"
            raise ValueError(msg)
        if max_pair_entities < 2:
            msg = "max_pair_entities must be >= 2"
            raise ValueError(msg)
        self.path = path
        self.max_pair_entities = max_pair_entities
        self.create = create
        self._shared: SharedConnection | None = None
        self._key: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Serialise the init parameters as given (``path`` stays ``None`` when it was: resolved at open time)."""
        return default_to_dict(self, path=self.path, max_pair_entities=self.max_pair_entities, create=self.create)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SQLiteGraphStore:
        """Deserialise."""
        return default_from_dict(cls, data)

    # -- connection ---------------------------------------------------------------------------------------

    def _conn(self) -> SharedConnection:
        if self._shared is not None:
            return self._shared
        key = storage_key(self.path)
        with REGISTRY_LOCK:
            shared = REGISTRY.get(key)
            if shared is None and key != "memory:" and not Path(key).exists():
                # An index whose graph an earlier version kept beside its folder: moved in, or refused when
                # several indexes could own it (graph_location.py).
                derived = self.path is None and not settings.is_set(GRAPH_PATH_ENV)
                key = str(adopt_legacy_graph(Path(key), derived=derived))
                shared = REGISTRY.get(key)
            if shared is None:
                if key != "memory:" and not self.create and not Path(key).is_file():
                    source = (
                        "the store's path" if self.path else f"${GRAPH_PATH_ENV} / ${QDRANT_PATH_ENV} or the default"
                    )
                    msg = (
                        f"No graph store at '{key}' ({source}). Set ${GRAPH_PATH_ENV} (or ${QDRANT_PATH_ENV}, whose "
                        f"folder holds graph.sqlite) to the index you built, or index your files first: "
                        f"`{INDEX_COMMAND.replace('FOLDER', str(Path(key).parent))}`."
                    )
                    raise GraphNotFoundError(msg)
                if key != "memory:":
                    Path(key).parent.mkdir(parents=True, exist_ok=True)
                    # Opening writes (the schema, the write-ahead log): check the disk first, as the index does.
                    require_space(Path(key).parent, "open the graph store" if Path(key).is_file() else "create it")
                capacity = settings.whole(READ_CACHE_ENV)
                reads = GraphReadCache(capacity) if capacity > 0 else None
                shared = SharedConnection(connect(key, self.create), reads)
                REGISTRY[key] = shared
                logger.info("Opened graph store %s", key)
            shared.refs += 1
        self._shared, self._key = shared, key
        return shared

    def _require_space(self) -> None:
        if self._key and self._key != "memory:":
            require_space(Path(self._key).parent, "write to the graph store")

    def close(self) -> None:
        """Release this instance's reference; the connection closes with its last user."""
        if self._shared is None:
            return
        shared, last = self._shared, False
        with REGISTRY_LOCK:
            shared.refs -= 1
            # The registry may hold a newer connection to the same file (after release_all_connections): not ours.
            if shared.refs <= 0 and REGISTRY.get(self._key or "") is shared:
                del REGISTRY[self._key or ""]
                last = True
        self._shared = self._key = None
        if last:
            shared.close()  # between two statements of another thread, outside the registry's lock

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        shared = self._conn()
        with shared.lock:
            try:
                return shared.connection.execute(sql, params).fetchall()
            except sqlite3.DatabaseError as err:
                # Damage reads as a plain DatabaseError ("malformed", "not a database") or a missing table; a
                # closed connection, a locked or busy database are other failures.
                missing_table = isinstance(err, sqlite3.OperationalError) and "no such table" in str(err)
                if type(err) is not sqlite3.DatabaseError and not missing_table:
                    raise
                msg = (
                    f"Reading the graph file '{self._key}' failed ({err}): it is damaged; move it away and index "
                    "your files again (the sources the graph lacks are redone)"
                )
                raise GraphStoreDamagedError(msg) from err

    def _read_in(self, sql: str, values: Sequence[Any], extra: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run ``sql`` (with ``{marks}`` for the IN list) over ``values`` in batches; ``extra`` params follow."""
        rows: list[tuple[Any, ...]] = []
        for batch in batches(list(values)):
            rows.extend(self._read(sql.format(marks=placeholders(len(batch))), [*batch, *extra]))
        return rows

    def _generation(self) -> tuple[int, int] | None:
        """The graph's state as this process sees it: ``PRAGMA data_version`` (changes when another connection
        commits) and this connection's ``total_changes`` (its own writes); ``None`` while its own transaction is
        open, so that nothing read then is kept."""
        shared = self._conn()
        with shared.lock:
            if shared.connection.in_transaction:
                return None
            return int(self._read("PRAGMA data_version")[0][0]), shared.connection.total_changes

    def _per_key(self, kind: str, keys: Iterable[str], fetch: Callable[[list[str]], dict], extra: tuple = ()) -> dict:
        """``fetch`` over the distinct ``keys`` in sorted order (the order SQL returns them in), through the
        process's read cache when it has one (:mod:`~adaptive_retrieval.components.stores.graph.graph_read_cache`)."""
        ordered = sorted(set(keys))
        if not ordered:
            return {}
        reads = self._conn().reads
        if reads is None:
            return fetch(ordered)
        return reads.read(kind, self._generation(), ordered, fetch, extra)

    def _meta(self, key: str) -> int:
        rows = self._read("SELECT value FROM meta WHERE key = ?", (key,))
        return int(rows[0][0]) if rows else 0

    # -- owner ----------------------------------------------------------------------------------------------

    def _owner(self) -> tuple[str, str] | None:
        rows = dict(self._read(f"SELECT key, value FROM meta WHERE key IN ('{OWNER_ID}', '{OWNER_WHERE}')"))
        return (str(rows[OWNER_ID]), str(rows.get(OWNER_WHERE, ""))) if OWNER_ID in rows else None

    def _claim(self, owner_id: str, where: str) -> tuple[str, str]:
        shared = self._conn()
        self._require_space()
        with shared.lock:
            conn = shared.connection
            conn.execute("BEGIN IMMEDIATE")
            try:
                # The meta table's values are integers elsewhere; SQLite keeps these as text (no STRICT table).
                conn.executemany(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", [(OWNER_ID, owner_id), (OWNER_WHERE, where)]
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return self._owner() or (owner_id, where)

    def describe(self) -> str:
        """The graph file, for messages."""
        return f"'{self._key or storage_key(self.path)}'"

    def separate_hint(self) -> str:
        """Each index's default graph is a file in its own folder; a shared one was named on purpose."""
        return (
            f"unset ${GRAPH_PATH_ENV} (each index then keeps graph.sqlite in its own folder) or give each index "
            "its own file."
        )

    # -- writes ---------------------------------------------------------------------------------------------

    def _load_documents(self, doc_ids: list[str]) -> list[ChunkEntities]:
        rows = self._read_in("SELECT chunk_id FROM chunks WHERE doc_id IN ({marks})", doc_ids)
        return self._load_chunks([r[0] for r in rows])

    def _load_chunks(self, chunk_ids: list[str]) -> list[ChunkEntities]:
        if not chunk_ids:
            return []
        chunks = self._read_in(
            "SELECT chunk_id, doc_id, title, text, relations FROM chunks WHERE chunk_id IN ({marks})", chunk_ids
        )
        mentions: dict[str, list[EntityMention]] = {}
        for chunk_id, key, name, kind, count, weight in self._read_in(
            "SELECT c.chunk_id, e.key, e.name, e.kind, m.count, m.weight FROM chunks c "
            "JOIN mentions m ON m.chunk = c.id JOIN entities e ON e.id = m.entity WHERE c.chunk_id IN ({marks})",
            chunk_ids,
        ):
            mentions.setdefault(chunk_id, []).append(EntityMention(key, name, kind, int(count), float(weight)))
        return [
            ChunkEntities(
                chunk_id=cid,
                doc_id=doc_id,
                title=title,
                text=text,
                mentions=tuple(mentions.get(cid, ())),
                relations=tuple(tuple(pair) for pair in json.loads(relations)),  # type: ignore[misc]
            )
            for cid, doc_id, title, text, relations in chunks
        ]

    def _apply_replace(
        self, old: list[ChunkEntities], new: list[ChunkEntities], deltas: dict[tuple[str, str], float]
    ) -> None:
        shared = self._conn()
        self._require_space()
        with shared.lock:
            conn = shared.connection
            conn.execute("BEGIN")
            try:
                replace_rows(conn, old, new, deltas)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def _add_pending(self, count: int) -> None:
        shared = self._conn()
        with shared.lock:
            shared.connection.execute(
                "INSERT INTO meta(key, value) VALUES ('pending', ?) "
                "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                (count,),
            )

    def write_communities(self, level: int, assignments: dict[str, int], communities: list[Community]) -> None:
        """Replace the communities of ``level`` and reset the pending-changes counter."""
        shared = self._conn()
        self._require_space()
        with shared.lock:
            conn = shared.connection
            conn.execute("BEGIN")
            try:
                conn.execute("DELETE FROM communities WHERE level = ?", (level,))
                conn.execute("DELETE FROM entity_communities WHERE level = ?", (level,))
                conn.executemany(
                    "INSERT INTO entity_communities(entity, level, community) "
                    "SELECT id, ?, ? FROM entities WHERE key = ?",
                    [(level, int(c), k) for k, c in assignments.items()],
                )
                conn.executemany(
                    "INSERT INTO communities(level, id, size, entities, summary, embedding, chunks) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?)",
                    [
                        (
                            level,
                            c.id,
                            c.size,
                            json.dumps(list(c.entities)),
                            c.summary,
                            None if c.embedding is None else np.asarray(c.embedding, dtype=np.float32).tobytes(),
                            json.dumps([list(x) for x in c.chunks]),
                        )
                        for c in communities
                    ],
                )
                conn.execute("INSERT OR REPLACE INTO meta(key, value) VALUES ('pending', 0)")
                conn.execute(
                    "INSERT INTO meta(key, value) VALUES ('community_version', 1) "
                    "ON CONFLICT(key) DO UPDATE SET value = value + 1"
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def clear(self) -> None:
        """Remove everything."""
        shared = self._conn()
        self._require_space()
        with shared.lock:
            for table in ("entities", "chunks", "mentions", "relations", "communities", "entity_communities"):
                shared.connection.execute(f"DELETE FROM {table}")
            shared.connection.execute(
                f"DELETE FROM meta WHERE key NOT IN ('community_version', '{OWNER_ID}', '{OWNER_WHERE}')"
            )
            shared.connection.execute(
                "INSERT INTO meta(key, value) VALUES ('community_version', 1) "
                "ON CONFLICT(key) DO UPDATE SET value = value + 1"
            )
