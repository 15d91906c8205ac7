"""Writing a batch of chunks into the graph file: rows out, rows in, edge weights moved, orphans removed.

The caller holds the connection's lock and the transaction; :func:`replace_rows` only issues the statements, so
a failure anywhere rolls the whole batch back.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence

from adaptive_retrieval.components.stores.graph.graph_store import ENTITY_KINDS, ChunkEntities
from adaptive_retrieval.components.stores.graph.sqlite_schema import batches, placeholders


def row_ids(conn: sqlite3.Connection, table: str, column: str, values: Sequence[str]) -> dict[str, int]:
    """``{value: row id}`` for the given keys (entities) or chunk ids (chunks)."""
    out: dict[str, int] = {}
    for batch in batches(list(values)):
        sql = f"SELECT {column}, id FROM {table} WHERE {column} IN ({placeholders(len(batch))})"
        out.update(conn.execute(sql, batch).fetchall())
    return out


def replace_rows(
    conn: sqlite3.Connection, old: list[ChunkEntities], new: list[ChunkEntities], deltas: dict[tuple[str, str], float]
) -> None:
    """Replace the rows of the ``old`` chunks with those of the ``new`` ones; ``deltas`` moves co-occurrence edge
    weights (an edge at weight 0 or below is removed, as is an entity no chunk mentions any more)."""
    ranks = {kind: i for i, kind in enumerate(ENTITY_KINDS)}
    touched_keys = sorted({m.key for c in (*old, *new) for m in c.mentions} | {k for pair in deltas for k in pair})
    old_rows = row_ids(conn, "chunks", "chunk_id", [c.chunk_id for c in old])
    conn.executemany("DELETE FROM mentions WHERE chunk = ?", [(i,) for i in old_rows.values()])
    conn.executemany("DELETE FROM chunks WHERE id = ?", [(i,) for i in old_rows.values()])
    # A stronger kind (a title over a plain name) takes over the entity's display name.
    conn.executemany(
        "INSERT INTO entities(key, name, kind, kind_rank, df) VALUES (?, ?, ?, ?, 0) "
        "ON CONFLICT(key) DO UPDATE SET name = excluded.name, kind = excluded.kind, "
        "kind_rank = excluded.kind_rank WHERE excluded.kind_rank < entities.kind_rank",
        [(m.key, m.name, m.kind, ranks.get(m.kind, len(ranks))) for c in new for m in c.mentions],
    )
    conn.executemany(
        "INSERT INTO chunks(chunk_id, doc_id, title, text, relations) VALUES (?, ?, ?, ?, ?)",
        [(c.chunk_id, c.doc_id, c.title, c.text, json.dumps([list(r) for r in c.relations])) for c in new],
    )
    entity = row_ids(conn, "entities", "key", touched_keys)
    chunk = row_ids(conn, "chunks", "chunk_id", [c.chunk_id for c in new])
    conn.executemany(
        "INSERT INTO mentions(entity, chunk, count, weight) VALUES (?, ?, ?, ?)",
        [(entity[m.key], chunk[c.chunk_id], m.count, m.weight) for c in new for m in c.mentions],
    )
    edges = [(entity[a], entity[b], d) for (a, b), d in deltas.items() if a in entity and b in entity]
    conn.executemany(
        "INSERT INTO relations(a, b, weight) VALUES (?, ?, ?) "
        "ON CONFLICT(a, b) DO UPDATE SET weight = weight + excluded.weight",
        edges,
    )
    conn.executemany(
        "DELETE FROM relations WHERE a = ? AND b = ? AND weight <= 0",
        [(a, b) for a, b, d in edges if d < 0],
    )
    ids = [(i,) for i in entity.values()]
    conn.executemany("UPDATE entities SET df = (SELECT count(*) FROM mentions WHERE entity = ?1) WHERE id = ?1", ids)
    gone = [(i,) for (i,) in ids if conn.execute("SELECT df FROM entities WHERE id = ?", (i,)).fetchone()[0] == 0]
    conn.executemany("DELETE FROM relations WHERE a = ?1", gone)
    conn.executemany("DELETE FROM relations WHERE b = ?1", gone)
    conn.executemany("DELETE FROM entity_communities WHERE entity = ?", gone)
    conn.executemany("DELETE FROM entities WHERE id = ?", gone)
    conn.execute(
        "INSERT INTO meta(key, value) VALUES ('chunks', ?) "
        "ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
        (len(new) - len(old_rows),),
    )
