"""Thread pools of the numeric libraries, set once by this package's entry points (CLI, serving, benchmarks).

A query multiplies small matrices (MMR's 150 × 150 similarities, the router's exemplars, section and community
scores). OpenBLAS splits each product over every core and its threads busy-wait between calls: on two cores
shared by concurrent queries (a server) or other processes, one 150 × 384 product took 50 ms instead of 0.4 ms.
One BLAS thread per query thread is faster for matrices this size, and concurrent queries still use every core.
This is process-wide, so a library import never does it: the CLI, the served pipelines and the benchmark
scripts call :func:`limit_blas_threads`. An application that loads the YAML itself gets the same limit only while
the components multiply (:mod:`adaptive_retrieval.components.blas_threads`), or for the whole process by calling
it too.
"""

from __future__ import annotations

import logging

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.blas_threads import BLAS_THREADS_ENV

logger = logging.getLogger(__name__)


def limit_blas_threads(threads: int | None = None) -> int | None:
    """Limit the BLAS libraries loaded so far (numpy's OpenBLAS, and scipy's when imported) to ``threads``.

    :param threads: threads per BLAS call; default ``$ADAPTIVE_BLAS_THREADS`` or 1; 0 changes nothing.
    :returns: the limit set, or ``None`` when nothing was changed.
    :raises ValueError: for a negative or non-integer ``$ADAPTIVE_BLAS_THREADS``.
    """
    if threads is None:
        threads = settings.whole(BLAS_THREADS_ENV)
    if threads < 0:
        msg = f"{BLAS_THREADS_ENV} must be a whole number >= 0, got {threads}"
        raise ValueError(msg)
    if threads == 0:
        return None
    # numpy's BLAS is loaded first, so that the limit reaches it. scipy's own BLAS is limited when scipy is loaded
    # already; the graph_ppr walk, which loads it, only multiplies sparse matrices (no BLAS call).
    import numpy  # noqa: F401
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=threads, user_api="blas")
    logger.debug("BLAS limited to %d thread(s) per call", threads)
    return threads
