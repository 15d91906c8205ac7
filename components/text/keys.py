"""Keys that merge spelling variants of a name, so that index time and query time meet on the same string.

Usage::

    normalise_key("The U.S. Army's")          # "us army"
    normalise_key("Universities", phrase=True)  # "university"
    title_aliases("Lilu (mythology)")        # ["Lilu (mythology)", "Lilu"]
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_PAREN_SUFFIX = re.compile(r"\s*\([^)]*\)\s*$")


#: Characters outside ASCII: the only ones that can be combining marks.
_NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def _without_marks(match: re.Match[str]) -> str:
    return "".join(ch for ch in match.group() if not unicodedata.combining(ch))


def fold(text: str) -> str:
    """``text`` with accents removed (NFKD, combining marks dropped); case is kept."""
    if text.isascii():  # NFKD leaves ASCII as it is and it has no combining marks: the common case, at no cost
        return text
    # Only the non-ASCII runs are looked at, character by character: a passage with a few curly quotes costs a
    # few lookups, not one per character.
    return _NON_ASCII.sub(_without_marks, unicodedata.normalize("NFKD", text))


def singular(word: str) -> str:
    """A plural English noun made singular by its ending ("cities" → "city", "maps" → "map"); others as given."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


@lru_cache(maxsize=8192)  # names and passages recur within a query and across queries; the key is a pure function
def normalise_key(name: str, phrase: bool = False) -> str:
    """The key that merges spelling variants of an entity name.

    Lower case, accents folded, possessive ``'s`` and punctuation removed, ``&`` read as "and", dotted
    acronyms joined ("U.S." → "us"), a leading article dropped; for a noun phrase (``phrase=True``) a plural
    last word is made singular.
    """
    text = fold(name).lower().replace("’", "'")
    text = re.sub(r"\s&\s", " and ", text).replace("&", "")
    text = re.sub(r"'s\b", "", text)
    text = re.sub(r"[^\w\s]|_", " ", text)
    words: list[str] = []
    letters: list[str] = []
    # Runs of single letters are a dotted acronym ("u s a" → "usa"); a lone letter stays a word ("c major").
    for word in [*text.split(), ""]:
        if len(word) == 1 and word.isalpha():
            letters.append(word)
            continue
        if letters:
            words.extend(["".join(letters)] if len(letters) > 1 else letters)
            letters = []
        if word:
            words.append(word)
    if len(words) > 1 and words[0] in ("the", "a", "an"):
        words = words[1:]
    if phrase and words:
        words[-1] = singular(words[-1])
    return " ".join(words)


def title_aliases(title: str) -> list[str]:
    """The title itself plus its base name without a disambiguator: "Lilu (mythology)" → "Lilu";
    "Leland, North Carolina" → "Leland"."""
    title = title.strip()
    names = [title]
    base = _PAREN_SUFFIX.sub("", title).strip()
    if base and base != title:
        names.append(base)
    if "," in base:
        head = base.split(",", 1)[0].strip()
        if head and len(head.split()) <= 6:
            names.append(head)
    return names
