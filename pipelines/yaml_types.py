"""Component and store types in a pipeline's YAML named by their family's public path
(``adaptive_retrieval.components.fusion.WeightedRRFJoiner``), read as the module path that Haystack registers the
class under (``adaptive_retrieval.components.fusion.weighted_rrf_joiner.WeightedRRFJoiner``).

Haystack finds a component by ``f"{cls.__module__}.{cls.__name__}"`` in its registry, so plain ``Pipeline.loads``
refuses the public path; ``load_pipeline`` and ``loads_pipeline`` apply :func:`registered_types` first. The YAML this
package writes names the module paths, which both read.

Usage::

    data = registered_types(YamlMarshaller().unmarshal(text))
"""

from __future__ import annotations

import importlib
from typing import Any

#: Only this package's types are looked up here (Haystack's allow-list governs everything else).
_PREFIX = "adaptive_retrieval.components."


def registered_type(name: str) -> str:
    """``name`` as the module path of the class it names, when it is one of this package's public paths; any other
    name unchanged (Haystack reports what it cannot find)."""
    if not name.startswith(_PREFIX) or "." not in name:
        return name
    module, _, attribute = name.rpartition(".")
    try:
        found = getattr(importlib.import_module(module), attribute, None)
    except ImportError:
        return name
    if not isinstance(found, type):
        return name
    return f"{found.__module__}.{found.__name__}"


def registered_types(node: Any) -> Any:
    """``node`` (a pipeline's YAML as plain data, changed in place) with every ``type`` of this package's components
    and stores named by its module path."""
    if isinstance(node, dict):
        if isinstance(node.get("type"), str):
            node["type"] = registered_type(node["type"])
        for value in node.values():
            registered_types(value)
    elif isinstance(node, list):
        for value in node:
            registered_types(value)
    return node
