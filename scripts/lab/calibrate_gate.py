"""Calibrate the QualityGate on HotpotQA: answerable questions against the same questions made unanswerable.

python scripts/lab/calibrate_gate.py [--data ../shared/data/hotpotqa100] [--root .adaptive/eval-gate]
                                 [--folds 5] [--l2 1.0] [--limit N] [--json out.json]

1. Index the corpus once through ``yaml/indexing.yaml`` into ``--root`` (cached per corpus and YAML).
2. Run every question through ``yaml/query.yaml`` with the gate's loop off (``max_retries=0``) twice:
   *answerable* (index as is) and *unanswerable*: the question's supporting passages are **deleted** from the
   index — their chunks from Qdrant (dense vectors, BM25 vectors and the collection's IDF statistics all
   follow) and their documents from the knowledge graph (entities, mentions and co-occurrence edges), then
   restored from the saved records right after the query. This is removal, not a filter: every channel
   searches an index without them. The one trace left is in the graph's community summaries, computed at
   indexing time; the graph-global channel fetches community chunks from Qdrant, so the removed chunks
   themselves cannot come back.
3. Fit the gate's logistic model ``quality = sigmoid(bias + Σ w·signal)`` on the attempt-0 signals (label 1 =
   answerable) by L2-regularised maximum likelihood (Newton steps on standardised signals), and its pass
   threshold as the quality that maximises Youden's J (TPR − FPR). AUROC is reported out of fold
   (``--folds``, both variants of a question in the same fold, threshold chosen inside each training fold)
   and in sample, with every signal's own AUROC.
4. With the fitted gate and one retry, run both variants again and report the decisions, the recall that
   retries add on answerable questions (all returned passages, and the first 10 at a fixed cut) and the
   latency cost.

The printed ``weights``/``bias``/``pass_threshold`` are the gate's prior; ``--write-prior`` writes them, with
their provenance (data set, command, date, out-of-fold AUROC), into ``components/gating/data/gate_prior.json``
(the rest of that file, ``asked_threshold`` and its provenance, is kept).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack.document_stores.types import DuplicatePolicy  # noqa: E402

from adaptive_retrieval.components.gating import (  # noqa: E402
    FITTED,
    PRIOR_FILE,
    SIGNALS,
    auroc,
    fit_logistic,
    predict,
    validate_calibration,
    youden_threshold,
)
from adaptive_retrieval.pipelines import QueryResult, run_query  # noqa: E402
from evaluation.data import load_hotpot  # noqa: E402
from evaluation.metrics import percentiles, recall_at_k  # noqa: E402
from evaluation.systems import PASSAGE_KEY, AdaptiveSystem  # noqa: E402

# -- statistics: components/gating/calibration.py (shared with the self-calibration) ------------------------


# -- removal ------------------------------------------------------------------------------------------------


def stores_of(pipeline: Any) -> tuple[Any, Any | None]:
    """The Qdrant store and the graph store the query pipeline's channels read."""
    store = graph = None
    for _, instance in pipeline.walk():
        store = store or getattr(instance, "document_store", None) or getattr(instance, "_document_store", None)
        graph = graph or getattr(instance, "graph_store", None)
    if store is None:
        msg = "The query pipeline has no document store"
        raise ValueError(msg)
    return store, graph


@contextlib.contextmanager
def removed(store: Any, graph: Any | None, passage_ids: list[str]) -> Iterator[int]:
    """Delete the passages' chunks (and any node of the same documents) from Qdrant and the graph; restore after."""
    chunks = store.filter_documents({"field": f"meta.{PASSAGE_KEY}", "operator": "in", "value": passage_ids})
    doc_ids = sorted({d.meta["doc_id"] for d in chunks if d.meta.get("doc_id")})
    if doc_ids:  # summary nodes of the same documents (if the indexing pipeline writes them) go too
        extra = store.filter_documents({"field": "meta.doc_id", "operator": "in", "value": doc_ids})
        chunks = list({d.id: d for d in [*chunks, *extra]}.values())
    # GraphStoreBase's storage primitive: the exact records, so that restoring puts back what was there.
    saved_graph = graph._load_documents(doc_ids) if graph is not None and doc_ids else []
    before = store.count_documents()
    store.delete_documents([d.id for d in chunks])
    if graph is not None and doc_ids:
        graph.delete_documents(doc_ids)
    try:
        yield len(chunks)
    finally:
        store.write_documents(chunks, policy=DuplicatePolicy.OVERWRITE)
        if saved_graph:
            graph.replace_chunks(saved_graph)
        if store.count_documents() != before:
            msg = "Restoring the removed passages failed: delete the --root folder and run again"
            raise RuntimeError(msg)


# -- runs ---------------------------------------------------------------------------------------------------


def passages(result: QueryResult) -> list[str]:
    seen: dict[str, None] = {}
    for doc in result.documents:
        if doc.meta.get(PASSAGE_KEY) is not None:
            seen.setdefault(doc.meta[PASSAGE_KEY])
    return list(seen)


def run_both(pipeline: Any, store: Any, graph: Any, questions: list[Any], label: str) -> list[dict[str, Any]]:
    rows = []
    start = time.perf_counter()
    for n, q in enumerate(questions, 1):
        row: dict[str, Any] = {"id": q.id}
        for variant in ("answerable", "unanswerable"):
            ctx = removed(store, graph, list(q.gold_ids)) if variant == "unanswerable" else contextlib.nullcontext()
            with ctx:
                t = time.perf_counter()
                result = run_query(pipeline, q.question)
                ms = (time.perf_counter() - t) * 1000
            ranked = passages(result)
            gate = result.gate
            assert gate is not None, "the query pipeline has a quality gate"
            row[variant] = {
                "signals": dict(gate.attempts[0].signals),
                "decision": gate.decision,
                "attempt": gate.attempt,
                "attempts": len(gate.attempts),
                "recall": recall_at_k(ranked, q.gold_ids, max(len(ranked), 1)),
                "recall@10": recall_at_k(ranked, q.gold_ids, 10),
                "returned": len(ranked),
                "ms": ms,
            }
        rows.append(row)
        if n % 20 == 0 or n == len(questions):
            print(f"  {label}: {n}/{len(questions)} questions, {time.perf_counter() - start:.0f} s", flush=True)
    return rows


def features(rows: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    x, y, group = [], [], []
    for i, row in enumerate(rows):
        for variant, label in (("answerable", 1), ("unanswerable", 0)):
            x.append([row[variant]["signals"][s] for s in SIGNALS])
            y.append(label)
            group.append(i)
    return np.asarray(x, dtype=np.float64), np.asarray(y), np.asarray(group)


def cross_validate(x: np.ndarray, y: np.ndarray, group: np.ndarray, folds: int, l2: float) -> dict[str, float]:
    """Out-of-fold quality scores and decisions (threshold fitted inside each training fold)."""
    questions = np.unique(group)
    order = np.random.default_rng(0).permutation(questions)
    oof = np.empty(len(y))
    passed = np.empty(len(y), dtype=bool)
    for f in range(folds):
        held = np.isin(group, order[f::folds])
        bias, w = fit_logistic(x[~held], y[~held], l2)
        cut = youden_threshold(predict(bias, w, x[~held]), y[~held])
        oof[held] = predict(bias, w, x[held])
        passed[held] = oof[held] >= cut
    return {
        "auroc": auroc(oof, y),
        "tpr": float(passed[y == 1].mean()),
        "fpr": float(passed[y == 0].mean()),
    }


def _mean(values: list[float]) -> float:
    return float(np.mean(values)) if values else float("nan")


def decision_shares(runs: list[dict[str, Any]]) -> dict[str, float]:
    """Shares of one variant's runs (``run_both`` rows) that ended ``pass`` / ``insufficient`` and that retried."""
    return {
        "pass": _mean([r["decision"] == "pass" for r in runs]),
        "insufficient": _mean([r["decision"] == "insufficient" for r in runs]),
        "retried": _mean([r["attempts"] > 1 for r in runs]),
    }


def summarise_loop(rows: list[dict[str, Any]], first: list[dict[str, Any]]) -> dict[str, Any]:
    ans = [r["answerable"] for r in rows]
    una = [r["unanswerable"] for r in rows]
    ans0 = [r["answerable"] for r in first]
    retried = [i for i, a in enumerate(ans) if a["attempts"] > 1]
    ans_shares, una_shares = decision_shares(ans), decision_shares(una)

    return {
        "answerable": {
            "pass": ans_shares["pass"],
            "retried": ans_shares["retried"],
            "recall_attempt0": _mean([a["recall"] for a in ans0]),
            "recall_final": _mean([a["recall"] for a in ans]),
            "recall@10_attempt0": _mean([a["recall@10"] for a in ans0]),
            "recall@10_final": _mean([a["recall@10"] for a in ans]),
            "recall_gain_on_retried": _mean([ans[i]["recall"] - ans0[i]["recall"] for i in retried]),
            "retried_returning_retry": _mean([ans[i]["attempt"] > 0 for i in retried]),
            "returned_passages": _mean([a["returned"] for a in ans]),
            **{f"loop_{k}": v for k, v in percentiles([a["ms"] for a in ans]).items()},
            **{f"single_{k}": v for k, v in percentiles([a["ms"] for a in ans0]).items()},
        },
        "unanswerable": {
            "insufficient": una_shares["insufficient"],
            "retried": una_shares["retried"],
            **{f"loop_{k}": v for k, v in percentiles([u["ms"] for u in una]).items()},
        },
    }


def write_prior(fitted: dict[str, Any], args: argparse.Namespace, cv_auroc: float, in_sample: float, n: int) -> None:
    """Replace the weights, bias and pass threshold of the shipped prior (and their provenance)."""
    import datetime
    import sys

    prior = json.loads(PRIOR_FILE.read_text(encoding="utf-8"))
    prior.update(fitted)
    prior.setdefault("provenance", {})["weights"] = {
        "data": f"{Path(args.data).name} ({n} questions; answerable vs. their supporting passages removed)",
        "command": "python scripts/lab/calibrate_gate.py " + " ".join(sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
        "metric": f"AUROC {in_sample:.3f} in sample, {cv_auroc:.3f} out of fold ({args.folds} folds); "
        "pass_threshold = Youden's J",
    }
    validate_calibration(prior)
    PRIOR_FILE.write_text(json.dumps(prior, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {PRIOR_FILE}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "hotpotqa100"))
    parser.add_argument("--root", default=str(ROOT / ".adaptive" / "eval-gate"))
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--l2", type=float, default=1.0, help="L2 penalty of the logistic fit")
    parser.add_argument("--retries", type=int, default=1, help="max_retries for the loop evaluation")
    parser.add_argument("--limit", type=int, default=None, help="first N questions only (a quick check)")
    parser.add_argument("--json", default=None, help="also write the numbers to this file")
    parser.add_argument(
        "--write-prior", action="store_true", help="write the fit into components/gating/data/gate_prior.json"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    evalset = load_hotpot(args.data)
    questions = evalset.questions[: args.limit] if args.limit else evalset.questions
    system = AdaptiveSystem(Path(args.root))
    stats = system.index(evalset)
    print(f"index: {stats}")
    pipeline = system.pipeline
    store, graph = stores_of(pipeline)
    gate = pipeline.get_component("gate")

    # 1. Attempt-0 signals for both variants (loop off).
    gate.max_retries = 0
    first = run_both(pipeline, store, graph, questions, "attempt 0")
    x, y, group = features(first)

    print(f"\nsignals over {len(questions)} questions (mean answerable / unanswerable, AUROC alone):")
    for j, name in enumerate(SIGNALS):
        print(f"  {name:<11} {x[y == 1, j].mean():.3f} / {x[y == 0, j].mean():.3f}   AUROC {auroc(x[:, j], y):.3f}")

    # 2. Fit (the logistic model weighs every signal but ``asked``, a check with its own threshold).
    fit_x = x[:, [SIGNALS.index(s) for s in FITTED]]
    cv = cross_validate(fit_x, y, group, args.folds, args.l2)
    bias, w = fit_logistic(fit_x, y, args.l2)
    quality = predict(bias, w, fit_x)
    threshold = youden_threshold(quality, y)
    fitted = {
        "weights": {s: round(float(v), 3) for s, v in zip(FITTED, w, strict=True)},
        "bias": round(bias, 3),
        "pass_threshold": round(threshold, 3),
    }
    print(
        f"\ngate AUROC answerable vs unanswerable: {cv['auroc']:.3f} out of fold ({args.folds} folds), "
        f"{auroc(quality, y):.3f} in sample"
    )
    print(
        f"out-of-fold decisions at the fitted threshold: pass {cv['tpr']:.1%} of answerable, "
        f"{cv['fpr']:.1%} of unanswerable"
    )
    print(f"fitted (all questions, l2={args.l2}): {json.dumps(fitted)}")
    if args.write_prior:
        write_prior(fitted, args, cv["auroc"], auroc(quality, y), len(questions))

    # 3. The loop with the fitted gate.
    gate.weights, gate.bias, gate.pass_threshold = fitted["weights"], fitted["bias"], fitted["pass_threshold"]
    gate.max_retries = args.retries
    loop_rows = run_both(pipeline, store, graph, questions, f"loop (max_retries={args.retries})")
    loop = summarise_loop(loop_rows, first)
    a, u = loop["answerable"], loop["unanswerable"]
    print(f"\nloop with max_retries={args.retries}:")
    print(
        f"  answerable:   pass {a['pass']:.1%}, retried {a['retried']:.1%}; recall of returned passages "
        f"{a['recall_attempt0']:.3f} -> {a['recall_final']:.3f} (+{a['recall_final'] - a['recall_attempt0']:.3f}; "
        f"+{a['recall_gain_on_retried']:.3f} on retried questions, {a['retried_returning_retry']:.0%} of which return "
        f"the retry's list); recall@10 {a['recall@10_attempt0']:.3f} -> "
        f"{a['recall@10_final']:.3f}; {a['returned_passages']:.1f} passages returned on average"
    )
    print(f"  unanswerable: insufficient {u['insufficient']:.1%}, retried {u['retried']:.1%}")
    print(
        f"  latency p50/p95 ms: answerable single pass {a['single_p50_ms']:.0f}/{a['single_p95_ms']:.0f}, "
        f"with loop {a['loop_p50_ms']:.0f}/{a['loop_p95_ms']:.0f}; unanswerable with loop "
        f"{u['loop_p50_ms']:.0f}/{u['loop_p95_ms']:.0f}"
    )

    if args.json:
        out = {
            "questions": len(questions),
            "index": stats,
            "signal_auroc": {s: auroc(x[:, j], y) for j, s in enumerate(SIGNALS)},
            "cv": cv,
            "in_sample_auroc": auroc(quality, y),
            "fitted": fitted,
            "loop": loop,
        }
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
