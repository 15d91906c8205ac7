"""Self-calibration of the quality gate on one index: pseudo-queries with their source present and excluded.

The gate's question is "is there enough evidence in this index for this query?". Without labels from the user
the index itself can answer it for questions whose answer we know the location of:

1. **Pseudo-queries** are drawn from the indexed chunks (a fixed seed, bounded number): a question word, the
   chunk's heading or title and a few content words or names of one of its sentences (``named``), and, where
   one document names another's title, words from both (``bridge``, the multi-hop shape); see
   :func:`pseudo_queries`. Names are kept whole, as a question writes them. Each remembers the documents
   (``doc_id``) it came from.
2. Each pseudo-query runs through the query pipeline once with the gate's loop off. *Present*: the gate's
   signals as they are. *Excluded*: the fused candidates minus every document of the source(s), sent through the
   same MMR, reranker and signals (the pipeline's own components) — what the channels return when those documents
   are not in the index, down to the depth already fetched. Nothing is deleted or written in the index.
3. The gate's logistic model is fitted on those signals (label 1 = present, classes balanced) with a strong L2
   penalty pulling the weights towards the shipped hotpotqa fit (the prior, :data:`DEFAULT_L2`): what the index
   changes is mostly where the evidence sits (the intercept), not which signal matters. The pass threshold keeps
   the prior's operating point, the one thing only labels can set (its threshold was chosen on real answerable
   and unanswerable questions): the prior lets through some share of this index's pseudo-queries whose sources
   were excluded, and the fitted model's threshold lets through the same share (:func:`pass_threshold`). The
   pseudo-queries say how the quality scale moved on this index, not how hard its real questions are: they are
   drawn from the passages' own words, so a threshold read off their present rows (a quantile of them, tried
   before) sat wherever the easiest or hardest pseudo-queries fell, from corpus to corpus and seed to seed.
4. The ``asked`` check (does a passage hold what the question asks for, not only whom it names) gets its own
   threshold: each ``named`` pseudo-query also runs, on the index as is, as its *absent-attribute* variant (the
   same subject asked for words no chunk of its document holds,
   :func:`~adaptive_retrieval.components.gating.pseudo_queries.absent_attribute`), and
   :func:`~adaptive_retrieval.components.gating.calibration.fit_asked_threshold` reads the threshold off the
   pairs (never stricter than the prior's). The logistic model weighs the other signals only (:data:`FITTED`).
   The model, its in-sample and cross-validated AUROC and pass rates, and what was sampled are written to
   ``gate_calibration.json`` in the store folder, which
   :class:`~adaptive_retrieval.components.gating.quality_gate.QualityGate` reads.

Usage::

    report = calibrate_pipeline(pipeline, queries=500)
    save_calibration(calibration_path(folder), report)   # or: adaptive-retrieval calibrate --store DIR
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from haystack import Document, Pipeline

from adaptive_retrieval.components.gating.answerability import asked_coverage, unmatched
from adaptive_retrieval.components.gating.calibration import fit_asked_floor, load_prior
from adaptive_retrieval.components.gating.pseudo_queries import PseudoQuery, pseudo_queries
from adaptive_retrieval.components.gating.self_calibration import (
    DEFAULT_L2,
    FITTED,
    fit_calibration,
    pass_threshold,
)
from adaptive_retrieval.components.gating.signals import SIGNALS
from adaptive_retrieval.components.models.query_vector import as_float_list
from adaptive_retrieval.components.text.names import query_names
from adaptive_retrieval.pipelines.query_pipeline import query_inputs

logger = logging.getLogger(__name__)

#: What this module offers (the fitting itself lives in :mod:`adaptive_retrieval.components.gating.self_calibration`).
__all__ = [
    "DEFAULT_L2",
    "DEFAULT_QUERIES",
    "FITTED",
    "PseudoQuery",
    "calibrate_pipeline",
    "collect_signals",
    "fit_calibration",
    "pass_threshold",
    "pseudo_queries",
]

CHUNKS = {"field": "meta.level", "operator": "==", "value": 0}
#: Default number of pseudo-queries: 200 left the threshold's place on musique_dev100 to the seed (0.24–0.47
#: across five seeds under the earlier rule); each costs one query plus one MMR/rerank pass.
DEFAULT_QUERIES = 500


def _signals_pair(pipeline: Pipeline, query: PseudoQuery) -> tuple[dict[str, float], dict[str, float], list[Document]]:
    """The gate's attempt-0 signals with the sources present, and with their documents excluded, and the
    documents returned with the sources present."""
    result = pipeline.run(
        query_inputs(pipeline, query.text), include_outputs_from={"query_embedder", "router", "joiner", "gate"}
    )
    present = result["gate"]["attempts"][0]["signals"]
    router, joiner = result["router"], result["joiner"]
    embedding = as_float_list(result["query_embedder"]["vector"])  # the gate's signals take a list
    excluded = set(query.sources)
    candidates = [d for d in joiner["documents"] if d.meta.get("doc_id") not in excluded]
    selected = pipeline.get_component("mmr").run(
        documents=candidates, query_embedding=embedding, lambda_threshold=router["mmr_lambda"], top_k=router["top_k"]
    )["documents"]
    ranked = pipeline.get_component("ranker").run(
        documents=selected, query=query.text, top_k=router["top_k"], rerank=router["rerank"]
    )["documents"]
    absent = pipeline.get_component("gate").signals(ranked, query.text, embedding, joiner["fusion"])
    return present, absent, result["gate"]["documents"]


def collect_signals(
    pipeline: Pipeline,
    queries: int = DEFAULT_QUERIES,
    seed: int = 0,
    max_chunks: int | None = 20000,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Draw pseudo-queries from the index of ``pipeline`` and gather the gate's signals with each one's sources
    present (label 1) and excluded (label 0): ``x`` (rows of :data:`SIGNALS`), ``y``, ``group`` (the
    pseudo-query of each row), ``queries`` (the :class:`PseudoQuery` list), ``chunks`` (how many were drawn
    from) and ``asked``: the ``asked`` signal of each named query present and of its absent-attribute variant
    (run on the index as is), one row each.

    :raises ValueError: for a pipeline without a document store or an index too small to draw from.
    """
    gate = pipeline.get_component("gate")
    store = next((c.document_store for _, c in pipeline.walk() if getattr(c, "document_store", None) is not None), None)
    if store is None:
        msg = "The query pipeline has no document store to draw pseudo-queries from"
        raise ValueError(msg)
    chunks = store.filter_documents(CHUNKS)
    if max_chunks is not None and len(chunks) > max_chunks:
        pick = np.random.default_rng(seed).choice(len(chunks), size=max_chunks, replace=False)
        chunks = [chunks[i] for i in sorted(pick)]
    sampled = pseudo_queries(chunks, queries, seed)
    retries = gate.max_retries
    gate.max_retries = 0  # the signals of attempt 0 are what the gate judges first
    x: list[list[float]] = []
    runs: list[tuple[PseudoQuery, list[Document], list[Document]]] = []  # named queries: present, absent attribute
    try:
        for i, query in enumerate(sampled):
            present, absent, documents = _signals_pair(pipeline, query)
            x += [[present[s] for s in SIGNALS], [absent[s] for s in SIGNALS]]
            if query.absent:
                result = pipeline.run(query_inputs(pipeline, query.absent), include_outputs_from={"gate"})
                runs.append((query, documents, result["gate"]["documents"]))
            if progress:
                progress(i + 1, len(sampled))
    finally:
        gate.max_retries = retries
    n = len(sampled)
    floor, floor_report = _asked_floor(gate, runs)
    # The pairs' asked signal at this index's floor (the runs used the prior's: the gate had no calibration yet).
    asked = [
        [
            asked_coverage(present, q.text, query_names(q.text), gate.word_vectors, floor),
            asked_coverage(absent, q.absent or "", query_names(q.absent or ""), gate.word_vectors, floor),
        ]
        for q, present, absent in runs
    ]
    return {
        "x": np.asarray(x, dtype=np.float64),
        "y": np.tile([1, 0], n),
        "group": np.repeat(np.arange(n), 2),
        "queries": sampled,
        "chunks": len(chunks),
        "asked": np.asarray(asked, dtype=np.float64).reshape(-1, 2),
        "asked_floor": floor,
        "asked_floor_report": floor_report,
    }


def _asked_floor(gate: Any, runs: list[tuple[PseudoQuery, list[Document], list[Document]]]) -> tuple[float, dict]:
    """The index's soft-match floor (:func:`fit_asked_floor`) from the absent-attribute runs (the prior's when they
    are too few); 1.0, stems only, when the gate has no word vectors."""
    prior = float(gate.prior["asked_floor"])
    if gate.word_vectors is None:
        return 1.0, {}
    gate.word_vectors.warm_up()
    values = [
        v
        for q, _, absent in runs
        for v in unmatched(absent, q.absent or "", query_names(q.absent or ""), gate.word_vectors)
    ]
    return fit_asked_floor(np.asarray(values), float(load_prior()["asked_floor_quantile"]), prior)


def calibrate_pipeline(
    pipeline: Pipeline,
    queries: int = DEFAULT_QUERIES,
    seed: int = 0,
    l2: float = DEFAULT_L2,
    max_chunks: int | None = 20000,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Fit the gate of ``pipeline`` on pseudo-queries of its own index (see the module docstring).

    :param queries: pseudo-queries to run (each costs one query plus one MMR/rerank pass, and a named one a
        second query for its absent-attribute variant).
    :param max_chunks: chunks sampled from (a random sample of this many when the index has more; ``None``: all).
    :returns: ``weights``, ``bias``, ``pass_threshold`` (what the gate reads) and the ``report``: AUROC in sample
        and out of fold, pass rates of present/excluded pseudo-queries, the prior's AUROC and pass rates on the
        same pseudo-queries, per-signal AUROC, counts per kind, the seed and how long it took.
    :raises ValueError: for an index too small to draw from.
    """
    start = time.perf_counter()
    samples = collect_signals(pipeline, queries, seed, max_chunks, progress)
    fitted = fit_calibration(samples, pipeline.get_component("gate").prior, l2)
    fitted["report"].update({"seed": seed, "seconds": round(time.perf_counter() - start, 1)})
    return fitted
