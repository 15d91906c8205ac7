"""One BLAS thread while a component multiplies its small matrices, then the process's own setting back.

A query multiplies small matrices (MMR's candidate similarities, the gate's signals, the router's exemplars,
section and graph scores). OpenBLAS splits each product over every core and its threads then busy-wait: an
application that loads the YAML and calls ``pipeline.run`` paid about 1.7× the CPU of a query whose BLAS was
limited (``scripts/lab/bench_blas_threads.py``). The CLI and the server limit BLAS for the whole process
(:func:`adaptive_retrieval.pipelines.processes.limit_blas_threads`); a library must not, so the components limit it
only while they run, with :func:`one_blas_thread`, and restore it when the last of them leaves (calls from several
threads nest: a count, not a stack). ``ADAPTIVE_BLAS_THREADS=0`` turns the scoped limit off as well.

Usage::

    with one_blas_thread():
        gram = vectors @ vectors.T
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from adaptive_retrieval.components import settings

#: The setting both limits read (threads per BLAS call; 0 leaves BLAS alone).
BLAS_THREADS_ENV = "ADAPTIVE_BLAS_THREADS"

_lock = threading.Lock()
_state: dict[str, Any] = {"depth": 0, "limiter": None, "controller": None, "modules": 0}


def _controller() -> Any:
    """threadpoolctl's view of the BLAS libraries loaded so far. Building it scans the process's libraries (a few
    ms), so it is built again only once modules were imported since (a BLAS arrives with an extension module: a
    view built before torch or scipy loaded their own would leave theirs unlimited)."""
    if _state["controller"] is None or _state["modules"] != len(sys.modules):
        import numpy  # noqa: F401  (numpy's BLAS is the one the components call)
        from threadpoolctl import ThreadpoolController

        _state["controller"] = ThreadpoolController()
        _state["modules"] = len(sys.modules)
    return _state["controller"]


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Limit BLAS to ``$ADAPTIVE_BLAS_THREADS`` (default 1) threads per call inside the block.

    The first block to enter sets the limit and the last to leave restores what the libraries had, so nested
    blocks and blocks in concurrent threads never leave the process limited. A process whose BLAS already uses
    no more threads (the CLI, the server) pays one lookup per block (~10 µs).
    """
    threads = settings.whole(BLAS_THREADS_ENV)
    if threads <= 0:
        yield
        return
    with _lock:
        if _state["depth"] == 0:
            controller = _controller()
            busy = any(lib.num_threads > threads for lib in controller.select(user_api="blas").lib_controllers)
            _state["limiter"] = controller.limit(limits=threads, user_api="blas") if busy else None
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0 and _state["limiter"] is not None:
                _state["limiter"].restore_original_limits()
                _state["limiter"] = None
