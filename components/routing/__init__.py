"""Query intent routing: rules, an exemplar-embedding classifier and per-intent strategy profiles.

Public names, imported on first use (nothing else of the family loads with them)::

    from adaptive_retrieval.components.routing import IntentRouter

Besides the router: the routing profiles (``INTENTS``, ``default_profiles``, ``load_profiles_file``,
``validate_profiles``, ``mix_profiles``), the strategy they give a query and its retries (``choose_strategy``,
``escalate_strategy``), and the rule that sends a plain search past the classifier (``plain_search``).
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "intent_router": ["IntentRouter"],
    "profiles": [
        "INTENTS",
        "choose_strategy",
        "default_profiles",
        "escalate_strategy",
        "load_profiles_file",
        "mix_profiles",
        "validate_profiles",
    ],
    "rules": ["plain_search"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.routing.intent_router import IntentRouter as IntentRouter
    from adaptive_retrieval.components.routing.profiles import INTENTS as INTENTS
    from adaptive_retrieval.components.routing.profiles import choose_strategy as choose_strategy
    from adaptive_retrieval.components.routing.profiles import default_profiles as default_profiles
    from adaptive_retrieval.components.routing.profiles import escalate_strategy as escalate_strategy
    from adaptive_retrieval.components.routing.profiles import load_profiles_file as load_profiles_file
    from adaptive_retrieval.components.routing.profiles import mix_profiles as mix_profiles
    from adaptive_retrieval.components.routing.profiles import validate_profiles as validate_profiles
    from adaptive_retrieval.components.routing.rules import plain_search as plain_search

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
