"""The stores' error family: a document or graph store cannot do what was asked (missing, damaged, locked, disk
full). Under both the package's base and Haystack's ``DocumentStoreError``, so Haystack code that catches store
errors catches these too."""

from __future__ import annotations

from haystack.document_stores.errors import DocumentStoreError

from adaptive_retrieval.components.errors import AdaptiveRetrievalError


class StoreError(AdaptiveRetrievalError, DocumentStoreError):
    """A document or graph store cannot do what was asked; the message says what to run or where to look."""
