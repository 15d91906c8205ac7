"""Processes: who owns a local store and how to reach it, the store host and the workers of ``serve --workers N``,
process groups, thread limits, garbage collection, and importing Haystack without torch.

Public names, imported on first use (nothing else of the room loads with them)::

    from adaptive_retrieval.pipelines.processes import limit_blas_threads, store_owner

``store_owner`` (the live server that owns a store folder), ``limit_blas_threads`` (cap numpy's BLAS threads).
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "ownership": ["store_owner"],
    "threads": ["limit_blas_threads"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.pipelines.processes.ownership import store_owner as store_owner
    from adaptive_retrieval.pipelines.processes.threads import limit_blas_threads as limit_blas_threads

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
