"""Convert Markdown, HTML and PDF files into Documents that carry their parsed structure."""

from __future__ import annotations

import contextlib
import importlib
import logging
import threading
import unicodedata
from collections.abc import Iterator
from functools import cache
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


class _HeldWarnings(logging.Filter):
    """Drops the warnings a library logs from this thread while a file is read, counting them (keeping the first).

    Other threads' records pass: a server may convert in one thread while another logs through the same library.
    """

    def __init__(self) -> None:
        super().__init__()
        self.thread = threading.get_ident()
        self.count = 0
        self.first = ""

    def filter(self, record: logging.LogRecord) -> bool:
        mine = record.thread is None or record.thread == self.thread
        if mine and logging.WARNING <= record.levelno < logging.ERROR:
            self.count += 1
            self.first = self.first or record.getMessage()
            return False
        return True


@cache
def _module_names(library: str) -> tuple[str, ...]:
    """``library`` and the dotted names of all its modules, from its files (modules it imports lazily included)."""
    root = Path(importlib.import_module(library).__file__ or "").parent
    names = {library}
    for path in root.rglob("*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        names.add(".".join((library, *parts[:-1])) if parts[-1] == "__init__" else ".".join((library, *parts)))
    return tuple(sorted(names))


def _library_loggers(library: str) -> list[logging.Logger]:
    """The logger of ``library`` and of each of its modules. A logger's filters see only the records logged on
    that logger, not those its children propagate, and pypdf logs on its modules' loggers (``pypdf._cmap``,
    ``pypdf._page`` …: ``logger_warning(msg, __name__)``), so each gets the filter."""
    return [logging.getLogger(name) for name in _module_names(library)]


@contextlib.contextmanager
def _quiet(library: str, source: str) -> Iterator[None]:
    """Hold back ``library``'s warnings while ``source`` is read (pypdf reports every odd font it meets: ~50 KB for
    one paper) and log one line for the file instead. Installed per file, never at import."""
    held = _HeldWarnings()
    loggers = _library_loggers(library)
    for target in loggers:
        target.addFilter(held)
    try:
        yield
    finally:
        for target in loggers:
            target.removeFilter(held)
        if held.count:
            first = held.first if len(held.first) <= 200 else held.first[:200] + " …"
            logger.info("%s: %d %s warning(s) while reading, the first: %s", source, held.count, library, first)


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
    metadata or largest first-page text, ``<title>``, a lone ``#`` heading); ``meta["extraction"]`` says how much of
    the file's text the parser kept (:class:`~adaptive_retrieval.components.indexing.structure.blocks.Coverage`:
    ``kept``, ``total``, ``unit``, ``share``, ``note``), so that a file read only in part is reported, not passed off
    as whole. Text is NFKC-normalised (PDF ligatures).
    pypdf's warnings (odd fonts, repaired cross-reference tables) are counted and logged as one INFO line per file.

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
        encoding = stream.meta.get("encoding")
        text = stream.data.decode(encoding or "utf-8", errors="replace")
        if kind == "markdown":
            return parse_markdown(text)
        # Bytes let lxml follow the page's <meta charset>; a stream whose encoding is known (the indexer decodes
        # UTF-16 to UTF-8) goes as text, or a stale charset="utf-16" would make lxml read UTF-8 bytes as UTF-16.
        return parse_html(text if encoding else stream.data)

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
            if parsed.coverage is not None:
                doc_meta["extraction"] = parsed.coverage.to_meta()
                if parsed.coverage.short:
                    logger.warning("%s was read in part: %s", name, parsed.coverage.describe())
            if parsed.title and "title" not in extra:
                doc_meta["title"] = _nfkc(parsed.title)
            if "file_path" in doc_meta and not self.store_full_path:
                doc_meta["file_path"] = Path(str(doc_meta["file_path"])).name
            content = "\n\n".join(b.text for b in blocks)
            documents.append(Document(content=content, meta=doc_meta))
        return {"documents": documents}
