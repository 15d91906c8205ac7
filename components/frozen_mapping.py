"""An immutable mapping whose copies, deep or shallow, are itself: a value Haystack copies as one.

``Pipeline.run`` deep-copies every component input, and walks a ``dict`` key by key: one protocol check (~12 µs)
and one deep copy per value. The router's six channel weights reach six components and the joiner's diagnostics
the gate; as dicts they were a third of the values Haystack copied per query. A :class:`FrozenMapping` is not a
dict: Haystack copies it with one check and one ``__deepcopy__``, which returns the value itself. The router's
:class:`~adaptive_retrieval.components.strategy.ChannelWeights` and the joiner's ``fusion`` are its kinds.

It reads as a dict (``m[k]``, ``get``, ``in``, ``items()``, ``len``), equals a dict with the same items, and turns
back into plain dicts with :meth:`FrozenMapping.to_dict` (the JSON forms use it).

Usage::

    weights = FrozenMapping({"dense": 0.6, "sparse": 0.4})
    weights["dense"], weights.get("graph", 0.0), weights == {"dense": 0.6, "sparse": 0.4}
    copy.deepcopy(weights) is weights
"""

from __future__ import annotations

from collections.abc import ItemsView, Iterable, Iterator, KeysView, Mapping, ValuesView
from typing import Any, Self, TypeVar

from pydantic_core import SchemaSerializer, core_schema

V = TypeVar("V")


def freeze(value: Any) -> Any:
    """``value`` with every dict turned into a :class:`FrozenMapping` and every list into a tuple, all the way down."""
    if isinstance(value, FrozenMapping):
        return value
    if isinstance(value, Mapping):
        return FrozenMapping((str(k), freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The inverse of :func:`freeze`: mappings as dicts, tuples as lists, all the way down."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


class FrozenMapping(Mapping[str, V]):
    """The items of ``items`` read as a dict; copies are itself (see the module docstring).

    :param items: a mapping, or ``(key, value)`` pairs, in order. Values are kept as given: a value that is itself
        a dict or a list should be frozen by the caller (:func:`freeze`), since receivers share it.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Mapping[str, V] | Iterable[tuple[str, V]] = ()) -> None:
        self._items: dict[str, V] = dict(items)

    def __getitem__(self, key: str) -> V:
        return self._items[key]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    # Mapping's own get and views run Python code per item; the dict's are C.
    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def keys(self) -> KeysView[str]:
        return self._items.keys()

    def values(self) -> ValuesView[V]:
        return self._items.values()

    def items(self) -> ItemsView[str, V]:
        return self._items.items()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._items!r})"

    __hash__ = None  # type: ignore[assignment]

    #: How pydantic writes one as JSON where it meets it untyped (Hayhooks answers a deployed YAML pipeline with its
    #: outputs in a ``dict`` field, the router's weights among them): as the plain dicts and lists of :func:`thaw`.
    __pydantic_serializer__ = SchemaSerializer(
        core_schema.any_schema(serialization=core_schema.plain_serializer_function_ser_schema(thaw))
    )

    def __reduce__(self) -> tuple[type[Self], tuple[dict[str, V]]]:
        return type(self), (self._items,)

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        # Immutable by contract: a copy would only cost the copying.
        return self

    def to_dict(self) -> dict[str, Any]:
        """The items as plain dicts and lists, all the way down (Haystack serialises a pipeline's inputs with it in a
        snapshot; the JSON forms read it)."""
        return thaw(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """The inverse of :meth:`to_dict` (nested dicts and lists frozen)."""
        return cls((k, freeze(v)) for k, v in data.items())
