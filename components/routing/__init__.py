"""Query intent routing: rules, an exemplar-embedding classifier and per-intent strategy profiles.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.routing import IntentRouter
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "intent_router": ["IntentRouter"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.routing.intent_router import IntentRouter as IntentRouter

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
