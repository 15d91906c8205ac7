"""Selection of a final, diverse list from fused candidates.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.selection import MMRSelector
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "mmr_selector": ["MMRSelector"],
    "structural_first": ["StructuralFirst"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.selection.mmr_selector import MMRSelector as MMRSelector
    from adaptive_retrieval.components.selection.structural_first import StructuralFirst as StructuralFirst

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
