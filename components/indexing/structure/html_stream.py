"""HTML structure read as a stream of tags (Python's ``html.parser``), with no tree and so no nesting limit.

libxml2, under lxml, builds a tree and stops descending past its nesting limit (256 levels, 2,048 with
``huge_tree``): a legacy page of 400 unclosed ``<p><font>`` or thousands of nested ``div``\\s lost everything
after the limit, silently. This reader applies the same rules as :mod:`.html` (headings open sections, block
elements end paragraphs, table rows become ``a | b`` lines, ``pre`` keeps its lines, chrome is dropped, one
``<main>`` or else one ``<article>`` is the page) to the tag stream instead: :mod:`.html` uses it when lxml's tree
kept too little of the page's text, which :func:`page_text_units` counts (a scan of the tags with the same
chrome and scope rules, ~10× faster than a full read).

Usage::

    items, title = stream_items("<h1>Guide</h1><p>Intro</p>")
    # ([(1, 'Guide'), 'Intro'], None)
    page_text_units("<nav>Menu</nav><p>Intro</p>")     # 5: the letters and digits a reader gets
"""

from __future__ import annotations

import html as html_entities
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from html.parser import HTMLParser

from adaptive_retrieval.components.indexing.structure.blocks import text_units

#: Elements whose content is never read (scripts, styles, navigation, footers, forms...): the same as lxml's walk.
SKIP = {"script", "style", "noscript", "template", "nav", "footer", "svg", "form", "button", "iframe", "head"}
#: Elements that end a paragraph where they start and where they end.
BLOCK = {
    "p", "div", "li", "dd", "dt", "blockquote", "pre", "table", "tr", "ul", "ol", "dl", "figure", "figcaption",
    "section", "article", "main", "aside", "header", "address", "details", "summary", "caption", "hr", "br",
}  # fmt: skip
SECTIONING = {"section", "article"}
_HEADING = re.compile(r"^h([1-6])$")
#: What the count of a page's text must see one by one: comments, scripts and styles (whose content is text to
#: HTML's tokenizer but markup to a reader), the chrome elements and the scope elements. Other tags are removed in
#: bulk (:data:`_TAG`): a page has hundreds of thousands of them.
_COUNTED = re.compile(
    r"<!--.*?(?:-->|\Z)|<(script|style)\b[^>]*>.*?(?:</\1\s*>|\Z)"
    r"|<(/?)(" + "|".join(sorted((SKIP - {"script", "style"}) | {"main", "article"})) + r")\b[^>]*>",
    re.DOTALL | re.IGNORECASE,
)
_TAG = re.compile(r"<[a-zA-Z/!?][^>]*>")


def page_text_units(page: str) -> int:
    """The letters and digits of the text a reader of ``page`` gets: outside tags, comments, scripts and styles,
    outside the chrome elements (:data:`SKIP`), and inside the page's one ``<main>`` (else its one ``<article>``)
    when it has one; entities decoded."""
    skipping: list[str] = []
    parts: dict[str, list[str]] = {"all": [], "main": [], "article": []}
    open_ = {"main": 0, "article": 0}
    starts = {"main": 0, "article": 0}
    position = 0
    for match in _COUNTED.finditer(page):
        if not skipping and match.start() > position:
            gap = page[position : match.start()]
            parts["all"].append(gap)
            for name in ("main", "article"):
                if open_[name]:
                    parts[name].append(gap)
        position = match.end()
        tag = match.group(3)
        if not tag:
            continue  # a comment, a script, a style
        tag = tag.lower()
        if match.group(2):  # an end tag
            if tag in skipping:
                while skipping and skipping.pop() != tag:
                    pass
            elif not skipping and tag in open_ and open_[tag]:
                open_[tag] -= 1
            continue
        if tag in starts:
            starts[tag] += 1
        if tag in SKIP:
            if not match.group(0).endswith("/>"):
                skipping.append(tag)
        elif not skipping and tag in open_:
            open_[tag] += 1
    if not skipping:
        for name in ("all", *(n for n in ("main", "article") if open_[n])):
            parts[name].append(page[position:])
    region = "main" if starts["main"] == 1 else "article" if starts["article"] == 1 else "all"
    # Gaps and tags are replaced by a space: an entity is never split across them.
    return text_units(html_entities.unescape(_TAG.sub(" ", " ".join(parts[region]))))


def heading_level(tag: str, attribute: Callable[[str], str | None]) -> int | None:
    """The heading level of an element (its tag, and ``attribute(name)`` for its attributes): ``h1``–``h6``, or
    ``role="heading"`` with its ``aria-level`` (default 2)."""
    match = _HEADING.match(tag)
    if match:
        return int(match.group(1))
    if attribute("role") == "heading":
        level = attribute("aria-level") or "2"
        return int(level) if level.isdigit() and 1 <= int(level) <= 6 else 2
    return None


@dataclass
class _Item:
    """One reading-order item: a text, or a heading with the sectioning elements open around it."""

    text: str
    level: int | None = None
    sections: int = 0
    articles: int = 0
    in_main: bool = False
    in_article: bool = False


@dataclass
class _Capture:
    """Text gathered for a heading, a table row or a ``pre`` until its end tag."""

    kind: str
    tag: str
    level: int | None = None
    parts: list[str] = field(default_factory=list)
    cells: list[list[str]] = field(default_factory=list)
    depth: int = 1


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items: list[_Item] = []
        self.paragraph: list[str] = []
        self.skipping: list[str] = []
        self.capture: _Capture | None = None
        self.open = {"section": 0, "article": 0, "main": 0}
        self.starts = {"main": 0, "article": 0}
        self.title: list[str] = []
        self.in_title = False
        self.title_done = False

    def _add(self, text: str, level: int | None = None) -> None:
        self.items.append(
            _Item(
                text,
                level,
                self.open["section"],
                self.open["article"],
                self.open["main"] > 0,
                self.open["article"] > 0,
            )
        )

    def flush(self) -> None:
        text = " ".join("".join(self.paragraph).split())
        if text:
            self._add(text)
        self.paragraph.clear()

    def _end_capture(self) -> None:
        capture, self.capture = self.capture, None
        if capture is None:
            return
        if capture.kind == "heading":
            text = " ".join("".join(capture.parts).split())
            if text:
                self._add(text, capture.level)
        elif capture.kind == "row":
            cells = [" ".join("".join(c).split()) for c in capture.cells]
            if any(cells):
                self._add(" | ".join(cells))
        else:
            code = "".join(capture.parts).strip("\n")
            if code.strip():
                self._add(code)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "title":  # the page's title, not an SVG image's
            self.in_title = not self.title_done and "svg" not in self.skipping
        if tag in self.starts:
            self.starts[tag] += 1
        if self.skipping or tag in SKIP:
            if tag in SKIP:
                self.skipping.append(tag)
            return
        capture = self.capture
        if capture is not None:
            if tag == capture.tag:
                capture.depth += 1
            if capture.kind == "row" and tag in ("td", "th"):
                capture.cells.append([])
            if capture.kind == "row" and tag == "tr":  # an unclosed row ends where the next begins
                self._end_capture()
            else:
                return
        level = heading_level(tag, dict(attrs).get)
        if level is not None:
            self.flush()
            self.capture = _Capture("heading", tag, level)
        elif tag in ("tr", "pre"):
            self.flush()
            self.capture = _Capture("row" if tag == "tr" else "pre", tag)
        elif tag in BLOCK:
            self.flush()
        if tag in self.open:
            self.open[tag] += 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        # <br/>, <hr/>: a paragraph ends; nothing is opened.
        if not self.skipping and self.capture is None and tag in BLOCK:
            self.flush()

    def handle_endtag(self, tag: str) -> None:
        if tag == "title" and self.in_title:
            self.in_title, self.title_done = False, True
        if self.skipping:
            if tag in self.skipping:
                while self.skipping and self.skipping.pop() != tag:
                    pass
            return
        capture = self.capture
        if capture is not None:
            closes_row = capture.kind == "row" and tag in ("table", "tbody", "thead", "tfoot")
            if tag == capture.tag:
                capture.depth -= 1
            if (tag == capture.tag and capture.depth <= 0) or closes_row:
                self._end_capture()
            if not closes_row:
                return
        if tag in BLOCK:
            self.flush()
        if tag in self.open and self.open[tag] > 0:
            self.open[tag] -= 1

    def handle_data(self, data: str) -> None:
        if self.in_title:
            self.title.append(data)
        if self.skipping:
            return
        capture = self.capture
        if capture is None:
            self.paragraph.append(data)
        elif capture.kind == "row":
            if capture.cells:
                capture.cells[-1].append(data)
        else:
            capture.parts.append(data)


def stream_items(html: str) -> tuple[list[tuple[int, str] | str], str | None]:
    """Reading-order items (texts and ``(level, heading)``) and the ``<title>`` of a page, read as a tag stream."""
    reader = _Reader()
    reader.feed(html)
    reader.close()
    reader._end_capture()
    reader.flush()
    if reader.starts["main"] == 1:
        kept = [item for item in reader.items if item.in_main]
        scope = "main"
    elif reader.starts["article"] == 1:
        kept = [item for item in reader.items if item.in_article]
        scope = "article"
    else:
        kept, scope = reader.items, ""
    items: list[tuple[int, str] | str] = []
    for item in kept:
        if item.level is None:
            items.append(item.text)
            continue
        # As in lxml's walk: an h1 sits one level below each open sectioning element but the page's own scope.
        depth = item.sections + item.articles - (1 if scope == "article" else 0)
        items.append((max(item.level, depth + 1) if item.level == 1 else item.level, item.text))
    title = " ".join(" ".join(reader.title).split()) or None
    return items, title
