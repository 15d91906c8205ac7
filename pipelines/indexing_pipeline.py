"""The indexing pipeline: files → converters → cleaner → section splitter → sparse + dense embedders → section tree
→ writer."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.components.converters import TextFileToDocument
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.routers import FileTypeRouter
from haystack.dataclasses import ByteStream

from adaptive_retrieval.components.ids import chunk_id, stable_id
from adaptive_retrieval.components.indexing.community_detector import CommunityDetector
from adaptive_retrieval.components.indexing.entity_extractor import EntityExtractor
from adaptive_retrieval.components.indexing.faults import fault_point
from adaptive_retrieval.components.indexing.graph_writer import GraphWriter
from adaptive_retrieval.components.indexing.index_identity import claim_graph
from adaptive_retrieval.components.indexing.manifest import (
    complete_record,
    kept_record,
    looks_complete,
    manifest_document,
    missing_nodes,
    pending_record,
    previous_version,
    produced_nodes,
    read_manifests,
    reconcile,
    remove_sources,
    write_manifests,
)
from adaptive_retrieval.components.indexing.replacing_writer import ReplacingDocumentWriter
from adaptive_retrieval.components.indexing.section_splitter import SectionSplitter
from adaptive_retrieval.components.indexing.section_tree_builder import SectionTreeBuilder
from adaptive_retrieval.components.indexing.source_limits import SourceLimitGuard
from adaptive_retrieval.components.indexing.structure.blocks import Coverage, text_units
from adaptive_retrieval.components.indexing.structured_converter import StructuredConverter
from adaptive_retrieval.components.manifest_records import STATE_COMPLETE, STATE_FAILED
from adaptive_retrieval.components.models.document_embedder import OnnxDocumentEmbedder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.sparse_document_embedder import Bm25DocumentEmbedder
from adaptive_retrieval.components.stores.disk_space import InsufficientSpaceError, require_space, undoing
from adaptive_retrieval.components.stores.graph_store import GraphStore
from adaptive_retrieval.pipelines.file_checks import content_problem, unreadable
from adaptive_retrieval.pipelines.file_types import SUPPORTED_SUFFIXES
from adaptive_retrieval.pipelines.file_walk import find_files
from adaptive_retrieval.pipelines.limits import Limits
from adaptive_retrieval.pipelines.store_config import make_graph_store, make_store
from adaptive_retrieval.pipelines.text_encodings import as_utf8, decode_text

logger = logging.getLogger(__name__)


#: Passages per ONNX Runtime call while indexing. The encoder is shared with the query path and runs one call at a
#: time, so a query embedding waits for at most one such batch: with 8 instead of 32 a query's p95 during a
#: maximum-size upload is measured below 2x its idle p95 (scripts/lab/load_test.py --big-upload-chars 2000000).
EMBED_BATCH = 8

#: At most this many bytes of files (on disk) per pipeline run, besides at most ``batch_files`` files: a large
#: file (a PDF paper, a long manual) runs alone, so the per-file progress moves as each one finishes, while small
#: files still share a run. Sharing matters beyond the ~0.1 s each run costs (manifests, verification, the
#: community check): the entity extractor's phrase statistics are per batch, so small files keep the batches they
#: had (16 files of the demo corpus are ~100 KB).
BATCH_BYTES = 256 * 1024

#: The ``kind`` of a failure in ``index_paths``' ``failed`` list.
UNREADABLE, REFUSED, NO_TEXT = "unreadable", "refused", "yielded no text"
#: The indexing pipeline's component that refuses sources by what splitting produced (see SourceLimitGuard).
GUARD = "source_limits"
#: The components that turn a file into text. StructuredConverter says in ``meta["extraction"]`` how much of a
#: file's text it kept; for the others (Haystack's text converter) it is counted here.
EXTRACTORS = ("txt_converter", "md_converter", "html_converter", "pdf_converter")


def build_indexing_pipeline(
    store: Any = None,
    model: str = DEFAULT_MODEL,
    precision: str | None = None,
    chunk_words: int = 180,
    progress_bar: bool = True,
    graph_store: GraphStore | None = None,
) -> Pipeline:
    """Build the indexing pipeline over ``store`` (default: the server at ``$QDRANT_URL``, else embedded Qdrant
    Edge at ``$ADAPTIVE_QDRANT_PATH`` or the per-user data folder, created on first write) and ``graph_store``
    (default: Neo4j when ``$NEO4J_URI`` is set, else SQLite next to the Qdrant folder). ``precision=None``: the
    models read ``$ADAPTIVE_PRECISION`` at warm-up (default int8).

    Chunks also go to the knowledge graph: entity extraction → graph writer (incremental per document) →
    community detector (recomputes once enough of the graph changed).

    Markdown, HTML and PDF go through ``StructuredConverter`` (markdown-it-py tokens, the lxml element tree, the
    PDF outline or font layout), whose parsed sections the section splitter follows; plain text goes through
    ``TextFileToDocument`` and the splitter's line rules.
    """
    store = store or make_store()
    graph_store = graph_store or make_graph_store(qdrant_path=getattr(store, "path", None))
    p = Pipeline()
    _add_conversion(p, chunk_words)
    p.add_component(
        "sparse_embedder",
        Bm25DocumentEmbedder(meta_fields_to_embed=["title", "section_path"], progress_bar=progress_bar),
    )
    p.add_component(
        "dense_embedder",
        OnnxDocumentEmbedder(
            model=model,
            precision=precision,
            progress_bar=progress_bar,
            meta_fields_to_embed=["title", "section_path"],
            batch_size=EMBED_BATCH,
        ),
    )
    p.add_component("section_tree", SectionTreeBuilder(model=model, precision=precision, batch_size=EMBED_BATCH))
    p.add_component("writer", ReplacingDocumentWriter(document_store=store))
    p.add_component("entity_extractor", EntityExtractor())
    p.add_component("graph_writer", GraphWriter(graph_store=graph_store))
    p.add_component("community_detector", CommunityDetector(graph_store=graph_store, model=model, precision=precision))
    p.connect(f"{GUARD}.documents", "sparse_embedder.documents")
    p.connect("sparse_embedder.documents", "dense_embedder.documents")
    # The tree comes after the dense embedder: centroids, central chunks and segment cuts reuse the chunk vectors,
    # and chunks and summary nodes reach the writer in one batch, so replacing a document by doc_id also replaces
    # (or deletes) its stale summaries. Summaries skip the sparse embedder: the BM25 channel serves chunks only.
    p.connect("dense_embedder.documents", "section_tree.documents")
    p.connect("section_tree.documents", "writer.documents")
    # The graph branch reads the chunks before embedding: Haystack copies inputs, and vectors are not needed.
    p.connect(f"{GUARD}.documents", "entity_extractor.documents")
    p.connect("entity_extractor.entities", "graph_writer.entities")
    p.connect("graph_writer.chunks_changed", "community_detector.chunks_changed")
    return p


def _add_conversion(p: Pipeline, chunk_words: int) -> None:
    """Files to limited chunks: route by type, convert (keeping structure), clean, split by sections and refuse a
    source over the produced-size limits; ends at the ``GUARD`` component's ``documents``."""
    p.add_component(
        "file_router",
        FileTypeRouter(
            mime_types=["text/plain", "text/markdown", "text/html", "application/pdf"],
            additional_mimetypes={"text/markdown": ".md"},
        ),
    )
    p.add_component("txt_converter", TextFileToDocument(store_full_path=True))
    # Markdown, HTML and PDF keep their structure: heading tokens, the element tree, the PDF outline or layout.
    p.add_component("md_converter", StructuredConverter(store_full_path=True))
    p.add_component("html_converter", StructuredConverter(store_full_path=True))
    p.add_component("pdf_converter", StructuredConverter(store_full_path=True))
    p.add_component("joiner", DocumentJoiner(join_mode="concatenate"))
    p.add_component(
        "cleaner",
        DocumentCleaner(
            remove_empty_lines=False,
            remove_extra_whitespaces=False,
            unicode_normalization="NFKC",
            keep_id=True,
        ),
    )
    p.add_component("splitter", SectionSplitter(chunk_words=chunk_words))
    p.add_component(GUARD, SourceLimitGuard())  # refuses a source by what splitting produced, before embedding
    p.connect("file_router.text/plain", "txt_converter.sources")
    p.connect("file_router.text/markdown", "md_converter.sources")
    p.connect("file_router.text/html", "html_converter.sources")
    p.connect("file_router.application/pdf", "pdf_converter.sources")
    for converter in ("txt_converter", "md_converter", "html_converter", "pdf_converter"):
        p.connect(f"{converter}.documents", "joiner.documents")
    p.connect("joiner.documents", "cleaner.documents")
    p.connect("cleaner.documents", "splitter.documents")
    p.connect("splitter.documents", f"{GUARD}.documents")


def collect_files(paths: Iterable[str | Path], follow_symlinks: bool = False) -> list[Path]:
    """Supported files under ``paths`` (files or folders, recursive), sorted, as absolute paths; links met inside a
    folder are not followed unless ``follow_symlinks`` (:func:`~adaptive_retrieval.pipelines.file_walk.find_files`
    also says which were skipped)."""
    return find_files(paths, follow_symlinks).files


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes, read in blocks (a changed file is re-indexed, an unchanged one skipped)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def source_stream(path: Path, data: bytes) -> ByteStream:
    """The bytes of ``path`` as read, for the pipeline: the converters parse exactly the bytes that were hashed
    (a file edited while it is indexed can no longer be indexed as one version and recorded as another). Text
    with a byte-order mark (UTF-16, UTF-32) goes on as UTF-8."""
    mime_type = SUPPORTED_SUFFIXES[path.suffix.lower()]
    text = mime_type != "application/pdf"
    return ByteStream(
        data=as_utf8(data) if text else data,
        meta={"file_path": str(path), **({"encoding": "utf-8"} if text else {})},
        mime_type=mime_type,
    )


def store_of(pipeline: Pipeline) -> Any:
    """The document store of the pipeline's writer."""
    return pipeline.get_component("writer").document_store


def indexed_hashes(store: Any, sources: list[str]) -> dict[str, str]:
    """``{source: source_hash}`` of the given sources whose manifest record says ``complete``."""
    records = read_manifests(store, sources)
    return {s: str(r.get("source_hash", "")) for s, r in records.items() if r.get("state") == STATE_COMPLETE}


def extraction_problem(path: Path, data: bytes) -> str:
    """Why ``path`` (read as ``data``) yielded no text, as far as can be told from its bytes (for the message)."""
    if path.suffix.lower() == ".pdf" and data.startswith(b"%PDF"):
        return "no text could be extracted from the PDF (broken, encrypted or scanned images only)"
    return content_problem(path.name, data) or "no text left after extraction and cleaning"


#: Bytes an embedded index may take per byte of file indexed (chunks and summaries with their text, payload, dense
#: and sparse vectors in the write-ahead log and a segment: the store's own estimate is ~18 per character of text,
#: and the graph's records), and per file (its first nodes' vectors and its manifest record).
SPACE_PER_BYTE, SPACE_PER_FILE = 24, 64 * 1024


def check_batch_space(store: Any, read: dict[Path, bytes]) -> None:
    """Refuse a batch before anything of it is written when an embedded index's disk cannot hold what it may add
    (:data:`SPACE_PER_BYTE` per byte read and :data:`SPACE_PER_FILE`, plus the margin): a refusal in the middle of
    it has more to take back.

    :raises InsufficientSpaceError: naming the space needed.
    """
    folder = getattr(store, "shard_path", None)
    if folder is not None:
        need = sum(SPACE_PER_BYTE * len(data) + SPACE_PER_FILE for data in read.values())
        require_space(Path(folder), "index these files", need=need, need_for=f"{len(read)} file(s)")


def extraction_shortfalls(result: dict[str, Any], read: dict[Path, bytes]) -> dict[str, str]:
    """``{source: what was kept}`` for the files of ``read`` whose extractor kept less of their text than they hold
    (:attr:`Coverage.short`), from the extractors' outputs in a pipeline ``result``."""
    files = {str(path): data for path, data in read.items()}
    short: dict[str, str] = {}
    for name in EXTRACTORS:
        for doc in result.get(name, {}).get("documents", []):
            source = str(doc.meta.get("file_path") or "")
            coverage = Coverage.from_meta(doc.meta.get("extraction"))
            if coverage is None and source in files and not source.lower().endswith(".pdf"):
                total = text_units(decode_text(files[source]))
                coverage = Coverage(kept=min(text_units(doc.content or ""), total), total=total)
            if coverage is not None and coverage.short:
                short[source] = coverage.describe()
    return short


def _unfinished_files(unfinished: list[str], seen: set[str]) -> list[Path]:
    return [
        Path(s)
        for s in unfinished
        if s not in seen and Path(s).is_file() and Path(s).suffix.lower() in SUPPORTED_SUFFIXES
    ]


def file_batches(files: list[Path], batch_files: int, batch_bytes: int = BATCH_BYTES) -> list[list[Path]]:
    """``files`` in order, cut into batches of at most ``batch_files`` files and ``batch_bytes`` bytes on disk; a
    file of more than ``batch_bytes`` is a batch of its own."""
    if batch_files < 1 or batch_bytes < 1:
        msg = f"batch_files and batch_bytes must be at least 1, got {batch_files} and {batch_bytes}"
        raise ValueError(msg)
    batches: list[list[Path]] = []
    batch: list[Path] = []
    size = 0
    for path in files:
        file_size = path.stat().st_size
        if batch and (len(batch) >= batch_files or size + file_size > batch_bytes):
            batches.append(batch)
            batch, size = [], 0
        batch.append(path)
        size += file_size
    if batch:
        batches.append(batch)
    return batches


@dataclass
class _Run:
    """What one ``index_paths`` call did, and what it needs across batches."""

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
        :func:`index_paths`)."""
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


def _up_to_date(record: dict[str, Any] | None, source_hash: str, intact: bool) -> bool:
    return (
        bool(record) and record.get("state") == STATE_COMPLETE and record.get("source_hash") == source_hash and intact
    )


def index_paths(
    pipeline: Pipeline,
    paths: Iterable[str | Path],
    force: bool = False,
    batch_files: int = 64,
    progress: Callable[[int, int], None] | None = None,
    check: Callable[[list[Path]], None] | None = None,
    limits: Limits | None = None,
    batch_bytes: int = BATCH_BYTES,
    follow_symlinks: bool = False,
) -> dict[str, Any]:
    """Index the supported files under ``paths`` with an indexing pipeline (built or loaded from YAML).

    Crash-safe per source: each source's manifest record (see :mod:`adaptive_retrieval.components.indexing.manifest`) is
    written ``indexing`` before its first node and ``complete`` only after every chunk, summary and graph record was
    verified in both stores. Before indexing, the graph is claimed for this index (a graph another index wrote is
    refused: :mod:`~adaptive_retrieval.components.indexing.index_identity`), the stores are reconciled and sources a
    crash left unfinished are redone (also when not among ``paths``). Sources whose record is ``complete`` with the
    same SHA-256 are skipped unless ``force``; changed files replace their chunks.

    A file that cannot be indexed is reported in ``failed`` (``source``, ``reason``, ``kind``) and the others go on:
    ``unreadable`` (permissions, I/O), ``refused`` (binary or not UTF-8, empty, over a size limit before any work,
    or over a limit on what splitting produced, before anything is embedded) or ``yielded no text``. Bad input
    never loses indexed data: the version indexed before, if any, is kept (``stats`` shows it as ``kept``).

    :param paths: a list of files or folders (a single string is refused: iterating it would walk its letters).
    :param batch_files: at most this many files per pipeline run.
    :param progress: ``progress(done, total)`` in files, as each batch's files finish (the CLI draws a bar with it):
        a file of more than ``batch_bytes`` is a batch of its own, so large files are reported one by one.
    :param check: called with each batch before it runs; raise to stop (time budget, client gone).
    :param limits: per-file size limits checked from the bytes (default :meth:`Limits.from_env`), with the limit and
        the variable that raises it in the reason.
    :param batch_bytes: at most this many bytes of files per pipeline run (see :func:`file_batches`).
    :param follow_symlinks: follow symbolic links met inside a folder, wherever they point; off (the default), a
        folder is never left and each link is listed in ``links_skipped`` (a path given in ``paths`` is read even
        when it is a link: it was named).
    :returns: counts ``files``, ``indexed``, ``skipped``, ``chunks_written``, ``chunks_deleted``, ``redone``
        (unfinished sources redone), ``failed`` (``[{"source", "reason", "kind"}]``) and ``partial``
        (``[{"source", "reason"}]``: indexed, but their file was read only in part, e.g. a PDF page that could not
        be read; ``stats`` shows them as ``partial``) and ``links_skipped`` (``[{"path", "target", "reason"}]``).
    :raises TypeError: when ``paths`` is a string or bytes rather than a list of them.
    """
    if isinstance(paths, (str, bytes, os.PathLike)):
        msg = f"paths must be a list of files or folders, e.g. [{str(paths)!r}], not a single {type(paths).__name__}"
        raise TypeError(msg)
    found = find_files(paths, follow_symlinks)
    for link in found.skipped_links:
        logger.info("Not followed: the link %s -> %s: %s", link.path, link.target, link.reason)
    files = found.files
    store, graph_store = store_of(pipeline), graph_store_of(pipeline)
    # Before anything is written or reconciled: a graph of another index is refused, never mixed into (or pruned).
    claim_graph(store, graph_store)
    state = reconcile(store, graph_store)
    files = sorted(files + _unfinished_files(state.unfinished, {str(f) for f in files}))
    run = _Run(store, graph_store, records={})
    run.hash_files(files)
    run.records = {s: r for s, r in state.records.items() if s in run.hashes}
    intact = looks_complete(store, run.records, graph_store)
    todo = [
        f
        for f in files
        if str(f) in run.hashes
        and (force or not _up_to_date(run.records.get(str(f)), run.hashes[str(f)], intact.get(str(f), False)))
    ]
    # A file back to the content indexed before its refused change: its record drops the refusal.
    back = [s for s, r in run.records.items() if r.get("refused") and s not in {str(f) for f in todo}]
    write_manifests(store, [kept_record(s, run.records[s], None, None) for s in back])
    names = {name for name, _ in pipeline.walk()}
    chunk_words = int(getattr(pipeline.get_component("splitter"), "chunk_words", 180)) if "splitter" in names else 180
    limits = limits or Limits.from_env()
    keep = {n for n in ("section_tree", GUARD, "splitter", "entity_extractor", *EXTRACTORS) if n in names}
    finished = 0
    for batch in file_batches(todo, batch_files, batch_bytes):
        if check is not None:
            check(batch)
        logger.info("Indexing files %d-%d of %d", finished + 1, finished + len(batch), len(todo))
        read = run.read_batch(batch, limits, chunk_words)
        try:
            run.index_batch(pipeline, read, keep)
        except Exception as err:
            if isinstance(err, InsufficientSpaceError) or isinstance(err.__cause__, InsufficientSpaceError):
                run.undo(pipeline, [str(f) for f in read])  # "nothing was written" holds for this batch
            raise
        finished += len(batch)
        if progress is not None:
            progress(finished, len(todo))
    optimize_store(store)
    return {
        "files": len(files),
        "indexed": len(run.completed),
        "skipped": len(run.hashes) - len(todo),
        "chunks_written": run.written,
        "chunks_deleted": run.deleted,
        "redone": len(set(state.unfinished) & {str(f) for f in todo}),
        "failed": run.failed,
        "partial": [{"source": s, "reason": r} for s, r in sorted(run.partial.items())],
        "links_skipped": [link.to_dict() for link in found.skipped_links],
    }


def optimize_store(store: Any) -> None:
    """After a bulk write: let an embedded store build its HNSW graph when enough was written (a server
    optimises by itself, and a store without ``optimize`` needs nothing)."""
    optimize = getattr(store, "optimize", None)
    if callable(optimize):
        optimize()


def graph_store_of(pipeline: Pipeline) -> GraphStore | None:
    """The graph store of the pipeline's graph writer (``None`` for a pipeline without one)."""
    names = {name for name, _ in pipeline.walk()}
    return pipeline.get_component("graph_writer").graph_store if "graph_writer" in names else None


def delete_sources(store: Any, sources: Iterable[str | Path], graph_store: GraphStore | None = None) -> int:
    """Delete every node (chunks and summaries) of the given sources, their chunks in ``graph_store`` when given
    (see :func:`graph_store_of`) and their manifest records, in a crash-safe order (records marked ``deleting``
    first, removed last); returns how many document-store nodes were removed."""
    if isinstance(sources, (str, bytes, os.PathLike)):
        msg = f"sources must be a list of sources, e.g. [{str(sources)!r}], not a single {type(sources).__name__}"
        raise TypeError(msg)
    names = [str(Path(s).expanduser().resolve()) if Path(s).expanduser().exists() else str(s) for s in sources]
    return remove_sources(store, graph_store, names)
