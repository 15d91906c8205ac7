"""The evidence signals the quality gate reads off a retrieved list (no model call; a few numpy products).

- ``top_score``: best cosine similarity between the query and a returned document (their stored embeddings);
- ``margin``: how far that best document stands out: ``top_score`` minus the mean of the next ``k - 1``
  (at least the next one);
- ``coverage``: share of the query's content terms (stop words dropped, Snowball stems) found in the top ``k``;
- ``agreement``: how many of the active channels (weighted, and returning documents) returned each of the top
  ``k`` documents (from the joiner's ``meta["channels"]`` provenance), rescaled to [0, 1] and averaged;
- ``redundancy``: mean pairwise cosine similarity of the top ``k`` documents (near-duplicates add no evidence);
- ``names``: 1.0 when every name the query writes (a run of capitalised words or numbers, :func:`query_names`)
  occurs, as a phrase, in at least one returned document (all of them, not only the top ``k``: the hops of a
  multi-hop question sit in different documents), else 0.0; 1.0 for a query without names. Removing a question's
  evidence typically removes the only passages about the entity it names; the other signals only see that the
  rest of the list is weaker, which multi-hop questions are anyway;
- ``names_title``: share of those names that a returned document is *about*: the name and the document's title
  contain one another as phrases ("Kentucky Tavern" and the page "Kentucky Tavern (bourbon)", "BERT" and "BERT:
  Pre-training of…"); 1.0 for a query without names. Other pages mention a name in passing (which ``names``
  counts); with the evidence gone, the page titled by it is what is missing;
- ``asked``: whether the passages hold what the question asks for, not only whom it names: the share of the
  question's asked terms (its non-name content words after the question word) in the returned passages, half
  from the best single passage, half over all of them; with word vectors, where the stems fall short of the
  gate's threshold, a word a passage lacks gets partial credit from the passage's most similar word above ``floor``
  (:mod:`~adaptive_retrieval.components.gating.answerability`).

Usage::

    signals = gate_signals(documents, "Who directed Arthur? Arthur!", query_embedding, ["dense", "sparse"], k=5)
    signals["coverage"]  # 1.0 when every content word of the query occurs in the top 5
    query_names("Who wrote The Age of Reason in 1794?")  # ['The Age of Reason', '1794']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
from haystack import Document

from adaptive_retrieval.components.gating.answerability import asked_coverage
from adaptive_retrieval.components.text.keys import normalise_key
from adaptive_retrieval.components.text.names import query_names
from adaptive_retrieval.components.text.terms import content_terms, term_set

if TYPE_CHECKING:
    from adaptive_retrieval.components.gating.word_vectors import WordVectors

SIGNALS: tuple[str, ...] = (
    "top_score",
    "margin",
    "coverage",
    "agreement",
    "redundancy",
    "names",
    "names_title",
    "asked",
)


def missing_names(documents: Sequence[Document], query: str) -> list[str]:
    """The names ``query`` writes (:func:`query_names`) that no document holds as a phrase (title or text), as the
    query writes them: what the ``names`` signal misses."""
    texts = [" " + normalise_key(f"{d.meta.get('title', '')} {d.content or ''}") + " " for d in documents]
    return [n for n in query_names(query) if (key := normalise_key(n)) and not any(f" {key} " in t for t in texts)]


def _unit_rows(documents: Sequence[Document]) -> tuple[np.ndarray, np.ndarray]:
    """Normalised embeddings of the documents that carry one, and the indices of those documents."""
    have = [i for i, d in enumerate(documents) if d.embedding is not None]
    if not have:
        return np.zeros((0, 0), dtype=np.float32), np.zeros(0, dtype=int)
    emb = np.asarray([documents[i].embedding for i in have], dtype=np.float32)
    emb /= np.clip(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12, None)
    return emb, np.asarray(have)


def gate_signals(
    documents: Sequence[Document],
    query: str,
    query_embedding: Sequence[float] | None = None,
    channels: Sequence[str] | None = None,
    k: int = 5,
    vectors: WordVectors | None = None,
    floor: float = 1.0,
    needed: float = 1.0,
) -> dict[str, float]:
    """The signals of the module docstring for ``documents`` in their final order.

    :param documents: the retrieved list (best first); embeddings are read where present.
    :param query: the question (for term coverage).
    :param query_embedding: the query vector; without it the similarity signals are 0.
    :param channels: the channels that were active for this query (for agreement); default: every channel
        named in the documents' provenance.
    :param k: how many of the top documents coverage, agreement, margin and redundancy look at (names reads
        every document).
    :param vectors: word vectors for the ``asked`` signal's soft matches (``None``: stems only).
    :param floor: the similarity at which a soft match starts to count (1.0: stems only).
    :param needed: soft matches are looked for only when the stems cover less of the asked words than this
        (the gate's ``asked_threshold``).
    """
    if k < 1:
        msg = f"k must be >= 1, got {k}"
        raise ValueError(msg)
    top = list(documents[:k])
    signals = dict.fromkeys(SIGNALS, 0.0)

    emb, have = _unit_rows(documents)
    if query_embedding is not None and len(have):
        q = np.asarray(query_embedding, dtype=np.float32)
        if q.shape[0] != emb.shape[1]:
            msg = f"query_embedding has dimension {q.shape[0]}, the documents' embeddings {emb.shape[1]}"
            raise ValueError(msg)
        q /= max(float(np.linalg.norm(q)), 1e-12)
        sims = np.sort(emb @ q)[::-1]
        signals["top_score"] = float(sims[0])
        if sims.size > 1:
            signals["margin"] = float(sims[0] - sims[1 : max(k, 2)].mean())
    top_emb = emb[have < k] if len(have) else emb
    if top_emb.shape[0] > 1:
        gram = top_emb @ top_emb.T
        n = gram.shape[0]
        signals["redundancy"] = float((gram.sum() - np.trace(gram)) / (n * (n - 1)))

    wanted = content_terms(query)
    if wanted and top:
        found: set[str] = set()
        for doc in top:
            found |= term_set(f"{doc.meta.get('title', '')} {doc.content or ''}")
        signals["coverage"] = len(wanted & found) / len(wanted)
    elif not wanted:
        signals["coverage"] = 1.0  # nothing to cover (a query of stop words): not evidence of a miss

    written = query_names(query)
    signals["asked"] = asked_coverage(documents, query, written, vectors, floor, needed)
    names = {normalise_key(n) for n in written}
    if names:
        texts = [" " + normalise_key(f"{d.meta.get('title', '')} {d.content or ''}") + " " for d in documents]
        signals["names"] = float(all(any(f" {n} " in t for t in texts) for n in names))
        titles = [f" {t} " for t in {normalise_key(str(d.meta.get("title") or "")) for d in documents} if t]
        signals["names_title"] = sum(any(f" {n} " in t or t in f" {n} " for t in titles) for n in names) / len(names)
    else:
        signals["names"] = signals["names_title"] = 1.0  # nothing named: not evidence of a miss

    active = (
        list(channels) if channels is not None else sorted({c for d in documents for c in d.meta.get("channels", {})})
    )
    if len(active) > 1 and top:
        per_doc = [len(set(d.meta.get("channels", {})) & set(active)) for d in top]
        signals["agreement"] = float(np.mean([(n - 1) / (len(active) - 1) for n in per_doc if n > 0] or [0.0]))
    return signals
