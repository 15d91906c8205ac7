"""Late-interaction reranking (ColBERT-style MaxSim) over the token embeddings of the shared text encoder.

Each query token is matched with its most similar document token (cosine of contextual token embeddings) and
the matches are averaged: ``score(q, d) = mean_i max_j cos(q_i, d_j)``. Fine-grained queries benefit because a
single strongly matching phrase counts even when the rest of a passage is about something else, which a single
pooled vector blurs. The query's token embeddings are computed once per query; documents are encoded in
length-sorted batches with the same encoder the embedders use (ONNX fp32 or INT8; on a GPU the PyTorch back end,
where MaxSim runs on the device and only the scores cross).

The cost is bounded: ``rerank_top`` documents at most are encoded per query (the head of the incoming list,
e.g. the MMR selection; the rest follow in their upstream order), and the query's token embeddings are kept in a
small LRU cache, so a quality-gate retry of the same question does not encode it again.

Usage::

    ranker = LateInteractionRanker(precision="int8")
    ranker.warm_up()
    ranked = ranker.run(documents=docs, query="Which year did the band record its debut?", top_k=5)["documents"]
"""

from __future__ import annotations

import logging
import string
from collections import OrderedDict
from typing import Any

import numpy as np
from haystack import component

from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.token_encoder import TokenEncoder, normalise_numpy
from adaptive_retrieval.components.ranking.base import RerankerBase
from adaptive_retrieval.components.shared_documents import RankedDocuments

logger = logging.getLogger(__name__)


@component
class LateInteractionRanker(RerankerBase):
    """Reranks documents by MaxSim between query and document token embeddings.

    Special tokens (``[CLS]``, ``[SEP]``) and pure punctuation are dropped from the query side: they carry
    no term to match. The router's ``rerank`` flag switches the component to pass-through per query.

    :param model: ONNX model folder or name (default: the shipped all-MiniLM-L6-v2).
    :param precision: ``int8`` or ``fp32`` on CPU/GPU (``fp16``/``bf16``/``fp8`` on a GPU);
        ``None``: ``$ADAPTIVE_PRECISION``, else ``int8`` (read at warm-up).
    :param device: ``cpu`` or ``cuda``; ``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``.
    :param top_k: documents returned (the router's ``top_k`` overrides it per query; ``None`` keeps all).
    :param batch_size: documents encoded per model call.
    :param meta_fields_to_embed: meta fields prepended to the content before encoding (e.g. ``title``).
    :param rerank_top: rerank only the first N incoming documents (``None``: all of them).
    :param query_cache_size: queries whose token embeddings are kept (0 disables the cache).
    :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (the query pipeline's
        setting: Haystack copies it once, not document by document).
    """

    kind = "late_interaction"

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str | None = None,
        device: str | None = None,
        top_k: int | None = None,
        batch_size: int = 16,
        meta_fields_to_embed: list[str] | None = None,
        rerank_top: int | None = None,
        query_cache_size: int = 64,
        share_documents: bool = False,
    ) -> None:
        if rerank_top is not None and rerank_top < 1:
            msg = f"rerank_top must be >= 1 or None, got {rerank_top}"
            raise ValueError(msg)
        if query_cache_size < 0:
            msg = f"query_cache_size must be >= 0, got {query_cache_size}"
            raise ValueError(msg)
        fields = ["title"] if meta_fields_to_embed is None else meta_fields_to_embed
        RerankerBase.__init__(self, top_k, batch_size, fields, share_documents)
        self.model = model
        self.precision = precision
        self.device = device
        self._encoder: TokenEncoder | None = None
        self._skip_ids: set[int] = set()
        self.rerank_top = rerank_top
        self.query_cache_size = query_cache_size
        self._query_cache: OrderedDict[str, np.ndarray] = OrderedDict()

    def warm_up(self) -> None:
        """Load (or reuse) the shared encoder and list the token ids a query match ignores."""
        if self._encoder is not None:
            return
        encoder = get_encoder(self.model, self.precision, self.device)
        vocab = encoder.tokenizer.get_vocab(with_added_tokens=True)
        punctuation = set(string.punctuation)
        specials = {t for t in vocab if t.startswith("[") and t.endswith("]")} | {"<s>", "</s>", "<pad>", "<unk>"}
        self._skip_ids = {i for t, i in vocab.items() if t in specials or (t and set(t.lstrip("#▁")) <= punctuation)}
        self._encoder = encoder

    def query_tokens(self, query: str) -> np.ndarray:
        """L2-normalised token embeddings ``[tokens, dim]`` of the query's matchable tokens (cached per query)."""
        cached = self._query_cache.get(query)
        if cached is not None:
            self._query_cache.move_to_end(query)
            return cached
        tokens = self._encode_query(query)
        if self.query_cache_size:
            self._query_cache[query] = tokens
            while len(self._query_cache) > self.query_cache_size:
                self._query_cache.popitem(last=False)
        return tokens

    def clear_query_cache(self) -> None:
        """Forget the cached query token embeddings (e.g. to time a cold query)."""
        self._query_cache.clear()

    def _encode_query(self, query: str) -> np.ndarray:
        self.warm_up()
        assert self._encoder is not None
        ids, _ = self._encoder.batch_ids([query])
        hidden, mask = self._encoder.token_embeddings([query])
        keep = mask[0].astype(bool) & ~np.isin(ids[0], list(self._skip_ids))
        if not keep.any():  # a query made only of punctuation: fall back to every real token
            keep = mask[0].astype(bool)
        return normalise_numpy(hidden[0][keep])

    def score(self, query: str, texts: list[str]) -> np.ndarray:
        """MaxSim score of every text, documents encoded in batches of ``batch_size`` (on a GPU the document token
        vectors stay on the device and only the scores cross: :meth:`TokenEncoder.maxsim_scores`)."""
        q = self.query_tokens(query)
        assert self._encoder is not None
        return self._encoder.maxsim_scores(q, texts, self.batch_size)

    def run(
        self,
        documents: RankedDocuments,
        query: str,
        top_k: int | None = None,
        rerank: bool | None = None,
    ) -> dict[str, Any]:
        """Rerank ``documents`` for ``query``; pass them through when the router sets ``rerank=False``.

        :param documents: candidates (e.g. the MMR selection).
        :param query: the question.
        :param top_k: documents to return (default: the init ``top_k``).
        :param rerank: the router's per-intent decision; ``None`` (not connected) reranks.
        :returns: ``documents`` sorted by MaxSim score (the first ``rerank_top`` of them, the rest after).
        """
        return self.rerank(documents, query, top_k, rerank, head=self.rerank_top)
