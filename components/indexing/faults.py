"""Named fault points for crash tests: ``ADAPTIVE_FAULT_AT=<point>:<n>`` SIGKILLs the process at the n-th pass.

Indexing calls :func:`fault_point` at the moments where a crash is most likely to leave an index half-written
(between the pending and the complete manifest record, between the graph and the vector writes, between two
slices of one upsert). Without ``$ADAPTIVE_FAULT_AT`` a call is a dictionary lookup and nothing else;
``scripts/lab/fault_test.py`` sets it to kill an indexer at a chosen moment and then checks that re-indexing
restores everything.

Usage::

    ADAPTIVE_FAULT_AT=writer.mid_upsert:2 adaptive-retrieval index docs/   # killed at the 2nd mid-upsert point
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections import Counter

from adaptive_retrieval.components import settings

logger = logging.getLogger(__name__)

FAULT_ENV = "ADAPTIVE_FAULT_AT"
#: Every point the indexing code passes, in the order one batch passes them.
FAULT_POINTS = (
    "index.after_pending",
    "writer.before_upsert",
    "writer.mid_upsert",
    "writer.before_delete",
    "graph.after_write",
    "index.after_pipeline",
    "index.before_complete",
    "delete.after_mark",
)

_passes: Counter[str] = Counter()
_lock = threading.Lock()


def _target() -> tuple[str, int] | None:
    raw = settings.text(FAULT_ENV) or ""
    if not raw:
        return None
    name, _, count = raw.partition(":")
    return name, int(count or 1)


def fault_point(name: str) -> None:
    """Kill this process with SIGKILL (no cleanup, like a power cut) when ``$ADAPTIVE_FAULT_AT`` names this
    point and this is its n-th pass; otherwise do nothing."""
    target = _target()
    if target is None or target[0] != name:
        return
    with _lock:
        _passes[name] += 1
        hit = _passes[name] == target[1]
    if hit:
        logger.warning("Fault injection: SIGKILL at %s (pass %d)", name, target[1])
        os.kill(os.getpid(), signal.SIGKILL)
