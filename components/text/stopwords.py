"""The packaged stop-word list (function words, connectives, calendar words), read once per process."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_DATA = Path(__file__).resolve().parent / "data" / "stopwords.txt"


@cache
def stopwords() -> frozenset[str]:
    """The packaged stop-word list: one lower-case word a line, ``#`` lines are comments."""
    lines = _DATA.read_text(encoding="utf-8").splitlines()
    return frozenset(w.strip() for w in lines if w.strip() and not w.startswith("#"))
