"""The query limit and check shared by the query-side components and the pipelines' input validation, so that
each rule has one value and one place.

``MAX_QUERY_CHARS`` is the default of ``OnnxTextEmbedder(max_chars=...)`` and ``IntentRouter(max_query_chars=...)``
and the limit :mod:`adaptive_retrieval.pipelines.validation` applies on every entry point (REST, MCP, chat, CLI,
``run_query``): a query is a question or keywords, not a document. :func:`check_query` is what every component that
takes a query (router, retry loop, embedder, rerankers) and every entry point checks.
"""

from __future__ import annotations

import unicodedata
from typing import Any

#: Longest query text, in characters.
MAX_QUERY_CHARS = 4000


def _is_text(char: str) -> bool:
    # Letters, marks, digits, punctuation and symbols; not separators (Z*) nor control, format, surrogate,
    # private-use or unassigned code points (C*).
    return unicodedata.category(char)[0] not in "CZ"


def check_query(query: Any, max_chars: int = MAX_QUERY_CHARS) -> str:
    """``query`` when it is a usable query text.

    :raises TypeError: when it is not a string.
    :raises ValueError: when it is longer than :data:`MAX_QUERY_CHARS`, not valid Unicode (a lone surrogate), or
        holds nothing but whitespace and control or format characters.
    """
    if not isinstance(query, str):
        msg = f"The query must be a string, got {type(query).__name__}"
        raise TypeError(msg)
    if len(query) > max_chars:
        msg = f"The query has {len(query)} characters; the limit is {max_chars}"
        raise ValueError(msg)
    try:
        query.encode("utf-8")
    except UnicodeEncodeError as err:
        msg = f"The query is not valid Unicode text ({err.reason} at character {err.start})"
        raise ValueError(msg) from err
    if not any(_is_text(char) for char in query):
        msg = (
            "The query is empty: it holds no letter, digit or symbol, only whitespace or control characters; "
            "pass a question or keywords"
        )
        raise ValueError(msg)
    return query
