"""The read side of the SQLite graph store: the lookups graph retrieval makes (an entity's chunks, a chunk's
entities, an entity's strongest neighbours, a subgraph), the communities, and the counts and checks ``stats``
shows. A base of :class:`~adaptive_retrieval.components.stores.graph.sqlite_graph_store.SQLiteGraphStore`, which holds
the connection."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np

from adaptive_retrieval.components.stores.graph.graph_store import Community, EntityInfo, Subgraph
from adaptive_retrieval.components.stores.graph.sqlite_schema import BATCH, batches, placeholders, storage_key

logger = logging.getLogger(__name__)


class SQLiteGraphReads:
    """The reads of :class:`~adaptive_retrieval.components.stores.graph.sqlite_graph_store.SQLiteGraphStore` (its base):
    entities, their chunks and neighbours, subgraphs, communities, counts and checks, over the store's shared
    connection (``_read``, ``_read_in``, ``_per_key`` of the store)."""

    def find_entities(self, keys: Iterable[str]) -> dict[str, EntityInfo]:
        """The entities among ``keys`` that the graph holds."""

        def fetch(wanted: list[str]) -> dict[str, EntityInfo]:
            rows = self._read_in("SELECT key, name, kind, df FROM entities WHERE key IN ({marks})", wanted)
            return {k: EntityInfo(k, name, kind, int(df)) for k, name, kind, df in rows}

        return self._per_key("find_entities", keys, fetch)

    def chunk_count(self) -> int:
        """Number of chunks in the graph (a maintained counter, not a table scan)."""
        return self._meta("chunks")

    def chunk_mentions(self, chunk_ids: Iterable[str]) -> dict[str, dict[str, float]]:
        """``{chunk_id: {entity_key: weight}}``."""

        def fetch(wanted: list[str]) -> dict[str, dict[str, float]]:
            out: dict[str, dict[str, float]] = {}
            for chunk_id, key, weight in self._read_in(
                "SELECT c.chunk_id, e.key, m.weight FROM chunks c JOIN mentions m ON m.chunk = c.id "
                "JOIN entities e ON e.id = m.entity WHERE c.chunk_id IN ({marks})",
                wanted,
            ):
                out.setdefault(chunk_id, {})[key] = float(weight)
            return out

        return self._per_key("chunk_mentions", chunk_ids, fetch)

    def entity_chunks(self, keys: Iterable[str], limit: int = 50) -> dict[str, list[tuple[str, float]]]:
        """``{key: [(chunk_id, weight), ...]}``, heaviest first (ties by chunk id), at most ``limit`` per entity."""

        def fetch(wanted: list[str]) -> dict[str, list[tuple[str, float]]]:
            out: dict[str, list[tuple[str, float]]] = {}
            for key, chunk_id, weight in self._read_in(
                "SELECT key, chunk_id, weight FROM (SELECT e.key AS key, c.chunk_id AS chunk_id, m.weight AS weight, "
                "row_number() OVER (PARTITION BY m.entity ORDER BY m.weight DESC, c.chunk_id) AS rn "
                "FROM entities e JOIN mentions m ON m.entity = e.id JOIN chunks c ON c.id = m.chunk "
                "WHERE e.key IN ({marks})) WHERE rn <= ? ORDER BY key, rn",
                wanted,
                (limit,),
            ):
                out.setdefault(key, []).append((chunk_id, float(weight)))
            return out

        return self._per_key("entity_chunks", keys, fetch, (limit,))

    def neighbours(self, keys: Iterable[str], limit: int = 10) -> dict[str, list[tuple[str, float]]]:
        """``{key: [(other_key, weight), ...]}``, strongest first (ties by key), at most ``limit`` per entity."""
        return self._per_key("neighbours", keys, lambda wanted: self._neighbours(wanted, limit), (limit,))

    def _neighbours(self, keys: list[str], limit: int) -> dict[str, list[tuple[str, float]]]:
        out: dict[str, list[tuple[str, float]]] = {}
        for batch in batches(keys, BATCH // 2):
            marks = placeholders(len(batch))
            # Two index lookups (edges stored from a, and from b) rather than a scan of a union of the table.
            rows = self._read(
                "SELECT key, other, weight FROM (SELECT key, other, weight, row_number() OVER "
                "(PARTITION BY key ORDER BY weight DESC, other) AS rn FROM ("
                "SELECT e.key AS key, o.key AS other, r.weight AS weight FROM entities e JOIN relations r "
                f"ON r.a = e.id JOIN entities o ON o.id = r.b WHERE e.key IN ({marks}) UNION ALL "
                "SELECT e.key, o.key, r.weight FROM entities e JOIN relations r "
                f"ON r.b = e.id JOIN entities o ON o.id = r.a WHERE e.key IN ({marks}))) "
                "WHERE rn <= ? ORDER BY key, rn",
                [*batch, *batch, limit],
            )
            for key, other, weight in rows:
                out.setdefault(key, []).append((other, float(weight)))
        return out

    def subgraph(self, keys: Iterable[str], chunk_ids: Iterable[str] = (), limit: int = 20) -> Subgraph:
        """The bounded entity → chunk → entity neighbourhood in one statement (see
        :meth:`GraphStoreBase.subgraph`); very long key lists fall back to the batched reads."""
        keys, ids = sorted(set(keys)), sorted(set(chunk_ids))
        if len(keys) + len(ids) > BATCH:
            return super().subgraph(keys, ids, limit)
        if not keys and not ids:
            return Subgraph()
        rows = self._read(
            "WITH reached(chunk) AS ("
            "SELECT chunk FROM (SELECT m.chunk AS chunk, row_number() OVER (PARTITION BY m.entity "
            "ORDER BY m.weight DESC, c.chunk_id) AS rn FROM entities e JOIN mentions m ON m.entity = e.id "
            f"JOIN chunks c ON c.id = m.chunk WHERE e.key IN ({placeholders(len(keys))})) WHERE rn <= ? "
            f"UNION SELECT id FROM chunks WHERE chunk_id IN ({placeholders(len(ids))})) "
            "SELECT e.key, c.chunk_id, m.weight, e.df FROM reached r JOIN mentions m ON m.chunk = r.chunk "
            "JOIN entities e ON e.id = m.entity JOIN chunks c ON c.id = r.chunk ORDER BY c.chunk_id, e.key",
            [*keys, limit, *ids],
        )
        return Subgraph(
            mentions=tuple((key, chunk, float(weight)) for key, chunk, weight, _ in rows),
            df={key: int(df) for key, _, _, df in rows},
        )

    def relations(self, min_weight: float = 1.0) -> Iterator[tuple[str, str, float]]:
        """Every RELATES_TO edge ``(a, b, weight)`` with ``a < b`` and ``weight >= min_weight``."""
        for a, b, w in self._read(
            "SELECT ea.key, eb.key, r.weight FROM relations r JOIN entities ea ON ea.id = r.a "
            "JOIN entities eb ON eb.id = r.b WHERE r.weight >= ?",
            (min_weight,),
        ):
            yield (a, b, float(w)) if a < b else (b, a, float(w))

    def chunk_texts(self, chunk_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``{chunk_id: (title, text)}``."""
        rows = self._read_in("SELECT chunk_id, title, text FROM chunks WHERE chunk_id IN ({marks})", list(chunk_ids))
        return {cid: (title, text) for cid, title, text in rows}

    def communities(self, level: int | None = None) -> list[Community]:
        """The stored communities, ordered by level and id."""
        sql = "SELECT id, level, size, entities, summary, embedding, chunks FROM communities"
        rows = (
            self._read(sql + " ORDER BY level, id")
            if level is None
            else self._read(sql + " WHERE level = ? ORDER BY id", (level,))
        )
        return [
            Community(
                id=int(cid),
                level=int(lvl),
                size=int(size),
                entities=tuple(json.loads(entities)),
                summary=summary,
                embedding=None if blob is None else tuple(np.frombuffer(blob, dtype=np.float32).tolist()),
                chunks=tuple((c, float(s)) for c, s in json.loads(chunks)),
            )
            for cid, lvl, size, entities, summary, blob, chunks in rows
        ]

    def document_chunk_counts(self) -> dict[str, int]:
        """``{doc_id: chunks}`` of every document in the graph (index reconciliation and ``stats`` read it)."""
        return {str(doc): int(n) for doc, n in self._read("SELECT doc_id, count(*) FROM chunks GROUP BY doc_id")}

    def quick_check(self) -> list[str]:
        """SQLite's ``PRAGMA quick_check`` of the file: the problems it finds (empty when the file is whole)."""
        rows = [str(r[0]) for r in self._read("PRAGMA quick_check")]
        return [] if rows == ["ok"] else rows

    def stats(self) -> dict[str, int]:
        """Counts of entities, chunks, mentions, relations and communities."""
        counts = {
            name: int(self._read(f"SELECT count(*) FROM {table}")[0][0])
            for name, table in (
                ("entities", "entities"),
                ("chunks", "chunks"),
                ("mentions", "mentions"),
                ("relations", "relations"),
                ("communities", "communities"),
            )
        }
        return counts

    def size_bytes(self) -> int:
        """Bytes on disk (database plus write-ahead log) after a checkpoint; 0 in memory."""
        if self.path == ":memory:":
            return 0
        shared = self._conn()
        with shared.lock:
            shared.connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        base = Path(self._key or storage_key(self.path))
        return sum(p.stat().st_size for p in (base, Path(f"{base}-wal")) if p.exists())
