"""Batches for an accelerator: bucketed by token length, padded, and prepared one step ahead of the device.

A device runs a batch as fast as its longest row allows, so rows of one batch should have similar token counts:
:func:`token_length_batches` orders the items by characters (a cheap proxy), tokenises them a window of batches
at a time, sorts each window by its real token counts and cuts it into batches, longest first (the largest
allocation comes first). Every :class:`TokenBatch` carries the input positions of its rows, so results are put
back in input order. :func:`prefetched` runs such an iterator in a thread, a bounded number of batches ahead, so
that tokenising and padding the next batch overlap the device's work on the current one (``tokenizers`` releases
the GIL while it encodes).

No torch here: the ONNX Runtime and PyTorch back ends share it.

Usage::

    batches = token_length_batches(texts, tokenizer.encode_batch, batch_size=256, pad_id=0)
    for batch in prefetched(batches, depth=2):
        vectors[batch.rows] = run(batch.input_ids, batch.attention_mask)
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

#: Token batches are tokenised this many batches at a time and sorted by token count within that window.
DEFAULT_WINDOW = 8


@dataclass(frozen=True)
class TokenBatch:
    """One padded batch: ``rows`` are the positions of its rows in the input; ids, mask and token types are
    int64 ``[rows, width]``. ``filled`` rows at the end (``fill_rows``) repeat the first row and belong to no
    input: drop them from the results."""

    rows: np.ndarray
    input_ids: np.ndarray
    attention_mask: np.ndarray
    token_type_ids: np.ndarray
    filled: int = 0

    @property
    def real(self) -> int:
        """Rows that belong to the input (the batch less its filler rows)."""
        return len(self.rows)


def bucket_width(length: int, widths: Sequence[int]) -> int:
    """The smallest of ``widths`` that holds ``length`` tokens (the largest when none does)."""
    for width in sorted(widths):
        if length <= width:
            return width
    return max(widths)


def pad_encodings(
    encodings: Sequence[Any],
    rows: np.ndarray,
    pad_id: int,
    width: int | None = None,
    fill_to: int | None = None,
) -> TokenBatch:
    """Pad ``tokenizers`` encodings into one :class:`TokenBatch` (``width``: at least this many columns;
    ``fill_to``: repeat the first row until the batch has this many rows, for a static-shape graph)."""
    longest = max(len(e.ids) for e in encodings)
    width = max(longest, width or 0)
    count = max(len(encodings), fill_to or 0)
    ids = np.full((count, width), pad_id, dtype=np.int64)
    mask = np.zeros((count, width), dtype=np.int64)
    types = np.zeros((count, width), dtype=np.int64)
    for row, enc in enumerate(encodings):
        n = len(enc.ids)
        ids[row, :n] = enc.ids
        mask[row, :n] = 1
        types[row, :n] = enc.type_ids
    filled = count - len(encodings)
    if filled:
        ids[len(encodings) :] = ids[0]
        mask[len(encodings) :] = mask[0]
        types[len(encodings) :] = types[0]
    return TokenBatch(
        rows=np.asarray(rows, dtype=np.int64), input_ids=ids, attention_mask=mask, token_type_ids=types, filled=filled
    )


def token_length_batches(
    items: Sequence[Any],
    encode: Callable[[list[Any]], Sequence[Any]],
    batch_size: int,
    pad_id: int,
    window: int = DEFAULT_WINDOW,
    size: Callable[[Any], int] | None = None,
    widths: Sequence[int] | None = None,
    fill_rows: bool = False,
) -> Iterator[TokenBatch]:
    """Batches of ``items`` with similar token counts, longest first; see the module docstring.

    :param encode: ``tokenizers``' ``encode_batch`` (or any function from items to encodings with ``ids`` and
        ``type_ids``).
    :param size: the cheap length the items are first ordered by (characters of a text, of a pair's parts).
    :param widths: pad every batch to the smallest of these widths that holds it (a static-shape graph sees only
        these); ``None`` pads to the longest row.
    :param fill_rows: fill the last batch up to ``batch_size`` rows (static shapes).
    """
    if batch_size < 1:
        msg = f"batch_size must be >= 1, got {batch_size}"
        raise ValueError(msg)
    size = size or (lambda item: len(item) if isinstance(item, str) else sum(len(part) for part in item))
    order = np.argsort([-size(item) for item in items], kind="stable")
    step = batch_size * max(1, window)
    for start in range(0, len(order), step):
        chunk = order[start : start + step]
        encodings = encode([items[i] for i in chunk])
        by_tokens = np.argsort([-len(e.ids) for e in encodings], kind="stable")
        for first in range(0, len(by_tokens), batch_size):
            picked = by_tokens[first : first + batch_size]
            batch = [encodings[i] for i in picked]
            width = bucket_width(max(len(e.ids) for e in batch), widths) if widths else None
            yield pad_encodings(batch, chunk[picked], pad_id, width, batch_size if fill_rows else None)


class _End:
    """Marks the end of a prefetched iterator (or carries the error it raised)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


def prefetched(iterable: Iterable[T], depth: int = 2) -> Iterator[T]:
    """The items of ``iterable``, produced by a thread at most ``depth`` items ahead of the consumer.

    An error in the producer is raised in the consumer at the point it happened; a consumer that stops early (an
    error of its own, ``close()``) stops the producer too, so no thread outlives the loop.
    """
    if depth < 1:
        yield from iterable
        return
    slots: queue.Queue[Any] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                slots.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        try:
            for item in iterable:
                if not put(item):
                    return
        except BaseException as err:  # handed to the consumer, raised there
            put(_End(err))
            return
        put(_End())

    thread = threading.Thread(target=produce, name="batch-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item = slots.get()
            if isinstance(item, _End):
                if item.error is not None:
                    raise item.error
                return
            yield item
    finally:
        stop.set()
        thread.join()
