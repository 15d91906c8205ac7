"""Check an index against its manifest records, thoroughly: what ``adaptive-retrieval stats --verify`` runs.

For every source with a ``complete`` record: the chunk and summary counts, every chunk id the record implies and
every summary id it lists present in the vector store, each node's dense vector of the index's dimension, finite
and (for cosine) of norm 1, its sparse vector finite, and the graph holding exactly the record's number of chunks
of the document, all of them chunks the vector store has. Then what belongs to no record (nodes, graph
documents), and the graph file's own integrity (SQLite ``PRAGMA quick_check``). Reads every node once.

Each finding says what to do as an ``action``: ``reindex`` (index the source again with ``--force``),
``delete`` (its file is gone: delete the source), ``index`` (an indexing run repairs it: unfinished runs,
orphans) or ``rebuild`` (the store itself is damaged: index everything into a new folder).

Usage::

    problems = verify_index(store, graph_store)
    for p in problems:
        print(p.source, p.what, p.action)
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from haystack import Document

from adaptive_retrieval.components.ids import chunk_id
from adaptive_retrieval.components.indexing.manifest import read_manifests
from adaptive_retrieval.components.manifest_records import STATE_COMPLETE, STATE_DELETING, STATE_FAILED, STATE_INDEXING
from adaptive_retrieval.components.stores.documents.edge_checks import NORM_TOLERANCE

REINDEX, DELETE, INDEX, REBUILD = "reindex", "delete", "index", "rebuild"


@dataclass(frozen=True)
class Problem:
    """One finding: the source it concerns (``""`` for the whole index), what is wrong and what to do."""

    source: str
    what: str
    action: str


def _fix_for(source: str) -> str:
    return REINDEX if Path(source).is_file() else DELETE


def vector_findings(doc: Document, dim: int | None, normalised: bool) -> list[str]:
    """What is wrong with one node's vectors (empty when nothing)."""
    found = []
    vector = doc.embedding
    if vector is None:
        return [f"node {doc.id} has no dense vector"]
    if dim is not None and len(vector) != dim:
        found.append(f"node {doc.id} has a {len(vector)}-d vector where the index stores {dim}-d")
    array = np.asarray(vector, dtype=np.float64)
    if not np.isfinite(array).all():
        found.append(f"node {doc.id} has a vector with non-finite values")
    elif normalised:
        with np.errstate(over="ignore"):
            norm = float(np.linalg.norm(array))
        if abs(norm - 1.0) > NORM_TOLERANCE:
            found.append(f"node {doc.id} has a vector of norm {norm:.4g} where 1 is stored")
    sparse = doc.sparse_embedding
    if sparse is not None and not all(math.isfinite(v) for v in sparse.values):
        found.append(f"node {doc.id} has a sparse vector with non-finite values")
    return found


def _source_findings(
    record: dict[str, Any], nodes: list[Document], graph_ids: set[str] | None, graph_count: int, shape: tuple
) -> list[str]:
    """What is wrong with one ``complete`` source (see the module docstring)."""
    found: list[str] = []
    doc_id, stored = str(record.get("source_doc_id") or ""), {d.id for d in nodes}
    chunks = [d for d in nodes if int(d.meta.get("level", 0) or 0) == 0]
    summaries = len(nodes) - len(chunks)
    for field, have in (("chunks", len(chunks)), ("summaries", summaries)):
        if have != int(record.get(field) or 0):
            found.append(f"{have} {field} stored, the record says {record.get(field)}")
    expected = [chunk_id(doc_id, i) for i in range(int(record.get("chunks") or 0))]
    lost = [i for i in (*expected, *record.get("summary_ids", [])) if i not in stored]
    if lost:
        found.append(f"{len(lost)} node(s) the record lists are missing from the vector store (e.g. {lost[0]})")
    if graph_ids is not None:
        if graph_count != int(record.get("graph_chunks") or 0):
            found.append(f"the graph holds {graph_count} of its chunks, the record says {record.get('graph_chunks')}")
        strays = graph_ids - {d.id for d in chunks}
        if strays:
            found.append(f"{len(strays)} graph chunk(s) the vector store lacks (e.g. {sorted(strays)[0]})")
    for doc in nodes:
        found.extend(vector_findings(doc, *shape))
    return found


def _state_problem(source: str, record: dict[str, Any], has_nodes: bool) -> Problem | None:
    state = record.get("state")
    if state == STATE_INDEXING:
        return Problem(source, "left unfinished by an interrupted indexing run", INDEX)
    if state == STATE_DELETING:
        return Problem(source, "left half-deleted by an interrupted delete", INDEX)
    if state == STATE_FAILED and has_nodes:
        return Problem(
            source, f"nodes stored for a failed source ({record.get('reason', 'no reason')})", _fix_for(source)
        )
    return None


def verify_index(store: Any, graph_store: Any = None) -> list[Problem]:
    """Every finding about ``store`` (and ``graph_store``) against the manifest records; empty when all is well."""
    problems: list[Problem] = []
    check = getattr(graph_store, "quick_check", None)
    if callable(check):
        problems += [Problem("", f"graph file: {message}", REBUILD) for message in check()]
    records = read_manifests(store)
    by_source: dict[str, list[Document]] = defaultdict(list)
    for doc in store.filter_documents(filters={"field": "meta.level", "operator": ">=", "value": 0}):
        by_source[str(doc.meta.get("source") or "(no source)")].append(doc)
    counts = graph_store.document_chunk_counts() if graph_store is not None else {}
    shape = (getattr(store, "embedding_dim", None), getattr(store, "similarity", "cosine") == "cosine")
    for source in sorted(set(records) | set(by_source)):
        record, nodes = records.get(source), by_source.get(source, [])
        if record is None:
            problems.append(Problem(source, f"{len(nodes)} node(s) without a manifest record", _fix_for(source)))
            continue
        if record.get("state") != STATE_COMPLETE:
            if (problem := _state_problem(source, record, bool(nodes))) is not None:
                problems.append(problem)
            continue
        doc_id = str(record.get("source_doc_id") or "")
        graph_ids = None
        if graph_store is not None:
            wanted = [d.id for d in nodes if int(d.meta.get("level", 0) or 0) == 0]
            wanted += [chunk_id(doc_id, i) for i in range(int(record.get("chunks") or 0))]
            graph_ids = set(graph_store.chunk_texts(sorted(set(wanted))))
        findings = _source_findings(record, nodes, graph_ids, counts.get(doc_id, 0), shape)
        problems += [Problem(source, what, _fix_for(source)) for what in findings]
    known = {str(r.get("source_doc_id")) for r in records.values()}
    known |= {str(d.meta.get("doc_id")) for docs in by_source.values() for d in docs}
    orphans = {d: n for d, n in counts.items() if d not in known}
    if orphans:
        what = f"the graph holds {sum(orphans.values())} chunk(s) of {len(orphans)} document(s) no source has"
        problems.append(Problem("", what, INDEX))
    return problems
