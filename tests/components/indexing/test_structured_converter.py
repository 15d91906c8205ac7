"""Structure parsers: Markdown tokens, the HTML tree, PDF outline and layout, numbered headings; the converter and
the splitter following them. The PDFs are written here (a tiny hand-made PDF with the standard Helvetica fonts,
an outline added with pypdf's writer)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pytest
from haystack import Document
from pypdf import PdfReader, PdfWriter

from adaptive_retrieval.components.indexing import SectionSplitter, StructuredConverter
from adaptive_retrieval.components.indexing.structure.html import parse_html
from adaptive_retrieval.components.indexing.structure.markdown import parse_markdown
from adaptive_retrieval.components.indexing.structure.pdf import parse_pdf
from adaptive_retrieval.components.text.numbering import heading_number, heading_without_number

MARKDOWN = """---
title: front matter is not a heading
---
# Configuration guide

Read this first.

```toml
# comment inside TOML, not a section
[tool]
name = "x"
```

## 3.2 Termination

```js
function f() {
}
```

<div>
# inside an HTML block
</div>

Setext heading
--------------

    # indented code, not a heading

## Appendix B

The end.
"""


def test_markdown_headings_are_tokens_never_code_lines() -> None:
    parsed = parse_markdown(MARKDOWN)
    paths = [b.path for b in parsed.blocks]
    assert parsed.title == "Configuration guide"
    assert paths == [
        ("Configuration guide",),
        ("Configuration guide", "3.2 Termination"),
        ("Configuration guide", "Setext heading"),
        ("Configuration guide", "Appendix B"),
    ]
    texts = [b.text for b in parsed.blocks]
    assert "# comment inside TOML" in texts[0] and "}\n```" in texts[1] and "# inside an HTML block" in texts[1]
    assert "# indented code" in texts[2]
    assert not any("front matter" in t for t in texts)


HTML = """<!doctype html><html><head><title>Service manual</title><style>h1 {color: red}</style></head>
<body><nav><h2>Site menu</h2><a href="/">Home</a></nav>
<main>
  <h1>Service manual</h1><p>How the service <b>works</b>.</p>
  <section><h1>3 Operation</h1><p>Start it.</p>
    <section><h1>3.2 Termination</h1><p>It stops when idle.</p>
      <table><tr><th>state</th><th>action</th></tr><tr><td>idle</td><td>stop</td></tr></table>
    </section>
  </section>
  <h2>Appendix B</h2><pre># not a heading
}</pre><script>var x = "# no";</script>
</main><footer><p>Copyright</p></footer></body></html>"""


def test_html_headings_from_the_element_tree() -> None:
    parsed = parse_html(HTML)
    assert parsed.title == "Service manual"
    assert [b.path for b in parsed.blocks] == [
        ("Service manual",),
        ("Service manual", "3 Operation"),
        ("Service manual", "3 Operation", "3.2 Termination"),
        ("Service manual", "Appendix B"),
    ]
    texts = [b.text for b in parsed.blocks]
    assert texts[2] == "It stops when idle.\n\nstate | action\n\nidle | stop"
    assert texts[3] == "# not a heading\n}"
    assert not any("Copyright" in t or "Home" in t or "var x" in t for t in texts)


def test_the_tag_stream_reads_a_page_as_the_tree_does() -> None:
    """The fallback reader applies the same rules: on the sample page it yields the tree's very blocks."""
    from adaptive_retrieval.components.indexing.structure.blocks import blocks_from_headings
    from adaptive_retrieval.components.indexing.structure.html_stream import page_text_units, stream_items

    items, title = stream_items(HTML)
    assert title == "Service manual"
    assert blocks_from_headings(items) == parse_html(HTML).blocks
    parsed = parse_html(HTML)
    assert parsed.coverage is not None and parsed.coverage.kept == parsed.coverage.total == page_text_units(HTML)


PARAGRAPHS = "".join(f"<p>para {i} word{i}</p>" for i in range(400))


@pytest.mark.parametrize(
    ("label", "page"),
    [
        ("400 unclosed <p><font>", "".join(f"<p><font>para {i} word{i}" for i in range(400))),
        ("300 nested divs", "<div>" * 300 + PARAGRAPHS + "</div>" * 300),
        ("5000 nested divs", "<div>" * 5000 + PARAGRAPHS + "</div>" * 5000),
        ("3000 unclosed <b>", "<h1>T</h1>" + "".join(f"<p><b>para {i} word{i}" for i in range(3000))),
    ],
)
def test_markup_nested_past_the_parsers_limit_is_read_whole(label: str, page: str) -> None:
    """Issue 41 #5: libxml2 stops descending past its nesting limit (256, 2,048 with huge_tree) and drops the rest
    silently: ~127 paragraphs of 400 were kept and indexing said success. Every paragraph is read, and the parse
    says how much of the page's text it kept."""
    parsed = parse_html(page)
    text = "\n\n".join(b.text for b in parsed.blocks)
    last = 2999 if "3000" in label else 399
    assert f"word{last}" in text and "word0" in text and "word200" in text, label
    assert parsed.coverage is not None and parsed.coverage.share == 1.0 and not parsed.coverage.short


def test_a_pdf_page_the_page_tree_loses_is_counted() -> None:
    """pypdf skips a page-tree entry it cannot use with a log line; the pages the file declares are the count."""
    data = _pdf([*PAGES, PAGES[1]]).replace(b"/Kids [3 0 R 5 0 R 7 0 R]", b"/Kids [3 0 R 42 7 0 R]")
    parsed = parse_pdf(data)
    assert parsed.coverage is not None and (parsed.coverage.kept, parsed.coverage.total) == (2, 3)
    assert parsed.coverage.short and "could not be found" in parsed.coverage.describe()
    assert parse_pdf(_pdf(PAGES)).coverage.share == 1.0


def test_the_converter_reports_what_it_kept(tmp_path: Path) -> None:
    (tmp_path / "guide.md").write_text(MARKDOWN, encoding="utf-8")
    (tmp_path / "manual.html").write_text(HTML, encoding="utf-8")
    (tmp_path / "paper.pdf").write_bytes(_pdf(PAGES))
    docs = StructuredConverter().run(sources=sorted(tmp_path.iterdir()))["documents"]
    reports = {Path(d.meta["file_path"]).name: d.meta["extraction"] for d in docs}
    assert reports["paper.pdf"] == {"kept": 2, "total": 2, "unit": "pages", "share": 1.0}
    assert reports["guide.md"]["share"] >= 0.99 and reports["manual.html"]["share"] == 1.0
    chunks = SectionSplitter(chunk_words=60, min_chunk_words=5).run(docs)["documents"]
    assert chunks and not any("extraction" in c.meta for c in chunks)  # the file's report, not each chunk's


def test_numbered_headings() -> None:
    assert heading_number("3.2 Termination") == ("3.2", 2)
    assert heading_number("3.2. Termination criteria") == ("3.2", 2)
    assert heading_number("Appendix B") == ("B", 1)
    assert heading_number("B.1 Details of the setup") == ("B.1", 2)
    assert heading_number("IV. Discussions") == ("IV", 1)
    assert heading_number("Chapter 4: Results") == ("4", 1)
    assert heading_number("2018 was a good year") is None
    assert heading_number("Termination") is None
    # The words after the number; a heading without one, or named by its number, stays as it is.
    assert heading_without_number("3.2. Termination criteria") == "Termination criteria"
    assert heading_without_number("1 INTRODUCTION") == "INTRODUCTION"
    assert heading_without_number("IV. Discussions") == "Discussions"
    assert heading_without_number("B.1 Details of the setup") == "Details of the setup"
    assert heading_without_number("Appendix B") == "Appendix B"
    assert heading_without_number("1984 Summer Olympics") == "1984 Summer Olympics"
    assert heading_without_number("A simple model") == "A simple model"


# -- PDFs written by hand: Helvetica for the body, Helvetica-Bold (larger) for headings ------------------------

BODY = "The method reads each page and keeps the text in order. " * 3


def _pdf(pages: list[list[tuple[str, str]]]) -> bytes:
    """A minimal PDF: each page a list of (style, text) lines; style "h1" (bold 16), "h2" (bold 12), "p" (10)."""
    fonts = {"h1": ("F2", 16), "h2": ("F2", 12), "p": ("F1", 10)}
    objects: list[bytes] = []
    page_ids = [3 + 2 * i for i in range(len(pages))]
    font_ids = (3 + 2 * len(pages), 4 + 2 * len(pages))
    objects.append(b"<< /Type /Catalog /Pages 2 0 R >>")
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    objects.append(f"<< /Type /Pages /Kids [{kids}] /Count {len(pages)} >>".encode())
    for i, lines in enumerate(pages):
        ops = ["BT"]
        y = 760
        for style, text in lines:
            font, size = fonts[style]
            y -= size + (10 if style != "p" else 4)
            escaped = text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")
            ops.append(f"/{font} {size} Tf 1 0 0 1 72 {y} Tm ({escaped}) Tj")
        ops.append("ET")
        stream = "\n".join(ops).encode()
        resources = f"<< /Font << /F1 {font_ids[0]} 0 R /F2 {font_ids[1]} 0 R >> >>"
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources {resources} "
            f"/Contents {page_ids[i] + 1} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold >>")
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


PAGES = [
    [
        ("h1", "Structure of Documents"),
        ("p", BODY),
        ("h2", "1 Introduction"),
        ("p", BODY),
        ("p", "Introduction text: why structure matters."),
        ("h2", "2 Method"),
        ("p", BODY),
    ],
    [
        ("h2", "2.1 Reading pages"),
        ("p", "Pages are read one by one. " + BODY),
        ("h2", "3 Conclusion"),
        ("p", "Structure helps retrieval. " + BODY),
    ],
]


def test_pdf_without_outline_uses_layout() -> None:
    parsed = parse_pdf(_pdf(PAGES))
    assert parsed.title == "Structure of Documents"
    paths = list(dict.fromkeys(b.path for b in parsed.blocks))
    assert paths == [(), ("1 Introduction",), ("2 Method",), ("2 Method", "2.1 Reading pages"), ("3 Conclusion",)]
    intro = next(b.text for b in parsed.blocks if b.path == ("1 Introduction",))
    assert "why structure matters" in intro and "Pages are read" not in intro


def test_pdf_outline_is_followed(tmp_path: Path) -> None:
    # Body-styled headings (no bold, no size change) that only the outline can find.
    plain = [[("p", text) if style != "h1" else (style, text) for style, text in page] for page in PAGES]
    writer = PdfWriter(clone_from=io.BytesIO(_pdf(plain)))
    intro = writer.add_outline_item("Introduction", 0)
    writer.add_outline_item("Method", 0)
    reading = writer.add_outline_item("Reading pages", 1)
    del intro, reading
    writer.add_outline_item("Conclusion", 1)
    path = tmp_path / "outlined.pdf"
    with path.open("wb") as handle:
        writer.write(handle)
    assert len(PdfReader(path).outline) == 4
    parsed = parse_pdf(path)
    paths = list(dict.fromkeys(b.path for b in parsed.blocks))
    # the outline titles lack numbers; the text's numbered lines give them back
    assert paths == [(), ("1 Introduction",), ("2 Method",), ("2.1 Reading pages",), ("3 Conclusion",)]


def test_pdf_outline_nesting(tmp_path: Path) -> None:
    writer = PdfWriter(clone_from=io.BytesIO(_pdf(PAGES)))
    writer.add_outline_item("1 Introduction", 0)
    method = writer.add_outline_item("2 Method", 0)
    writer.add_outline_item("2.1 Reading pages", 1, parent=method)
    writer.add_outline_item("3 Conclusion", 1)
    buffer = io.BytesIO()
    writer.write(buffer)
    parsed = parse_pdf(buffer.getvalue())
    paths = list(dict.fromkeys(b.path for b in parsed.blocks))
    assert ("2 Method", "2.1 Reading pages") in paths and ("3 Conclusion",) in paths


def test_converter_and_splitter_follow_the_structure(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "guide.md").write_text(MARKDOWN, encoding="utf-8")
    (tmp_path / "manual.html").write_text(HTML, encoding="utf-8")
    (tmp_path / "paper.pdf").write_bytes(_pdf(PAGES))
    (tmp_path / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    sources = sorted(tmp_path.iterdir())
    with caplog.at_level(logging.WARNING):
        docs = StructuredConverter().run(sources=sources)["documents"]
    assert sorted(Path(d.meta["file_path"]).name for d in docs) == ["guide.md", "manual.html", "paper.pdf"]
    assert any("broken.pdf" in r.getMessage() for r in caplog.records)
    chunks = SectionSplitter(chunk_words=60, min_chunk_words=5).run(docs)["documents"]
    by_source: dict[str, list[Document]] = {}
    for chunk in chunks:
        by_source.setdefault(Path(chunk.meta["source"]).name, []).append(chunk)
        assert "structure" not in chunk.meta
    md_paths = [c.meta["section_path"] for c in by_source["guide.md"]]
    assert ["Configuration guide", "3.2 Termination"] in md_paths
    assert not any(p[-1] in ("}", "# comment inside TOML, not a section") for p in md_paths if p)
    assert by_source["paper.pdf"][0].meta["title"] == "Structure of Documents"
    assert {c.meta["section"] for c in by_source["paper.pdf"]} >= {"1 Introduction", "2 Method > 2.1 Reading pages"}
    html_sections = {c.meta["section"] for c in by_source["manual.html"]}
    assert "Service manual > 3 Operation > 3.2 Termination" in html_sections
    ids = {c.meta["section_id"] for c in by_source["paper.pdf"]}
    assert len(ids) == len({c.meta["section"] for c in by_source["paper.pdf"]})


def test_unknown_format_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "notes.docx"
    path.write_bytes(b"x")
    with pytest.raises(ValueError, match="Markdown, HTML and PDF"):
        StructuredConverter().run(sources=[path])
