"""Markdown structure through markdown-it-py: headings are ``heading_open`` tokens (ATX and setext), so a line
starting with ``#`` or ``}`` inside a fenced code block, an indented block or an HTML block is never a heading."""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

from adaptive_retrieval.components.indexing.structure.blocks import (
    Coverage,
    Parsed,
    blocks_from_headings,
    item_units,
    text_units,
)

# YAML front matter would otherwise parse as a thematic break plus a setext heading.
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n.*?\n(?:---|\.\.\.)[ \t]*(?:\n|\Z)", re.DOTALL)
_PARSER = MarkdownIt("commonmark").enable("table")


def parse_markdown(text: str) -> Parsed:
    """Blocks of a Markdown document; each block's text is the source Markdown between two headings.

    Only top-level headings open sections (a heading inside a list or block quote is content). The title is the
    first heading when it is the document's first block and its only level-1 heading.

    Usage::

        parse_markdown("# Guide\\n\\n```sh\\n# not a heading\\n```\\n").blocks
        # [Block(path=('Guide',), text='```sh\\n# not a heading\\n```')]
    """
    front = _FRONT_MATTER.match(text)
    body = text[front.end() :] if front else text
    lines = body.splitlines()
    tokens = _PARSER.parse(body)
    headings: list[tuple[int, int, int, str]] = []  # (first line, end line, level, title)
    for i, token in enumerate(tokens):
        if token.type == "heading_open" and token.level == 0 and token.map:
            inline = tokens[i + 1]
            title = " ".join(_plain(inline).split())
            if title:
                headings.append((token.map[0], token.map[1], int(token.tag[1]), title))
    items: list[tuple[int, str] | str] = []
    cursor = 0
    for start, end, level, title in headings:
        items.append("\n".join(lines[cursor:start]))
        items.append((level, title))
        cursor = end
    items.append("\n".join(lines[cursor:]))
    title = None
    level_one = [h for h in headings if h[2] == 1]
    leading = "\n".join(lines[: headings[0][0]]).strip() if headings else ""
    if headings and len(level_one) == 1 and headings[0] == level_one[0] and not leading:
        title = headings[0][3]
    # Blocks are the source's own lines, so only heading markup (and a link target in a heading) is not kept.
    coverage = Coverage(kept=item_units(items), total=text_units(body))
    return Parsed(title=title, blocks=blocks_from_headings(items), coverage=coverage)


def _plain(inline: object) -> str:
    """The visible text of an inline token: code spans and link texts kept, markup dropped."""
    children = getattr(inline, "children", None) or []
    parts = [" " if c.type in ("softbreak", "hardbreak") else c.content for c in children if c.type != "html_inline"]
    return "".join(parts)
