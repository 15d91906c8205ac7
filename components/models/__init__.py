"""Model export (ONNX fp32 / INT8) and ONNX Runtime embedders.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.models import OnnxTextEmbedder

Besides the components: the shipped model (``DEFAULT_MODEL``, ``resolve_model_dir``, ``packaged_minilm_dir``), the
encoders behind them for benchmarks and new runtimes (``get_encoder``, ``TokenEncoder``, ``TorchEncoder`` and its
``weights_dir``; ``token_length_batches``, ``pool``, ``normalise``), a query's vector (``QueryEmbedding``,
``as_float_list``).
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "text_embedder": ["OnnxTextEmbedder"],
    "document_embedder": ["OnnxDocumentEmbedder"],
    "sparse_text_embedder": ["Bm25TextEmbedder"],
    "sparse_document_embedder": ["Bm25DocumentEmbedder"],
    "batching": ["token_length_batches"],
    "device_pooling": ["normalise", "pool"],
    "encoder": ["get_encoder"],
    "export": ["packaged_minilm_dir"],
    "paths": ["DEFAULT_MODEL", "resolve_model_dir"],
    "query_vector": ["QueryEmbedding", "as_float_list"],
    "token_encoder": ["TokenEncoder"],
    "torch_encoder": ["TorchEncoder", "weights_dir"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.models.batching import token_length_batches as token_length_batches
    from adaptive_retrieval.components.models.device_pooling import normalise as normalise
    from adaptive_retrieval.components.models.device_pooling import pool as pool
    from adaptive_retrieval.components.models.document_embedder import OnnxDocumentEmbedder as OnnxDocumentEmbedder
    from adaptive_retrieval.components.models.encoder import get_encoder as get_encoder
    from adaptive_retrieval.components.models.export import packaged_minilm_dir as packaged_minilm_dir
    from adaptive_retrieval.components.models.paths import DEFAULT_MODEL as DEFAULT_MODEL
    from adaptive_retrieval.components.models.paths import resolve_model_dir as resolve_model_dir
    from adaptive_retrieval.components.models.query_vector import QueryEmbedding as QueryEmbedding
    from adaptive_retrieval.components.models.query_vector import as_float_list as as_float_list
    from adaptive_retrieval.components.models.sparse_document_embedder import (
        Bm25DocumentEmbedder as Bm25DocumentEmbedder,
    )
    from adaptive_retrieval.components.models.sparse_text_embedder import Bm25TextEmbedder as Bm25TextEmbedder
    from adaptive_retrieval.components.models.text_embedder import OnnxTextEmbedder as OnnxTextEmbedder
    from adaptive_retrieval.components.models.token_encoder import TokenEncoder as TokenEncoder
    from adaptive_retrieval.components.models.torch_encoder import TorchEncoder as TorchEncoder
    from adaptive_retrieval.components.models.torch_encoder import weights_dir as weights_dir

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
