"""Rerankers: late interaction (MaxSim over token embeddings) and cross-encoders, both on ONNX Runtime.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.ranking import LateInteractionRanker
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "late_interaction_ranker": ["LateInteractionRanker"],
    "cross_encoder_ranker": ["CrossEncoderRanker"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.ranking.cross_encoder_ranker import CrossEncoderRanker as CrossEncoderRanker
    from adaptive_retrieval.components.ranking.late_interaction_ranker import (
        LateInteractionRanker as LateInteractionRanker,
    )

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
