"""The knowledge-graph store contract shared by the embedded (SQLite) and Neo4j backends.

The graph has three kinds of node and two kinds of edge:

- ``Entity`` (normalised ``key``, display ``name``, ``kind``, ``df`` = number of chunks mentioning it);
- ``Chunk`` (the id of the chunk in the document store, its ``doc_id``, ``title`` and ``text``);
- ``Community`` (Leiden community of entities at a ``level``, with an extractive summary, its embedding and
  the ids of its most central chunks);
- ``Entity —MENTIONED_IN→ Chunk`` with ``count`` (occurrences) and ``weight`` (salience: titles weigh more);
- ``Entity —RELATES_TO— Entity`` with ``weight`` = number of chunks in which both occur (plus explicit
  relations an LLM extractor found).

Writes are incremental and grouped by ``doc_id``: :meth:`GraphStore.replace_chunks` swaps everything a
document held for its new chunks and adjusts the co-occurrence weights by the difference, so re-indexing one
document never needs a full rebuild. Both backends inherit that bookkeeping from :class:`GraphStoreBase` and
implement only the storage primitives.

A graph belongs to one index: :meth:`GraphStoreBase.claim` records the index that writes it (an id the document
store keeps, and where that index is), and a second index that would write into it is refused with
:class:`GraphOwnedError` rather than mixed in (its reconciliation would also drop the first index's records as
orphans). On SQLite each index has a file of its own; on Neo4j two indexes stay apart by a database
(``NEO4J_DATABASE``) or a label prefix (``label_prefix``) each, and sharing one is refused the same way.

Usage::

    store = SQLiteGraphStore(path=".adaptive/graph.sqlite")
    store.replace_chunks([ChunkEntities("c1", "doc1", "Paris", "Paris is ...",
                                        [EntityMention("paris", "Paris", "title", 1, 3.0)])])
    store.entity_chunks(["paris"])  # {"paris": [("c1", 3.0)]}
"""

from __future__ import annotations

import itertools
import math
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from adaptive_retrieval.components.stores.store_errors import StoreError

#: Entity kinds, strongest first (a key found as several kinds keeps the strongest).
ENTITY_KINDS: tuple[str, ...] = ("title", "heading", "llm", "name", "acronym", "phrase")


@dataclass(frozen=True)
class EntityMention:
    """One entity as mentioned in one chunk."""

    key: str
    name: str
    kind: str
    count: int = 1
    weight: float = 1.0


@dataclass(frozen=True)
class ChunkEntities:
    """The entities (and optional explicit relations between entity keys) extracted from one chunk."""

    chunk_id: str
    doc_id: str
    title: str = ""
    text: str = ""
    mentions: tuple[EntityMention, ...] = ()
    relations: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class EntityInfo:
    """What the store knows about an entity key."""

    key: str
    name: str
    kind: str
    df: int


@dataclass(frozen=True)
class Community:
    """A community of entities with its extractive summary, the summary's embedding and its central chunks."""

    id: int
    level: int
    size: int
    entities: tuple[str, ...] = ()
    summary: str = ""
    embedding: tuple[float, ...] | None = None
    chunks: tuple[tuple[str, float], ...] = ()


@dataclass(frozen=True)
class Subgraph:
    """A bounded piece of the graph around some entities and chunks (what a graph walk reads per query).

    ``mentions``: every MENTIONED_IN edge ``(entity_key, chunk_id, weight)`` of the chunks reached;
    ``df``: the chunk count of every entity those edges name (the whole graph's, not the subgraph's).
    """

    mentions: tuple[tuple[str, str, float], ...] = ()
    df: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class GraphOwner:
    """The index a graph belongs to: its id (kept in the index's own document store) and where it is, for
    messages (a folder, or a server and collection)."""

    id: str
    where: str


class GraphOwnedError(StoreError, ValueError):
    """A graph that belongs to another index was about to be written by this one: the two would be mixed."""


@dataclass
class ReplaceResult:
    """Counts of one :meth:`GraphStore.replace_chunks` call."""

    chunks_written: int = 0
    chunks_deleted: int = 0
    mentions_written: int = 0
    relations_changed: int = 0
    doc_ids: list[str] = field(default_factory=list)


@runtime_checkable
class GraphStore(Protocol):
    """What the graph components need from a graph store (both backends implement it)."""

    def replace_chunks(self, chunks: list[ChunkEntities]) -> ReplaceResult:
        """Replace everything stored for the ``doc_id`` values of ``chunks`` with ``chunks``."""
        ...

    def delete_documents(self, doc_ids: list[str]) -> int:
        """Remove the chunks (and their mentions and co-occurrences) of ``doc_ids``; returns chunks removed."""
        ...

    def find_entities(self, keys: Iterable[str]) -> dict[str, EntityInfo]:
        """The entities among ``keys`` that the graph holds."""
        ...

    def chunk_count(self) -> int:
        """Number of chunks in the graph."""
        ...

    def chunk_mentions(self, chunk_ids: Iterable[str]) -> dict[str, dict[str, float]]:
        """``{chunk_id: {entity_key: weight}}`` for the given chunks."""
        ...

    def entity_chunks(self, keys: Iterable[str], limit: int = 50) -> dict[str, list[tuple[str, float]]]:
        """``{key: [(chunk_id, weight), ...]}``: the heaviest ``limit`` mentions of each entity."""
        ...

    def neighbours(self, keys: Iterable[str], limit: int = 10) -> dict[str, list[tuple[str, float]]]:
        """``{key: [(other_key, weight), ...]}``: the ``limit`` strongest RELATES_TO edges of each entity."""
        ...

    def subgraph(self, keys: Iterable[str], chunk_ids: Iterable[str] = (), limit: int = 20) -> Subgraph:
        """The chunks ``chunk_ids`` plus the ``limit`` heaviest chunks of each entity in ``keys``, with every
        entity those chunks mention (one hop entity → chunk → entity, bounded)."""
        ...

    def relations(self, min_weight: float = 1.0) -> Iterator[tuple[str, str, float]]:
        """Every RELATES_TO edge ``(a, b, weight)`` with ``a < b`` and at least ``min_weight``."""
        ...

    def chunk_texts(self, chunk_ids: Iterable[str]) -> dict[str, tuple[str, str]]:
        """``{chunk_id: (title, text)}`` for the given chunks."""
        ...

    def write_communities(self, level: int, assignments: dict[str, int], communities: list[Community]) -> None:
        """Replace the communities of ``level`` (and the entity → community assignments at that level)."""
        ...

    def communities(self, level: int | None = None) -> list[Community]:
        """The stored communities (of one level, or all)."""
        ...

    def community_version(self) -> int:
        """A number that changes whenever communities are written (retrievers cache on it)."""
        ...

    def pending_changes(self) -> int:
        """Chunks written or deleted since communities were last written."""
        ...

    def stats(self) -> dict[str, int]:
        """Counts of entities, chunks, mentions, relations and communities."""
        ...

    def clear(self) -> None:
        """Remove everything."""
        ...

    def to_dict(self) -> dict[str, Any]:
        """Serialise (credentials as Secret references only)."""
        ...


def cooccurrence_pairs(chunk: ChunkEntities, max_entities: int) -> list[tuple[str, str]]:
    """The RELATES_TO pairs a chunk contributes: every pair of its ``max_entities`` heaviest entities plus its
    explicit relations, each as ``(a, b)`` with ``a < b``.

    Deterministic in the chunk's content, so the pairs added when a chunk is written are exactly the pairs
    removed when it is replaced.
    """
    ranked = sorted({m.key: m.weight for m in chunk.mentions}.items(), key=lambda kv: (-kv[1], kv[0]))
    keys = sorted(k for k, _ in ranked[:max_entities])
    pairs = list(itertools.combinations(keys, 2))
    for a, b in chunk.relations:
        if a != b:
            pairs.append((a, b) if a < b else (b, a))
    return pairs


def relation_deltas(
    old: Iterable[ChunkEntities], new: Iterable[ChunkEntities], max_entities: int
) -> dict[tuple[str, str], float]:
    """Net change of each RELATES_TO weight when chunks ``old`` are replaced by ``new`` (zero changes dropped)."""
    deltas: dict[tuple[str, str], float] = {}
    for sign, chunks in ((-1.0, old), (1.0, new)):
        for chunk in chunks:
            for pair in cooccurrence_pairs(chunk, max_entities):
                deltas[pair] = deltas.get(pair, 0.0) + sign
    return {pair: d for pair, d in deltas.items() if d != 0.0}


def merge_mentions(mentions: Iterable[EntityMention]) -> tuple[EntityMention, ...]:
    """One mention per key: counts and weights added, the strongest kind and its name kept."""
    merged: dict[str, EntityMention] = {}
    for m in mentions:
        prev = merged.get(m.key)
        if prev is None:
            merged[m.key] = m
            continue
        strongest = m if ENTITY_KINDS.index(m.kind) < ENTITY_KINDS.index(prev.kind) else prev
        merged[m.key] = EntityMention(
            m.key, strongest.name, strongest.kind, prev.count + m.count, round(prev.weight + m.weight, 6)
        )
    return tuple(merged.values())


def idf(df: int, total: int) -> float:
    """Inverse document frequency of an entity mentioned in ``df`` of ``total`` chunks (> 0 for df ≥ 1)."""
    return math.log(1.0 + max(total, 1) / max(df, 1))


class GraphStoreBase(ABC):
    """The bookkeeping both backends share: grouping by document, co-occurrence deltas, change counting.

    Subclasses implement the storage primitives (``_load_documents``, ``_apply_replace``...) and the read
    methods of :class:`GraphStore`.
    """

    #: Only the heaviest entities of a chunk form co-occurrence pairs: a chunk with n entities adds n(n-1)/2
    #: pairs, so long entity lists would dominate the edge table without adding signal.
    max_pair_entities: int = 20

    def replace_chunks(self, chunks: list[ChunkEntities]) -> ReplaceResult:
        """Replace everything stored for the ``doc_id`` values of ``chunks`` with ``chunks``.

        :raises ValueError: for a chunk without ``chunk_id`` or ``doc_id``, or a chunk id given twice.
        """
        seen: set[str] = set()
        for chunk in chunks:
            if not chunk.chunk_id or not chunk.doc_id:
                msg = f"Every chunk needs a chunk_id and a doc_id; got {chunk.chunk_id!r}, {chunk.doc_id!r}"
                raise ValueError(msg)
            if chunk.chunk_id in seen:
                msg = f"Chunk {chunk.chunk_id} is given twice in one write"
                raise ValueError(msg)
            seen.add(chunk.chunk_id)
        doc_ids = sorted({c.doc_id for c in chunks})
        if not doc_ids:
            return ReplaceResult()
        new = [replace(c, mentions=merge_mentions(c.mentions)) for c in chunks]
        old = self._load_documents(doc_ids)
        # A chunk id that moved to another document must leave its old document's records too.
        old_ids = {o.chunk_id for o in old}
        moved = self._load_chunks([c.chunk_id for c in new if c.chunk_id not in old_ids])
        old.extend(moved)
        deltas = relation_deltas(old, new, self.max_pair_entities)
        self._apply_replace(old, new, deltas)
        changed = len(new) + len({o.chunk_id for o in old} - {c.chunk_id for c in new})
        self._add_pending(changed)
        return ReplaceResult(
            chunks_written=len(new),
            chunks_deleted=len({o.chunk_id for o in old} - {c.chunk_id for c in new}),
            mentions_written=sum(len(c.mentions) for c in new),
            relations_changed=len(deltas),
            doc_ids=doc_ids,
        )

    def delete_documents(self, doc_ids: list[str]) -> int:
        """Remove the chunks (and their mentions and co-occurrences) of ``doc_ids``; returns chunks removed."""
        doc_ids = sorted(set(doc_ids))
        if not doc_ids:
            return 0
        old = self._load_documents(doc_ids)
        if not old:
            return 0
        self._apply_replace(old, [], relation_deltas(old, [], self.max_pair_entities))
        self._add_pending(len(old))
        return len(old)

    @abstractmethod
    def find_entities(self, keys: Iterable[str]) -> dict[str, EntityInfo]:
        """The entities among ``keys`` that the graph holds."""

    @abstractmethod
    def chunk_mentions(self, chunk_ids: Iterable[str]) -> dict[str, dict[str, float]]:
        """``{chunk_id: {entity_key: weight}}`` for the given chunks."""

    @abstractmethod
    def entity_chunks(self, keys: Iterable[str], limit: int = 50) -> dict[str, list[tuple[str, float]]]:
        """``{key: [(chunk_id, weight), ...]}``: the heaviest ``limit`` mentions of each entity."""

    @abstractmethod
    def _load_documents(self, doc_ids: list[str]) -> list[ChunkEntities]:
        """The stored chunks (with mentions and explicit relations) of ``doc_ids``."""

    @abstractmethod
    def _load_chunks(self, chunk_ids: list[str]) -> list[ChunkEntities]:
        """The stored chunks with these ids."""

    @abstractmethod
    def _apply_replace(
        self, old: list[ChunkEntities], new: list[ChunkEntities], deltas: dict[tuple[str, str], float]
    ) -> None:
        """Atomically: delete ``old`` chunks and their mentions, write ``new`` ones, add ``deltas`` to the
        RELATES_TO weights (dropping edges at or below zero), refresh ``df`` of every touched entity and drop
        entities no chunk mentions any more."""

    def subgraph(self, keys: Iterable[str], chunk_ids: Iterable[str] = (), limit: int = 20) -> Subgraph:
        """The chunks ``chunk_ids`` plus the ``limit`` heaviest chunks of each entity in ``keys`` (ties by chunk
        id), with every MENTIONED_IN edge of those chunks and the ``df`` of the entities they name.

        Composed of three bounded reads; a backend may answer it in one round trip (Neo4j does).
        """
        keys = sorted(set(keys))
        reached = {c for chunks in self.entity_chunks(keys, limit=limit).values() for c, _ in chunks}
        reached.update(chunk_ids)
        if not reached:
            return Subgraph()
        by_chunk = self.chunk_mentions(reached)
        mentions = tuple(
            (key, chunk, weight) for chunk in sorted(by_chunk) for key, weight in sorted(by_chunk[chunk].items())
        )
        found = self.find_entities({key for key, _, _ in mentions})
        return Subgraph(mentions=mentions, df={key: info.df for key, info in found.items()})

    def owner(self) -> GraphOwner | None:
        """The index this graph belongs to, or ``None`` before an index claimed it (:meth:`claim`)."""
        found = self._owner()
        return GraphOwner(*found) if found else None

    def claim(self, owner_id: str, where: str) -> GraphOwner:
        """Record that the index ``owner_id`` (at ``where``) writes this graph, unless an index already did
        (atomically: of two claims at once, one wins); returns the owner.

        :raises GraphOwnedError: when the graph belongs to another index, naming it and what to do.
        """
        if not owner_id or not where:
            msg = "A graph's owner needs an id and a place"
            raise ValueError(msg)
        owner = GraphOwner(*self._claim(owner_id, where))
        if owner.id != owner_id:
            raise GraphOwnedError(self.owned_message(owner, where))
        return owner

    def owned_message(self, owner: GraphOwner, where: str) -> str:
        """Why the index at ``where`` may not write this graph (which belongs to ``owner``), and what to do."""
        return (
            f"The graph store {self.describe()} holds the graph of another index ({owner.where}); the index at "
            f"{where} would mix its graph records with that one's and drop them as orphans. Each index needs a "
            f"graph of its own: {self.separate_hint()}"
        )

    def describe(self) -> str:
        """Where this graph is, for messages."""
        return type(self).__name__

    def separate_hint(self) -> str:
        """How to give an index a graph of its own with this backend."""
        return "configure one graph store per index."

    @abstractmethod
    def _owner(self) -> tuple[str, str] | None:
        """The stored ``(owner id, where)``, or ``None``."""

    @abstractmethod
    def _claim(self, owner_id: str, where: str) -> tuple[str, str]:
        """Store ``(owner_id, where)`` unless an owner is stored (atomically); return the stored owner."""

    def community_version(self) -> int:
        """Changes whenever communities are written or the store is cleared."""
        return self._meta("community_version")

    def pending_changes(self) -> int:
        """Chunks written or deleted since communities were last written."""
        return self._meta("pending")

    @abstractmethod
    def _meta(self, key: str) -> int:
        """The integer bookkeeping value ``key`` (``community_version``, ``pending``)."""

    @abstractmethod
    def _add_pending(self, count: int) -> None:
        """Add ``count`` to the changes counted since communities were last written."""


def graph_store_from_init_parameters(data: dict[str, Any], key: str = "graph_store") -> dict[str, Any]:
    """Deserialise ``data["init_parameters"][key]`` with the class its ``type`` names (a :class:`GraphStore`).

    :raises TypeError: when the named class does not implement :class:`GraphStore`.
    """
    from haystack.core.serialization import import_class_by_name

    store_data = data["init_parameters"].get(key)
    if isinstance(store_data, dict):
        store_cls = import_class_by_name(store_data["type"])
        store = store_cls.from_dict(store_data)
        if not isinstance(store, GraphStore):
            msg = f"{key} type {store_data['type']} does not implement the GraphStore protocol"
            raise TypeError(msg)
        data["init_parameters"][key] = store
    return data
