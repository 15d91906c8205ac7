"""Qdrant document store that shares one client per local path (or ``:memory:``) inside a process.

Qdrant's local mode locks its folder, so the stock ``QdrantDocumentStore`` fails as soon as a pipeline loaded
from YAML holds two components that each deserialise their own store (and with ``:memory:`` each instance is a
separate database). ``SharedQdrantDocumentStore`` hands every instance that points at the same local storage
the same client, guarded by a lock because local mode is not thread-safe. With ``url=`` it is the stock store.

Usage::

    store = SharedQdrantDocumentStore(path=".adaptive/qdrant", embedding_dim=384,
                                      use_sparse_embeddings=True, sparse_idf=True)
    same = SharedQdrantDocumentStore(path=".adaptive/qdrant", embedding_dim=384,
                                     use_sparse_embeddings=True, sparse_idf=True)  # no lock error
"""

from __future__ import annotations

import functools
import inspect
import logging
import threading
from pathlib import Path
from typing import Any

import qdrant_client
from haystack import default_to_dict
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

logger = logging.getLogger(__name__)

_REGISTRY: dict[str, _SharedClient] = {}
_REGISTRY_LOCK = threading.Lock()


class _SharedClient:
    """A local-mode client plus its reference count; every call runs under one re-entrant lock."""

    def __init__(self, client: qdrant_client.QdrantClient) -> None:
        self.client = client
        self.refs = 0
        self.lock = threading.RLock()


class _LockedClient:
    """Proxy that serialises calls to a local-mode client shared across threads (Hayhooks runs sync
    pipelines in a thread pool)."""

    def __init__(self, shared: _SharedClient) -> None:
        self._shared = shared

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._shared.client, name)
        if not callable(attr):
            return attr

        @functools.wraps(attr)
        def locked(*args: Any, **kwargs: Any) -> Any:
            with self._shared.lock:
                return attr(*args, **kwargs)

        return locked


def local_storage_key(location: str | None, path: str | None) -> str | None:
    """Registry key of a local-mode store, or ``None`` for a server."""
    if path:
        return "path:" + str(Path(path).expanduser().resolve())
    if location == ":memory:":
        return "memory:"
    return None


def release_all_clients() -> None:
    """Close every shared local client (tests use it to simulate a fresh process)."""
    with _REGISTRY_LOCK:
        for shared in _REGISTRY.values():
            shared.client.close()
        _REGISTRY.clear()


class SharedQdrantDocumentStore(QdrantDocumentStore):
    """``QdrantDocumentStore`` whose local-mode instances share one client per storage path.

    Accepts every ``QdrantDocumentStore`` parameter; ``url`` (plus ``api_key`` as a ``Secret``,
    ``shard_number``, ``replication_factor``...) switches to a server or cluster with no other change.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("path") or kwargs.get("location") == ":memory:":
            # Local mode checks the creating thread; the lock in _LockedClient makes sharing safe.
            kwargs.setdefault("force_disable_check_same_thread", True)
        super().__init__(*args, **kwargs)

    def to_dict(self) -> dict[str, Any]:
        """Serialise with the stock store's parameters (the API key stays a ``Secret`` reference)."""
        params = inspect.signature(QdrantDocumentStore.__init__).parameters
        init_params = {k: getattr(self, k) for k in params if k != "self"}
        init_params["api_key"] = self.api_key.to_dict() if self.api_key else None
        return default_to_dict(self, **init_params)

    @property
    def is_local(self) -> bool:
        """True for Qdrant local mode (on-disk path or ``:memory:``)."""
        return local_storage_key(self.location, self.path) is not None

    def _initialize_client(self) -> None:
        key = local_storage_key(self.location, self.path)
        if self._client is not None or key is None:
            super()._initialize_client()
            return
        with _REGISTRY_LOCK:
            shared = _REGISTRY.get(key)
            if shared is None:
                if self.path:
                    Path(self.path).expanduser().mkdir(parents=True, exist_ok=True)
                shared = _SharedClient(qdrant_client.QdrantClient(**self._prepare_client_params()))
                _REGISTRY[key] = shared
                logger.info("Opened Qdrant local storage %s", key)
            shared.refs += 1
        self._client = _LockedClient(shared)  # type: ignore[assignment]
        self._set_up_collection(
            self.index,
            self.embedding_dim,
            self.recreate_index,
            self.similarity,
            self.use_sparse_embeddings,
            self.sparse_idf,
            self.on_disk,
            self.payload_fields_to_index,
        )

    async def _initialize_async_client(self) -> None:
        if self.is_local and self._async_client is None:
            msg = (
                "Qdrant local mode is synchronous here: run the pipeline with Pipeline.run (Hayhooks wrappers do), "
                "or point the store at a Qdrant server with url=..."
            )
            raise RuntimeError(msg)
        await super()._initialize_async_client()

    def close(self) -> None:
        """Release this instance's reference; the shared client closes with its last user."""
        key = local_storage_key(self.location, self.path)
        if key is None or self._client is None:
            super().close()
            return
        with _REGISTRY_LOCK:
            shared = _REGISTRY.get(key)
            if shared is not None:
                shared.refs -= 1
                if shared.refs <= 0:
                    shared.client.close()
                    del _REGISTRY[key]
        self._client = None

    @property
    def client(self) -> Any:
        """The (shared, locked) Qdrant client, opened on first use."""
        self._initialize_client()
        return self._client


def store_from_init_parameters(data: dict[str, Any]) -> dict[str, Any]:
    """Deserialise ``data["init_parameters"]["document_store"]`` with the class its ``type`` names.

    The stock Qdrant retrievers always rebuild a plain ``QdrantDocumentStore``, which loses the shared client.
    """
    from haystack.core.serialization import import_class_by_name

    store_data = data["init_parameters"]["document_store"]
    if isinstance(store_data, dict):
        store_cls = import_class_by_name(store_data["type"])
        if not issubclass(store_cls, QdrantDocumentStore):
            msg = f"document_store type {store_data['type']} is not a QdrantDocumentStore"
            raise TypeError(msg)
        data["init_parameters"]["document_store"] = store_cls.from_dict(store_data)
    return data
