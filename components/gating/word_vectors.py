"""Word vectors for soft matching of a question's asked words: each whole word of the encoder's vocabulary
encoded on its own by the shipped sentence encoder (all-MiniLM-L6-v2 by default).

The gate's ``asked`` check (:mod:`~adaptive_retrieval.components.gating.answerability`) matches a question's asked
words with a passage's words by stem. A passage that words the relation otherwise ("spouse" / "wife",
"founders" / "founded") holds the fact without the stem; a word's vector finds it. One vector per word, not per
token in context: the passages' words are looked up, never encoded at query time, so the check costs a table
gather and one small matrix product per query. The table (~21,000 words of the tokenizer's vocabulary: alphabetic,
at least 3 letters, not stop words; ~32 MB) is encoded once per model and kept in the embedding cache
(:func:`~adaptive_retrieval.components.models.embedding_cache.cached_encode`: ~15 s on one CPU core the first
time, then read from disk). A question word outside the table is encoded at query time (a few per process,
kept in a small LRU).

Usage::

    vectors = WordVectors()          # the shipped model; WordVectors("my-model", precision="fp32")
    vectors.warm_up()
    sims = vectors.similarity(["spouse"], ["wife", "court"])   # [[0.82, 0.28]]
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from adaptive_retrieval.components.models.embedding_cache import cached_encode
from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.token_encoder import TokenEncoder
from adaptive_retrieval.components.text.stopwords import stopwords

logger = logging.getLogger(__name__)


def vocabulary_words(encoder: TokenEncoder) -> list[str]:
    """The encoder vocabulary's whole words that a soft match looks up: alphabetic ASCII, at least 3 letters, not
    a stop word, not a word-piece continuation ("##ing"), sorted."""
    stop = stopwords()
    vocab = encoder.tokenizer.get_vocab()
    return sorted(w for w in vocab if len(w) >= 3 and w.isascii() and w.isalpha() and w.islower() and w not in stop)


class WordVectors:
    """L2-normalised single-word embeddings of the encoder's vocabulary, looked up by word.

    :param model: ONNX model folder or name (default: the shipped all-MiniLM-L6-v2).
    :param precision: encoder precision (``None``: ``$ADAPTIVE_PRECISION``, else ``int8``).
    :param device: ``cpu`` or ``cuda`` (``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``).
    :param cache_size: out-of-table words (a question's) kept encoded.
    """

    def __init__(
        self, model: str = DEFAULT_MODEL, precision: str | None = None, device: str | None = None, cache_size: int = 256
    ) -> None:
        self.model = model
        self.precision = precision
        self.device = device
        self.cache_size = cache_size
        self._encoder: TokenEncoder | None = None
        self._table: np.ndarray | None = None
        self._rows: dict[str, int] = {}
        self._extra: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Load the encoder and the word table (encoded once per model, then read from the embedding cache)."""
        with self._lock:
            if self._table is not None:
                return
            encoder = get_encoder(self.model, self.precision, self.device)
            words = vocabulary_words(encoder)
            logger.info("Word vectors: %d words of %s", len(words), encoder.model_dir.name)
            self._table = cached_encode(encoder, words)
            self._rows = {w: i for i, w in enumerate(words)}
            self._encoder = encoder

    def __contains__(self, word: str) -> bool:
        return word in self._rows

    def known(self, words: set[str]) -> set[str]:
        """The words of ``words`` that the table holds (empty before ``warm_up``)."""
        return words & self._rows.keys()

    def _vector(self, word: str) -> np.ndarray:
        """One word's vector: from the table, else encoded (and kept in the LRU)."""
        if word in self._rows:
            assert self._table is not None
            return self._table[self._rows[word]]
        with self._lock:
            cached = self._extra.get(word)
            if cached is not None:
                self._extra.move_to_end(word)
                return cached
        assert self._encoder is not None
        vector = self._encoder.encode([word])[0].astype(np.float32)
        with self._lock:
            self._extra[word] = vector
            while len(self._extra) > self.cache_size:
                self._extra.popitem(last=False)
        return vector

    def similarity(self, asked: Sequence[str], words: Sequence[str]) -> np.ndarray:
        """Cosine similarity ``[len(asked), len(words)]`` between any ``asked`` words (encoded when outside the
        table) and table ``words`` (words outside the table score 0)."""
        self.warm_up()
        assert self._table is not None
        out = np.zeros((len(asked), len(words)), dtype=np.float32)
        if not asked or not words:
            return out
        left = np.stack([self._vector(w) for w in asked])
        rows = np.fromiter((self._rows.get(w, -1) for w in words), dtype=np.int64, count=len(words))
        held = rows >= 0
        out[:, held] = left @ self._table[rows[held]].T
        return out
