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
4. The ``asked`` check (does a passage hold what the question asks for, not only whom it names) takes the lower of
   the prior's threshold and the index's own cut, and is turned off where it holds back few absent attributes
   (:func:`~adaptive_retrieval.components.gating.calibration.fit_asked_threshold`; keeping the prior's on every
   index was measured leave-one-domain-out, ``scripts/lab/eval_gate_lodo.py``, and not kept).
   Each ``named`` pseudo-query also runs, on the index as is, as its *absent-attribute* variant (the same subject
   asked for words no chunk of its document holds,
   :func:`~adaptive_retrieval.components.gating.pseudo_queries.absent_attribute`): the words it misses set the
   soft-match floor, and the report says how the check treats both. The logistic model weighs the other signals
   only (:data:`FITTED`). The model, its in-sample and cross-validated AUROC and pass rates, and the samples
   (each pseudo-query's signals and the documents it came from) are written to the index's
   ``gate_calibration.json`` (:func:`~adaptive_retrieval.components.gating.calibration.store_calibration_file`),
   which :class:`~adaptive_retrieval.components.gating.quality_gate.QualityGate` reads and
   :mod:`adaptive_retrieval.pipelines.gate_upkeep` keeps current as indexing adds and removes documents.

Usage::

    report = calibrate_pipeline(pipeline, queries=500)
    save_calibration(store_calibration_file(store), report)   # or: adaptive-retrieval calibrate --store DIR
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from haystack import Document, Pipeline

from adaptive_retrieval.components.gating.answerability import unmatched
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
    "fit_samples",
    "pass_threshold",
    "pseudo_queries",
    "run_samples",
    "sample_version",
]

CHUNKS = {"field": "meta.level", "operator": "==", "value": 0}
#: Default number of pseudo-queries: 200 left the threshold's place on musique_dev100 to the seed (0.24–0.47
#: across five seeds under the earlier rule); each costs one query plus one MMR/rerank pass.
DEFAULT_QUERIES = 500


#: The layout of a stored sample (``gate_calibration.json``'s ``samples``); a file of another layout, or of another
#: signal set, is drawn again.
SAMPLE_FORMAT = 2


def sample_version() -> str:
    """What a stored sample's numbers mean: the layout and the gate's signals, in order."""
    return f"{SAMPLE_FORMAT}:{','.join(SIGNALS)}"


def _run_one(pipeline: Pipeline, gate: Any, query: PseudoQuery) -> dict[str, Any]:
    """One pseudo-query's sample: the gate's attempt-0 signals with its sources present, with their documents
    excluded (the fused candidates without them, through the same MMR and reranker: what the channels return when
    those documents are not in the index, down to the depth already fetched) and, for a named query, those of
    its absent-attribute variant on the index as is, with the similarities its unmatched asked words reach."""
    result = pipeline.run(
        query_inputs(pipeline, query.text), include_outputs_from={"query_embedder", "router", "joiner", "gate"}
    )
    router, joiner = result["router"], result["joiner"]
    embedding = as_float_list(result["query_embedder"]["vector"])  # the gate's signals take a list
    excluded = set(query.sources)
    candidates = [d for d in joiner["documents"] if d.meta.get("doc_id") not in excluded]
    selected = pipeline.get_component("mmr").run(
        documents=candidates,
        query_embedding=embedding,
        lambda_threshold=router["mmr_lambda"],
        top_k=router["top_k"],
        max_per_source=router["max_per_source"],
    )["documents"]
    ranked = pipeline.get_component("ranker").run(
        documents=selected, query=query.text, top_k=router["top_k"], rerank=router["rerank"]
    )["documents"]
    row: dict[str, Any] = {
        "doc_ids": list(query.sources),
        "kind": query.kind,
        "present": dict(result["gate"]["attempts"][0].signals),
        "excluded": {k: round(v, 4) for k, v in gate.signals(ranked, query.text, embedding, joiner["fusion"]).items()},
        "absent": None,
        "unmatched": [],
    }
    if query.absent:
        absent = pipeline.run(query_inputs(pipeline, query.absent), include_outputs_from={"gate"})["gate"]
        row["absent"] = dict(absent["attempts"][0].signals)
        if gate.word_vectors is not None:
            gate.word_vectors.warm_up()
            names = query_names(query.absent)
            row["unmatched"] = [
                round(v, 4) for v in unmatched(absent["documents"], query.absent, names, gate.word_vectors)
            ]
    return row


def run_samples(
    pipeline: Pipeline,
    chunks: list[Document],
    queries: int,
    seed: int = 0,
    subjects: set[str] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[dict[str, Any]]:
    """Draw ``queries`` pseudo-queries from ``chunks`` (about ``subjects`` only, when given) and run each through
    ``pipeline`` with the gate's loop off: one sample each (:func:`_run_one`), ``progress(done, total)`` after
    each, and a log line every tenth.

    :raises ValueError: for an index too small to draw from.
    """
    gate = pipeline.get_component("gate")
    sampled = pseudo_queries(chunks, queries, seed, subjects)
    retries = gate.max_retries
    gate.max_retries = 0  # the signals of attempt 0 are what the gate judges first
    rows: list[dict[str, Any]] = []
    step = max(1, len(sampled) // 10)
    try:
        for i, query in enumerate(sampled, 1):
            rows.append(_run_one(pipeline, gate, query))
            if progress:
                progress(i, len(sampled))
            if i % step == 0 or i == len(sampled):
                logger.info("Gate calibration: %d/%d pseudo-queries", i, len(sampled))
    finally:
        gate.max_retries = retries
    return rows


def samples_from_rows(rows: list[dict[str, Any]], prior: dict[str, Any], chunks: int = 0) -> dict[str, Any]:
    """The stored samples as :func:`fit_calibration` reads them: ``x`` (present and excluded rows of
    :data:`SIGNALS`, alternating), ``y``, ``group``, ``queries`` (their kinds), ``asked`` (each named sample's
    ``asked`` signal present and for its absent-attribute variant), the soft-match ``asked_floor`` read off the
    absent variants' unmatched similarities (:func:`fit_asked_floor`) and its report."""
    x = [[float(row[part].get(s, 0.0)) for s in SIGNALS] for row in rows for part in ("present", "excluded")]
    asked = [[row["present"].get("asked", 1.0), row["absent"].get("asked", 1.0)] for row in rows if row.get("absent")]
    values = [v for row in rows for v in row.get("unmatched") or []]
    floor, floor_report = fit_asked_floor(
        np.asarray(values), float(load_prior()["asked_floor_quantile"]), float(prior["asked_floor"])
    )
    return {
        "x": np.asarray(x, dtype=np.float64).reshape(-1, len(SIGNALS)),
        "y": np.tile([1, 0], len(rows)),
        "group": np.repeat(np.arange(len(rows)), 2),
        "queries": [PseudoQuery(text="", sources=list(row["doc_ids"]), kind=row["kind"]) for row in rows],
        "chunks": chunks,
        "asked": np.asarray(asked, dtype=np.float64).reshape(-1, 2),
        "asked_floor": floor,
        "asked_floor_report": floor_report,
    }


def fit_samples(rows: list[dict[str, Any]], prior: dict[str, Any], l2: float = DEFAULT_L2) -> dict[str, Any]:
    """The gate's model fitted on stored samples (:func:`samples_from_rows`, :func:`fit_calibration`)."""
    return fit_calibration(samples_from_rows(rows, prior), prior, l2)


def collect_signals(
    pipeline: Pipeline,
    queries: int = DEFAULT_QUERIES,
    seed: int = 0,
    max_chunks: int | None = 20000,
    progress: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """Draw pseudo-queries from the index of ``pipeline`` and gather the gate's signals with each one's sources
    present (label 1) and excluded (label 0), as :func:`fit_calibration` reads them (:func:`samples_from_rows`),
    plus ``rows`` (the samples as stored).

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
    rows = run_samples(pipeline, chunks, queries, seed, progress=progress)
    return {**samples_from_rows(rows, gate.prior, len(chunks)), "rows": rows}


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
    :returns: ``weights``, ``bias``, ``pass_threshold`` (what the gate reads), the ``report`` (AUROC in sample
        and out of fold, pass rates of present/excluded pseudo-queries, the prior's AUROC and pass rates on the
        same pseudo-queries, per-signal AUROC, counts per kind, the seed and how long it took) and the
        ``samples`` (each pseudo-query's signals and the documents it came from, so that indexing can keep the
        calibration current: :mod:`adaptive_retrieval.pipelines.gate_upkeep`).
    :raises ValueError: for an index too small to draw from.
    """
    start = time.perf_counter()
    samples = collect_signals(pipeline, queries, seed, max_chunks, progress)
    fitted = fit_calibration(samples, pipeline.get_component("gate").prior, l2)
    fitted["report"].update({"seed": seed, "seconds": round(time.perf_counter() - start, 1)})
    fitted["samples"] = {"version": sample_version(), "rows": samples["rows"]}
    return fitted
