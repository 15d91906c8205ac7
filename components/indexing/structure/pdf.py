"""PDF structure through pypdf: the outline (bookmarks) where the file has one, else the layout — lines set larger
or bolder than the body text, and numbered headings ("3.2 Termination", "Appendix B") in a plausible order.

Text comes from pypdf's own extraction (``extract_text(visitor_text=...)``): the visitor sees every text run with
its font and size, so each extracted line carries its style and position without a second parser.
"""

from __future__ import annotations

import io
import logging
import math
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from adaptive_retrieval.components.indexing.structure.blocks import Coverage, Parsed, blocks_from_headings
from adaptive_retrieval.components.text.numbering import heading_number

if TYPE_CHECKING:
    from pypdf import PdfReader

logger = logging.getLogger(__name__)

_BOLD_NAME = re.compile(r"bold|black|heavy|semibold|demi|medi(?:um)?\b|medi$|cmbx|cmb\d|\bbx|-bd\b|,bd\b", re.I)
#: Unnumbered headings a paper (or report) commonly has; only accepted when set apart by style.
KNOWN_HEADINGS = {
    "abstract", "introduction", "background", "related work", "method", "methods", "methodology", "results",
    "discussion", "conclusion", "conclusions", "references", "bibliography", "acknowledgements",
    "acknowledgments", "acknowledgement", "acknowledgment", "appendix", "appendices", "evaluation", "experiments",
    "limitations", "future work", "summary", "contents", "preface", "foreword", "glossary", "index",
    "broader impact", "ethics statement", "supplementary material",
}  # fmt: skip


@dataclass
class Line:
    """One extracted text line with its style: the size and boldness of most of its characters."""

    page: int
    text: str
    size: float
    bold: float
    y: float


def _font_is_bold(font: Any) -> bool:
    try:
        name = str(font.get("/BaseFont", "")) if font else ""
        if _BOLD_NAME.search(name.split("+")[-1]):
            return True
        descriptor = font.get("/FontDescriptor") if font else None
        descriptor = descriptor.get_object() if descriptor is not None else None
        if descriptor is not None:
            weight = descriptor.get("/FontWeight")
            flags = int(descriptor.get("/Flags", 0) or 0)
            return (weight is not None and float(weight) >= 600) or bool(flags & (1 << 18))
    except Exception:  # a malformed font dictionary only loses the bold hint
        return False
    return False


def page_lines(page: Any, index: int) -> list[Line]:
    """The page's text lines as pypdf extracts them, each with its dominant size and bold share."""
    lines: list[Line] = []
    runs: list[tuple[str, float, bool, float]] = []  # text, size, bold, y of the current line
    bold_cache: dict[int, bool] = {}

    def close() -> None:
        text = " ".join("".join(r[0] for r in runs).split())
        if text:
            sizes: Counter[float] = Counter()
            bold = letters = 0
            for run_text, size, is_bold, _ in runs:
                n = sum(ch.isalnum() for ch in run_text)
                sizes[round(size * 2) / 2] += n
                letters += n
                bold += n if is_bold else 0
            size = sizes.most_common(1)[0][0] if sizes else 0.0
            y = next((r[3] for r in runs if r[0].strip()), 0.0)
            lines.append(Line(index, unicodedata.normalize("NFKC", text), size, bold / max(letters, 1), y))
        runs.clear()

    def visit(text: str, cm: list[float], tm: list[float], font: Any, font_size: float) -> None:
        if not text:
            return
        scale = math.hypot(tm[2] * cm[0] + tm[3] * cm[2], tm[2] * cm[1] + tm[3] * cm[3])
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        key = id(font)
        if key not in bold_cache:
            bold_cache[key] = _font_is_bold(font)
        parts = text.split("\n")
        for i, part in enumerate(parts):
            if i:
                close()
            if part:
                runs.append((part, float(font_size) * (scale or 1.0), bold_cache[key], y))

    page.extract_text(visitor_text=visit)
    close()
    return lines


def _letters(text: str) -> int:
    return sum(ch.isalpha() for ch in text)


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", text.lower())


def _outline(reader: PdfReader) -> list[tuple[int, str, int]]:
    """``(depth, title, page index)`` of every outline entry with a page, in outline order."""
    entries: list[tuple[int, str, int]] = []

    def walk(items: list[Any], depth: int) -> None:
        for item in items:
            if isinstance(item, list):
                walk(item, depth + 1)
                continue
            try:
                page = reader.get_destination_page_number(item)
            except Exception:  # an entry pointing nowhere (or at a named destination pypdf cannot resolve)
                page = None
            title = " ".join(str(getattr(item, "title", "") or "").split())
            if page is not None and page >= 0 and title:
                entries.append((depth, unicodedata.normalize("NFKC", title), page))

    try:
        walk(reader.outline, 0)
    except Exception as error:  # a broken outline: fall back to the layout
        logger.debug("Unreadable PDF outline (%s): using the layout", error)
        return []
    return entries


def _match(line: str, title: str) -> bool:
    a, b = _norm(line), _norm(title)
    if not a or not b:
        return False
    number = heading_number(line)
    bare = _norm(line.split(None, 1)[1]) if number and len(line.split(None, 1)) > 1 else a
    return a == b or bare == b or (len(a) >= 8 and b.startswith(a)) or (len(bare) >= 8 and b.startswith(bare))


def _from_outline(lines: list[Line], outline: list[tuple[int, str, int]]) -> list[tuple[int, str] | str] | None:
    """Reading-order items cut at the outline's headings; ``None`` when too few entries are found in the text."""
    starts: dict[int, int] = {}
    heads: dict[int, tuple[int, str]] = {}
    first_of_page: dict[int, int] = {}
    for i, line in enumerate(lines):
        first_of_page.setdefault(line.page, i)
    cursor = 0
    found = 0
    open_entries: list[tuple[int, bool]] = []  # (depth, found) of the entries enclosing the current one
    for depth, title, page in outline:
        while open_entries and open_entries[-1][0] >= depth:
            open_entries.pop()
        # Its level counts only the enclosing entries found in the text (an unfound parent adopts no children).
        level = 1 + sum(1 for _, was_found in open_entries if was_found)
        open_entries.append((depth, False))
        begin = max(cursor, first_of_page.get(page, len(lines)))
        hit = next(
            (i for i in range(begin, len(lines)) if lines[i].page <= page + 1 and _match(lines[i].text, title)),
            None,
        )
        if hit is None:
            continue  # not in the text (or out of order): its text stays with the previous heading
        found += 1
        open_entries[-1] = (depth, True)
        text = lines[hit].text
        number = heading_number(text)
        heading = text if number and _norm(text).endswith(_norm(title)) else title
        if heading_number(title) is None and number and heading is title:
            heading = f"{number[0]} {title}"
        starts[hit] = hit + 1
        # A wrapped heading: the next line finishes the outline title.
        wrapped = not _norm(text).endswith(_norm(title)[-6:]) and hit + 1 < len(lines)
        if wrapped and _norm(title).endswith(_norm(lines[hit + 1].text)):
            starts[hit] = hit + 2
        heads[hit] = (level, heading)
        cursor = starts[hit]
    if found < max(2, len(outline) // 2):
        return None
    return _items(lines, heads, starts)


def _items(lines: list[Line], heads: dict[int, tuple[int, str]], starts: dict[int, int]) -> list[tuple[int, str] | str]:
    items: list[tuple[int, str] | str] = []
    current: list[str] = []
    i = 0
    while i < len(lines):
        if i in heads:
            items.append("\n".join(current))
            current = []
            items.append(heads[i])
            i = starts[i]
            continue
        current.append(lines[i].text)
        i += 1
    items.append("\n".join(current))
    return items


def _number_key(number: str) -> tuple[int, ...]:
    parts = number.split(".")
    head = parts[0]
    first = int(head) if head.isdigit() else 100 + ord(head.upper()) - ord("A") if len(head) == 1 else 200
    return (first, *(int(p) for p in parts[1:] if p.isdigit()))


def _plausible(previous: tuple[int, ...] | None, key: tuple[int, ...]) -> bool:
    """Whether a heading numbered ``key`` can follow one numbered ``previous`` (no going back, no big jump)."""
    if previous is None:
        return key[0] <= 3 or key[0] >= 100
    if key <= previous:
        return False
    if key[0] == previous[0]:
        return True
    return key[0] - previous[0] <= 2 or key[0] >= 100


@dataclass
class _Layout:
    """What a PDF's lines say about its typography: the body size and where each text repeats (running heads)."""

    body: float
    pages_of: dict[str, set[int]]
    n_pages: int

    @classmethod
    def of(cls, lines: list[Line]) -> _Layout:
        sizes: Counter[float] = Counter()
        pages_of: dict[str, set[int]] = {}
        for line in lines:
            sizes[line.size] += len(line.text)
            pages_of.setdefault(_norm(line.text), set()).add(line.page)
        body = sizes.most_common(1)[0][0] if sizes else 0.0
        return cls(body, pages_of, len({line.page for line in lines}))

    def styled(self, line: Line) -> bool:
        """Larger, bold, or set in capitals (small-caps headings extract as upper case at or below body size)."""
        letters = [ch for ch in line.text if ch.isalpha()]
        caps = len(letters) >= 4 and all(ch.isupper() for ch in letters)
        return line.size >= self.body * 1.15 or (line.size >= self.body * 0.85 and (line.bold >= 0.8 or caps))

    def repeated(self, line: Line) -> bool:
        """A running head or footer (a numbered heading is never repeated: "5 RoBERTa" is not the name in a table)."""
        return self.n_pages >= 4 and len(self.pages_of.get(_norm(line.text), ())) >= max(3, self.n_pages // 3)


def _heading_shape(text: str) -> bool:
    """Whether a line is shaped like a heading: short, mostly letters, capitalised, not ending a clause."""
    words = text.split()
    letters = sum(ch.isalpha() for ch in text)
    return (
        1 <= len(words) <= 14
        and len(text) <= 120
        and letters >= 3
        and letters >= 0.5 * len(text.replace(" ", ""))
        and not text.rstrip().endswith((",", ";", ":"))
        and not (text.rstrip().endswith(".") and not re.fullmatch(r"[\dA-Z.]+\.", text.split()[0]))
        and (text[0].isupper() or text[0].isdigit())
        # a run-in heading starts a paragraph ("Setup. We train..."): that line is text, not a heading
        and not re.search(r"(?<=[a-z)\]])(?<!\bvs)(?<!\bal)(?<!\bcf)\.\s+[A-Z]", text)
    )


def _title_rows(lines: list[Line], body: float) -> set[int]:
    """The rows of the title: the largest text near the top of the first page, one consecutive run."""
    first = [i for i, line in enumerate(lines[:40]) if line.page == lines[0].page] if lines else []
    first = [i for i in first if _letters(lines[i].text) >= 0.6 * len(lines[i].text.replace(" ", ""))]
    if not first:
        return set()
    biggest = max(lines[i].size for i in first)
    if biggest < body * 1.3:
        return set()
    rows = [i for i in first if lines[i].size == biggest]
    run = [rows[0]]
    for i in rows[1:]:
        if i == run[-1] + 1:
            run.append(i)
    return set(run)


def _numbered_headings(lines: list[Line], candidates: list[int], layout: _Layout) -> dict[int, int]:
    """Pass 1: numbered headings set apart by style (or any numbered line when nothing is styled), numbers in a
    plausible order; ``{row: level}``."""
    any_styled = any(layout.styled(line) for line in lines)
    numbered: dict[int, int] = {}
    previous: tuple[int, ...] | None = None
    for i in candidates:
        number = heading_number(lines[i].text)
        plain_number = re.fullmatch(r"[\d.\s]+[A-Za-z]?", lines[i].text)
        if number and (layout.styled(lines[i]) or not any_styled) and not plain_number:
            key = _number_key(number[0])
            if _plausible(previous, key):
                numbered[i], previous = number[1], key
    return numbered


def _from_layout(lines: list[Line]) -> tuple[str | None, list[tuple[int, str] | str]]:
    """Title and reading-order items from the lines' styles and numbering."""
    layout = _Layout.of(lines)
    body = layout.body
    title_rows = _title_rows(lines, body)
    title = " ".join(lines[i].text for i in sorted(title_rows)) or None
    known_names = {_norm(k) for k in KNOWN_HEADINGS}
    candidates = [
        i
        for i, line in enumerate(lines)
        if i not in title_rows and _heading_shape(line.text) and not layout.repeated(line)
    ]
    numbered = _numbered_headings(lines, candidates, layout)
    heading_styles: dict[tuple[float, bool], int] = {}
    for i, level in numbered.items():
        heading_styles.setdefault((lines[i].size, lines[i].bold >= 0.8), level)
    # Pass 2: unnumbered headings. With numbered headings present, only the usual section names (text in figures
    # and bold questions in examples are often set like headings); without, lines set larger than the body.
    heads: dict[int, tuple[int, str]] = {}
    starts: dict[int, int] = {}
    taken: set[int] = set()
    for i in candidates:
        if i in taken:
            continue
        line = lines[i]
        style = (line.size, line.bold >= 0.8)
        known = _norm(line.text) in known_names
        if i in numbered:
            level = numbered[i]
        elif known and (layout.styled(line) or line.size >= body):
            level = 1
        elif len(numbered) < 3 and heading_number(line.text) is None and line.size >= body * 1.15:
            level = heading_styles.get(style, 1)
        else:
            continue
        text, end = line.text, i + 1
        # A heading wrapped over two lines: same style, the second unnumbered and short.
        if end < len(lines) and lines[end].page == line.page and not known and end not in numbered:
            nxt = lines[end]
            same = (nxt.size, nxt.bold >= 0.8) == style and layout.styled(nxt) and _heading_shape(nxt.text)
            if same and heading_number(nxt.text) is None and _norm(nxt.text) not in known_names:
                text, end = f"{text} {nxt.text}", end + 1
        heads[i] = (level, text)
        starts[i] = end
        taken.update(range(i, end))
    return title, _items(lines, heads, starts)


def _declared_pages(reader: PdfReader) -> int | None:
    """The page count the file's page tree declares (``/Count``), or ``None`` when it cannot be read."""
    try:
        count = reader.trailer["/Root"]["/Pages"]["/Count"]
        return int(count) if 0 <= int(count) <= 1_000_000 else None
    except Exception:  # a page tree without a usable /Count: nothing to compare with
        return None


def _page_coverage(found: int, declared: int | None, unread: list[int]) -> Coverage:
    """Pages read of the pages the file holds: the larger of what pypdf found and what the page tree declares (pypdf
    drops a page-tree entry it cannot use with only a log line), less the pages whose text could not be read."""
    total = max(found, declared or 0)
    notes = []
    if total > found:
        notes.append(f"{total - found} of the {total} pages the file declares could not be found")
    if unread:
        notes.append(f"page(s) {', '.join(map(str, unread[:10]))}{' …' if len(unread) > 10 else ''} could not be read")
    return Coverage(kept=found - len(unread), total=total, unit="pages", note="; ".join(notes))


def parse_pdf(source: str | Path | bytes) -> Parsed:
    """Blocks of a PDF (a path or its bytes): cut at its outline entries when at least half of them are found in
    the text, else at headings recognised by style and numbering; the title from the file's metadata or, failing
    that, the largest text on the first page.

    Usage::

        parsed = parse_pdf("paper.pdf")
        [b.path for b in parsed.blocks][:3]   # [(), ('Abstract',), ('1 Introduction',)]
    """
    from pypdf import PdfReader  # here: pypdf's import costs every index and query process 0.1 s, PDF or not

    reader = PdfReader(io.BytesIO(source) if isinstance(source, bytes) else str(source))
    lines: list[Line] = []
    unread: list[int] = []
    pages = reader.pages
    for index, page in enumerate(pages):
        try:
            lines.extend(page_lines(page, index))
        except Exception as error:  # one broken page (a bad content stream or font) must not lose the others
            logger.warning("Page %d of the PDF could not be read (%s): skipped", index + 1, error)
            unread.append(index + 1)
    coverage = _page_coverage(len(pages), _declared_pages(reader), unread)
    meta_title = None
    try:
        raw = (reader.metadata or {}).get("/Title")
        meta_title = " ".join(str(raw).split()) if raw else None
    except Exception:  # unreadable metadata: the layout's title is used
        meta_title = None
    outline = _outline(reader)
    layout_title, layout_items = _from_layout(lines)
    items = _from_outline(lines, outline) if outline else None
    title = meta_title if meta_title and len(meta_title) > 3 else layout_title
    blocks = blocks_from_headings(items if items is not None else layout_items)
    return Parsed(title=title, blocks=blocks, coverage=coverage)
