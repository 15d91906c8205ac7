"""Adaptive retrieval components for Haystack.

Components are grouped by role: ``models`` (ONNX export and embedders), ``stores`` (Qdrant local/server),
``indexing`` (section-aware splitting, replacing writer), ``routing`` (IntentRouter), ``retrieval``
(channel retrievers), ``fusion`` (WeightedRRFJoiner), ``selection`` (MMRSelector).

Import a component from its module, e.g. ``from components.routing.intent_router import IntentRouter``;
this top-level module stays light so that importing it never pulls in torch.
"""

import logging
import os
import sys

__version__ = "0.1.0"

# Offline-first: Haystack's usage telemetry would try to reach the network on every pipeline run.
if "haystack" in sys.modules and "HAYSTACK_TELEMETRY_ENABLED" not in os.environ:
    # Too late to turn it off here (e.g. plain `hayhooks run` imported Haystack first): say how.
    logging.getLogger(__name__).warning(
        "Haystack was imported before this package with its usage telemetry on: set HAYSTACK_TELEMETRY_ENABLED=False"
    )
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

if os.environ.get("ADAPTIVE_HAYSTACK_FAST_COPY", "1") != "0":
    # Same copies, without a ~30 µs protocol check per float of every embedding (see components/fast_copy.py).
    from components.fast_copy import install

    install()
