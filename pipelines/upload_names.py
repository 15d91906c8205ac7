"""File names for uploads: every distinct name an upload can carry maps to a distinct, stable, safe file name.

The name is the base name the client sent (folders dropped, ``\\`` read as ``/``), Unicode-normalised (NFC, so
``ü`` typed as one code point or as ``u`` plus a combining diaeresis is the same name) with surrounding whitespace
removed. Letters, marks and digits of every script are kept, and so are space and ``. _ - ( ) [ ] + , = @``; any
other character (``/ \\ : * ? " < > | % #``, controls, emoji...) becomes its UTF-8 bytes percent-encoded (``?`` →
``%3F``, ``%`` → ``%25``), and a leading dot becomes ``%2E`` (no hidden files). So ``über.md`` and ``äber.md`` stay
two files, ``заметки.md`` and ``笔记.md`` keep their names, and :func:`original_name` reads a name back.

File systems allow 255 *bytes* per name: a stored name longer than :data:`MAX_NAME_BYTES` keeps its first
characters and its suffix around ``~`` and 12 hex digits of the SHA-256 of the whole name, so two long names that
share a beginning still differ, and the same name always maps to the same file.

Usage::

    stored_name("über.md")        # 'über.md'
    stored_name("a?b.md")         # 'a%3Fb.md'
    stored_name("x" * 300 + ".md")  # 'xxx…xxx~1f3c2a9b04de.md' (at most 200 bytes)
"""

from __future__ import annotations

import hashlib
import unicodedata
from urllib.parse import unquote

from adaptive_retrieval.components.errors import InputError
from adaptive_retrieval.pipelines.file_types import SUPPORTED_SUFFIXES

#: Longest stored name, in UTF-8 bytes: under the usual 255-byte limit with room for the ``.NAME.partial``
#: temporary file an upload is written to first.
MAX_NAME_BYTES = 200
#: Punctuation kept as it is (every letter, mark and digit is kept too).
KEPT_PUNCTUATION = frozenset(" ._-()[]+,=@")
HASH_CHARS = 12


class UploadNameError(InputError):
    """An upload's name cannot be stored: no name, or a type the indexer does not read."""


def upload_base_name(filename: str | None) -> str:
    """The name as the client meant it: base name, NFC, without surrounding whitespace (``""`` when none)."""
    base = (filename or "").replace("\\", "/").rsplit("/", 1)[-1]
    return unicodedata.normalize("NFC", base).strip()


def _kept(char: str) -> bool:
    return char in KEPT_PUNCTUATION or unicodedata.category(char)[0] in "LMN"


def _encode(text: str) -> str:
    return "".join(char if _kept(char) else "".join(f"%{b:02X}" for b in char.encode("utf-8")) for char in text)


def _shorten(stem: str, suffix: str, whole: str) -> str:
    """``stem`` cut (between characters, never inside a ``%XX``) so that ``stem~hash`` + ``suffix`` fits."""
    tag = "~" + hashlib.sha256(whole.encode("utf-8", "surrogatepass")).hexdigest()[:HASH_CHARS]
    budget = MAX_NAME_BYTES - len(tag.encode()) - len(suffix.encode())
    pieces, used, i = [], 0, 0
    while i < len(stem):
        piece = stem[i : i + 3] if stem[i] == "%" else stem[i]
        size = len(piece.encode("utf-8"))
        if used + size > budget:
            break
        pieces.append(piece)
        used += size
        i += len(piece)
    return "".join(pieces).rstrip(" .") + tag + suffix


def stored_name(filename: str | None) -> str:
    """The file name an upload called ``filename`` is stored under (see the module docstring).

    :raises UploadNameError: without a usable name, or for a type that is not indexed (``.md``, ``.txt``, ...).
    """
    name = upload_base_name(filename)
    stem, dot, extension = name.rpartition(".")
    suffix = f".{extension}".lower() if dot else ""
    if not name or not stem.strip(" ."):
        msg = f"The uploaded file has no usable name ({filename!r}): send it with a file name such as notes.md"
        raise UploadNameError(msg)
    if suffix not in SUPPORTED_SUFFIXES:
        supported = ", ".join(sorted(SUPPORTED_SUFFIXES))
        msg = f"Cannot index '{name}': unsupported file type '{suffix or '(none)'}'; supported: {supported}"
        raise UploadNameError(msg)
    encoded = _encode(stem)
    if encoded.startswith("."):
        encoded = "%2E" + encoded[1:]
    full = f"{encoded}.{extension}"
    if len(full.encode("utf-8")) <= MAX_NAME_BYTES:
        return full
    return _shorten(encoded, f".{extension}", name)


def original_name(stored: str) -> str:
    """The name a stored file was uploaded as (exact unless it was shortened: then its beginning, ``~`` and hash)."""
    return unquote(stored, errors="strict")
