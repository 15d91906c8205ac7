"""The store the served pipelines open, claimed for this server process (its owner file, see
:mod:`~adaptive_retrieval.pipelines.processes.ownership`), so that the CLI sends its queries here instead of
opening the folder a second time.

Usage (what the wrappers' ``setup()`` does before loading a pipeline)::

    claim_served_store()   # None for a store on a server, or in a worker of ``serve --workers N``
"""

from __future__ import annotations

from pathlib import Path

from adaptive_retrieval.components import settings
from adaptive_retrieval.pipelines.processes.ownership import claim_store, local_store_path, remove_when_gone
from adaptive_retrieval.pipelines.store_config import STORE_SOCKET_ENV


def served_url() -> str:
    """The URL this process serves at, from Hayhooks' settings (``hayhooks run`` and ``create_app`` set them);
    a wildcard bind is reached through loopback."""
    from haystack.lazy_imports import LazyImport

    from adaptive_retrieval.components.extras import install_hint

    with LazyImport(install_hint("serve")) as serve_import:
        from hayhooks.settings import settings
    serve_import.check()
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


def claim_served_store() -> Path | None:
    """Claim the local store the served pipelines open (none for a store on a server).

    Under plain ``hayhooks run`` no lifespan of this package's runs at shutdown, and uvicorn ends the process with
    the SIGTERM it caught (no ``atexit``): a small process removes the file once this one has exited
    (:func:`remove_when_gone`). ``adaptive-retrieval serve`` removes it in its app's lifespan.

    :raises StoreOwnedError: when another live process serves it.
    """
    from adaptive_retrieval.pipelines.serving.security import is_guarded  # the serve extra's (starlette)

    if settings.text(STORE_SOCKET_ENV):  # a worker of `serve --workers N`: the store host owns the store
        return None
    path = local_store_path()
    if path is None:
        return None
    file = claim_store(path, served_url())
    if not is_guarded():
        remove_when_gone(file)
    return file
