"""Every error the package raises on purpose belongs to one family under AdaptiveRetrievalError, and keeps the
built-in base its callers catch."""

from __future__ import annotations

import pytest
from haystack.core.errors import ComponentError
from haystack.document_stores.errors import DocumentStoreError

from adaptive_retrieval.components.errors import AdaptiveRetrievalError, BusyError, InputError
from adaptive_retrieval.components.stores import StoreError
from adaptive_retrieval.components.stores.disk_space import InsufficientSpaceError
from adaptive_retrieval.components.stores.documents.edge_document_store import (
    IndexNotFoundError,
    StoreDamagedError,
    StoreLockedError,
)
from adaptive_retrieval.components.stores.graph.graph_store import GraphOwnedError
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import (
    GraphLocationError,
    GraphNotFoundError,
    GraphNotWritableError,
    GraphStoreDamagedError,
)
from adaptive_retrieval.pipelines.limits import LimitExceededError
from adaptive_retrieval.pipelines.processes.ownership import StoreOwnedError
from adaptive_retrieval.pipelines.query_pipeline import NoChannelAnsweredError
from adaptive_retrieval.pipelines.serving.upload_queue import QueueFullError, TimeBudgetError
from adaptive_retrieval.pipelines.yaml_io import PipelineLoadError


@pytest.mark.parametrize(
    ("error", "family", "builtin"),
    [
        (IndexNotFoundError, StoreError, ValueError),
        (StoreDamagedError, StoreError, ValueError),
        (StoreLockedError, StoreError, RuntimeError),
        (InsufficientSpaceError, StoreError, ValueError),
        (GraphNotFoundError, StoreError, ValueError),
        (GraphStoreDamagedError, StoreError, ValueError),
        (GraphNotWritableError, StoreError, ValueError),
        (GraphLocationError, StoreError, ValueError),
        (GraphOwnedError, StoreError, ValueError),
        (StoreOwnedError, StoreError, RuntimeError),
        (LimitExceededError, InputError, ValueError),
        (PipelineLoadError, InputError, ValueError),
        (QueueFullError, BusyError, RuntimeError),
        (TimeBudgetError, BusyError, RuntimeError),
    ],
)
def test_error_families(error: type[Exception], family: type[Exception], builtin: type[Exception]) -> None:
    assert issubclass(error, family) and issubclass(error, builtin) and issubclass(error, AdaptiveRetrievalError)


def test_store_errors_are_haystack_store_errors_and_no_channel_is_a_component_error() -> None:
    assert issubclass(StoreError, DocumentStoreError)
    assert issubclass(NoChannelAnsweredError, ComponentError)
