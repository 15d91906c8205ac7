"""An immutable sequence whose copies, deep or shallow, are itself: a value Haystack copies as one.

``Pipeline.run`` deep-copies every component input, element by element for a list. A :class:`FrozenSequence` is
not a list: Haystack copies it with one protocol check and one ``__deepcopy__``, which returns the value itself.
The channels' :class:`~adaptive_retrieval.components.retrieval.ranked_hits.RankedHits` and the shared documents
(:class:`~adaptive_retrieval.components.shared_documents.SharedDocuments`) are its two kinds.

Usage::

    class Names(FrozenSequence[str]): ...
    names = Names(["a", "b"])
    names[0], names[:1], len(names), copy.deepcopy(names) is names
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Self, TypeVar, overload

T = TypeVar("T")


class FrozenSequence(Sequence[T]):
    """A tuple of ``items`` read as a list (indexing, slicing to a tuple, ``len``, iteration); copies are itself.

    :param items: the items, in order.
    """

    __slots__ = ("_items",)

    def __init__(self, items: Iterable[T] = ()) -> None:
        self._items: tuple[T, ...] = tuple(items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[T, ...]: ...

    def __getitem__(self, index: int | slice) -> T | tuple[T, ...]:
        return self._items[index]

    def __len__(self) -> int:
        return len(self._items)

    def __iter__(self) -> Iterator[T]:
        return iter(self._items)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._items == other._items  # type: ignore[attr-defined]

    __hash__ = None  # type: ignore[assignment]  # a subclass of hashable items defines it

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        # Immutable by contract (see each subclass): a copy would only cost the copying.
        return self
