"""Numbered headings ("3.2 Termination", "Appendix B", "A.1 Details", "Chapter 4"): their number and depth."""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+(?P<rest>\S.*)$")
_LETTER = re.compile(r"^(?P<num>[A-H](?:\.\d{1,2}){0,3})\.?\s+(?P<rest>[A-Z].*)$")
_ROMAN = re.compile(r"^(?P<num>[IVX]{1,4})\.\s+(?P<rest>[A-Z].*)$")
_NAMED = re.compile(
    r"^(?P<kind>appendix|chapter|part|section|annex)\s+(?P<num>[A-Z]|\d{1,3}|[IVXLC]+)(?:\.\d{1,2})*\b[.:]?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)


def heading_number(title: str) -> tuple[str, int] | None:
    """``(number, depth)`` of a numbered heading (``("3.2", 2)``, ``("B", 1)`` for "Appendix B"), else ``None``.

    Single capital letters A-H count only followed by a capitalised word ("A Proofs", "B.2 Setup"), so that "A
    simple model" is not read as appendix A.
    """
    text = " ".join(title.split())
    named = _NAMED.match(text)
    if named:
        return named.group("num").upper() if len(named.group("num")) == 1 else named.group("num"), 1
    decimal = _DECIMAL.match(text)
    if decimal and re.search(r"[^\W\d_]", decimal.group("rest")):
        num = decimal.group("num")
        return num, num.count(".") + 1
    roman = _ROMAN.match(text)
    if roman:
        return roman.group("num"), 1
    letter = _LETTER.match(text)
    if letter:
        num = letter.group("num")
        return num, num.count(".") + 1
    return None


def heading_without_number(title: str) -> str:
    """The heading's words after its number ("3.2 Termination" → "Termination", "IV. Results" → "Results"); the
    heading itself when it has none. Named headings ("Appendix B", "Chapter 4") keep their number: it is their
    name."""
    text = " ".join(title.split())
    if _NAMED.match(text):
        return text
    for pattern in (_DECIMAL, _ROMAN, _LETTER):
        match = pattern.match(text)
        if match and re.search(r"[^\W\d_]", match.group("rest")):
            return match.group("rest")
    return text
