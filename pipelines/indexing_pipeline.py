"""The indexing pipeline: files → converters → cleaner → section splitter → sparse + dense embedders → section tree
→ writer."""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.components.converters import TextFileToDocument
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.routers import FileTypeRouter

from adaptive_retrieval.components.indexing.community_detector import CommunityDetector
from adaptive_retrieval.components.indexing.entity_extractor import EntityExtractor
from adaptive_retrieval.components.indexing.faults import fault_point
from adaptive_retrieval.components.indexing.graph_writer import GraphWriter
from adaptive_retrieval.components.indexing.manifest import (
    STATE_COMPLETE,
    STATE_FAILED,
    STATE_INDEXING,
    complete_record,
    looks_complete,
    manifest_document,
    missing_nodes,
    produced_nodes,
    read_manifests,
    reconcile,
    remove_sources,
    write_manifests,
)
from adaptive_retrieval.components.indexing.replacing_writer import ReplacingDocumentWriter
from adaptive_retrieval.components.indexing.section_splitter import SectionSplitter
from adaptive_retrieval.components.indexing.section_tree_builder import SectionTreeBuilder
from adaptive_retrieval.components.indexing.structured_converter import StructuredConverter
from adaptive_retrieval.components.models.document_embedder import OnnxDocumentEmbedder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.sparse_document_embedder import Bm25DocumentEmbedder
from adaptive_retrieval.components.stores.graph_store import GraphStore
from adaptive_retrieval.pipelines.file_types import SUPPORTED_SUFFIXES
from adaptive_retrieval.pipelines.limits import Limits
from adaptive_retrieval.pipelines.store_config import make_graph_store, make_store

logger = logging.getLogger(__name__)


#: Passages per ONNX Runtime call while indexing. The encoder is shared with the query path and runs one call at a
#: time, so a query embedding waits for at most one such batch: with 8 instead of 32 a query's p95 during a
#: maximum-size upload is measured below 2x its idle p95 (scripts/load_test.py --big-upload-chars 2000000).
EMBED_BATCH = 8

#: At most this many bytes of files (on disk) per pipeline run, besides at most ``batch_files`` files: a large
#: file (a PDF paper, a long manual) runs alone, so the per-file progress moves as each one finishes, while small
#: files still share a run. Sharing matters beyond the ~0.1 s each run costs (manifests, verification, the
#: community check): the entity extractor's phrase statistics are per batch, so small files keep the batches they
#: had (16 files of the demo corpus are ~100 KB).
BATCH_BYTES = 256 * 1024


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
    p.connect("file_router.text/plain", "txt_converter.sources")
    p.connect("file_router.text/markdown", "md_converter.sources")
    p.connect("file_router.text/html", "html_converter.sources")
    p.connect("file_router.application/pdf", "pdf_converter.sources")
    for converter in ("txt_converter", "md_converter", "html_converter", "pdf_converter"):
        p.connect(f"{converter}.documents", "joiner.documents")
    p.connect("joiner.documents", "cleaner.documents")
    p.connect("cleaner.documents", "splitter.documents")
    p.connect("splitter.documents", "sparse_embedder.documents")
    p.connect("sparse_embedder.documents", "dense_embedder.documents")
    # The tree comes after the dense embedder: centroids, central chunks and segment cuts reuse the chunk vectors,
    # and chunks and summary nodes reach the writer in one batch, so replacing a document by doc_id also replaces
    # (or deletes) its stale summaries. Summaries skip the sparse embedder: the BM25 channel serves chunks only.
    p.connect("dense_embedder.documents", "section_tree.documents")
    p.connect("section_tree.documents", "writer.documents")
    # The graph branch reads the chunks before embedding: Haystack copies inputs, and vectors are not needed.
    p.connect("splitter.documents", "entity_extractor.documents")
    p.connect("entity_extractor.entities", "graph_writer.entities")
    p.connect("graph_writer.chunks_changed", "community_detector.chunks_changed")
    return p


def collect_files(paths: Iterable[str | Path]) -> list[Path]:
    """Supported files under ``paths`` (files or folders, recursive), sorted, as absolute paths."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.exists():
            msg = f"{path} does not exist"
            raise FileNotFoundError(msg)
        candidates = sorted(path.rglob("*")) if path.is_dir() else [path]
        files.extend(f for f in candidates if f.is_file() and f.suffix.lower() in SUPPORTED_SUFFIXES)
    return sorted(set(files))


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes (a changed file is re-indexed, an unchanged one skipped)."""
    return hashlib.sha256(path.read_bytes()).hexdigest()


def store_of(pipeline: Pipeline) -> Any:
    """The document store of the pipeline's writer."""
    return pipeline.get_component("writer").document_store


def indexed_hashes(store: Any, sources: list[str]) -> dict[str, str]:
    """``{source: source_hash}`` of the given sources whose manifest record says ``complete``."""
    records = read_manifests(store, sources)
    return {s: str(r.get("source_hash", "")) for s, r in records.items() if r.get("state") == STATE_COMPLETE}


def extraction_problem(path: Path) -> str:
    """Why ``path`` yielded no text, as far as can be told from its bytes (for the failure message)."""
    try:
        data = path.read_bytes()
    except OSError as err:
        return f"cannot read the file: {err.strerror or err}"
    if not data.strip():
        return "the file is empty"
    if path.suffix.lower() == ".pdf":
        if not data.startswith(b"%PDF"):
            return "not a PDF (no %PDF header)"
        return "no text could be extracted from the PDF (broken, encrypted or scanned images only)"
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"not UTF-8 text ({err.reason} at byte {err.start})"
    return "no text left after extraction and cleaning"


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


def index_paths(
    pipeline: Pipeline,
    paths: Iterable[str | Path],
    force: bool = False,
    batch_files: int = 64,
    progress: Callable[[int, int], None] | None = None,
    check: Callable[[list[Path]], None] | None = None,
    limits: Limits | None = None,
    batch_bytes: int = BATCH_BYTES,
) -> dict[str, Any]:
    """Index the supported files under ``paths`` with an indexing pipeline (built or loaded from YAML).

    Crash-safe per source: each source's manifest record (see :mod:`adaptive_retrieval.components.indexing.manifest`) is
    written ``indexing`` before its first node and ``complete`` only after every chunk, summary and graph record was
    verified in both stores. Before indexing, the stores are reconciled and sources a crash left unfinished are
    redone (also when not among ``paths``). Sources whose record is ``complete`` with the same SHA-256 are
    skipped unless ``force``; changed files replace their chunks. A file that yields no text is reported in
    ``failed`` with the reason (and what it held before is removed).

    :param paths: a list of files or folders (a single string is refused: iterating it would walk its letters).
    :param batch_files: at most this many files per pipeline run.
    :param progress: ``progress(done, total)`` in files, as each batch's files finish (the CLI draws a bar with it):
        a file of more than ``batch_bytes`` is a batch of its own, so large files are reported one by one.
    :param check: called with each batch before it runs; raise to stop (time budget, client gone).
    :param limits: per-file size limits (default :meth:`Limits.from_env`); a file over one is reported in
        ``failed`` with the limit and the variable that raises it, before any work is spent on it.
    :param batch_bytes: at most this many bytes of files per pipeline run (see :func:`file_batches`).
    :returns: counts ``files``, ``indexed``, ``skipped``, ``chunks_written``, ``chunks_deleted``, ``redone``
        (unfinished sources redone) and ``failed`` (``[{"source", "reason"}]``).
    :raises TypeError: when ``paths`` is a string or bytes rather than a list of them.
    """
    if isinstance(paths, (str, bytes, os.PathLike)):
        msg = f"paths must be a list of files or folders, e.g. [{str(paths)!r}], not a single {type(paths).__name__}"
        raise TypeError(msg)
    files = collect_files(paths)
    store = store_of(pipeline)
    graph_store = graph_store_of(pipeline)
    state = reconcile(store, graph_store)
    redo = _unfinished_files(state.unfinished, {str(f) for f in files})
    files = sorted(files + redo)
    hashes = {str(f): file_hash(f) for f in files}
    records = {s: r for s, r in state.records.items() if s in hashes}
    intact = looks_complete(store, records)
    todo = [
        f
        for f in files
        if force
        or records.get(str(f), {}).get("state") != STATE_COMPLETE
        or records[str(f)].get("source_hash") != hashes[str(f)]
        or not intact.get(str(f), False)
    ]
    names = {name for name, _ in pipeline.walk()}
    keep = {n for n in ("section_tree", "splitter", "entity_extractor") if n in names}
    written = deleted = 0
    failed: list[dict[str, str]] = []
    limits = limits or Limits.from_env()
    chunk_words = int(getattr(pipeline.get_component("splitter"), "chunk_words", 180)) if "splitter" in names else 180
    refused = {str(f): problem for f in todo if (problem := limits.file_problem(f, chunk_words))}
    if refused:
        # Refused before any work; what such a file held before is stale (its content changed), so it goes.
        remove_sources(store, graph_store, list(refused))
        write_manifests(store, [manifest_document(s, hashes[s], STATE_FAILED, reason=r) for s, r in refused.items()])
        failed.extend({"source": s, "reason": r} for s, r in refused.items())
        for reason in refused.values():
            logger.warning("Not indexed: %s", reason)
        todo_run = [f for f in todo if str(f) not in refused]
    else:
        todo_run = todo
    finished = 0
    for batch in file_batches(todo_run, batch_files, batch_bytes):
        if check is not None:
            check(batch)
        logger.info("Indexing files %d-%d of %d", finished + 1, finished + len(batch), len(todo_run))
        write_manifests(store, [manifest_document(str(f), hashes[str(f)], STATE_INDEXING) for f in batch])
        fault_point("index.after_pending")
        result = pipeline.run(
            {"file_router": {"sources": batch, "meta": [{"source_hash": hashes[str(f)]} for f in batch]}},
            include_outputs_from=keep,
        )
        fault_point("index.after_pipeline")
        written += result["writer"]["documents_written"]
        deleted += result["writer"]["documents_deleted"]
        documents = result.get("section_tree", result.get("splitter", {})).get("documents", [])
        produced = produced_nodes(documents, result.get("entity_extractor", {}).get("entities", []))
        empty = [f for f in batch if not produced.get(str(f)) or not produced[str(f)].chunk_ids]
        if empty:
            # What a now-empty file held before is stale: remove it, then record the failure.
            remove_sources(store, graph_store, [str(f) for f in empty])
            reasons = {str(f): extraction_problem(f) for f in empty}
            failed.extend({"source": s, "reason": r} for s, r in reasons.items())
            write_manifests(
                store, [manifest_document(s, hashes[s], STATE_FAILED, reason=r) for s, r in reasons.items()]
            )
            for source, reason in reasons.items():
                logger.warning("No text indexed from %s: %s", source, reason)
        done = {s: n for s, n in produced.items() if s in hashes and n.chunk_ids}
        problems = missing_nodes(store, graph_store, done)
        if problems:
            msg = "Indexing did not store every node: " + "; ".join(f"{s}: {p}" for s, p in problems.items())
            raise RuntimeError(msg)
        fault_point("index.before_complete")
        write_manifests(store, [complete_record(s, hashes[s], n) for s, n in done.items()])
        finished += len(batch)
        if progress is not None:
            progress(finished, len(todo_run))
    optimize_store(store)
    return {
        "files": len(files),
        "indexed": len(todo) - len(failed),
        "skipped": len(files) - len(todo),
        "chunks_written": written,
        "chunks_deleted": deleted,
        "redone": len(set(state.unfinished) & {str(f) for f in todo}),
        "failed": failed,
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
