"""Adaptive retrieval components for Haystack.

Components are grouped by role: ``models`` (ONNX export and embedders), ``stores`` (Qdrant Edge embedded store,
graph stores, the search interface the channels use), ``indexing`` (section-aware splitting, replacing writer),
``routing`` (IntentRouter), ``retrieval`` (channel retrievers), ``fusion`` (WeightedRRFJoiner), ``selection``
(MMRSelector), ``gating`` (QualityGate).

Import a component from its module, e.g. ``from components.routing.intent_router import IntentRouter``;
importing this top-level module has no side effects and never pulls in torch.
"""

import os

__version__ = "0.1.0"

# Offline-first: Haystack's usage telemetry would try to reach the network on every pipeline run; a user who wants
# it sets HAYSTACK_TELEMETRY_ENABLED=True before importing.
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
