"""How the bytes of a text file (plain text, Markdown, HTML) become text: UTF-8, or the Unicode encoding a
byte-order mark names (UTF-16 and UTF-32, as Windows editors save "Unicode" text; UTF-8 with a BOM).

A UTF-16 file holds a NUL byte in every ASCII character, so without looking at its BOM it was refused as binary.
The upload check, the CLI's content check and the indexer's read all decode through :func:`text_encoding`; the
indexer hands the converters the text as UTF-8 (:func:`as_utf8`), so no converter needs to know.

Usage::

    text_encoding(b"\\xff\\xfeh\\x00i\\x00")      # "utf-16"
    as_utf8(b"\\xff\\xfeh\\x00i\\x00")            # b"hi"
"""

from __future__ import annotations

import codecs

#: Byte-order marks and the codec that reads past them; UTF-32 first (its little-endian mark starts with UTF-16's).
_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def text_encoding(data: bytes) -> str:
    """The codec to read ``data`` with: the one its byte-order mark names, else ``utf-8``."""
    return next((codec for bom, codec in _BOMS if data.startswith(bom)), "utf-8")


def decode_text(data: bytes) -> str:
    """``data`` as text (see :func:`text_encoding`), without a byte-order mark.

    :raises UnicodeDecodeError: when the bytes are not in that encoding.
    """
    return data.decode(text_encoding(data))


def as_utf8(data: bytes) -> bytes:
    """``data`` re-encoded as UTF-8 without a byte-order mark when it starts with one; else ``data`` itself (bytes
    that are not valid text are left for the content check to refuse)."""
    codec = text_encoding(data)
    if codec == "utf-8":
        return data
    try:
        return data.decode(codec).encode("utf-8")
    except UnicodeDecodeError:
        return data
