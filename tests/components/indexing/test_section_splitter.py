"""SectionSplitter: headings in Markdown, reST and PDF-like text; bounded chunks; deterministic ids."""

from __future__ import annotations

from haystack import Document

from adaptive_retrieval.components.indexing import SectionSplitter

MARKDOWN = """# Guide

Intro paragraph about the guide.

## Install

Run the installer.

    # an indented code comment, not a heading

## Usage

### Queries

Ask questions here.
"""

PDF_LIKE = """Adaptive Retrieval for Papers

ABSTRACT
We study retrieval.

1 Introduction

Retrieval matters.

3.2 Termination Criteria

The loop stops when the gate passes.
"""


# Markdown kept in a .txt file: read by the heading finder, not the Markdown parser.
MARKDOWN_TXT = """# Settings

How the workers are configured.

```python
# a code comment, not a heading
limits = dict(
    ollama=1,
})
```

~~~sh
# another comment
~~~

## Consequences

Faster overviews.

Plain reST
~~~~~~~~~~

Still a heading.
"""


def split(text: str, source: str = "a.md", **kwargs: int) -> list[Document]:
    return SectionSplitter(**kwargs).run([Document(content=text, meta={"file_path": source})])["documents"]


def test_markdown_sections_and_paths() -> None:
    chunks = split(MARKDOWN)
    paths = [c.meta["section_path"] for c in chunks]
    assert paths == [["Guide"], ["Guide", "Install"], ["Guide", "Usage", "Queries"]]
    assert "indented code comment" in chunks[1].content
    assert all(c.meta["title"] == "Guide" and c.meta["level"] == 0 for c in chunks)
    assert [c.meta["position"] for c in chunks] == [0, 1, 2]


def test_code_fences_in_a_text_file_hold_no_headings() -> None:
    chunks = split(MARKDOWN_TXT, source="notes.txt")
    paths = [c.meta["section_path"] for c in chunks]
    assert paths == [["Settings"], ["Settings", "Consequences"], ["Plain reST"]], paths  # reST: levels by first use
    assert "a code comment" in chunks[0].content and "another comment" in chunks[0].content


def test_pdf_like_numbered_headings() -> None:
    chunks = split(PDF_LIKE, source="paper.pdf")
    sections = [c.meta["section"] for c in chunks]
    assert "Abstract" in sections
    assert "1 Introduction" in sections
    assert any(s.endswith("3.2 Termination Criteria") for s in sections)


def test_chunks_are_bounded_and_never_cross_sections() -> None:
    body = " ".join(f"Sentence number {i} is here." for i in range(200))
    chunks = split(f"# A\n\n{body}\n\n# B\n\nshort text in b", chunk_words=50, min_chunk_words=5)
    assert all(len(c.content.split()) <= 55 for c in chunks)
    assert chunks[-1].meta["section_path"] == ["B"] and chunks[-1].content == "short text in b"
    assert len({c.meta["section_id"] for c in chunks if c.meta["section_path"] == ["A"]}) == 1


def test_ids_are_deterministic_per_source() -> None:
    first, again = split(MARKDOWN), split(MARKDOWN)
    assert [c.id for c in first] == [c.id for c in again]
    other = split(MARKDOWN, source="b.md")
    assert not {c.id for c in first} & {c.id for c in other}


def test_empty_documents_are_skipped() -> None:
    assert split("   \n  ") == []
