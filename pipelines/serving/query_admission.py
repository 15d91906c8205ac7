"""How many queries one serving process runs at once; the others wait their turn, first come first served.

A query is mostly Python, so queries in one process share one interpreter lock: eight at once each take eight
times as long, and a query that costs twice the others (a quality-gate retry) takes twice as long *again*. With
a small number running and the rest queued, every query waits for roughly the same amount of work ahead of it,
throughput stays the same, and the slow tail of latencies shrinks (``scripts/lab/load_test.py``; README "Scale out").
``$ADAPTIVE_QUERY_CONCURRENCY`` sets the number per process (``serve --workers N`` has N such processes); 0 lets
every request run at once, as Hayhooks' thread pool would.

Usage::

    with query_slot():
        result = run_query(pipeline, query)
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from adaptive_retrieval.components import settings

CONCURRENCY_ENV = "ADAPTIVE_QUERY_CONCURRENCY"

_lock = threading.Lock()
_slots: threading.Semaphore | None = None
_slots_for: int | None = None


def _semaphore() -> threading.Semaphore | None:
    """The process's semaphore for the configured count (read when the first query runs; None: no bound)."""
    global _slots, _slots_for
    count = settings.whole(CONCURRENCY_ENV)
    with _lock:
        if count != _slots_for:
            # threading.Semaphore wakes its waiters in the order they came (a Condition's FIFO of waiters).
            _slots, _slots_for = (threading.Semaphore(count) if count else None), count
        return _slots


@contextmanager
def query_slot() -> Iterator[None]:
    """Hold one of the process's query slots for the ``with`` block, waiting for one if all are taken."""
    slots = _semaphore()
    if slots is None:
        yield
        return
    with slots:
        yield
