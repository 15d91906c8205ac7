"""Content terms: the stemmed content words of a text (Snowball stems, stop words and single letters dropped),
the unit in which the gate's coverage and answerability checks compare a query with passages.

Usage::

    content_terms("Who founded the companies?")   # {"found", "compani"}
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any

from adaptive_retrieval.components.text.keys import fold
from adaptive_retrieval.components.text.stopwords import stopwords

_WORD = re.compile(r"[a-z0-9]+")


@cache
def _stemmer() -> Any:
    from py_rust_stemmers import SnowballStemmer

    return SnowballStemmer("english")


def content_words(text: str) -> list[str]:
    """The content words of ``text`` in order, unstemmed: accents folded, lower case, stop words and single
    letters dropped."""
    folded = fold(text).lower()
    stop = stopwords()
    return [w for w in _WORD.findall(folded) if w not in stop and (len(w) > 1 or w.isdigit())]


def stems(words: list[str]) -> list[str]:
    """The Snowball stems of ``words`` (as :func:`content_terms` stems them), in order."""
    return list(_stemmer().stem_words(words))


def content_terms(text: str) -> set[str]:
    """Stemmed content words of ``text``: accents folded, lower case, stop words and single letters dropped."""
    return set(stems(content_words(text)))
