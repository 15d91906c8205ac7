"""The package's error families, under Haystack's own where one fits.

Every error the package raises on purpose derives from :class:`AdaptiveRetrievalError`, so a caller can catch
them all at once; each also keeps the built-in base it had (``ValueError`` for bad input, ``RuntimeError`` for a
state that may pass, ``LookupError`` for something missing), so existing ``except ValueError`` code keeps working.
The concrete classes live beside the code that raises them (the store errors in ``stores/``, the request errors
in ``pipelines/``); this module only holds the families.

- :class:`~adaptive_retrieval.components.stores.store_errors.StoreError` — a document or graph store cannot do
  what was asked (missing, damaged, locked, disk full); also a Haystack ``DocumentStoreError``. It lives with the
  stores because it needs Haystack, which this module does not import (the CLI's ``--help`` stays fast).
- :class:`InputError` — the caller's input is refused (too large, malformed, not finite); a ``ValueError``.
  Served, it is a 4xx with the message as its reason.
- :class:`BusyError` — the service is at capacity or out of time; a ``RuntimeError``. Served, it is a 429/503.

Usage::

    try:
        pipeline.run(...)
    except StoreError as err:      # e.g. IndexNotFoundError: the message names the command that builds it
        ...
"""

from __future__ import annotations


class AdaptiveRetrievalError(Exception):
    """Base of every error the package raises on purpose; its message says what to do."""


class InputError(AdaptiveRetrievalError, ValueError):
    """The caller's input is refused; the message names the limit or the problem."""


class BusyError(AdaptiveRetrievalError, RuntimeError):
    """The service is at capacity or out of time; trying again later may succeed."""
