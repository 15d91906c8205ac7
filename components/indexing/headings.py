"""Heading detection for plain text from the converters: Markdown ``#``, reStructuredText underlines,
numbered headings (``3.2 Methods``, typical of PDFs) and short upper-case headings (``ABSTRACT``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MD = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^\"'*+#:.`_])\1{2,}\s*$")
_NUMBERED = re.compile(r"^((?:\d{1,2}\.){0,3}\d{1,2})\.?\s+([A-Z][^\n]{1,80})$")
_CAPS = re.compile(r"^[A-Z][A-Z &\-]{3,40}$")
_CAPS_WORDS = {
    "ABSTRACT",
    "INTRODUCTION",
    "BACKGROUND",
    "RELATED WORK",
    "METHODS",
    "METHODOLOGY",
    "RESULTS",
    "DISCUSSION",
    "CONCLUSION",
    "CONCLUSIONS",
    "REFERENCES",
    "ACKNOWLEDGEMENTS",
    "ACKNOWLEDGMENTS",
    "APPENDIX",
    "EVALUATION",
    "EXPERIMENTS",
    "LIMITATIONS",
    "FUTURE WORK",
}


@dataclass(frozen=True)
class Heading:
    """A heading found at ``line`` (index of its text line) spanning ``span`` lines, at nesting ``level``."""

    line: int
    span: int
    level: int
    title: str


def find_headings(lines: list[str]) -> list[Heading]:
    """All headings in ``lines``, in order. reST levels follow the order underline styles first appear.

    Numbered and upper-case headings are only looked for in text without Markdown or reST headings (PDF text):
    in marked-up text a line such as ``2. If the value...`` is a list item.
    """
    marked = _marked_headings(lines)
    return marked if marked else _plain_headings(lines)


def _marked_headings(lines: list[str]) -> list[Heading]:
    headings: list[Heading] = []
    rst_levels: dict[str, int] = {}
    i = 0
    while i < len(lines):
        text = lines[i].strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        md = _MD.match(lines[i].rstrip())  # column 0 only: indented "# ..." is a code comment
        if md:
            headings.append(Heading(i, 1, len(md.group(1)), md.group(2).strip()))
            i += 1
            continue
        under = _UNDERLINE.match(nxt) if text else None
        if under and len(nxt) >= max(3, int(len(text) * 0.7)) and not _UNDERLINE.match(text):
            style = under.group(1)
            level = rst_levels.setdefault(style, len(rst_levels) + 1)
            headings.append(Heading(i, 2, level, text))
            i += 2
            continue
        i += 1
    return headings


def _plain_headings(lines: list[str]) -> list[Heading]:
    headings: list[Heading] = []
    for i, line in enumerate(lines):
        text = line.strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        blank_before = i == 0 or not lines[i - 1].strip()
        numbered = _NUMBERED.match(text)
        if numbered and blank_before and not text.endswith((".", ",", ";", ":")) and len(text.split()) <= 12:
            depth = numbered.group(1).count(".") + 1
            headings.append(Heading(i, 1, depth, text))
        elif _CAPS.match(text) and (text in _CAPS_WORDS or (blank_before and not nxt)):
            headings.append(Heading(i, 1, 1, text.title()))
    return headings
