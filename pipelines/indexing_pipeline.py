"""The indexing pipeline: files → converters → cleaner → section splitter → sparse + dense embedders → writer."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.components.converters import HTMLToDocument, PyPDFToDocument, TextFileToDocument
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.routers import FileTypeRouter

from components.indexing.replacing_writer import ReplacingDocumentWriter
from components.indexing.section_splitter import SectionSplitter
from components.models.document_embedder import OnnxDocumentEmbedder
from components.models.paths import DEFAULT_MODEL
from components.models.sparse_document_embedder import Bm25DocumentEmbedder
from components.stores.qdrant_store import SharedQdrantDocumentStore
from pipelines.store_config import make_store

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
    store: SharedQdrantDocumentStore | None = None,
    model: str = DEFAULT_MODEL,
    precision: str = "int8",
    chunk_words: int = 180,
    progress_bar: bool = True,
) -> Pipeline:
    """Build the indexing pipeline over ``store`` (default: local Qdrant at ``.adaptive/qdrant``).

    Markdown goes through ``TextFileToDocument`` rather than ``MarkdownToDocument`` so that its ``#`` headings
    reach the section splitter; HTML is extracted to Markdown for the same reason.
    """
    store = store or make_store()
    p = Pipeline()
    p.add_component(
        "file_router",
        FileTypeRouter(
            mime_types=["text/plain", "text/markdown", "text/html", "application/pdf"],
            additional_mimetypes={"text/markdown": ".md"},
        ),
    )
    p.add_component("txt_converter", TextFileToDocument(store_full_path=True))
    p.add_component("md_converter", TextFileToDocument(store_full_path=True))
    p.add_component(
        "html_converter",
        HTMLToDocument(
            extraction_kwargs={"output_format": "markdown", "include_formatting": True}, store_full_path=True
        ),
    )
    p.add_component("pdf_converter", PyPDFToDocument(store_full_path=True))
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
    p.add_component("writer", ReplacingDocumentWriter(document_store=store))
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
    p.connect("dense_embedder.documents", "writer.documents")
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
    pipeline: Pipeline, paths: Iterable[str | Path], force: bool = False, batch_files: int = 64
) -> dict[str, Any]:
    """Index the supported files under ``paths`` with an indexing pipeline (built or loaded from YAML).

    Unchanged files (same SHA-256 as when indexed) are skipped unless ``force``; changed files replace their
    chunks. Returns counts: ``files``, ``indexed``, ``skipped``, ``chunks_written``, ``chunks_deleted``.
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
    return {
        "files": len(files),
        "indexed": len(todo),
        "skipped": len(files) - len(todo),
        "chunks_written": written,
        "chunks_deleted": deleted,
    }


def delete_sources(store: Any, sources: Iterable[str | Path]) -> int:
    """Delete every node (chunks and summaries) of the given sources; returns how many were removed."""
    names = [str(Path(s).expanduser().resolve()) if Path(s).expanduser().exists() else str(s) for s in sources]
    if not names:
        return 0
    ids = [d.id for d in store.filter_documents(filters={"field": "meta.source", "operator": "in", "value": names})]
    if ids:
        store.delete_documents(ids)
    return len(ids)
