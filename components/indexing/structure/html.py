"""HTML structure through its element tree (lxml): ``h1``–``h6`` (and ``role="heading"``) open sections, a
heading nested in ``section``/``article`` elements sits at least one level below each of them; text comes from
block elements, one paragraph each; scripts, styles, navigation and footers are dropped.

The tree is built with ``huge_tree`` (libxml2's nesting limit raised from 256 to 2,048) and walked without
recursion. The text a reader of the page gets is also counted from its tags (:mod:`.html_stream`, no tree, no
nesting limit): when the tree kept less than :data:`MIN_TREE_SHARE` of it (markup nested past even the raised
limit, where libxml2 drops the rest silently), the page is read as a tag stream instead (the same rules), and
either way the result says how much was kept (:class:`~.blocks.Coverage`).
"""

from __future__ import annotations

import logging

import lxml.html
from lxml import etree

from adaptive_retrieval.components.indexing.structure.blocks import (
    MIN_KEPT_SHARE,
    Coverage,
    Parsed,
    blocks_from_headings,
    item_units,
)
from adaptive_retrieval.components.indexing.structure.html_stream import (
    BLOCK,
    SECTIONING,
    SKIP,
    heading_level,
    page_text_units,
    stream_items,
)

logger = logging.getLogger(__name__)

#: Below this share of the page's text (letters and digits, as :func:`page_text_units` counts them) the tree is
#: taken to have lost text, and the page is read as a tag stream. On 707 HTML pages of this machine's documentation
#: the tree kept at least 99.7 % of every page with readable text.
MIN_TREE_SHARE = MIN_KEPT_SHARE


def _heading_level(element: etree._Element) -> int | None:
    tag = element.tag.lower() if isinstance(element.tag, str) else ""
    return heading_level(tag, element.get)


def _tree_items(root: etree._Element) -> tuple[list[tuple[int, str] | str], str | None]:
    """Reading-order items and the title from lxml's tree (see :func:`parse_html`)."""
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

    body = scope if scope is not root else (root.find("body") if root.find("body") is not None else root)
    # An explicit stack, not recursion: a page nested thousands deep must not hit Python's recursion limit.
    # ("enter", element, depth) reads an element; ("leave", element, block) ends it and appends its tail.
    stack: list[tuple[str, etree._Element, int | bool]] = [("enter", body, 0)]
    while stack:
        step, element, value = stack.pop()
        if step == "leave":
            if value:
                flush()
            if element.tail:
                paragraph.append(element.tail)
            continue
        depth = int(value)
        tag = element.tag.lower() if isinstance(element.tag, str) else ""
        if not tag or tag in SKIP:  # comments, processing instructions, chrome
            if element.tail:
                paragraph.append(element.tail)
            continue
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
            block = tag in BLOCK
            if block:
                flush()
            if element.text:
                paragraph.append(element.text)
            inner = depth + 1 if tag in SECTIONING and element is not scope else depth
            stack.append(("leave", element, block))
            stack.extend(("enter", child, inner) for child in reversed(element))
            continue
        if element.tail:
            paragraph.append(element.tail)
    flush()
    return items, title


def parse_html(html: str | bytes) -> Parsed:
    """Blocks of an HTML page, the title from ``<title>`` (else the first ``h1``), and how much of the page's text
    they hold.

    When the page has one ``<main>`` (or else one ``<article>``), only its content is read: the rest is site
    chrome.

    Usage::

        parse_html("<h1>Guide</h1><p>Intro</p><h2>3.2 Termination</h2><p>Stops.</p>").blocks
        # [Block(path=('Guide',), text='Intro'), Block(path=('Guide', '3.2 Termination'), text='Stops.')]
    """
    if not html.strip():
        return Parsed()
    if isinstance(html, str):
        # Text goes to libxml2 as UTF-8 bytes with that encoding fixed: lxml refuses a str that declares an
        # encoding (XHTML's <?xml ... encoding=...?>), and a declared charset must not override the known one.
        parser = lxml.html.HTMLParser(huge_tree=True, encoding="utf-8")
        root = lxml.html.document_fromstring(html.encode("utf-8"), parser=parser)
        text = html
    else:
        root = lxml.html.document_fromstring(html, parser=lxml.html.HTMLParser(huge_tree=True))
        try:
            text = html.decode(root.getroottree().docinfo.encoding or "utf-8", "replace")
        except LookupError:  # an encoding name lxml knows and Python does not
            text = html.decode("utf-8", "replace")
    items, title = _tree_items(root)
    total, kept = page_text_units(text), item_units(items)
    coverage = Coverage(kept=min(kept, total), total=total)
    if coverage.share < MIN_TREE_SHARE:
        streamed, stream_title = stream_items(text)
        read = item_units(streamed)
        if read > kept:
            logger.info(
                "The element tree kept %.0f%% of the page's text (nesting past the parser's limit?): it is read "
                "as a tag stream",
                100 * coverage.share,
            )
            note = f"read as a tag stream: the element tree kept {coverage.share:.0%} of the text"
            items, title = streamed, stream_title
            coverage = Coverage(kept=min(read, total), total=total, note=note)
    if title is None:
        title = next((text for item in items if isinstance(item, tuple) for text in [item[1]] if item[0] == 1), None)
    return Parsed(title=title, blocks=blocks_from_headings(items), coverage=coverage)
