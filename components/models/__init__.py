"""Model export (ONNX fp32 / INT8) and ONNX Runtime embedders.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.models import OnnxTextEmbedder
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "text_embedder": ["OnnxTextEmbedder"],
    "document_embedder": ["OnnxDocumentEmbedder"],
    "sparse_text_embedder": ["Bm25TextEmbedder"],
    "sparse_document_embedder": ["Bm25DocumentEmbedder"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.models.document_embedder import OnnxDocumentEmbedder as OnnxDocumentEmbedder
    from adaptive_retrieval.components.models.sparse_document_embedder import (
        Bm25DocumentEmbedder as Bm25DocumentEmbedder,
    )
    from adaptive_retrieval.components.models.sparse_text_embedder import Bm25TextEmbedder as Bm25TextEmbedder
    from adaptive_retrieval.components.models.text_embedder import OnnxTextEmbedder as OnnxTextEmbedder

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
