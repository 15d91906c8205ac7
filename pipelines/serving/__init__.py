"""Serving: the REST/chat/MCP app of ``adaptive-retrieval serve`` (Hayhooks' app), its HTTP guard, request checks,
uploads, and ``wrappers/``, the folder of Hayhooks pipeline wrappers it serves (nothing else lives there: Hayhooks
serves every folder of the directory it is pointed at).

Public names, imported on first use (nothing else of the room loads with them)::

    from adaptive_retrieval.pipelines.serving import free_port

``free_port`` (a free TCP port for a server), ``CONCURRENCY_ENV`` (the variable that caps concurrent queries),
``QueryResponse`` (a query's REST answer), ``safe_filename`` (the name an upload is stored under).
"""

from typing import TYPE_CHECKING

from adaptive_retrieval.components.lazy_exports import lazy_exports

_import_structure = {
    "app": ["free_port"],
    "query_admission": ["CONCURRENCY_ENV"],
    "wrapper_support": ["QueryResponse", "safe_filename"],
}

if TYPE_CHECKING:
    from adaptive_retrieval.pipelines.serving.app import free_port as free_port
    from adaptive_retrieval.pipelines.serving.query_admission import CONCURRENCY_ENV as CONCURRENCY_ENV
    from adaptive_retrieval.pipelines.serving.wrapper_support import QueryResponse as QueryResponse
    from adaptive_retrieval.pipelines.serving.wrapper_support import safe_filename as safe_filename

__getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
