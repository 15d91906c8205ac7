"""The public names of a component family, imported on first use (PEP 562), as Haystack's families do with
``LazyImporter``: ``from adaptive_retrieval.components.fusion import WeightedRRFJoiner`` works, while importing a
family (or any of its modules) loads none of the others, so nothing pulls in a model runtime it does not use.

Usage (a family's ``__init__.py``)::

    _import_structure = {"weighted_rrf_joiner": ["WeightedRRFJoiner"]}
    __getattr__, __dir__, __all__ = lazy_exports(__name__, _import_structure)
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_exports(
    package: str, structure: Mapping[str, Sequence[str]]
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """The module ``__getattr__``, ``__dir__`` and ``__all__`` of ``package`` that export ``structure``'s names
    (``{module of the package: [names it defines]}``), each imported from its module when first asked for."""
    where = {name: module for module, names in structure.items() for name in names}

    def __getattr__(name: str) -> Any:  # noqa: N807 (PEP 562's module hook)
        if name not in where:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        return getattr(importlib.import_module(f"{package}.{where[name]}"), name)

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(where)

    return __getattr__, __dir__, sorted(where)
