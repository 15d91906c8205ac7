"""Whether a file's bytes can be indexed at all: one check for REST uploads and for ``index_paths`` (CLI, Python).

A random-bytes file or an ELF binary named ``.md`` used to be indexed by the CLI ("1 indexed, 22 chunks" of
replacement characters) while the REST upload refused it: both now call :func:`content_problem`. Text must be
UTF-8 (or UTF-16/32 with a byte-order mark, :mod:`~adaptive_retrieval.pipelines.text_encodings`) without NUL
characters and with at most :data:`MAX_CONTROL_SHARE` control characters; a PDF must start with ``%PDF``. The
answers are one sentence naming the file and what to do.

Usage::

    from adaptive_retrieval.pipelines.file_checks import content_problem

    content_problem("notes.md", data)      # None, or "'notes.md' holds NUL bytes: a binary file, not text: ..."
"""

from __future__ import annotations

from pathlib import Path

from adaptive_retrieval.pipelines.text_encodings import text_encoding

#: Share of control characters (other than tab, newline, carriage return, vertical tab and form feed) above which
#: a file is taken for binary data rather than text.
MAX_CONTROL_SHARE = 0.01
_CONTROLS = {c: None for c in [*range(0x00, 0x09), 0x0E, *range(0x0F, 0x20), *range(0x7F, 0xA0)]}
_BINARY = "a binary file, not text: index text, Markdown, HTML or PDF files"


def content_problem(name: str, data: bytes) -> str | None:
    """Why the bytes of a file named ``name`` cannot be indexed (empty, not a PDF, binary, not UTF-8 nor text with a
    byte-order mark), or ``None``."""
    if not data.strip():
        return f"'{name}' is empty"
    if Path(name).suffix.lower() == ".pdf":
        return None if data.startswith(b"%PDF") else f"'{name}' is not a PDF (no %PDF header)"
    codec = text_encoding(data)
    try:
        text = data.decode(codec)
    except UnicodeDecodeError as err:
        if codec != "utf-8":
            what = codec.upper().replace("-SIG", "")
            return f"'{name}' starts with a {what} byte-order mark but is not {what} text: save it as UTF-8"
        if b"\x00" in data:
            return f"'{name}' is not UTF-8 text and holds NUL bytes: {_BINARY}"
        return f"'{name}' is not UTF-8 text ({err.reason} at byte {err.start}): save it as UTF-8"
    if not text.strip():
        return f"'{name}' is empty"
    if "\x00" in text:
        return f"'{name}' holds NUL bytes: {_BINARY}"
    controls = len(text) - len(text.translate(_CONTROLS))
    if controls > MAX_CONTROL_SHARE * len(text):
        return f"'{name}' is {controls / len(text):.0%} control characters: {_BINARY}"
    return None


def unreadable(path: Path, err: OSError) -> str:
    """The message for a file that could not be read."""
    what = err.strerror or str(err)
    fix = "give this user read permission (chmod)" if isinstance(err, PermissionError) else "check the file"
    return f"cannot read '{path}': {what}; {fix} and index it again"
