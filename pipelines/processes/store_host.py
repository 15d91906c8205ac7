"""The store host of ``adaptive-retrieval serve --workers N``: the one process that owns the index and writes.

It opens the embedded Qdrant Edge shard (one owner, as without workers: Edge's lock, the ``<store>.server.json``
owner file) and serves two private Unix sockets in a folder only its user can enter:

- ``store.sock``: the workers'
  :class:`~adaptive_retrieval.components.stores.documents.remote_document_store.RemoteDocumentStore`
  calls (searches, fetches, counts), each run on the one open shard by a thread of this process (Edge releases
  the GIL while it searches, so the host answers several workers at once);
- ``http.sock``: the app with the indexing pipeline only. The workers forward uploads (``POST /indexing/run``,
  ``POST /v1/files``) and deletes (``DELETE /sources``) here, so every write runs in this process, one at a time,
  behind the upload queue and the crash-safety reconciliation, exactly as in a single-process server.

With ``$QDRANT_URL`` there is no shard to own: the host serves only ``http.sock`` (the workers search the Qdrant
server themselves) and stays the one indexer, as the crash-safety reconciliation needs.

Its process is :mod:`adaptive_retrieval.pipelines.serving.store_host_app` (which imports Haystack without torch
first), run by the supervisor of :mod:`adaptive_retrieval.pipelines.processes.workers`.
"""

from __future__ import annotations

import logging
import os
import socket
import socketserver
import threading
import uuid
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.locations import qdrant_folder
from adaptive_retrieval.components.stores.documents.edge_document_store import EdgeDocumentStore
from adaptive_retrieval.components.stores.documents.remote_document_store import REMOTE_METHODS, WIRE_METHODS
from adaptive_retrieval.components.stores.documents.store_wire import (
    WireClosedError,
    recv_message,
    same_user,
    send_message,
)

logger = logging.getLogger(__name__)


class StoreHost:
    """Runs remote store calls on this process's Edge stores of one folder (one shard, shared by every instance)."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder).expanduser().resolve()
        #: This host's identity in the generation of its answers (a restarted host's counts start again).
        self.token = uuid.uuid4().hex
        self._stores: dict[tuple, EdgeDocumentStore] = {}
        self._lock = threading.Lock()

    def store_for(self, params: dict[str, Any]) -> EdgeDocumentStore:
        """The Edge store opened with ``params`` (one instance per distinct setting; they share the shard).

        :raises ValueError: for a store on another folder than the one this host owns.
        """
        key = tuple(sorted((k, repr(v)) for k, v in params.items()))
        store = self._stores.get(key)  # every call after the first of its setting: no path resolution
        if store is not None:
            return store
        folder = qdrant_folder(params.get("path")).expanduser().resolve()
        if folder != self.folder:
            msg = f"This store host serves the index '{self.folder}', not '{folder}'"
            raise ValueError(msg)
        with self._lock:
            store = self._stores.get(key)
            if store is None:
                store = EdgeDocumentStore(**{**params, "path": str(self.folder)})
                self._stores[key] = store
        return store

    def answer(self, message: Any) -> tuple[str, Any, Any]:
        """``("ok", value, generation)`` or ``("error", exception, None)`` for one ``(params, method, args,
        kwargs)`` call. The generation (this host's token, the writes made through its shard so far; ``None`` while a
        write runs) is read before the call runs: a worker keeps the vectors of one generation
        (:mod:`~adaptive_retrieval.components.stores.caches.vector_cache`)."""
        try:
            params, method, args, kwargs = message
            if method not in REMOTE_METHODS:
                msg = f"A store host does not run '{method}'"
                raise ValueError(msg)
            store = self.store_for(params)
            count = store.write_count
            # None while a write runs: the worker then keeps nothing of this answer.
            generation = None if count is None else (self.token, count)
            return "ok", getattr(store, WIRE_METHODS.get(method, method))(*args, **kwargs), generation
        except Exception as err:  # every failure goes back to the caller, as the embedded store raises it
            return "error", err, None

    def close(self) -> None:
        """Close every store (the shard closes with the last)."""
        with self._lock:
            for store in self._stores.values():
                store.close()
            self._stores.clear()


class _Connection(socketserver.BaseRequestHandler):
    """One worker thread's connection: calls answered one after another until it closes."""

    server: _StoreServer

    def handle(self) -> None:
        if not same_user(self.request):
            logger.warning("Refused a store connection from another user")
            return
        while True:
            try:
                message = recv_message(self.request)
            except (WireClosedError, ConnectionError):
                return
            status, value, generation = self.server.host.answer(message)
            try:
                send_message(self.request, (status, value, generation))
            except (TypeError, AttributeError, ValueError) as err:  # an exception that cannot be pickled
                from haystack.document_stores.errors import DocumentStoreError

                problem = DocumentStoreError(f"{type(value).__name__}: {value} ({err})")
                send_message(self.request, ("error", problem, None))
            except (BrokenPipeError, ConnectionError):
                return


class _StoreServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True
    request_queue_size = 64

    def __init__(self, path: str, host: StoreHost) -> None:
        self.host = host
        old = os.umask(0o177)  # the socket is created 0600
        try:
            super().__init__(path, _Connection)
        finally:
            os.umask(old)


def serve_store(host: StoreHost, path: str | Path) -> _StoreServer:
    """Serve ``host`` on the Unix socket ``path`` (mode 0600) from a background thread; returns the server."""
    path = Path(path)
    path.unlink(missing_ok=True)
    server = _StoreServer(str(path), host)
    os.chmod(path, 0o600)
    threading.Thread(target=server.serve_forever, name="store-host", daemon=True).start()
    logger.info("Store host serving %s on %s", host.folder, path)
    return server


def bind_private_socket(path: Path) -> socket.socket:
    """A listening Unix socket at ``path``, mode 0600 from its creation on."""
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    sock.listen(128)
    return sock
