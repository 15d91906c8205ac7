"""Adaptive retrieval components for Haystack.

Components are grouped by role: ``models`` (ONNX export and embedders), ``stores`` (Qdrant Edge embedded store,
graph stores, the search interface the channels use), ``indexing`` (section-aware splitting, replacing writer),
``routing`` (IntentRouter), ``retrieval`` (channel retrievers), ``fusion`` (WeightedRRFJoiner), ``selection``
(MMRSelector), ``gating`` (QualityGate).

Import a component from its module, e.g. ``from adaptive_retrieval.components.routing.intent_router import
IntentRouter``; importing this top-level module never pulls in torch; its one side effect turns Haystack's telemetry off
unless the user set ``HAYSTACK_TELEMETRY_ENABLED``.
"""

import logging
import os
import sys

__version__ = "0.1.0"

# Offline-first: Haystack's usage telemetry would try to reach the network on every pipeline run; a user who wants
# it sets HAYSTACK_TELEMETRY_ENABLED=True before importing.
if "haystack" in sys.modules and "HAYSTACK_TELEMETRY_ENABLED" not in os.environ:
    # Too late to turn it off here (e.g. plain `hayhooks run` imported Haystack first): say how.
    logging.getLogger(__name__).warning(
        "Haystack was imported before this package with its usage telemetry on: set HAYSTACK_TELEMETRY_ENABLED=False"
    )
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
