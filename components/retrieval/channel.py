"""What every retrieval channel shares: the skip rule for per-query channel weights, and failing softly."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import replace

from haystack import Document

logger = logging.getLogger(__name__)


def channel_enabled(channel: str, weights: dict[str, float] | None) -> bool:
    """A channel runs unless the router gave it a weight of zero (no weights at all means run)."""
    return weights is None or weights.get(channel, 0.0) > 0.0


def without_sparse(documents: list[Document]) -> list[Document]:
    """Drop sparse vectors from retrieved documents: nothing downstream reads them, and Haystack deep-copies
    every component input, so each vector carried costs time at every stage."""
    return [replace(d, sparse_embedding=None) if d.sparse_embedding is not None else d for d in documents]


def search_or_none(channel: str, search: Callable[[], list[Document]]) -> list[Document] | None:
    """Run a channel's search; when the store fails (server down, timeout, closed client) log it and return
    ``None``, which the joiner skips (renormalising the other weights) so one channel never fails the query.

    ``ValueError`` and ``TypeError`` still raise: they mean a wrong call or configuration (e.g. an embedding
    dimension the collection does not hold), which retrying or skipping would only hide.
    """
    try:
        return search()
    except (ValueError, TypeError):
        raise
    except Exception as err:
        _log_failure(channel, err)
        return None


async def asearch_or_none(channel: str, search: Callable[[], Awaitable[list[Document]]]) -> list[Document] | None:
    """Async variant of :func:`search_or_none`."""
    try:
        return await search()
    except (ValueError, TypeError):
        raise
    except Exception as err:
        _log_failure(channel, err)
        return None


def _log_failure(channel: str, err: Exception) -> None:
    logger.warning("Channel '%s' failed and is skipped for this query: %s: %s", channel, type(err).__name__, err)
