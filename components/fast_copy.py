"""Make Haystack's per-component input copy skip plain numbers and strings (same result, far less work).

Before every component runs, Haystack 3.4 deep-copies its inputs with ``_deepcopy_with_exceptions``, which walks
lists element by element and asks ``isinstance(value, Component)`` of each element. ``Component`` is a runtime
``Protocol``, and on Python 3.11 each such check recomputes the protocol's members: about 30 µs per float. A
384-d query embedding handed to the router, five channels, MMR and the gate costs about 80 ms per query that way
(measured with cProfile: 78k protocol checks in 15 queries), more than the retrieval itself on a small index.

:func:`install` wraps that function so that exact ``float``/``int``/``str``/``bool``/``bytes``/``None``
values are returned at once and a list of only such values is copied in one step. ``copy.deepcopy`` returns
such values unchanged and they are never components, so every copy Haystack makes is the same as before.
Documents, the bulk of what flows between retrieval components, are copied by :func:`copy_document`: their
``meta`` is JSON by Haystack's contract, and a plain recursive copy of it is several times faster than
``copy.deepcopy``'s generic walk (cProfile: 39k ``deepcopy`` calls per query, 23 % of query time). It is
installed when :mod:`components` is imported; set ``ADAPTIVE_HAYSTACK_FAST_COPY=0`` to leave Haystack
untouched. If a Haystack release moves the function, nothing is patched and a debug line says so.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from typing import Any

from haystack import Document

logger = logging.getLogger(__name__)

_ATOMS = frozenset({float, int, str, bool, bytes, type(None)})
#: Haystack modules that bind the function at import time (``utils`` is where it is defined).
_MODULES = ("haystack.core.pipeline.utils", "haystack.core.pipeline.base", "haystack.core.pipeline.pipeline")


def copy_json(value: Any) -> Any:
    """Deep copy of JSON-like data (dicts, lists, atoms) without ``copy.deepcopy``'s per-node dispatch and memo.

    Anything else inside is handed to ``copy.deepcopy``. Unlike ``deepcopy`` it does not preserve aliasing
    (one list referenced twice is copied twice), which JSON data such as ``Document.meta`` never relies on.
    """
    kind = type(value)
    if kind in _ATOMS:
        return value
    # Atoms are tested inline: a call per leaf would double the cost.
    if kind is dict:
        return {key: item if type(item) in _ATOMS else copy_json(item) for key, item in value.items()}
    if kind is list:
        return [item if type(item) in _ATOMS else copy_json(item) for item in value]
    return copy.deepcopy(value)


def copy_document(document: Document, shared: frozenset[str] = frozenset()) -> Document:
    """A deep copy of ``document``, as ``copy.deepcopy`` makes it, 5-10x faster for JSON-like ``meta``.

    :param shared: field names whose values the copy shares instead of copying (e.g. a read-only embedding).
    """
    clone = object.__new__(type(document))
    # Same as deepcopy's reconstruction: the instance dict is filled directly, without __init__ or the
    # mutation-warning __setattr__ Haystack puts on Document.
    clone.__dict__.update(
        {name: value if name in shared else copy_json(value) for name, value in document.__dict__.items()}
    )
    return clone


def skipping_atoms(original: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``original`` with exact atomic values returned as they are (what ``deepcopy`` would return anyway) and
    plain documents (exact ``Document`` type) copied by :func:`copy_document`."""

    def copy_inputs(obj: Any) -> Any:
        kind = type(obj)
        if kind in _ATOMS:
            return obj
        if kind is list and all(type(v) in _ATOMS for v in obj):
            return obj.copy()  # the original builds the same new list, one element at a time
        if kind is Document:
            return copy_document(obj)
        if isinstance(obj, Document):
            # A document is never a component: skip the original's (slow, Protocol) component check.
            return copy.deepcopy(obj)
        return original(obj)

    copy_inputs.__wrapped__ = original  # type: ignore[attr-defined]
    return copy_inputs


def install() -> bool:
    """Wrap Haystack's input copy in every module that holds it; idempotent. Returns whether it is installed."""
    import importlib

    try:
        modules = [importlib.import_module(name) for name in _MODULES]
        original = modules[0]._deepcopy_with_exceptions
    except (ImportError, AttributeError) as err:
        logger.debug("Haystack's input copy not found, left as it is: %s", err)
        return False
    if hasattr(original, "__wrapped__"):
        return True
    fast = skipping_atoms(original)
    for module in modules:
        # The original recurses through its module global, so containers' elements take the fast path too.
        if getattr(module, "_deepcopy_with_exceptions", None) is original:
            module._deepcopy_with_exceptions = fast
    return True
