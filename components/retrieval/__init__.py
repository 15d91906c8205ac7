"""Retrieval channels: dense and sparse (Qdrant), section tree, graph local and graph global.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.retrieval import DenseRetriever

Besides the channels: ``channel_enabled``, whether a strategy's weights run a channel.
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "vector_retrievers": ["DenseRetriever", "SparseRetriever"],
    "section_tree_retriever": ["SectionTreeRetriever"],
    "graph_local_retriever": ["GraphLocalRetriever"],
    "graph_global_retriever": ["GraphGlobalRetriever"],
    "graph_ppr_retriever": ["GraphPPRRetriever"],
    "bridge_retriever": ["BridgeRetriever"],
    "ranked_hits": ["RankedHits"],
    "channel": ["channel_enabled"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.retrieval.bridge_retriever import BridgeRetriever as BridgeRetriever
    from adaptive_retrieval.components.retrieval.channel import channel_enabled as channel_enabled
    from adaptive_retrieval.components.retrieval.graph_global_retriever import (
        GraphGlobalRetriever as GraphGlobalRetriever,
    )
    from adaptive_retrieval.components.retrieval.graph_local_retriever import GraphLocalRetriever as GraphLocalRetriever
    from adaptive_retrieval.components.retrieval.graph_ppr_retriever import GraphPPRRetriever as GraphPPRRetriever
    from adaptive_retrieval.components.retrieval.ranked_hits import RankedHits as RankedHits
    from adaptive_retrieval.components.retrieval.section_tree_retriever import (
        SectionTreeRetriever as SectionTreeRetriever,
    )
    from adaptive_retrieval.components.retrieval.vector_retrievers import DenseRetriever as DenseRetriever
    from adaptive_retrieval.components.retrieval.vector_retrievers import SparseRetriever as SparseRetriever

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
