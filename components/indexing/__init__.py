"""Indexing components: section-aware splitting, replacing writer.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.indexing import SectionSplitter

Besides the components: ``parse_pdf``, a PDF's text and headings as the converter reads them.
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "structured_converter": ["StructuredConverter"],
    "source_limits": ["SourceLimitGuard"],
    "section_splitter": ["SectionSplitter"],
    "section_tree_builder": ["SectionTreeBuilder"],
    "replacing_writer": ["ReplacingDocumentWriter"],
    "entity_extractor": ["EntityExtractor"],
    "graph_writer": ["GraphWriter"],
    "community_detector": ["CommunityDetector"],
    "structure.pdf": ["parse_pdf"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.indexing.community_detector import CommunityDetector as CommunityDetector
    from adaptive_retrieval.components.indexing.entity_extractor import EntityExtractor as EntityExtractor
    from adaptive_retrieval.components.indexing.graph_writer import GraphWriter as GraphWriter
    from adaptive_retrieval.components.indexing.replacing_writer import (
        ReplacingDocumentWriter as ReplacingDocumentWriter,
    )
    from adaptive_retrieval.components.indexing.section_splitter import SectionSplitter as SectionSplitter
    from adaptive_retrieval.components.indexing.section_tree_builder import SectionTreeBuilder as SectionTreeBuilder
    from adaptive_retrieval.components.indexing.source_limits import SourceLimitGuard as SourceLimitGuard
    from adaptive_retrieval.components.indexing.structure.pdf import parse_pdf as parse_pdf
    from adaptive_retrieval.components.indexing.structured_converter import StructuredConverter as StructuredConverter

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
