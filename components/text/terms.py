"""Content terms: the stemmed content words of a text (Snowball stems, stop words and single letters dropped),
the unit in which the gate's coverage and answerability checks compare a query with passages.

Usage::

    content_terms("Who founded the companies?")   # {"found", "compani"}
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from typing import Any

from adaptive_retrieval.components.text.keys import fold
from adaptive_retrieval.components.text.stopwords import stopwords

_WORD = re.compile(r"[a-z0-9]+")


@cache
def _stemmer() -> Any:
    from py_rust_stemmers import SnowballStemmer

    return SnowballStemmer("english")


#: Texts whose words and terms are kept (a query's passages recur across its components and across queries: the
#: gate, the bridge and the graph channel each read the same chunks).
KEPT_TEXTS = 2048


@lru_cache(maxsize=KEPT_TEXTS)
def _words(text: str) -> tuple[str, ...]:
    folded = fold(text).lower()
    stop = stopwords()
    return tuple(w for w in _WORD.findall(folded) if w not in stop and (len(w) > 1 or w.isdigit()))


def content_words(text: str) -> list[str]:
    """The content words of ``text`` in order, unstemmed: accents folded, lower case, stop words and single
    letters dropped."""
    return list(_words(text))


def stems(words: list[str]) -> list[str]:
    """The Snowball stems of ``words`` (as :func:`content_terms` stems them), in order."""
    return list(_stemmer().stem_words(words))


@lru_cache(maxsize=KEPT_TEXTS)
def term_set(text: str) -> frozenset[str]:
    """:func:`content_terms` of ``text`` as a frozen set (kept for the texts read last: do not change it)."""
    return frozenset(stems(list(_words(text))))


def content_terms(text: str) -> set[str]:
    """Stemmed content words of ``text``: accents folded, lower case, stop words and single letters dropped."""
    return set(term_set(text))
