"""Deterministic identifiers: the same source always yields the same document, section and chunk ids."""

from __future__ import annotations

import hashlib


def stable_id(*parts: object, length: int = 32) -> str:
    """Hex digest of the parts joined by a separator that cannot occur in them by accident."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).hexdigest()
    return digest[:length]
