"""Deserialising the document store a component holds, keeping the store's own class."""

from __future__ import annotations

from typing import Any

from haystack.core.serialization import import_class_by_name


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
