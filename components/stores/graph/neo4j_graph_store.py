"""Neo4j graph store: the same knowledge-graph contract as the embedded store, on a Neo4j server or cluster.

Schema (labels carry an optional ``label_prefix`` so several graphs can share one database)::

    (:Entity {key, name, kind, kind_rank, df}) -[:MENTIONED_IN {count, weight}]-> (:Chunk {chunk_id, doc_id,
    title, text, relations})
    (:Entity) -[:RELATES_TO {weight}]-> (:Entity)          stored once, from the smaller key to the larger
    (:Entity) -[:IN_COMMUNITY]-> (:Community {level, id, size, entities, summary, embedding, chunks})
    (:GraphMeta {key, value})                              counters (chunks, pending changes, version) and the
                                                           index the graph belongs to (owner_id, owner_where)

Credentials are Haystack ``Secret`` values (environment variables by default), so a serialised pipeline holds
only the variable names, never the password.

Usage::

    store = Neo4jGraphStore(url="bolt://neo4j:7687")     # NEO4J_USERNAME / NEO4J_PASSWORD from the env
    store.replace_chunks(chunk_entities)
    store.entity_chunks(["marie curie"])
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Iterator
from typing import Any

from haystack import default_from_dict, default_to_dict
from haystack.lazy_imports import LazyImport
from haystack.utils import Secret, deserialize_secrets_inplace

from adaptive_retrieval.components.extras import install_hint
from adaptive_retrieval.components.stores.graph.graph_store import (
    ENTITY_KINDS,
    ChunkEntities,
    Community,
    EntityInfo,
    EntityMention,
    GraphStoreBase,
    Subgraph,
)

logger = logging.getLogger(__name__)

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class Neo4jGraphStore(GraphStoreBase):
    """The :class:`~adaptive_retrieval.components.stores.graph.graph_store.GraphStore` on Neo4j (5.x), through the
    official driver.

    :param url: Bolt or Neo4j URI, e.g. ``bolt://localhost:7687`` or ``neo4j+s://…`` for a cluster.
    :param username: Secret holding the user name (default: ``$NEO4J_USERNAME``; unset means no auth).
    :param password: Secret holding the password (default: ``$NEO4J_PASSWORD``).
    :param database: database name.
    :param label_prefix: prefix of every label (letters, digits, underscore) to keep graphs apart.
    :param max_pair_entities: co-occurrence pairs are formed among a chunk's heaviest entities only.
    """

    def __init__(
        self,
        url: str = "bolt://localhost:7687",
        username: Secret | None = None,
        password: Secret | None = None,
        database: str = "neo4j",
        label_prefix: str = "",
        max_pair_entities: int = 20,
    ) -> None:
        if not url or "://" not in url:
            msg = f"Neo4jGraphStore needs a URI such as bolt://localhost:7687, got {url!r}"
            raise ValueError(msg)
        if label_prefix and not _IDENTIFIER.match(label_prefix):
            msg = f"label_prefix must be letters, digits and underscores, got {label_prefix!r}"
            raise ValueError(msg)
        self.url = url
        self.username = username or Secret.from_env_var("NEO4J_USERNAME", strict=False)
        self.password = password or Secret.from_env_var("NEO4J_PASSWORD", strict=False)
        self.database = database
        self.label_prefix = label_prefix
        self.max_pair_entities = max_pair_entities
        self._driver: Any = None
        self._schema_ready = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise; the credentials are written as Secret references (token secrets refuse to serialise)."""
        return default_to_dict(
            self,
            url=self.url,
            username=self.username.to_dict(),
            password=self.password.to_dict(),
            database=self.database,
            label_prefix=self.label_prefix,
            max_pair_entities=self.max_pair_entities,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Neo4jGraphStore:
        """Deserialise (Secret references are resolved when the driver connects)."""
        deserialize_secrets_inplace(data["init_parameters"], keys=["username", "password"])
        return default_from_dict(cls, data)

    # -- connection ---------------------------------------------------------------------------------------

    def _label(self, name: str) -> str:
        return f"{self.label_prefix}{name}"

    def _q(self, cypher: str) -> str:
        """Insert the (validated) label prefix: labels cannot be query parameters in Cypher."""
        return cypher.replace("{p}", self.label_prefix)

    def driver(self) -> Any:
        """The Neo4j driver, connected (and the schema created) on first use."""
        if self._driver is None:
            with LazyImport(install_hint("neo4j")) as neo4j_import:
                from neo4j import GraphDatabase
            neo4j_import.check()
            user, pwd = self.username.resolve_value(), self.password.resolve_value()
            self._driver = GraphDatabase.driver(self.url, auth=(user, pwd) if user else None)
        if not self._schema_ready:
            name = f"adaptive{self.label_prefix.lower()}"
            for statement in (
                f"CREATE CONSTRAINT {name}_entity_key IF NOT EXISTS FOR (e:{{p}}Entity) REQUIRE e.key IS UNIQUE",
                f"CREATE CONSTRAINT {name}_chunk_id IF NOT EXISTS FOR (c:{{p}}Chunk) REQUIRE c.chunk_id IS UNIQUE",
                f"CREATE CONSTRAINT {name}_meta_key IF NOT EXISTS FOR (m:{{p}}GraphMeta) REQUIRE m.key IS UNIQUE",
                f"CREATE INDEX {name}_chunk_doc IF NOT EXISTS FOR (c:{{p}}Chunk) ON (c.doc_id)",
                f"CREATE INDEX {name}_community IF NOT EXISTS FOR (k:{{p}}Community) ON (k.level, k.id)",
            ):
                self._driver.execute_query(self._q(statement), database_=self.database)
            self._schema_ready = True
        return self._driver

    def close(self) -> None:
        """Close the driver."""
        if self._driver is not None:
            self._driver.close()
            self._driver = None
            self._schema_ready = False

    def _read(self, cypher: str, **params: Any) -> list[Any]:
        records, _, _ = self.driver().execute_query(self._q(cypher), params, database_=self.database)
        return records

    def _meta(self, key: str) -> int:
        rows = self._read("MATCH (m:{p}GraphMeta {key: $key}) RETURN m.value AS value", key=key)
        return int(rows[0]["value"]) if rows else 0

    # -- writes ---------------------------------------------------------------------------------------------

    def _chunks_where(self, condition: str, **params: Any) -> list[ChunkEntities]:
        rows = self._read(
            "MATCH (c:{p}Chunk) WHERE " + condition + " OPTIONAL MATCH (e:{p}Entity)-[m:MENTIONED_IN]->(c) "
            "RETURN c.chunk_id AS chunk_id, c.doc_id AS doc_id, c.title AS title, c.text AS text, "
            "c.relations AS relations, "
            "collect(CASE WHEN e IS NULL THEN NULL ELSE [e.key, e.name, e.kind, m.count, m.weight] END) AS mentions",
            **params,
        )
        return [
            ChunkEntities(
                chunk_id=r["chunk_id"],
                doc_id=r["doc_id"],
                title=r["title"] or "",
                text=r["text"] or "",
                mentions=tuple(EntityMention(k, n, kind, int(c), float(w)) for k, n, kind, c, w in r["mentions"]),
                relations=tuple(tuple(pair) for pair in json.loads(r["relations"] or "[]")),  # type: ignore[misc]
            )
            for r in rows
        ]

    def _load_documents(self, doc_ids: list[str]) -> list[ChunkEntities]:
        return self._chunks_where("c.doc_id IN $ids", ids=doc_ids)

    def _load_chunks(self, chunk_ids: list[str]) -> list[ChunkEntities]:
        return self._chunks_where("c.chunk_id IN $ids", ids=chunk_ids) if chunk_ids else []

    def _apply_replace(
        self, old: list[ChunkEntities], new: list[ChunkEntities], deltas: dict[tuple[str, str], float]
    ) -> None:
        ranks = {kind: i for i, kind in enumerate(ENTITY_KINDS)}
        strongest: dict[str, dict[str, Any]] = {}
        for chunk in new:
            for m in chunk.mentions:
                rank = ranks.get(m.kind, len(ranks))
                if m.key not in strongest or rank < strongest[m.key]["rank"]:
                    strongest[m.key] = {"key": m.key, "name": m.name, "kind": m.kind, "rank": rank}
        params = {
            "old": [c.chunk_id for c in old],
            "entities": list(strongest.values()),
            "chunks": [
                {
                    "chunk_id": c.chunk_id,
                    "doc_id": c.doc_id,
                    "title": c.title,
                    "text": c.text,
                    "relations": json.dumps([list(r) for r in c.relations]),
                }
                for c in new
            ],
            "mentions": [
                {"key": m.key, "chunk_id": c.chunk_id, "count": m.count, "weight": m.weight}
                for c in new
                for m in c.mentions
            ],
            "deltas": [{"a": a, "b": b, "d": d} for (a, b), d in deltas.items()],
            "touched": sorted({m.key for c in (*old, *new) for m in c.mentions}),
            "delta_chunks": len(new) - len(old),
        }
        statements = [
            "MATCH (c:{p}Chunk) WHERE c.chunk_id IN $old DETACH DELETE c",
            "UNWIND $entities AS row MERGE (e:{p}Entity {key: row.key}) "
            "ON CREATE SET e.name = row.name, e.kind = row.kind, e.kind_rank = row.rank, e.df = 0 "
            "WITH e, row WHERE row.rank < e.kind_rank "
            "SET e.name = row.name, e.kind = row.kind, e.kind_rank = row.rank",
            "UNWIND $chunks AS row CREATE (c:{p}Chunk {chunk_id: row.chunk_id, doc_id: row.doc_id, "
            "title: row.title, text: row.text, relations: row.relations})",
            "UNWIND $mentions AS row MATCH (e:{p}Entity {key: row.key}) MATCH (c:{p}Chunk {chunk_id: row.chunk_id}) "
            "CREATE (e)-[:MENTIONED_IN {count: row.count, weight: row.weight}]->(c)",
            "UNWIND $deltas AS row MATCH (a:{p}Entity {key: row.a}) MATCH (b:{p}Entity {key: row.b}) "
            "MERGE (a)-[r:RELATES_TO]->(b) ON CREATE SET r.weight = row.d ON MATCH SET r.weight = r.weight + row.d "
            "WITH r WHERE r.weight <= 0 DELETE r",
            "UNWIND $touched AS key MATCH (e:{p}Entity {key: key}) "
            "OPTIONAL MATCH (e)-[m:MENTIONED_IN]->() WITH e, count(m) AS df SET e.df = df "
            "WITH e, df WHERE df = 0 DETACH DELETE e",
            "MERGE (m:{p}GraphMeta {key: 'chunks'}) ON CREATE SET m.value = 0 SET m.value = m.value + $delta_chunks",
        ]

        def work(tx: Any) -> None:
            for statement in statements:
                tx.run(self._q(statement), params).consume()

        with self.driver().session(database=self.database) as session:
            session.execute_write(work)

    def _add_pending(self, count: int) -> None:
        self._read(
            "MERGE (m:{p}GraphMeta {key: 'pending'}) ON CREATE SET m.value = 0 SET m.value = m.value + $count",
            count=count,
        )

    def write_communities(self, level: int, assignments: dict[str, int], communities: list[Community]) -> None:
        """Replace the communities of ``level``; entities are linked to the communities that were stored."""
        params = {
            "level": level,
            "communities": [
                {
                    "id": c.id,
                    "size": c.size,
                    "entities": list(c.entities),
                    "summary": c.summary,
                    "embedding": None if c.embedding is None else [float(x) for x in c.embedding],
                    "chunks": json.dumps([list(x) for x in c.chunks]),
                }
                for c in communities
            ],
            "assignments": [{"key": k, "id": int(v)} for k, v in assignments.items()],
        }
        statements = [
            "MATCH (k:{p}Community {level: $level}) DETACH DELETE k",
            "UNWIND $communities AS row CREATE (:{p}Community {level: $level, id: row.id, size: row.size, "
            "entities: row.entities, summary: row.summary, embedding: row.embedding, chunks: row.chunks})",
            "UNWIND $assignments AS row MATCH (k:{p}Community {level: $level, id: row.id}) "
            "MATCH (e:{p}Entity {key: row.key}) CREATE (e)-[:IN_COMMUNITY]->(k)",
            "MERGE (m:{p}GraphMeta {key: 'pending'}) SET m.value = 0",
            "MERGE (m:{p}GraphMeta {key: 'community_version'}) ON CREATE SET m.value = 0 SET m.value = m.value + 1",
        ]

        def work(tx: Any) -> None:
            for statement in statements:
                tx.run(self._q(statement), params).consume()

        with self.driver().session(database=self.database) as session:
            session.execute_write(work)

    def clear(self) -> None:
        """Remove every node with this store's labels (other graphs in the database are untouched)."""
        for label in ("Entity", "Chunk", "Community"):
            self._read(f"MATCH (n:{{p}}{label}) DETACH DELETE n")
        self._read(
            "MATCH (m:{p}GraphMeta) WHERE NOT m.key IN ['community_version', 'owner_id', 'owner_where'] DELETE m"
        )
        self._read(
            "MERGE (m:{p}GraphMeta {key: 'community_version'}) ON CREATE SET m.value = 0 SET m.value = m.value + 1"
        )

    # -- owner ----------------------------------------------------------------------------------------------

    def _owner(self) -> tuple[str, str] | None:
        rows = self._read(
            "MATCH (m:{p}GraphMeta) WHERE m.key IN ['owner_id', 'owner_where'] RETURN m.key AS key, m.value AS value"
        )
        found = {r["key"]: r["value"] for r in rows}
        return (str(found["owner_id"]), str(found.get("owner_where", ""))) if "owner_id" in found else None

    def _claim(self, owner_id: str, where: str) -> tuple[str, str]:
        # MERGE on the unique key: of two claims at once, one creates the node and the other finds it.
        self._read(
            "MERGE (o:{p}GraphMeta {key: 'owner_id'}) ON CREATE SET o.value = $id "
            "WITH o WHERE o.value = $id MERGE (w:{p}GraphMeta {key: 'owner_where'}) SET w.value = $where",
            id=owner_id,
            where=where,
        )
        return self._owner() or (owner_id, where)

    def describe(self) -> str:
        """The server, database and label prefix, for messages."""
        prefix = f", label prefix '{self.label_prefix}'" if self.label_prefix else ""
        return f"{self.url} (database '{self.database}'{prefix})"

    def separate_hint(self) -> str:
        """Two indexes on one server stay apart by a database or a label prefix each."""
        return (
            "give each index its own database (NEO4J_DATABASE, Neo4j Enterprise) or its own label prefix "
            "(Neo4jGraphStore(label_prefix=...) in the YAML, or $ADAPTIVE_NEO4J_LABEL_PREFIX)."
        )

    # -- reads ----------------------------------------------------------------------------------------------

    def find_entities(self, keys: Iterable[str]) -> dict[str, EntityInfo]:
        """The entities among ``keys`` that the graph holds."""
        rows = self._read(
            "UNWIND $keys AS key MATCH (e:{p}Entity {key: key}) RETURN e.key AS key, e.name AS name, "
            "e.kind AS kind, e.df AS df",
            keys=sorted(set(keys)),
        )
        return {r["key"]: EntityInfo(r["key"], r["name"], r["kind"], int(r["df"])) for r in rows}

    def chunk_count(self) -> int:
        """Number of chunks in the graph (a maintained counter)."""
        return self._meta("chunks")

    def chunk_mentions(self, chunk_ids: Iterable[str]) -> dict[str, dict[str, float]]:
        """``{chunk_id: {entity_key: weight}}``."""
        out: dict[str, dict[str, float]] = {}
        for r in self._read(
            "MATCH (e:{p}Entity)-[m:MENTIONED_IN]->(c:{p}Chunk) WHERE c.chunk_id IN $ids "
            "RETURN c.chunk_id AS chunk_id, e.key AS key, m.weight AS weight",
            ids=sorted(set(chunk_ids)),
        ):
            out.setdefault(r["chunk_id"], {})[r["key"]] = float(r["weight"])
        return out

    def entity_chunks(self, keys: Iterable[str], limit: int = 50) -> dict[str, list[tuple[str, float]]]:
        """``{key: [(chunk_id, weight), ...]}``, heaviest first, at most ``limit`` per entity."""
        rows = self._read(
            "UNWIND $keys AS key MATCH (e:{p}Entity {key: key})-[m:MENTIONED_IN]->(c:{p}Chunk) "
            "WITH key, c.chunk_id AS chunk_id, m.weight AS weight ORDER BY weight DESC, chunk_id "
            "WITH key, collect([chunk_id, weight])[..$limit] AS top RETURN key, top",
            keys=sorted(set(keys)),
            limit=limit,
        )
        return {r["key"]: [(c, float(w)) for c, w in r["top"]] for r in rows}

    def neighbours(self, keys: Iterable[str], limit: int = 10) -> dict[str, list[tuple[str, float]]]:
        """``{key: [(other_key, weight), ...]}``, strongest first, at most ``limit`` per entity."""
        rows = self._read(
            "UNWIND $keys AS key MATCH (e:{p}Entity {key: key})-[r:RELATES_TO]-(n:{p}Entity) "
            "WITH key, n.key AS other, r.weight AS weight ORDER BY weight DESC, other "
            "WITH key, collect([other, weight])[..$limit] AS top RETURN key, top",
            keys=sorted(set(keys)),
            limit=limit,
        )
        return {r["key"]: [(o, float(w)) for o, w in r["top"]] for r in rows}

    def subgraph(self, keys: Iterable[str], chunk_ids: Iterable[str] = (), limit: int = 20) -> Subgraph:
        """The bounded entity → chunk → entity neighbourhood in one round trip (see :meth:`GraphStoreBase.subgraph`):
        the ``limit`` heaviest chunks of each entity plus ``chunk_ids``, with every mention of those chunks."""
        rows = self._read(
            "CALL { UNWIND $keys AS key MATCH (:{p}Entity {key: key})-[m:MENTIONED_IN]->(c:{p}Chunk) "
            "WITH key, c ORDER BY m.weight DESC, c.chunk_id WITH key, collect(c)[..$limit] AS top "
            "UNWIND top AS c RETURN c "
            "UNION UNWIND $ids AS id MATCH (c:{p}Chunk {chunk_id: id}) RETURN c } "
            "WITH DISTINCT c MATCH (x:{p}Entity)-[m:MENTIONED_IN]->(c) "
            "RETURN x.key AS key, c.chunk_id AS chunk_id, m.weight AS weight, x.df AS df "
            "ORDER BY chunk_id, key",
            keys=sorted(set(keys)),
            ids=sorted(set(chunk_ids)),
            limit=limit,
        )
        return Subgraph(
            mentions=tuple((r["key"], r["chunk_id"], float(r["weight"])) for r in rows),
            df={r["key"]: int(r["df"]) for r in rows},
        )

    def relations(self, min_weight: float = 1.0) -> Iterator[tuple[str, str, float]]:
        """Every RELATES_TO edge ``(a, b, weight)`` with ``a < b`` and ``weight >= min_weight``."""
        for r in self._read(
            "MATCH (a:{p}Entity)-[r:RELATES_TO]->(b:{p}Entity) WHERE r.weight >= $min "
            "RETURN a.key AS a, b.key AS b, r.weight AS weight",
            min=min_weight,
        ):
            yield r["a"], r["b"], float(r["weight"])

    def chunk_texts(self, chunk_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``{chunk_id: (title, text)}``."""
        rows = self._read(
            "MATCH (c:{p}Chunk) WHERE c.chunk_id IN $ids RETURN c.chunk_id AS id, c.title AS title, c.text AS text",
            ids=list(chunk_ids),
        )
        return {r["id"]: (r["title"] or "", r["text"] or "") for r in rows}

    def communities(self, level: int | None = None) -> list[Community]:
        """The stored communities, ordered by level and id."""
        rows = self._read(
            "MATCH (k:{p}Community) WHERE $level IS NULL OR k.level = $level "
            "RETURN k.id AS id, k.level AS level, k.size AS size, k.entities AS entities, k.summary AS summary, "
            "k.embedding AS embedding, k.chunks AS chunks ORDER BY k.level, k.id",
            level=level,
        )
        return [
            Community(
                id=int(r["id"]),
                level=int(r["level"]),
                size=int(r["size"]),
                entities=tuple(r["entities"] or ()),
                summary=r["summary"] or "",
                embedding=None if r["embedding"] is None else tuple(float(x) for x in r["embedding"]),
                chunks=tuple((c, float(s)) for c, s in json.loads(r["chunks"] or "[]")),
            )
            for r in rows
        ]

    def document_chunk_counts(self) -> dict[str, int]:
        """``{doc_id: chunks}`` of every document in the graph (index reconciliation and ``stats`` read it)."""
        rows = self._read("MATCH (c:{p}Chunk) RETURN c.doc_id AS doc, count(c) AS n")
        return {str(r["doc"]): int(r["n"]) for r in rows}

    def stats(self) -> dict[str, int]:
        """Counts of entities, chunks, mentions, relations and communities."""
        queries = {
            "entities": "MATCH (n:{p}Entity) RETURN count(n) AS n",
            "chunks": "MATCH (n:{p}Chunk) RETURN count(n) AS n",
            "mentions": "MATCH (:{p}Entity)-[r:MENTIONED_IN]->(:{p}Chunk) RETURN count(r) AS n",
            "relations": "MATCH (:{p}Entity)-[r:RELATES_TO]->(:{p}Entity) RETURN count(r) AS n",
            "communities": "MATCH (n:{p}Community) RETURN count(n) AS n",
        }
        return {name: int(self._read(q)[0]["n"]) for name, q in queries.items()}
