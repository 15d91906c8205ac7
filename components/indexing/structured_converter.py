"""Convert Markdown, HTML and PDF files into Documents that carry their parsed structure."""

from __future__ import annotations

import contextlib
import logging
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from haystack import Document, component
from haystack.components.converters.utils import get_bytestream_from_source, normalize_metadata
from haystack.dataclasses import ByteStream

from adaptive_retrieval.components.indexing.structure.blocks import Block, Parsed
from adaptive_retrieval.components.indexing.structure.html import parse_html
from adaptive_retrieval.components.indexing.structure.markdown import parse_markdown
from adaptive_retrieval.components.indexing.structure.pdf import parse_pdf

logger = logging.getLogger(__name__)

FORMATS = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".pdf": "pdf",
    "text/markdown": "markdown",
    "text/html": "html",
    "application/pdf": "pdf",
}


class _Count(logging.Filter):
    """Drops the records of a library logger while a file is read, counting them (and keeping the first)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0
        self.first = ""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno >= logging.WARNING and record.levelno < logging.ERROR:
            self.count += 1
            self.first = self.first or record.getMessage()
            return False
        return True


@contextlib.contextmanager
def _quiet(library: str, source: str) -> Iterator[None]:
    """Hold back ``library``'s warnings (pypdf reports every odd font it meets) and log one line per file."""
    counter = _Count()
    target = logging.getLogger(library)
    target.addFilter(counter)
    try:
        yield
    finally:
        target.removeFilter(counter)
        if counter.count:
            logger.info("%s: %d %s warning(s) while reading, first: %s", source, counter.count, library, counter.first)


def _format_of(stream: ByteStream, source: Any) -> str | None:
    named = stream.meta.get("file_path") or ("" if isinstance(source, ByteStream) else source)
    suffix = Path(str(named)).suffix.lower()
    return FORMATS.get(suffix) or FORMATS.get(str(stream.mime_type or "").split(";")[0].strip())


def _nfkc(text: str) -> str:
    return unicodedata.normalize("NFKC", text)


@component
class StructuredConverter:
    """Reads Markdown, HTML and PDF files with parsers that keep their structure, for the section splitter.

    Markdown headings are markdown-it-py heading tokens (never a ``#`` line inside a code fence or HTML block);
    HTML headings come from the element tree (``h1``–``h6``, nested ``section``/``article``); PDF sections
    from the outline when the file has one, else from the layout (lines larger or bolder than the body text,
    numbered headings in order). Each output Document's ``meta["structure"]`` lists the blocks as
    ``{"section_path": [...], "text": ...}``
    (:class:`~adaptive_retrieval.components.indexing.section_splitter.SectionSplitter` splits along them and does not
    copy them to chunks); ``content`` is the blocks' text; ``meta["title"]`` is the title the format states (PDF
    metadata or largest first-page text, ``<title>``, a lone ``#`` heading). Text is NFKC-normalised (PDF ligatures).
    pypdf's warnings about fonts are logged as one line per file.

    A file that cannot be read or holds no text is skipped with a warning, as Haystack's converters do.

    Usage::

        converter = StructuredConverter()
        docs = converter.run(sources=["paper.pdf", "guide.md"])["documents"]
        docs[0].meta["structure"][1]   # {"section_path": ["1 Introduction"], "text": "..."}
    """

    def __init__(self, store_full_path: bool = True) -> None:
        """
        :param store_full_path: keep the full path in ``meta["file_path"]`` (else only the file name).
        """
        self.store_full_path = store_full_path

    def _parse(self, kind: str, stream: ByteStream, source: str) -> Parsed:
        if kind == "pdf":
            with _quiet("pypdf", source):
                return parse_pdf(stream.data)
        text = stream.data.decode(stream.meta.get("encoding") or "utf-8", errors="replace")
        return parse_markdown(text) if kind == "markdown" else parse_html(stream.data)

    @component.output_types(documents=list[Document])
    def run(
        self,
        sources: list[str | Path | ByteStream],
        meta: dict[str, Any] | list[dict[str, Any]] | None = None,
    ) -> dict[str, list[Document]]:
        """Convert ``sources`` (paths or ByteStreams; the format from the suffix, else the mime type).

        :param meta: metadata for every document, or one dictionary per source.
        :raises ValueError: for a source whose format is not Markdown, HTML or PDF.
        """
        documents: list[Document] = []
        for source, extra in zip(sources, normalize_metadata(meta, sources_count=len(sources)), strict=True):
            stream = get_bytestream_from_source(source)
            kind = _format_of(stream, source)
            if kind is None:
                msg = f"{source}: StructuredConverter reads Markdown, HTML and PDF files only"
                raise ValueError(msg)
            name = str(stream.meta.get("file_path") or source)
            try:
                parsed = self._parse(kind, stream, name)
            except Exception as error:  # a corrupt file must not stop the batch: skipped, said so
                logger.warning("Could not read %s as %s (%s): skipped", name, kind, error)
                continue
            blocks = [Block(tuple(_nfkc(h) for h in b.path), _nfkc(b.text)) for b in parsed.blocks]
            if not blocks:
                logger.warning("No text could be extracted from %s: skipped", name)
                continue
            structure = Parsed(title=parsed.title, blocks=blocks)
            doc_meta = {**stream.meta, **extra, "structure": structure.to_meta()}
            if parsed.title and "title" not in extra:
                doc_meta["title"] = _nfkc(parsed.title)
            if "file_path" in doc_meta and not self.store_full_path:
                doc_meta["file_path"] = Path(str(doc_meta["file_path"])).name
            content = "\n\n".join(b.text for b in blocks)
            documents.append(Document(content=content, meta=doc_meta))
        return {"documents": documents}
