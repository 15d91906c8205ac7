"""Adaptive retrieval components for Haystack.

Components are grouped by role: ``models`` (ONNX export and embedders), ``stores`` (Qdrant Edge embedded store,
graph stores, the search interface the channels use), ``indexing`` (section-aware splitting, replacing writer),
``routing`` (IntentRouter), ``retrieval`` (channel retrievers), ``fusion`` (WeightedRRFJoiner), ``selection``
(MMRSelector), ``gating`` (QualityGate).

Import a component from its family, e.g. ``from adaptive_retrieval.components.routing import IntentRouter`` (each
family's ``__init__`` lists its public names and imports one only when it is asked for; the module paths, which
the saved YAML names, keep working); importing this top-level module never pulls in torch. It exports the ground
floor's public names the same way: ``Strategy`` (a query's retrieval settings), ``stable_id`` and ``chunk_id``
(the ids of documents and chunks), ``graph_file`` (where an index's graph lives), ``SharedDocuments`` (a ranked
list handed on as one read-only value) and its socket type ``RankedDocuments``. Its one side effect keeps the
process offline: Haystack's usage telemetry off unless the user set ``HAYSTACK_TELEMETRY_ENABLED``, and ONNX
Runtime's telemetry off (``ORT_DISABLE_TELEMETRY=1``, which ONNX Runtime reads when it is first imported) unless the
user set ``ORT_DISABLE_TELEMETRY`` (``0`` opts in).
"""

import logging
import os
import sys
from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

__version__ = "0.1.0"

# Offline-first: Haystack's usage telemetry would try to reach the network on every pipeline run; a user who wants
# it sets HAYSTACK_TELEMETRY_ENABLED=True before importing.
if "haystack" in sys.modules and "HAYSTACK_TELEMETRY_ENABLED" not in os.environ:
    # Too late to change Haystack's own default here (a program that imports Haystack first, plain `hayhooks run`):
    # that is Haystack's setting, not this package's, so say how at INFO rather than warn on every import.
    logging.getLogger(__name__).info(
        "Haystack was imported before this package with its usage telemetry on: set HAYSTACK_TELEMETRY_ENABLED=False "
        "to turn it off"
    )
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

# ONNX Runtime's official builds send usage events to Microsoft from the moment the library is imported (measured
# here: DNS lookups of mobile.events.data.microsoft.com by `import onnxruntime` alone); only this variable, set
# before that import, stops them. Every model component imports onnxruntime after this package.
if "onnxruntime" in sys.modules and "ORT_DISABLE_TELEMETRY" not in os.environ:
    logging.getLogger(__name__).warning(
        "ONNX Runtime was imported before this package with its telemetry on: set ORT_DISABLE_TELEMETRY=1"
    )
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

_import_structure = {
    "strategy": ["Strategy"],
    "ids": ["chunk_id", "stable_id"],
    "locations": ["graph_file"],
    "shared_documents": ["RankedDocuments", "SharedDocuments"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.components.ids import chunk_id as chunk_id
    from adaptive_retrieval.components.ids import stable_id as stable_id
    from adaptive_retrieval.components.locations import graph_file as graph_file
    from adaptive_retrieval.components.shared_documents import RankedDocuments as RankedDocuments
    from adaptive_retrieval.components.shared_documents import SharedDocuments as SharedDocuments
    from adaptive_retrieval.components.strategy import Strategy as Strategy

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
