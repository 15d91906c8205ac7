"""The index manifest: one record per source saying whether all of its chunks, summaries and graph records are
written, with its content hash and counts.

A source counts as indexed only when its record says ``complete``. Indexing writes the record ``indexing``
before the first chunk and ``complete`` (with the counts it verified in both stores) after the last graph
record, so a crash anywhere in between leaves a record that is not ``complete`` and the next run redoes that
source. Deleting marks the record ``deleting`` first and removes it last.

Records live in the document collection itself, as documents without embeddings and ``meta.level = -1``
(chunks are level 0, section and document summaries 1 and 2): they move with the index, work the same on a
local folder and a server, and never surface in a search, since every channel either searches vectors (a
record has none) or filters on ``meta.level >= 0``. Only the Haystack ``DocumentStore`` protocol is used
(``filter_documents``, ``write_documents``, ``delete_documents``, ``get_documents_by_id``).

Usage::

    from adaptive_retrieval.components.indexing.manifest import index_stats, read_manifests, reconcile

    reconcile(store, graph_store)            # finish deletions, drop orphaned graph records, list unfinished sources
    read_manifests(store)["/docs/a.md"]      # {"state": "complete", "source_hash": "…", "chunks": 12, ...}
    index_stats(store, graph_store)          # {"sources": {...}, "totals": {...}}
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Document
from haystack.document_stores.types import DuplicatePolicy

from adaptive_retrieval.components.ids import chunk_id, stable_id
from adaptive_retrieval.components.manifest_records import (
    COUNT_FIELDS,
    MANIFEST_FILTER,
    MANIFEST_KIND,
    MANIFEST_LEVEL,
    STATE_COMPLETE,
    STATE_DELETING,
    STATE_INDEXING,
    STATE_KEPT,
)

logger = logging.getLogger(__name__)


def manifest_id(source: str) -> str:
    """Id of the manifest record of ``source`` (deterministic: rewriting a record replaces it)."""
    return stable_id("manifest", source)


def manifest_document(source: str, source_hash: str, state: str, **fields: Any) -> Document:
    """The manifest record of ``source``. ``fields``: ``doc_id``, counts, ``summary_ids``, ``reason``.

    The source's ``doc_id`` is kept as ``source_doc_id``: a record must not carry ``meta.doc_id``, or the
    replacing writer would take it for a stale node of that source and delete it.
    """
    meta: dict[str, Any] = {
        "level": MANIFEST_LEVEL,
        "kind": MANIFEST_KIND,
        "source": source,
        "source_hash": source_hash,
        "state": state,
        "updated_at": round(time.time(), 3),
    }
    if "doc_id" in fields:
        fields["source_doc_id"] = fields.pop("doc_id")
    meta.update({k: v for k, v in fields.items() if v is not None})
    return Document(id=manifest_id(source), content=None, meta=meta)


def write_manifests(store: Any, records: list[Document]) -> None:
    """Upsert manifest records (one ``write_documents`` call)."""
    if records:
        store.write_documents(records, policy=DuplicatePolicy.OVERWRITE)


def read_manifests(store: Any, sources: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """``{source: record meta}`` of every manifest record (or of the given sources; an id lookup then)."""
    if sources is None:
        docs = store.filter_documents(filters=MANIFEST_FILTER)
    else:
        ids = [manifest_id(s) for s in sources]
        docs = store.get_documents_by_id(ids) if ids else []
    return {
        str(d.meta["source"]): dict(d.meta)
        for d in docs
        if d.meta.get("kind") == MANIFEST_KIND and d.meta.get("level") == MANIFEST_LEVEL
    }


@dataclass
class SourceNodes:
    """What one source's indexing run produced: node ids per kind (used to verify both stores)."""

    doc_id: str = ""
    chunk_ids: list[str] = field(default_factory=list)
    summary_ids: list[str] = field(default_factory=list)
    graph_chunk_ids: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """``chunks``, ``summaries``, ``graph_chunks``."""
        return {
            "chunks": len(self.chunk_ids),
            "summaries": len(self.summary_ids),
            "graph_chunks": len(self.graph_chunk_ids),
        }


def produced_nodes(documents: Iterable[Document], entities: Iterable[Any] = ()) -> dict[str, SourceNodes]:
    """``{source: SourceNodes}`` from the documents the writer received and the chunks the graph writer got."""
    out: dict[str, SourceNodes] = defaultdict(SourceNodes)
    by_doc: dict[str, str] = {}
    for doc in documents:
        source = str(doc.meta.get("source") or "")
        if not source:
            continue
        nodes = out[source]
        nodes.doc_id = str(doc.meta.get("doc_id") or nodes.doc_id)
        by_doc[nodes.doc_id] = source
        (nodes.chunk_ids if int(doc.meta.get("level", 0) or 0) == 0 else nodes.summary_ids).append(doc.id)
    for chunk in entities:
        source = by_doc.get(str(chunk.doc_id))
        if source is not None:
            out[source].graph_chunk_ids.append(str(chunk.chunk_id))
    return dict(out)


def missing_nodes(store: Any, graph_store: Any, produced: dict[str, SourceNodes]) -> dict[str, str]:
    """``{source: what is missing}`` for the sources whose produced nodes are not all stored (id lookups)."""
    vector_ids = [i for n in produced.values() for i in (*n.chunk_ids, *n.summary_ids)]
    stored = {d.id for d in store.get_documents_by_id(vector_ids)} if vector_ids else set()
    graph_ids = [i for n in produced.values() for i in n.graph_chunk_ids]
    in_graph = set(graph_store.chunk_texts(graph_ids)) if graph_store is not None and graph_ids else set()
    problems: dict[str, str] = {}
    for source, nodes in produced.items():
        lost_vectors = sum(1 for i in (*nodes.chunk_ids, *nodes.summary_ids) if i not in stored)
        lost_graph = sum(1 for i in nodes.graph_chunk_ids if i not in in_graph) if graph_store is not None else 0
        if lost_vectors or lost_graph:
            problems[source] = f"{lost_vectors} vector node(s) and {lost_graph} graph chunk(s) missing after writing"
    return problems


def complete_record(source: str, source_hash: str, nodes: SourceNodes, partial: str | None = None) -> Document:
    """The ``complete`` record of a source whose nodes were all verified in both stores; ``partial`` says why its
    file was read only in part (its extractor kept less of the text than the file holds): ``stats`` shows such a
    source as ``partial``, with that reason."""
    return manifest_document(
        source,
        source_hash,
        STATE_COMPLETE,
        doc_id=nodes.doc_id,
        summary_ids=nodes.summary_ids,
        partial=partial,
        **nodes.counts(),
    )


def looks_complete(store: Any, records: dict[str, dict[str, Any]], graph_store: Any = None) -> dict[str, bool]:
    """Whether each ``complete`` record's first and last chunk and its summaries are stored (one id lookup) and,
    given ``graph_store``, whether the graph holds as many chunks of its document as the record says (one count).

    A cheap check against a record that outlived its nodes (a partial external delete, a lost segment, an
    emptied graph file): such a source is indexed again. ``index_stats`` counts everything.
    """
    probes: dict[str, list[str]] = {}
    for source, record in records.items():
        doc_id, chunks = str(record.get("source_doc_id") or ""), int(record.get("chunks") or 0)
        if record.get("state") != STATE_COMPLETE or not doc_id or chunks < 1:
            continue
        probes[source] = [chunk_id(doc_id, 0), chunk_id(doc_id, chunks - 1), *record.get("summary_ids", [])]
    wanted = sorted({i for ids in probes.values() for i in ids})
    stored = {d.id for d in store.get_documents_by_id(wanted)} if wanted else set()
    intact = {source: all(i in stored for i in ids) for source, ids in probes.items()}
    for source in _short_sources(store, {s: records[s] for s in probes}):
        intact[source] = False
    counts = getattr(graph_store, "document_chunk_counts", None)
    if probes and callable(counts):
        in_graph = counts()
        for source in probes:
            record = records[source]
            expected = int(record.get("graph_chunks") or 0)
            intact[source] = intact[source] and in_graph.get(str(record["source_doc_id"]), 0) == expected
    return intact


def _count(store: Any, filters: dict[str, Any]) -> int:
    count = getattr(store, "count_documents_by_filter", None)
    return int(count(filters)) if callable(count) else len(store.filter_documents(filters=filters))


def _nodes_filter(sources: list[str]) -> dict[str, Any]:
    return {
        "operator": "AND",
        "conditions": [
            {"field": "meta.source", "operator": "in", "value": sources},
            {"field": "meta.level", "operator": ">=", "value": 0},
        ],
    }


def _short_sources(store: Any, records: dict[str, dict[str, Any]]) -> list[str]:
    """The sources storing fewer nodes than their records count: one count over all of them, then one per source
    only when that count falls short (nodes lost in the middle of a source, which the probes miss)."""
    if not records:
        return []
    expected = {s: int(r.get("chunks") or 0) + int(r.get("summaries") or 0) for s, r in records.items()}
    if _count(store, _nodes_filter(sorted(records))) >= sum(expected.values()):
        return []
    return [s for s, n in expected.items() if _count(store, _nodes_filter([s])) < n]


def previous_version(record: dict[str, Any] | None, source_hash: str) -> dict[str, Any] | None:
    """The ``complete`` record whose nodes are still stored for a source about to be indexed again as
    ``source_hash``: the record itself when complete, or the ``previous`` an ``indexing`` record carries when that
    run (a crash left it) was indexing the same content, so it cannot have replaced any node. ``None`` otherwise."""
    if not record:
        return None
    if record.get("state") == STATE_COMPLETE:
        return {k: v for k, v in record.items() if k not in ("previous", "refused", "refused_hash")}
    previous = record.get("previous")
    if (
        record.get("state") == STATE_INDEXING
        and isinstance(previous, dict)
        and record.get("source_hash") == source_hash
    ):
        return previous
    return None


def pending_record(source: str, source_hash: str, record: dict[str, Any] | None) -> Document:
    """The ``indexing`` record written before a source's first node, carrying the complete record it replaces (see
    :func:`previous_version`), so a refusal of the new content, even after a crash, keeps the version before."""
    return manifest_document(source, source_hash, STATE_INDEXING, previous=previous_version(record, source_hash))


def kept_record(source: str, previous: dict[str, Any], reason: str | None, refused_hash: str | None) -> Document:
    """The ``complete`` record of the version indexed before, restored when the new content (``refused_hash``) was
    refused for ``reason``: the stats show it as ``kept`` with the reason. With ``reason=None`` the plain record
    (the file is back to the version indexed)."""
    counts = {k: previous.get(k) for k in COUNT_FIELDS}
    return manifest_document(
        source,
        str(previous.get("source_hash", "")),
        STATE_COMPLETE,
        doc_id=previous.get("source_doc_id"),
        summary_ids=previous.get("summary_ids", []),
        refused=reason,
        refused_hash=refused_hash,
        partial=previous.get("partial"),
        **counts,
    )


def source_nodes(store: Any, sources: list[str]) -> list[Document]:
    """Every chunk and summary node (``meta.level >= 0``) of ``sources``."""
    if not sources:
        return []
    return store.filter_documents(
        filters={
            "operator": "AND",
            "conditions": [
                {"field": "meta.source", "operator": "in", "value": sources},
                {"field": "meta.level", "operator": ">=", "value": 0},
            ],
        }
    )


def remove_sources(store: Any, graph_store: Any, sources: list[str]) -> int:
    """Delete sources in the crash-safe order: mark their records ``deleting``, then delete graph records,
    vector nodes and finally the records. Returns how many vector nodes were removed."""
    from adaptive_retrieval.components.indexing.faults import fault_point

    if not sources:
        return 0
    records = read_manifests(store, sources)
    write_manifests(
        store,
        [manifest_document(s, str(records.get(s, {}).get("source_hash", "")), STATE_DELETING) for s in sources],
    )
    fault_point("delete.after_mark")
    found = source_nodes(store, sources)
    doc_ids = {str(d.meta["doc_id"]) for d in found if d.meta.get("doc_id")}
    doc_ids |= {str(r["source_doc_id"]) for r in records.values() if r.get("source_doc_id")}
    if graph_store is not None and doc_ids:
        graph_store.delete_documents(sorted(doc_ids))
    ids = [d.id for d in found]
    if ids:
        store.delete_documents(ids)
    store.delete_documents([manifest_id(s) for s in sources])
    return len(ids)


@dataclass
class Reconciliation:
    """What :func:`reconcile` found and did."""

    unfinished: list[str] = field(default_factory=list)
    deletions_finished: list[str] = field(default_factory=list)
    orphan_graph_documents: list[str] = field(default_factory=list)
    records: dict[str, dict[str, Any]] = field(default_factory=dict)


def reconcile(store: Any, graph_store: Any = None) -> Reconciliation:
    """Bring the stores back to a consistent state after a crash; run before indexing.

    - records left ``deleting`` (a crash mid-delete): the deletion is finished;
    - records left ``indexing`` (a crash mid-write) are listed in ``unfinished`` (the caller re-indexes those
      whose file still exists) or, when the file is gone, their source is deleted;
    - graph documents with no vector chunk and no manifest record (graph written, vectors not) are deleted, so
      the graph never points at a chunk the vector store lacks.
    """
    out = Reconciliation(records=read_manifests(store))
    deleting = [s for s, r in out.records.items() if r.get("state") == STATE_DELETING]
    gone = [s for s, r in out.records.items() if r.get("state") == STATE_INDEXING and not Path(s).is_file()]
    if deleting or gone:
        remove_sources(store, graph_store, deleting + gone)
        out.deletions_finished = deleting + gone
        for s in deleting + gone:
            out.records.pop(s, None)
    out.unfinished = sorted(s for s, r in out.records.items() if r.get("state") == STATE_INDEXING)
    counts = getattr(graph_store, "document_chunk_counts", None)
    if graph_store is not None and counts is not None:
        known = {str(r.get("source_doc_id")) for r in out.records.values() if r.get("source_doc_id")}
        candidates = sorted(d for d in counts() if d not in known)
        if candidates:
            present = {d.id for d in store.get_documents_by_id([chunk_id(d, 0) for d in candidates])}
            out.orphan_graph_documents = [d for d in candidates if chunk_id(d, 0) not in present]
            if out.orphan_graph_documents:
                graph_store.delete_documents(out.orphan_graph_documents)
    if out.deletions_finished or out.unfinished or out.orphan_graph_documents:
        logger.warning(
            "Index reconciliation: %d deletion(s) finished, %d source(s) unfinished (to redo), "
            "%d orphaned graph document(s) removed",
            len(out.deletions_finished),
            len(out.unfinished),
            len(out.orphan_graph_documents),
        )
    return out


def _add_state(row: dict[str, Any], record: dict[str, Any], with_graph: bool) -> None:
    """Set ``row["state"]`` (and ``reason`` / ``expected``) of one source of :func:`index_stats` from its stored
    counts (``row``) and its manifest record."""
    state = record.get("state", "no record")
    expected = {k: record.get(k) for k in COUNT_FIELDS}
    if state == STATE_COMPLETE and not with_graph:
        expected.pop("graph_chunks")
    if state == STATE_COMPLETE and any(row[k] != v for k, v in expected.items()):
        state = "partial"
        row["expected"] = expected
    elif state in (STATE_INDEXING, "no record"):
        state = "partial" if state == STATE_INDEXING else state
    if record.get("reason"):
        row["reason"] = record["reason"]
    if state == STATE_COMPLETE and record.get("partial"):
        # Every node is stored, but its file was read only in part: the index lacks some of its text.
        state = "partial"
        row["reason"] = f"its file was read in part: {record['partial']}"
    if state == STATE_COMPLETE and record.get("refused"):
        state = STATE_KEPT
        row["reason"] = f"the file changed and was refused ({record['refused']}); the version before is kept"
    row["state"] = state


def index_stats(store: Any, graph_store: Any = None) -> dict[str, Any]:
    """What the index holds, per source and in total: ``{"sources": {source: {chunks, summaries,
    graph_chunks, entities, source_hash, state, ...}}, "totals": {...}}``.

    ``state`` is ``complete`` only when the record says so *and* the stored counts equal the record's *and* its file
    was read whole; otherwise ``partial`` (with a ``reason`` when the file was read in part), or ``failed`` /
    ``deleting`` / ``indexing`` as the record says, ``no record`` for nodes without one. Reads every node once (a
    full scan): a diagnostic, not a hot path.
    """
    records = read_manifests(store)
    nodes = store.filter_documents(filters={"field": "meta.level", "operator": ">=", "value": 0})
    per: dict[str, dict[str, Any]] = defaultdict(lambda: {"chunks": 0, "summaries": 0, "chunk_ids": []})
    doc_ids: dict[str, str] = {}
    for doc in nodes:
        source = str(doc.meta.get("source") or "(no source)")
        entry = per[source]
        if int(doc.meta.get("level", 0) or 0) == 0:
            entry["chunks"] += 1
            entry["chunk_ids"].append(doc.id)
        else:
            entry["summaries"] += 1
        if doc.meta.get("doc_id"):
            doc_ids[str(doc.meta["doc_id"])] = source
    graph_docs: dict[str, int] = {}
    has_counts = graph_store is not None and hasattr(graph_store, "document_chunk_counts")
    if has_counts:
        graph_docs = graph_store.document_chunk_counts()
    sources: dict[str, dict[str, Any]] = {}
    for source in sorted(set(per) | set(records)):
        entry, record = per.get(source, {"chunks": 0, "summaries": 0, "chunk_ids": []}), records.get(source, {})
        doc_id = str(record.get("source_doc_id") or next((d for d, s in doc_ids.items() if s == source), ""))
        graph_chunks = entities = None
        if graph_store is not None:
            mentions = graph_store.chunk_mentions(entry["chunk_ids"])
            entities = len({k for m in mentions.values() for k in m})
            graph_chunks = (
                graph_docs.get(doc_id, 0)
                if graph_docs or has_counts
                else len(graph_store.chunk_texts(entry["chunk_ids"]))
            )
        row: dict[str, Any] = {
            "chunks": entry["chunks"],
            "summaries": entry["summaries"],
            "graph_chunks": graph_chunks,
            "entities": entities,
            "source_hash": record.get("source_hash", ""),
        }
        _add_state(row, record, with_graph=graph_store is not None)
        sources[source] = row
    recorded = {str(r.get("source_doc_id")) for r in records.values()}
    orphans = {d: n for d, n in graph_docs.items() if d not in doc_ids and d not in recorded}
    states: dict[str, int] = defaultdict(int)
    for row in sources.values():
        states[row["state"]] += 1
    totals: dict[str, Any] = {
        "sources": len(sources),
        "chunks": sum(r["chunks"] for r in sources.values()),
        "summaries": sum(r["summaries"] for r in sources.values()),
        "graph_chunks": sum(r["graph_chunks"] or 0 for r in sources.values()) if graph_store is not None else None,
        "orphan_graph_chunks": sum(orphans.values()),
        "states": dict(states),
    }
    return {"sources": sources, "totals": totals}
