"""Reading names off English text: word tokens with their sentence position, capitals, acronyms, connectors.

A capitalised word is a name candidate unless the sentence, not the name, capitalised it (its first word); a run
of name words may hold connectors ("University *of* Oxford"); acronyms are 2–8 capitals (not Roman numerals).

Usage::

    [t.text for t in tokens("Marie Curie won.")]  # ["Marie", "Curie", "won"]
    is_acronym("CMLL"), is_acronym("IV")          # (True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: Lower-case words allowed inside a capitalised name when a capitalised word follows them.
# "and" is left out on purpose: "Gallu and Lilu" is two names far more often than one.
CONNECTORS = frozenset(
    {
        *("of", "de", "del", "della", "der", "den", "di", "da", "do", "dos", "das", "du", "la", "le", "les"),
        *("van", "von", "y", "al", "bin", "ibn", "the", "for", "on", "upon"),
    }
)

_TOKEN = re.compile(r"\w[\w'’\-.&]*\w|\w", re.UNICODE)
_ROMAN = re.compile(r"^[IVXLCDM]+$")


@dataclass
class Token:
    """A word of a sentence, its character span, and whether it is the sentence's first word."""

    text: str
    start: int
    end: int
    initial: bool


def tokens(sentence: str) -> list[Token]:
    """The words of ``sentence``; the first word with a letter is marked ``initial``."""
    toks = [Token(m.group(0), m.start(), m.end(), False) for m in _TOKEN.finditer(sentence)]
    # The first word of a sentence (after an opening quote or bracket) is capitalised by grammar, not by name.
    for tok in toks:
        if any(ch.isalpha() for ch in tok.text):
            tok.initial = True
            break
    return toks


def capitalised(word: str) -> bool:
    """Whether ``word`` starts with a capital letter."""
    return word[:1].isupper()


def is_acronym(word: str) -> bool:
    """Whether ``word`` is an acronym: 2–8 letters, all capitals (dots allowed), not a Roman numeral."""
    letters = [ch for ch in word if ch.isalpha()]
    return (
        2 <= len(letters) <= 8
        and sum(ch.isupper() for ch in letters) >= 2
        and all(ch.isupper() for ch in letters)
        and not _ROMAN.match(word.replace(".", ""))
    )


def mostly_upper(sentence: str) -> bool:
    """Whether ``sentence`` is set in capitals (a shouted heading or an all-caps query): its capitals say nothing
    about names."""
    letters = [ch for ch in sentence if ch.isalpha()]
    return len(letters) > 12 and sum(ch.isupper() for ch in letters) > 0.6 * len(letters)
