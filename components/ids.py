"""Deterministic identifiers: the same source always yields the same document, section, chunk and section-tree
node ids. Index time writes them and query time reads them, so they live below both."""

from __future__ import annotations

import hashlib


def stable_id(*parts: object, length: int = 32) -> str:
    """Hex digest of the parts joined by a separator that cannot occur in them by accident."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return digest[:length]


def chunk_id(doc_id: str, position: int) -> str:
    """Id of the chunk at ``position`` (0-based) of the source ``doc_id``.

    Every split source has a chunk at position 0, so whether ``chunk_id(doc_id, 0)`` is stored tells whether
    anything of that source is (``ReplacingDocumentWriter`` relies on it to skip a filter scan).
    """
    return stable_id(doc_id, position)


#: Levels of the section tree's summary nodes (chunks are level 0).
SECTION_LEVEL = 1
DOCUMENT_LEVEL = 2


def tree_node_id(level: int, doc_id: str, section_id: str = "", segment: int = 0) -> str:
    """Deterministic id of a summary node: re-indexing a document overwrites its nodes in place."""
    return stable_id("section-tree", level, doc_id, section_id, segment)
