"""Reading names off English text: word tokens with their sentence position, capitals, acronyms, connectors.

A capitalised word is a name candidate unless the sentence, not the name, capitalised it (its first word); a run
of name words may hold connectors ("University *of* Oxford"); acronyms are 2–8 capitals (not Roman numerals).

:func:`query_names` reads the names a query writes (the gate's ``names`` signal, the bridge channel, the
answerability check): runs of capitalised words or numbers; a query typed in capitals is read as lower case.

Usage::

    query_names("Who wrote The Age of Reason in 1794?")  # ['The Age of Reason', '1794']
    [t.text for t in tokens("Marie Curie won.")]  # ["Marie", "Curie", "won"]
    is_acronym("CMLL"), is_acronym("IV")          # (True, False)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from adaptive_retrieval.components.text.keys import normalise_key
from adaptive_retrieval.components.text.stopwords import stopwords
from adaptive_retrieval.components.text.terms import KEPT_TEXTS

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


_EDGE = re.compile(r"^[\"'(\[“‘]+|[\"')\]”’?!.,:;]+$")
#: Lower-case words that stay inside a name a query writes when a capitalised word follows ("Bank of England");
#: fewer than :data:`CONNECTORS`, which reads running text, where "for" and "on" join names more often.
QUERY_CONNECTORS = frozenset({"of", "the", "de", "del", "la", "le", "du", "des", "von", "van", "der", "den"})


def _sentence_capital(first: str, tokens: list[str]) -> bool:
    """Whether the query's first word is capitalised only because it opens the sentence: a stop word ("What",
    "In") or a word the next one does not continue as a name ("Give an overview…", but "Phu Luong is…")."""
    follows = tokens[1][:1] if len(tokens) > 1 else ""
    return first.lower() in stopwords() or not (follows.isupper() or follows.isdigit() or first[0].isdigit())


def _shouted(query: str) -> bool:
    """Whether the query's capitals carry no information: most of its words of letters are written in capitals
    (a query typed with caps lock, or a collection that stores its queries upper-cased)."""
    words = [w for w in re.findall(r"[^\W\d_]{2,}", query)]
    return len(words) > 2 and sum(w.isupper() for w in words) > 0.6 * len(words)


def query_names(query: str) -> list[str]:
    """The names a query writes: maximal runs of capitalised words or numbers, with connectors ("of", "the",
    "de"…) inside a run; punctuation after a word ends its run. The query's first word is skipped when the
    sentence, not a name, capitalised it (:func:`_sentence_capital`). Names of stop words only are dropped.
    A query written in capitals (:func:`_shouted`) is read as lower case: its capitals say nothing about names,
    so it gets the names of its lower-cased form (numbers only), never one long name."""
    return list(_query_names(query))


@lru_cache(maxsize=KEPT_TEXTS)
def _query_names(query: str) -> tuple[str, ...]:
    if _shouted(query):
        query = query.lower()
    stop = stopwords()
    tokens = query.split()
    names: list[str] = []
    run: list[str] = []

    def close() -> None:
        if run and any(w.lower() not in stop for w in normalise_key(" ".join(run)).split()):
            names.append(" ".join(run))
        run.clear()

    for i, token in enumerate(tokens):
        word = re.sub(r"['’]s$", "", _EDGE.sub("", token))
        ends = bool(re.search(r"[?!.,:;)\]”]$", token)) and not re.fullmatch(r"(?:[A-Z]\.)+", token)
        if word and (word[0].isupper() or word[0].isdigit()) and not (i == 0 and _sentence_capital(word, tokens)):
            run.append(word)
        elif run and word in QUERY_CONNECTORS and i + 1 < len(tokens) and tokens[i + 1][:1].isupper() and not ends:
            run.append(word)
            continue
        else:
            close()
        if ends:
            close()
    close()
    return tuple(names)
