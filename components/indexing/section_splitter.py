"""Split documents into chunks that never cross a section boundary, recording where each chunk sits."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from haystack import Document, component

from adaptive_retrieval.components.ids import chunk_id, stable_id
from adaptive_retrieval.components.indexing.headings import find_headings
from adaptive_retrieval.components.indexing.structure.markdown import parse_markdown
from adaptive_retrieval.components.text.sentences import split_prose

logger = logging.getLogger(__name__)

_MARKDOWN_SUFFIXES = (".md", ".markdown")
# A caption: "Table 2: ..." anywhere (PDF paragraphs are re-flowed), or "Figure 3. ..." / "**Table 1:**" opening a
# line; a mention such as "see Table 2" or "in Table 2." is not one.
_CAPTION = re.compile(
    r"(?:\b(table|tab\.|figure|fig\.)\s+(\d+|[A-Z](?:\.\d+)?|[IVX]+)\s*:)"
    r"|(?:^[\s*_#>|]*(table|tab\.|figure|fig\.)\s+(\d+|[A-Z](?:\.\d+)?|[IVX]+)\s*[.|*]\s*[A-Z*])",
    re.I | re.M,
)


def captions_in(text: str) -> list[str]:
    """The tables and figures captioned in ``text``, as ``["figure 3", "table 2"]``."""
    found = set()
    for groups in _CAPTION.findall(text):
        kind, ref = (groups[0], groups[1]) if groups[0] else (groups[2], groups[3])
        word = "table" if kind.lower().startswith("tab") else "figure"
        found.add(f"{word} {ref.lower()}")
    return sorted(found)


def _split_long(paragraph: str, max_words: int) -> list[str]:
    """Split a paragraph longer than ``max_words`` at sentence ends, then hard at word counts."""
    pieces: list[str] = []
    current: list[str] = []
    for sentence in split_prose(paragraph):
        words = sentence.split()
        while len(words) > max_words:
            if current:
                pieces.append(" ".join(current))
                current = []
            pieces.append(" ".join(words[:max_words]))
            words = words[max_words:]
        if current and len(current) + len(words) > max_words:
            pieces.append(" ".join(current))
            current = []
        current.extend(words)
    if current:
        pieces.append(" ".join(current))
    return pieces


@component
class SectionSplitter:
    """Section-aware splitter: takes the sections a structure parser found, then packs each section's paragraphs
    into chunks of about ``chunk_words`` words.

    Sections come from ``meta["structure"]`` when the document has it (written by
    :class:`~adaptive_retrieval.components.indexing.structured_converter.StructuredConverter` from Markdown tokens, the
    HTML tree or the PDF outline and layout); Markdown sources without it (``.md``) are parsed with markdown-it-py here;
    other text (plain text, reST such as the Python reference) falls back to line rules: reST underlines, numbered and
    upper-case headings.

    Every chunk carries ``meta``: ``doc_id`` (stable hash of the source), ``source``, ``title``,
    ``section_path`` (headings from the top, e.g. ``["4 Execution model", "4.2 Naming and binding"]``),
    ``section`` (the path joined with " > "), ``section_id``, ``position`` (chunk order in the document) and
    ``level`` = 0, and ``captions`` (``["table 2"]``) when the chunk holds a table or figure caption. Chunk ids
    are deterministic, so re-indexing a source overwrites its chunks.

    Usage::

        splitter = SectionSplitter(chunk_words=180)
        chunks = splitter.run([Document(content="# Intro\\n\\nText...", meta={"file_path": "a.md"})])["documents"]
    """

    def __init__(self, chunk_words: int = 180, min_chunk_words: int = 20) -> None:
        """
        :param chunk_words: target chunk size in words (all-MiniLM-L6-v2 reads 256 word pieces).
        :param min_chunk_words: a shorter trailing piece of a section is merged into the previous chunk.
        """
        if chunk_words < 10 or min_chunk_words < 0 or min_chunk_words >= chunk_words:
            msg = "need chunk_words >= 10 and 0 <= min_chunk_words < chunk_words"
            raise ValueError(msg)
        self.chunk_words = chunk_words
        self.min_chunk_words = min_chunk_words

    @staticmethod
    def source_of(doc: Document) -> str:
        """The identity of a document's source: its file path, ``source`` meta, or its id."""
        return str(doc.meta.get("file_path") or doc.meta.get("source") or doc.id)

    def _parsed_sections(self, doc: Document, source: str) -> tuple[str | None, list[tuple[list[str], str]]]:
        """``(title, [(section path, text), ...])`` from the document's parsed structure or its Markdown."""
        structure = doc.meta.get("structure")
        if isinstance(structure, list) and structure:
            sections = [
                ([str(h) for h in block.get("section_path") or []], str(block.get("text") or "").strip())
                for block in structure
                if isinstance(block, dict)
            ]
            return None, [(path, text) for path, text in sections if text]
        if source.lower().endswith(_MARKDOWN_SUFFIXES) or doc.meta.get("mime_type") == "text/markdown":
            parsed = parse_markdown(doc.content or "")
            return parsed.title, [(list(b.path), b.text) for b in parsed.blocks]
        return self._sections(doc.content or "")

    def _sections(self, content: str) -> tuple[str | None, list[tuple[list[str], str]]]:
        lines = content.splitlines()
        headings = find_headings(lines)
        sections: list[tuple[list[str], str]] = []
        stack: list[tuple[int, str]] = []
        cursor = 0
        first_text = next((i for i, line in enumerate(lines) if line.strip()), 0)
        title = headings[0].title if headings and headings[0].line == first_text else None
        for heading in [*headings, None]:
            end = heading.line if heading else len(lines)
            body = "\n".join(lines[cursor:end]).strip()
            if body:
                sections.append(([t for _, t in stack], body))
            if heading is None:
                break
            while stack and stack[-1][0] >= heading.level:
                stack.pop()
            stack.append((heading.level, heading.title))
            cursor = heading.line + heading.span
        return title, sections

    def _chunks(self, body: str) -> list[str]:
        chunks: list[str] = []
        current: list[str] = []
        count = 0
        for paragraph in re.split(r"\n\s*\n", body):
            paragraph = paragraph.strip()
            if not paragraph:
                continue
            words = len(paragraph.split())
            pieces = [paragraph] if words <= self.chunk_words else _split_long(paragraph, self.chunk_words)
            for piece in pieces:
                n = len(piece.split())
                if current and count + n > self.chunk_words:
                    chunks.append("\n\n".join(current))
                    current, count = [], 0
                current.append(piece)
                count += n
        if current:
            if chunks and count < self.min_chunk_words:
                chunks[-1] = chunks[-1] + "\n\n" + "\n\n".join(current)
            else:
                chunks.append("\n\n".join(current))
        return chunks

    @component.output_types(documents=list[Document])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Split ``documents`` into section-bounded chunks (documents without text are skipped with a warning)."""
        out: list[Document] = []
        for doc in documents:
            if (not doc.content or not doc.content.strip()) and not doc.meta.get("structure"):
                logger.warning("Skipping %s: no text could be extracted", self.source_of(doc))
                continue
            source = self.source_of(doc)
            doc_id = stable_id(source)
            heading_title, sections = self._parsed_sections(doc, source)
            title = doc.meta.get("title") or heading_title or Path(source).stem
            position = 0
            section_counts: dict[str, int] = {}
            # The parsed structure and the extraction report describe the file, not each chunk of it.
            base_meta = {k: v for k, v in doc.meta.items() if k not in ("title", "structure", "extraction")}
            for path, body in sections:
                key = " > ".join(path)
                occurrence = section_counts.get(key, 0)
                section_counts[key] = occurrence + 1
                section_id = stable_id(doc_id, key, occurrence, length=16)
                for index, text in enumerate(self._chunks(body)):
                    meta = {
                        **base_meta,
                        "doc_id": doc_id,
                        "source": source,
                        "title": title,
                        "section_path": path,
                        "section": key,
                        "section_id": section_id,
                        "chunk_in_section": index,
                        "position": position,
                        "level": 0,
                    }
                    captions = captions_in(text)
                    if captions:
                        meta["captions"] = captions
                    out.append(Document(id=chunk_id(doc_id, position), content=text, meta=meta))
                    position += 1
        return {"documents": out}
