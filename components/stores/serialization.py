"""Serialising the components that hold stores: the stores as their own dictionaries, read back by their class."""

from __future__ import annotations

import inspect
from typing import Any

from haystack import default_to_dict
from haystack.core.serialization import import_class_by_name


def to_dict_with_stores(component: Any) -> dict[str, Any]:
    """``default_to_dict`` of every ``__init__`` parameter, read from the attribute of the same name, with each
    value that serialises itself (a document or graph store) written as its own ``to_dict()``.

    For components whose attributes carry their init parameters' names, as Haystack's own default serialisation
    expects; the stores are what that default cannot write.
    """
    parameters = {}
    for name in inspect.signature(type(component).__init__).parameters:
        if name in ("self", "args", "kwargs"):
            continue
        value = getattr(component, name)
        parameters[name] = value.to_dict() if callable(getattr(value, "to_dict", None)) else value
    return default_to_dict(component, **parameters)


def store_from_init_parameters(data: dict[str, Any], key: str = "document_store") -> dict[str, Any]:
    """``data`` with ``data["init_parameters"][key]`` deserialised by the class its ``type`` names.

    :raises TypeError: when that class has no ``from_dict``.
    """
    store_data = data.get("init_parameters", {}).get(key)
    if isinstance(store_data, dict) and "type" in store_data:
        store_cls = import_class_by_name(store_data["type"])
        if not hasattr(store_cls, "from_dict"):
            msg = f"{key} type {store_data['type']} cannot be deserialised (no from_dict)"
            raise TypeError(msg)
        data["init_parameters"][key] = store_cls.from_dict(store_data)
    return data
