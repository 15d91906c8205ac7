"""The transaction of an indexing run, batch by batch (see :class:`IndexTransaction`)."""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Pipeline

from adaptive_retrieval.components.ids import chunk_id, stable_id
from adaptive_retrieval.components.indexing.faults import fault_point
from adaptive_retrieval.components.indexing.manifest import (
    complete_record,
    kept_record,
    looks_complete,
    manifest_document,
    missing_nodes,
    pending_record,
    previous_version,
    produced_nodes,
    remove_sources,
    write_manifests,
)
from adaptive_retrieval.components.manifest_records import STATE_FAILED
from adaptive_retrieval.components.stores.disk_space import undoing
from adaptive_retrieval.components.stores.graph.graph_store import GraphStore
from adaptive_retrieval.pipelines.file_checks import content_problem, unreadable
from adaptive_retrieval.pipelines.index_files import (
    check_batch_space,
    extraction_problem,
    extraction_shortfalls,
    file_hash,
    source_stream,
)
from adaptive_retrieval.pipelines.indexing_pipeline import GUARD
from adaptive_retrieval.pipelines.limits import Limits

logger = logging.getLogger(__name__)


#: The ``kind`` of a failure in ``index_paths``' ``failed`` list.
UNREADABLE, REFUSED, NO_TEXT = "unreadable", "refused", "yielded no text"


@dataclass
class IndexTransaction:
    """What one indexing run did, and what it needs across batches: each batch written in the manifest protocol's
    order (``pending`` record, pipeline, verification, ``complete`` record, with a fault point between each step),
    refused sources recorded without losing the version indexed before, an interrupted batch taken back."""

    store: Any
    graph_store: GraphStore | None
    records: dict[str, dict[str, Any]]
    hashes: dict[str, str] = field(default_factory=dict)
    written: int = 0
    deleted: int = 0
    completed: set[str] = field(default_factory=set)
    failed: list[dict[str, str]] = field(default_factory=list)
    #: Sources indexed from a file read only in part: ``{source: what was kept}``.
    partial: dict[str, str] = field(default_factory=dict)

    def hash_files(self, files: list[Path]) -> None:
        """Hash every file; one that cannot be read is a failure of its own, and the others go on."""
        for path in files:
            try:
                self.hashes[str(path)] = file_hash(path)
            except OSError as err:
                self.fail(str(path), unreadable(path, err), UNREADABLE)

    def fail(self, source: str, reason: str, kind: str) -> None:
        self.failed.append({"source": source, "reason": reason, "kind": kind})
        logger.info("Not indexed: %s: %s", source, reason)

    def refuse(self, problems: dict[str, tuple[str, str]]) -> None:
        """Record the sources that cannot be indexed now (``{source: (reason, kind)}``) without losing data: the
        version indexed before stays, nodes and record, when it is still whole; otherwise whatever a run left of
        the source is removed and its record says ``failed``."""
        if not problems:
            return
        previous = {s: p for s in problems if (p := previous_version(self.records.get(s), self.hashes[s]))}
        whole = looks_complete(self.store, previous, self.graph_store)
        kept = {s: p for s, p in previous.items() if whole.get(s)}
        dropped = [s for s in problems if s not in kept]
        remove_sources(self.store, self.graph_store, dropped)
        write_manifests(
            self.store,
            [kept_record(s, p, problems[s][0], self.hashes[s]) for s, p in kept.items()]
            + [manifest_document(s, self.hashes[s], STATE_FAILED, reason=problems[s][0]) for s in dropped],
        )
        for source, (reason, kind) in problems.items():
            self.fail(source, reason + ("; the version indexed before is kept" if source in kept else ""), kind)

    def undo(self, pipeline: Pipeline, sources: list[str]) -> None:
        """Take back what an interrupted batch wrote for ``sources`` (a write refused for disk space): the version
        indexed before comes back when its chunks are whole (its graph records rebuilt from them when the batch
        had already replaced those), otherwise the source's nodes and record go, so that none is left half-written
        for a later, unrelated run to redo. Runs within the margin's reserve
        (:func:`~adaptive_retrieval.components.stores.disk_space.undoing`)."""
        with undoing():
            try:
                previous = {s: p for s in sources if (p := previous_version(self.records.get(s), self.hashes[s]))}
                for record in previous.values():
                    if not self._graph_holds(record):
                        self._rebuild_graph(pipeline, record)
                whole = looks_complete(self.store, previous, self.graph_store)
                kept = {s: p for s, p in previous.items() if whole.get(s) and self._graph_holds(p)}
                dropped = [s for s in sources if s not in kept]
                for source in sorted(set(previous) - set(kept)):
                    logger.warning("%s: the version indexed before was overwritten in part and is removed", source)
                remove_sources(self.store, self.graph_store, dropped)
                if self.graph_store is not None and dropped:
                    # A source's graph records may be written before its chunks: by its doc id, whatever was stored.
                    self.graph_store.delete_documents([stable_id(s) for s in dropped])
                write_manifests(self.store, [kept_record(s, p, None, None) for s, p in kept.items()])
            except Exception as err:  # the next run's reconciliation repairs what is left
                logger.warning("Could not take back the interrupted batch (%s): the next run repairs it", err)

    def _rebuild_graph(self, pipeline: Pipeline, record: dict[str, Any]) -> None:
        """Write the graph records of a record's stored chunks again (the pipeline's entity extractor on them)."""
        names = {name for name, _ in pipeline.walk()}
        doc_id, chunks = str(record.get("source_doc_id") or ""), int(record.get("chunks") or 0)
        if self.graph_store is None or "entity_extractor" not in names or not doc_id:
            return
        stored = self.store.get_documents_by_id([chunk_id(doc_id, i) for i in range(chunks)])
        entities = pipeline.get_component("entity_extractor").run(documents=stored)["entities"]
        self.graph_store.replace_chunks(entities)
        logger.warning(
            "%s: graph records of the version indexed before written again from its chunks", record["source"]
        )

    def _graph_holds(self, record: dict[str, Any]) -> bool:
        """Whether the graph's chunks of a record's document are the stored chunks (not a newer version's that an
        interrupted batch wrote before its chunks)."""
        doc_id, chunks = str(record.get("source_doc_id") or ""), int(record.get("chunks") or 0)
        if self.graph_store is None or not doc_id:
            return True
        ids = [chunk_id(doc_id, i) for i in range(chunks)]
        stored = {d.id: d.content or "" for d in self.store.get_documents_by_id(ids)}
        in_graph = self.graph_store.chunk_texts(ids)
        return all(in_graph[i][1] == stored.get(i) for i in in_graph)

    def read_batch(self, batch: list[Path], limits: Limits, chunk_words: int) -> dict[Path, bytes]:
        """Read each file of ``batch`` once: the bytes it holds now are what is checked, hashed (the hash the
        manifest records) and indexed. Files whose bytes cannot be indexed (:func:`content_problem`, then the size
        limits) are refused before any work (see :meth:`refuse`); returns the others' bytes."""
        problems: dict[str, tuple[str, str]] = {}
        read: dict[Path, bytes] = {}
        for path in batch:
            try:
                data = path.read_bytes()
            except OSError as err:
                problems[str(path)] = (unreadable(path, err), UNREADABLE)
                continue
            digest = hashlib.sha256(data).hexdigest()
            if digest != self.hashes[str(path)]:
                logger.info("%s changed since it was hashed: the content read now is indexed", path)
                self.hashes[str(path)] = digest
            if problem := content_problem(path.name, data) or limits.content_problem(path.name, data, chunk_words):
                problems[str(path)] = (problem, REFUSED)
                continue
            read[path] = data
        self.refuse(problems)
        return read

    def index_batch(self, pipeline: Pipeline, read: dict[Path, bytes], keep: set[str]) -> None:
        """Run the pipeline on one batch of files (their bytes as read) in the manifest protocol's order (see
        :meth:`~adaptive_retrieval.pipelines.indexer.Indexer.index`)."""
        batch = list(read)
        if not batch:
            return
        check_batch_space(self.store, read)
        write_manifests(
            self.store, [pending_record(str(f), self.hashes[str(f)], self.records.get(str(f))) for f in batch]
        )
        fault_point("index.after_pending")
        sources = [source_stream(f, read[f]) for f in batch]
        result = pipeline.run(
            {"file_router": {"sources": sources, "meta": [{"source_hash": self.hashes[str(f)]} for f in batch]}},
            include_outputs_from=keep,
        )
        fault_point("index.after_pipeline")
        self.written += result["writer"]["documents_written"]
        self.deleted += result["writer"]["documents_deleted"]
        documents = next((result[n]["documents"] for n in ("section_tree", GUARD, "splitter") if n in result), [])
        produced = produced_nodes(documents, result.get("entity_extractor", {}).get("entities", []))
        problems = {r["source"]: (r["reason"], REFUSED) for r in result.get(GUARD, {}).get("refused", [])}
        for path in batch:
            if str(path) not in problems and not (str(path) in produced and produced[str(path)].chunk_ids):
                problems[str(path)] = (extraction_problem(path, read[path]), NO_TEXT)
        self.refuse(problems)
        done = {s: n for s, n in produced.items() if s in self.hashes and n.chunk_ids and s not in problems}
        missing = missing_nodes(self.store, self.graph_store, done)
        if missing:
            msg = "Indexing did not store every node: " + "; ".join(f"{s}: {p}" for s, p in missing.items())
            raise RuntimeError(msg)
        short = extraction_shortfalls(result, read)
        for source in short.keys() & done.keys():
            logger.warning("Indexed in part: %s: %s", source, short[source])
            self.partial[source] = short[source]
        fault_point("index.before_complete")
        write_manifests(
            self.store, [complete_record(s, self.hashes[s], n, partial=short.get(s)) for s, n in done.items()]
        )
        self.completed.update(done)
