"""Numbered headings ("3.2 Termination", "Appendix B", "A.1 Details", "Chapter 4"): their number, depth and words."""

from __future__ import annotations

import re

_DECIMAL = re.compile(r"^(?P<num>\d{1,2}(?:\.\d{1,2}){0,3})\.?\s+(?P<rest>\S.*)$")
_LETTER = re.compile(r"^(?P<num>[A-H](?:\.\d{1,2}){0,3})\.?\s+(?P<rest>[A-Z].*)$")
_ROMAN = re.compile(r"^(?P<num>[IVX]{1,4})\.\s+(?P<rest>[A-Z].*)$")
_NAMED = re.compile(
    r"^(?P<kind>appendix|chapter|part|section|annex)\s+(?P<num>[A-Z]|\d{1,3}|[IVXLC]+)(?:\.\d{1,2})*\b[.:]?\s*(?P<rest>.*)$",
    re.IGNORECASE,
)


def _numbered(text: str) -> tuple[str, str] | None:
    """``(number, words after it)`` of a heading numbered "3.2", "IV." or "B.1" (not a named one), else ``None``."""
    for pattern in (_DECIMAL, _ROMAN, _LETTER):
        match = pattern.match(text)
        if match and re.search(r"[^\W\d_]", match.group("rest")):
            return match.group("num"), match.group("rest")
    return None


def heading_number(title: str) -> tuple[str, int] | None:
    """``(number, depth)`` of a numbered heading (``("3.2", 2)``, ``("B", 1)`` for "Appendix B"), else ``None``.

    Single capital letters A-H count only followed by a capitalised word ("A Proofs", "B.2 Setup"), so that "A
    simple model" is not read as appendix A.
    """
    text = " ".join(title.split())
    named = _NAMED.match(text)
    if named:
        return named.group("num").upper() if len(named.group("num")) == 1 else named.group("num"), 1
    numbered = _numbered(text)
    return (numbered[0], numbered[0].count(".") + 1) if numbered else None


def heading_without_number(title: str) -> str:
    """The heading's words after its number ("3.2 Termination" → "Termination", "IV. Results" → "Results"); the
    heading itself when it has none. Named headings ("Appendix B", "Chapter 4") keep their number: it is their
    name."""
    text = " ".join(title.split())
    numbered = None if _NAMED.match(text) else _numbered(text)
    return numbered[1] if numbered else text
