"""HTML structure through its element tree (lxml): ``h1``–``h6`` (and ``role="heading"``) open sections, a
heading nested in ``section``/``article`` elements sits at least one level below each of them; text comes from
block elements, one paragraph each; scripts, styles, navigation and footers are dropped."""

from __future__ import annotations

import re

import lxml.html
from lxml import etree

from adaptive_retrieval.components.indexing.structure.blocks import Parsed, blocks_from_headings

_HEADING = re.compile(r"^h([1-6])$")
_SECTIONING = {"section", "article"}
_SKIP = {"script", "style", "noscript", "template", "nav", "footer", "svg", "form", "button", "iframe", "head"}
_BLOCK = {
    "p", "div", "li", "dd", "dt", "blockquote", "pre", "table", "tr", "ul", "ol", "dl", "figure", "figcaption",
    "section", "article", "main", "aside", "header", "address", "details", "summary", "caption", "hr", "br",
}  # fmt: skip


def _heading_level(element: etree._Element) -> int | None:
    tag = element.tag if isinstance(element.tag, str) else ""
    match = _HEADING.match(tag.lower())
    if match:
        return int(match.group(1))
    if element.get("role") == "heading":
        level = element.get("aria-level", "2")
        return int(level) if level.isdigit() and 1 <= int(level) <= 6 else 2
    return None


def parse_html(html: str | bytes) -> Parsed:
    """Blocks of an HTML page, the title from ``<title>`` (else the first ``h1``).

    When the page has one ``<main>`` (or else one ``<article>``), only its content is read: the rest is site
    chrome.

    Usage::

        parse_html("<h1>Guide</h1><p>Intro</p><h2>3.2 Termination</h2><p>Stops.</p>").blocks
        # [Block(path=('Guide',), text='Intro'), Block(path=('Guide', '3.2 Termination'), text='Stops.')]
    """
    if not html.strip():
        return Parsed()
    root = lxml.html.document_fromstring(html)
    titles = root.xpath("//head/title//text()")
    title = " ".join(" ".join(titles).split()) or None
    scope = root
    for tag in ("main", "article"):
        found = root.xpath(f"//{tag}")
        if len(found) == 1:
            scope = found[0]
            break
    items: list[tuple[int, str] | str] = []
    paragraph: list[str] = []

    def flush() -> None:
        text = " ".join("".join(paragraph).split())
        if text:
            items.append(text)
        paragraph.clear()

    def walk(element: etree._Element, depth: int) -> None:
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        if not tag or tag in _SKIP:  # comments, processing instructions, chrome
            if element.tail:
                paragraph.append(element.tail)
            return
        level = _heading_level(element)
        if level is not None:
            flush()
            text = " ".join(element.text_content().split())
            if text:
                items.append((max(level, depth + 1) if level == 1 else level, text))
        elif tag == "tr":
            flush()
            cells = [" ".join(c.text_content().split()) for c in element if isinstance(c.tag, str)]
            if any(cells):
                items.append(" | ".join(cells))
        elif tag == "pre":
            flush()
            code = element.text_content().strip("\n")
            if code.strip():
                items.append(code)
        else:
            block = tag in _BLOCK
            if block:
                flush()
            if element.text:
                paragraph.append(element.text)
            inner = depth + 1 if tag in _SECTIONING and element is not scope else depth
            for child in element:
                walk(child, inner)
            if block:
                flush()
        if element.tail:
            paragraph.append(element.tail)

    body = scope if scope is not root else (root.find("body") if root.find("body") is not None else root)
    walk(body, 0)
    flush()
    if title is None:
        title = next((text for item in items if isinstance(item, tuple) for text in [item[1]] if item[0] == 1), None)
    return Parsed(title=title, blocks=blocks_from_headings(items))
