"""The indexing pipeline: files → converters → cleaner → section splitter → sparse + dense embedders → section tree
→ writer."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.components.converters import TextFileToDocument
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.routers import FileTypeRouter

from components.indexing.community_detector import CommunityDetector
from components.indexing.entity_extractor import EntityExtractor
from components.indexing.graph_writer import GraphWriter
from components.indexing.replacing_writer import ReplacingDocumentWriter
from components.indexing.section_splitter import SectionSplitter
from components.indexing.section_tree_builder import SectionTreeBuilder
from components.indexing.structured_converter import StructuredConverter
from components.models.document_embedder import OnnxDocumentEmbedder
from components.models.paths import DEFAULT_MODEL
from components.models.sparse_document_embedder import Bm25DocumentEmbedder
from components.stores.graph_store import GraphStore
from pipelines.store_config import make_graph_store, make_store

logger = logging.getLogger(__name__)

SUPPORTED_SUFFIXES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}


def build_indexing_pipeline(
    store: Any = None,
    model: str = DEFAULT_MODEL,
    precision: str = "int8",
    chunk_words: int = 180,
    progress_bar: bool = True,
    graph_store: GraphStore | None = None,
) -> Pipeline:
    """Build the indexing pipeline over ``store`` (default: the server at
    ``$QDRANT_URL``, else embedded Qdrant Edge at ``$ADAPTIVE_QDRANT_PATH`` or ``.adaptive/qdrant``) and
    ``graph_store`` (default: Neo4j when ``$NEO4J_URI`` is set, else SQLite next to the Qdrant folder).

    Chunks also go to the knowledge graph: entity extraction → graph writer (incremental per document) →
    community detector (recomputes once enough of the graph changed).

    Markdown, HTML and PDF go through ``StructuredConverter`` (markdown-it-py tokens, the lxml element tree, the
    PDF outline or font layout), whose parsed sections the section splitter follows; plain text goes through
    ``TextFileToDocument`` and the splitter's line rules.
    """
    store = store or make_store()
    graph_store = graph_store or make_graph_store(qdrant_path=store.path)
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
        ),
    )
    p.add_component("section_tree", SectionTreeBuilder(model=model, precision=precision))
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
    """``{source: source_hash}`` of the given sources already in ``store``."""
    if not sources:
        return {}
    docs = store.filter_documents(
        filters={
            "operator": "AND",
            "conditions": [
                {"field": "meta.source", "operator": "in", "value": sources},
                {"field": "meta.level", "operator": "==", "value": 0},
            ],
        }
    )
    return {d.meta["source"]: d.meta.get("source_hash", "") for d in docs}


def index_paths(
    pipeline: Pipeline,
    paths: Iterable[str | Path],
    force: bool = False,
    batch_files: int = 64,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Index the supported files under ``paths`` with an indexing pipeline (built or loaded from YAML).

    Unchanged files (same SHA-256 as when indexed) are skipped unless ``force``; changed files replace their
    chunks. ``progress(done, total)`` is called after each batch (the CLI draws a bar with it). Returns counts:
    ``files``, ``indexed``, ``skipped``, ``chunks_written``, ``chunks_deleted``.
    """
    files = collect_files(paths)
    store = store_of(pipeline)
    hashes = {str(f): file_hash(f) for f in files}
    known = {} if force else indexed_hashes(store, list(hashes))
    todo = [f for f in files if force or known.get(str(f)) != hashes[str(f)]]
    written = deleted = 0
    for start in range(0, len(todo), batch_files):
        batch = todo[start : start + batch_files]
        logger.info("Indexing files %d-%d of %d", start + 1, start + len(batch), len(todo))
        result = pipeline.run(
            {"file_router": {"sources": batch, "meta": [{"source_hash": hashes[str(f)]} for f in batch]}}
        )
        written += result["writer"]["documents_written"]
        deleted += result["writer"]["documents_deleted"]
        if progress is not None:
            progress(start + len(batch), len(todo))
    optimize_store(store)
    return {
        "files": len(files),
        "indexed": len(todo),
        "skipped": len(files) - len(todo),
        "chunks_written": written,
        "chunks_deleted": deleted,
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
    """Delete every node (chunks and summaries) of the given sources, and their chunks in ``graph_store`` when
    given (see :func:`graph_store_of`); returns how many document-store nodes were removed."""
    names = [str(Path(s).expanduser().resolve()) if Path(s).expanduser().exists() else str(s) for s in sources]
    if not names:
        return 0
    found = store.filter_documents(filters={"field": "meta.source", "operator": "in", "value": names})
    ids = [d.id for d in found]
    if ids:
        store.delete_documents(ids)
    if graph_store is not None:
        graph_store.delete_documents(sorted({str(d.meta["doc_id"]) for d in found if d.meta.get("doc_id")}))
    return len(ids)
