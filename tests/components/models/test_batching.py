"""Token-length bucketing and the prefetch thread: every item once, order restorable, errors and early stops clean."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pytest
from tokenizers import Tokenizer

from adaptive_retrieval.components.models.batching import (
    bucket_width,
    prefetched,
    token_length_batches,
)

TEXTS = [" ".join(["word"] * (1 + (i * 37) % 61)) + (" supercalifragilistic" * (i % 3)) for i in range(203)]


@pytest.fixture(scope="module")
def tokenizer(model_dir: Path) -> Tokenizer:
    tok = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    tok.enable_truncation(max_length=64)
    tok.no_padding()
    return tok


class TestTokenLengthBatches:
    def test_every_item_once_and_order_restores(self, tokenizer: Tokenizer) -> None:
        batches = list(token_length_batches(TEXTS, tokenizer.encode_batch, 16, pad_id=0, window=3))
        rows = np.concatenate([b.rows for b in batches])
        assert sorted(rows.tolist()) == list(range(len(TEXTS)))
        # Put back in input order, each row's ids are the text's own tokenisation.
        restored: list[list[int] | None] = [None] * len(TEXTS)
        for batch in batches:
            for row, position in enumerate(batch.rows):
                restored[position] = batch.input_ids[row][batch.attention_mask[row] == 1].tolist()
        assert restored == [e.ids for e in tokenizer.encode_batch(TEXTS)]

    def test_batches_hold_similar_token_counts_longest_first(self, tokenizer: Tokenizer) -> None:
        batches = list(token_length_batches(TEXTS, tokenizer.encode_batch, 16, pad_id=0, window=len(TEXTS)))
        lengths = [b.attention_mask.sum(axis=1) for b in batches]
        assert [int(x.max()) for x in lengths] == sorted((int(x.max()) for x in lengths), reverse=True)
        padded = sum(b.attention_mask.size for b in batches)
        naive = sum(
            16 * max(len(e.ids) for e in tokenizer.encode_batch(TEXTS[i : i + 16])) for i in range(0, len(TEXTS), 16)
        )
        assert padded < 0.7 * naive  # bucketing pads far less than batches in input order

    def test_static_shapes_pad_to_widths_and_fill_rows(self, tokenizer: Tokenizer) -> None:
        batches = list(
            token_length_batches(TEXTS[:20], tokenizer.encode_batch, 8, pad_id=0, widths=(16, 32, 64), fill_rows=True)
        )
        assert all(b.input_ids.shape[0] == 8 and b.input_ids.shape[1] in (16, 32, 64) for b in batches)
        last = batches[-1]
        assert last.real == 4 and last.filled == 4 and (last.input_ids[4:] == last.input_ids[0]).all()
        assert bucket_width(33, (16, 32, 64)) == 64 and bucket_width(500, (16, 32, 64)) == 64

    def test_pairs_bucket_too(self, tokenizer: Tokenizer) -> None:
        pairs = [("a short query", t) for t in TEXTS[:10]]
        batches = list(token_length_batches(pairs, tokenizer.encode_batch, 4, pad_id=0))
        assert sorted(np.concatenate([b.rows for b in batches]).tolist()) == list(range(10))
        assert all((b.token_type_ids == 1).any() for b in batches)  # the second segment's type ids are kept

    def test_bad_batch_size(self, tokenizer: Tokenizer) -> None:
        with pytest.raises(ValueError, match="batch_size"):
            list(token_length_batches(TEXTS, tokenizer.encode_batch, 0, pad_id=0))


class TestPrefetched:
    def test_same_items_in_the_same_order(self) -> None:
        assert list(prefetched(iter(range(100)), depth=3)) == list(range(100))
        assert list(prefetched(iter(range(5)), depth=0)) == list(range(5))

    def test_runs_ahead_by_at_most_depth(self) -> None:
        produced: list[int] = []

        def source():
            for i in range(50):
                produced.append(i)
                yield i

        items = prefetched(source(), depth=2)
        assert next(items) == 0
        time.sleep(0.2)
        assert len(produced) <= 4  # the item taken, two queued, one waiting to be put
        items.close()

    def test_producer_error_reaches_the_consumer(self) -> None:
        def source():
            yield 1
            raise RuntimeError("tokeniser broke")

        items = prefetched(source(), depth=2)
        assert next(items) == 1
        with pytest.raises(RuntimeError, match="tokeniser broke"):
            next(items)

    def test_early_stop_ends_the_thread(self) -> None:
        before = {t.ident for t in threading.enumerate()}
        items = prefetched(iter(range(10_000)), depth=2)
        next(items)
        items.close()
        assert not [t for t in threading.enumerate() if t.name == "batch-prefetch" and t.ident not in before]
