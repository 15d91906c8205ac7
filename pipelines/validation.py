"""What a query request may hold, checked the same way by every entry point: REST and MCP (the query wrapper and
the served app), the OpenAI-compatible chat, the CLI and Python's ``run_query`` / ``QueryResponse.from_result``.

One limit per value (:data:`MAX_QUERY_CHARS`, :data:`MAX_TOP_K`, :data:`MAX_SOURCE_CHARS`), one check per value
(:func:`check_query`, :func:`check_top_k`, :func:`check_source_name`, :func:`check_fields`, :func:`check_port`). A bad
value raises ``TypeError`` (wrong type: a boolean or ``NaN`` for a count, a number for the query) or ``ValueError``
(right type, wrong value) with a message that names the value and the rule; the transports turn them into a 4xx, an
MCP error or ``error: ...`` and exit 1. :data:`QueryText` and :data:`TopK` carry the same rules as request-model
annotations (strict: ``true`` and ``"5"`` are not counts).

Usage::

    from adaptive_retrieval.pipelines.validation import check_query, check_top_k

    check_query("What is MMR?")        # the query, unchanged
    check_top_k(float("nan"))          # TypeError: top_k must be a whole number from 1 to 200, got nan
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

# The one query check and length limit: the query-side components use them too.
from adaptive_retrieval.components.limits import MAX_QUERY_CHARS, check_query

__all__ = [
    "MAX_QUERY_CHARS",
    "MAX_SOURCE_CHARS",
    "MAX_TOP_K",
    "IncludeEmbeddings",
    "NoFilters",
    "QueryText",
    "TopK",
    "check_query",
]
#: Most documents a query may ask for (``top_k``).
MAX_TOP_K = 200
#: Longest source name ``DELETE /sources`` and ``adaptive-retrieval delete`` accept (the usual PATH_MAX).
MAX_SOURCE_CHARS = 4096
#: The query text as a request field (the wrapper's ``run_api`` annotation; REST and MCP schemas follow it).
QueryText = Annotated[str, Field(strict=True, max_length=MAX_QUERY_CHARS, description="The question or keywords")]
#: ``top_k`` as a request field: a whole number from 1 to :data:`MAX_TOP_K`, or absent.
TopK = Annotated[
    int | None,
    Field(strict=True, ge=1, le=MAX_TOP_K, description="Return at most this many documents (default: the strategy's)"),
]
#: ``include_embeddings`` as a request field: a JSON boolean (answers carry no vectors unless it is true).
IncludeEmbeddings = Annotated[
    bool, Field(strict=True, description="Also return the query's vector and each document's (default: false)")
]


def refuse_filters(value: Any) -> None:
    """Refuse any ``filters`` value but null: metadata filters are not implemented, and a request that sends them
    must never be answered unfiltered as if they had applied.

    :raises ValueError: for any value but ``None``.
    """
    if value is not None:
        msg = (
            "metadata filters are not supported by this server (the query runs over the whole index): remove "
            "'filters' from the request"
        )
        raise ValueError(msg)


#: ``filters`` as a request field: declared only to be refused. ``adaptive-retrieval serve`` refuses every field a
#: request model does not declare (422), while plain ``hayhooks run`` drops undeclared fields without a word; this
#: one, the field a client is most likely to send expecting it to narrow the answer, is refused by both (422).
NoFilters = Annotated[
    None,
    BeforeValidator(refuse_filters),
    Field(description="Not supported: metadata filters are not implemented; any value but null is refused (422)"),
]


def check_top_k(top_k: Any, name: str = "top_k") -> int | None:
    """``top_k`` when it is ``None`` or a whole number from 1 to :data:`MAX_TOP_K`.

    :raises TypeError: for a boolean, a float (``5.0``, ``NaN``, ``inf``), a string or anything else not an ``int``.
    :raises ValueError: for a whole number out of range.
    """
    if top_k is None:
        return None
    if isinstance(top_k, bool) or not isinstance(top_k, int):
        msg = f"{name} must be a whole number from 1 to {MAX_TOP_K}, got {top_k!r} ({type(top_k).__name__})"
        raise TypeError(msg)
    if not 1 <= top_k <= MAX_TOP_K:
        msg = f"{name} must be from 1 to {MAX_TOP_K}, got {top_k}"
        raise ValueError(msg)
    return top_k


def check_source_name(name: Any) -> str:
    """``name`` when it can name a source (an upload's file name or an indexed file's path).

    :raises TypeError: when it is not a string.
    :raises ValueError: when it is empty, holds a NUL character or is longer than :data:`MAX_SOURCE_CHARS`.
    """
    if not isinstance(name, str):
        msg = f"A source name must be a string, got {type(name).__name__}"
        raise TypeError(msg)
    if not name.strip():
        msg = "The source name is empty: pass an upload's file name (notes.md) or an indexed file's path"
        raise ValueError(msg)
    if "\x00" in name:
        msg = "The source name holds a NUL character"
        raise ValueError(msg)
    if len(name) > MAX_SOURCE_CHARS:
        msg = f"The source name has {len(name)} characters; the limit is {MAX_SOURCE_CHARS}"
        raise ValueError(msg)
    return name


def check_fields(body: Mapping[str, Any], accepted: Iterable[str]) -> None:
    """Refuse fields a request model does not declare (a misspelt ``top-k`` or an unsupported ``filters`` would
    otherwise be dropped without a word).

    :raises ValueError: naming the unknown fields and the accepted ones.
    """
    accepted = sorted(accepted)
    if unknown := sorted(str(key) for key in body if key not in accepted):
        # Named, but bounded: a body of one 5 MB key must not come back as a 5 MB answer.
        shown = [name if len(name) <= 100 else f"{name[:100]}… ({len(name)} characters)" for name in unknown[:10]]
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        msg = f"Unknown field(s) {shown}{more}: this endpoint accepts {accepted}"
        raise ValueError(msg)


#: Most serving workers ``serve --workers`` accepts (each loads its own models).
MAX_WORKERS = 64


def check_workers(value: Any) -> int:
    """A serving worker count, from 1 to :data:`MAX_WORKERS`.

    :raises TypeError: when it is not a whole number (or its text).
    :raises ValueError: when it is out of range.
    """
    return _whole_in_range(value, "the worker count", 1, MAX_WORKERS)


def check_port(value: Any) -> int:
    """A TCP port to listen on, from 1 to 65535 (``0`` would listen on a port nobody is told).

    :raises TypeError: when it is not a whole number (or its text).
    :raises ValueError: when it is out of range.
    """
    return _whole_in_range(value, "the port", 1, 65535)


def _whole_in_range(value: Any, what: str, low: int, high: int) -> int:
    """``value`` (an int, or the text of one) when it is a whole number from ``low`` to ``high``.

    :raises TypeError: naming ``what``, for anything else than a whole number (``True`` included).
    :raises ValueError: naming ``what``, for a whole number out of range.
    """
    if isinstance(value, str) and value.strip().lstrip("+-").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"{what} must be a whole number from {low} to {high}, got {value!r}"
        raise TypeError(msg)
    if not low <= value <= high:
        msg = f"{what} must be from {low} to {high}, got {value}"
        raise ValueError(msg)
    return value
