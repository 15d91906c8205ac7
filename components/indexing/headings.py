"""Heading detection for plain text from the converters: Markdown ``#``, reStructuredText underlines,
numbered headings (``3.2 Methods``, typical of PDFs) and short upper-case headings (``ABSTRACT``).

Markdown kept in a ``.txt`` file is read here, not by the Markdown parser, so fenced code blocks are skipped here
too: a ``# comment`` inside one is code, and the closing fence under a short line of code (``})`` then a line of
backticks) is not a reST underline."""

from __future__ import annotations

import re
from dataclasses import dataclass

_MD = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$")
_UNDERLINE = re.compile(r"^([=\-~^\"'*+#:.`_])\1{2,}\s*$")
_NUMBERED = re.compile(r"^((?:\d{1,2}\.){0,3}\d{1,2})\.?\s+([A-Z][^\n]{1,80})$")
# A fence that opens a code block: backticks, or tildes with an info string (a bare run of tildes under a title is
# also a reST underline, and stays one). CommonMark closes it with a run of the same character at least as long.
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}(?=[^`]*$)|~{3,}(?=\s*[^~\s]))")
_FENCE_CLOSE = re.compile(r"^ {0,3}(`{3,}|~{3,})\s*$")
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
    fence = ""  # the open code fence's run, "" outside one
    i = 0
    while i < len(lines):
        if fence:
            close = _FENCE_CLOSE.match(lines[i])
            if close and close.group(1)[0] == fence[0] and len(close.group(1)) >= len(fence):
                fence = ""
            i += 1
            continue
        text = lines[i].strip()
        nxt = lines[i + 1].strip() if i + 1 < len(lines) else ""
        md = _MD.match(lines[i].rstrip())  # column 0 only: indented "# ..." is a code comment
        if md:
            headings.append(Heading(i, 1, len(md.group(1)), md.group(2).strip()))
            i += 1
            continue
        under = _UNDERLINE.match(nxt) if text else None
        if under and under.group(1) != "`" and len(nxt) >= max(3, int(len(text) * 0.7)) and not _UNDERLINE.match(text):
            style = under.group(1)
            level = rst_levels.setdefault(style, len(rst_levels) + 1)
            headings.append(Heading(i, 2, level, text))
            i += 2
            continue
        opened = _FENCE_OPEN.match(lines[i])
        fence = opened.group(1) if opened else ""
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
