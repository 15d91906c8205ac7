"""The indexing pipeline, built: files → converters → cleaner → section splitter → sparse + dense embedders → section
tree → writer (and the graph). Running it over files, transactionally per source, is the
:class:`~adaptive_retrieval.pipelines.indexer.Indexer`'s."""

from __future__ import annotations

import logging
from typing import Any

from haystack import Pipeline
from haystack.components.converters import TextFileToDocument
from haystack.components.joiners import DocumentJoiner
from haystack.components.preprocessors import DocumentCleaner
from haystack.components.routers import FileTypeRouter

from adaptive_retrieval.components.indexing.community_detector import CommunityDetector
from adaptive_retrieval.components.indexing.entity_extractor import EntityExtractor
from adaptive_retrieval.components.indexing.graph_writer import GraphWriter
from adaptive_retrieval.components.indexing.replacing_writer import ReplacingDocumentWriter
from adaptive_retrieval.components.indexing.section_splitter import SectionSplitter
from adaptive_retrieval.components.indexing.section_tree_builder import SectionTreeBuilder
from adaptive_retrieval.components.indexing.source_limits import SourceLimitGuard
from adaptive_retrieval.components.indexing.structured_converter import StructuredConverter
from adaptive_retrieval.components.models.document_embedder import OnnxDocumentEmbedder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.sparse_document_embedder import Bm25DocumentEmbedder
from adaptive_retrieval.components.stores.graph.graph_store import GraphStore
from adaptive_retrieval.pipelines.store_config import make_graph_store, make_store

logger = logging.getLogger(__name__)


#: Passages per ONNX Runtime call while indexing. The encoder is shared with the query path and runs one call at a
#: time, so a query embedding waits for at most one such batch: with 8 instead of 32 a query's p95 during a
#: maximum-size upload is measured below 2x its idle p95 (scripts/lab/load_test.py --big-upload-chars 2000000).
EMBED_BATCH = 8

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


def store_of(pipeline: Pipeline) -> Any:
    """The document store of the pipeline's writer."""
    return pipeline.get_component("writer").document_store


def graph_store_of(pipeline: Pipeline) -> GraphStore | None:
    """The graph store of the pipeline's graph writer (``None`` for a pipeline without one)."""
    names = {name for name, _ in pipeline.walk()}
    return pipeline.get_component("graph_writer").graph_store if "graph_writer" in names else None
