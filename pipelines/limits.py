"""Size limits on what one file (and one upload request) may ask the indexer to do, checked before any work.

Each limit has an environment variable that raises it; the error names both, so a user who hits one knows
what to change. Checks here read only the file's bytes (and a PDF's page count): a file over a limit costs no
conversion, embedding or write. The chunk count here is an early estimate from the words (a lower bound); what
bounds a file's cost is what splitting it produced, counted by
:class:`~adaptive_retrieval.components.indexing.source_limits.SourceLimitGuard` in the indexing pipeline before
anything is embedded: chunks, sections (``$ADAPTIVE_MAX_FILE_SECTIONS``, 1,500) and heading depth
(``$ADAPTIVE_MAX_SECTION_DEPTH``, 12).

========================  ===============================  =========
limit                     environment variable             default
========================  ===============================  =========
bytes per file            ``ADAPTIVE_MAX_UPLOAD_MB``       50 MB
bytes per request         ``ADAPTIVE_MAX_REQUEST_MB``      100 MB
files per request         ``ADAPTIVE_MAX_REQUEST_FILES``   100
characters per file       ``ADAPTIVE_MAX_FILE_CHARS``      2,000,000
chunks per file           ``ADAPTIVE_MAX_FILE_CHUNKS``     3,000 (estimated here, counted after splitting)
PDF pages per file        ``ADAPTIVE_MAX_PDF_PAGES``       300
========================  ===============================  =========

Usage::

    from adaptive_retrieval.pipelines.limits import Limits

    Limits.from_env().file_problem(Path("huge.md"), chunk_words=180)   # None, or why the file is refused
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.errors import InputError
from adaptive_retrieval.components.indexing.source_limits import CHUNKS_ENV
from adaptive_retrieval.pipelines.text_encodings import text_encoding

MB = 1024 * 1024


class LimitExceededError(InputError):
    """A file or request is over a size limit; the message names the limit and the variable that raises it."""


@dataclass(frozen=True)
class Limits:
    """The limits in force (see the module docstring for the variables and defaults)."""

    file_bytes: int = 50 * MB
    request_bytes: int = 100 * MB
    request_files: int = 100
    file_chars: int = 2_000_000
    file_chunks: int = 3_000
    pdf_pages: int = 300

    @classmethod
    def from_env(cls) -> Limits:
        """The limits from the environment (read at each call, so a test or a restart can change them)."""
        return cls(
            file_bytes=int(settings.number("ADAPTIVE_MAX_UPLOAD_MB", strict=True) * MB),
            request_bytes=int(settings.number("ADAPTIVE_MAX_REQUEST_MB", strict=True) * MB),
            request_files=int(settings.number("ADAPTIVE_MAX_REQUEST_FILES", strict=True)),
            file_chars=int(settings.number("ADAPTIVE_MAX_FILE_CHARS", strict=True)),
            file_chunks=int(settings.number(CHUNKS_ENV, strict=True)),
            pdf_pages=int(settings.number("ADAPTIVE_MAX_PDF_PAGES", strict=True)),
        )

    def request_problem(self, sizes: list[int]) -> str | None:
        """Why a request with files of these byte sizes is refused, or ``None``."""
        if len(sizes) > self.request_files:
            return (
                f"{len(sizes)} files in one request; the limit is {self.request_files} "
                "(raise it with $ADAPTIVE_MAX_REQUEST_FILES)"
            )
        total = sum(sizes)
        if total > self.request_bytes:
            return (
                f"the request holds {total} bytes; the limit is {self.request_bytes} "
                "(raise it with $ADAPTIVE_MAX_REQUEST_MB)"
            )
        return None

    def size_problem(self, name: str, size: int) -> str | None:
        """Why a file of ``size`` bytes is refused for its size alone, or ``None`` (checked before it is read)."""
        return _bytes_problem(name, size, self.file_bytes) if size > self.file_bytes else None

    def content_problem(self, name: str, data: bytes, chunk_words: int = 180) -> str | None:
        """Why a file with these bytes is refused (bytes, characters, estimated chunks, PDF pages), or ``None``."""
        if len(data) > self.file_bytes:
            return _bytes_problem(name, len(data), self.file_bytes)
        if name.lower().endswith(".pdf"):
            pages = pdf_pages(data)
            if pages is not None and pages > self.pdf_pages:
                return (
                    f"'{name}' has {pages} pages; the limit is {self.pdf_pages} (raise it with $ADAPTIVE_MAX_PDF_PAGES)"
                )
            return None
        text = data.decode(text_encoding(data), errors="replace")
        if len(text) > self.file_chars:
            return (
                f"'{name}' has {len(text)} characters; the limit is {self.file_chars} "
                "(raise it with $ADAPTIVE_MAX_FILE_CHARS)"
            )
        chunks = math.ceil(len(text.split()) / max(1, chunk_words))
        if chunks > self.file_chunks:
            return (
                f"'{name}' would make about {chunks} chunks of {chunk_words} words; the limit is {self.file_chunks} "
                "(raise it with $ADAPTIVE_MAX_FILE_CHUNKS)"
            )
        return None

    def file_problem(self, path: Path, chunk_words: int = 180) -> str | None:
        """:meth:`content_problem` for a file on disk (a size check first, so a huge file is not read)."""
        size = path.stat().st_size
        if size > self.file_bytes:
            return _bytes_problem(path.name, size, self.file_bytes)
        return self.content_problem(path.name, path.read_bytes(), chunk_words)


def _bytes_problem(name: str, size: int, limit: int) -> str:
    return f"'{name}' has {size} bytes; the limit is {limit} (raise it with $ADAPTIVE_MAX_UPLOAD_MB)"


def pdf_pages(data: bytes) -> int | None:
    """Page count of a PDF (``None`` when pypdf cannot read it: the converter then reports the failure)."""
    import io

    from pypdf import PdfReader

    try:
        return len(PdfReader(io.BytesIO(data)).pages)
    except Exception:  # a broken PDF is reported by the indexer as "no text could be extracted"
        return None
