"""Fusion of ranked lists from several retrieval channels.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.fusion import WeightedRRFJoiner
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "weighted_rrf_joiner": ["NoChannelAnsweredError", "WeightedRRFJoiner"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.fusion.weighted_rrf_joiner import (
        NoChannelAnsweredError as NoChannelAnsweredError,
    )
    from adaptive_retrieval.components.fusion.weighted_rrf_joiner import WeightedRRFJoiner as WeightedRRFJoiner

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
