"""The file types the indexing pipeline reads, by suffix: a module of its own, so that what only checks a name (an
upload's, a CLI argument's) does not import the indexing pipeline and its converters."""

from __future__ import annotations

#: Suffix -> MIME type the indexing pipeline's file router sends to a converter.
SUPPORTED_SUFFIXES = {
    ".txt": "text/plain",
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".html": "text/html",
    ".htm": "text/html",
    ".pdf": "application/pdf",
}
