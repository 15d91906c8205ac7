"""Why the package's pipeline scores below the stock hybrid on plain ad-hoc search: an ablation, replayed.

    python scripts/lab/eval_plain_search.py --all-dev DATA --sets adi,time [--json OUT.json]

For each set, Haystack's stock BM25, dense and RRF hybrid (the peers, in the same run, on their own 180-word
chunks), then the package's own pipeline, captured once per question with every channel on and replayed
(:mod:`evaluation.replay`: the pipeline's own joiner, MMR, reranker and quality gate) under one change at a time:
the routed profiles as shipped, the packaged fixed profile, that profile without the gate's retry or without MMR
diversity, only its channel mix changed to the stock hybrid's two searches, and a stock-like profile (dense and
sparse at equal weight, ten results, no MMR, no rerank, no retry) with one part added back at a time. Prints one
table: nDCG@10 per set and its ratio to the stock hybrid's, plus the chunks each side indexed.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[2]

from adaptive_retrieval.components.routing import INTENTS, load_profiles_file  # noqa: E402
from adaptive_retrieval.components.stores import release_all_clients  # noqa: E402
from evaluation.calibrate_all_dev import capture_set  # noqa: E402
from evaluation.dev_sets import available_dev_sets  # noqa: E402
from evaluation.loso import fixed_routing  # noqa: E402
from evaluation.metrics import mean_metrics, question_metrics  # noqa: E402
from evaluation.replay import Captured, Routing, Tail, replay  # noqa: E402
from evaluation.systems import StockSystems, eval_folder  # noqa: E402

METRIC = "ndcg@10"


def stock_like(**changes: Any) -> dict[str, Any]:
    """The stock hybrid's shape through the package: dense and sparse at equal weight, the stock fetch depth
    (20 per retriever) and ten results, no MMR diversity (λ 1), no rerank; ``changes`` override fields."""
    profile = {"weights": {"dense": 0.5, "sparse": 0.5}, "top_k": 10, "fetch_k": 20, "mmr_lambda": 1.0}
    return {**profile, "rerank": False, **changes}


def variants(routed: dict[str, dict[str, Any]], fixed: dict[str, Any]) -> list[tuple[str, Routing, bool]]:
    """(label, routing, gate on) for every row of the ablation."""
    lam = fixed["mmr_lambda"]
    fixed_two = {**copy.deepcopy(fixed), "weights": {"dense": 0.5, "sparse": 0.5}}
    return [
        ("adaptive as shipped (routed profiles, gate)", Routing(routed, None, 0.0, False), True),
        ("fixed profile (packaged), gate", fixed_routing(fixed), True),
        ("fixed profile, no gate retry", fixed_routing(fixed), False),
        ("fixed profile, no MMR (λ 1), no gate retry", fixed_routing({**fixed, "mmr_lambda": 1.0}), False),
        (f"fixed profile's mix -> dense 0.5 + sparse 0.5 (λ {lam:g}), gate", fixed_routing(fixed_two), True),
        (
            "stock-like: dense+sparse 0.5/0.5, k 10, fetch 20, λ 1, no rerank, no retry",
            fixed_routing(stock_like()),
            False,
        ),
        ("stock-like + gate retry", fixed_routing(stock_like()), True),
        (f"stock-like + MMR λ {lam:g}", fixed_routing(stock_like(mmr_lambda=lam)), False),
        ("stock-like + rerank", fixed_routing(stock_like(rerank=True)), False),
        ("stock-like, fetch 30", fixed_routing(stock_like(fetch_k=30)), False),
        (
            "stock-like + section 0.2",
            fixed_routing(stock_like(weights={"dense": 0.4, "sparse": 0.4, "section": 0.2})),
            False,
        ),
        (
            "stock-like + bridge/graph_local 0.2 each",
            fixed_routing(stock_like(weights={"dense": 0.3, "sparse": 0.3, "bridge": 0.2, "graph_local": 0.2})),
            False,
        ),
        ("dense only (package's INT8 ONNX), λ 1, no retry", fixed_routing(stock_like(weights={"dense": 1.0})), False),
        ("sparse only (package's BM25), λ 1, no retry", fixed_routing(stock_like(weights={"sparse": 1.0})), False),
    ]


def replay_rows(items: list[Captured], routing: Routing, tail: Tail, gate: bool) -> list[dict[str, float]]:
    """Per-question metrics of one variant (``gate`` off: the first pass alone, as with no retry)."""
    used = tail if gate else dataclasses.replace(tail, gate=None)
    return [question_metrics(replay(item, routing, used), item.question.gold_ids) for item in items]


def stock_single(data: Path, dev_set: Any, root: Path) -> dict[str, list[dict[str, float]]]:
    """Per-question metrics of stock BM25 and stock dense alone (the cached stock index)."""
    evalset = dev_set.load(data)
    stock = StockSystems(cache_dir=eval_folder(root, evalset.name))
    stock.index(evalset)
    out = {}
    for system in ("stock_bm25", "stock_dense"):
        out[system] = [question_metrics(stock.search(system, q.question)[0], q.gold_ids) for q in evalset.questions]
    return out


def run(args: argparse.Namespace, log: Any) -> dict[str, Any]:
    data = Path(args.all_dev).expanduser()
    sets = available_dev_sets(data, [n for n in args.sets.split(",") if n])
    packaged = load_profiles_file()
    routed = {i: packaged["profiles"][i] for i in INTENTS}
    fixed = packaged["fixed_profile"]["profile"]
    table: dict[str, dict[str, float]] = {}
    info: dict[str, Any] = {}
    for dev_set in sets:
        items, stock_rows, tail, info[dev_set.name] = capture_set(dev_set, data, args, log)
        column = table.setdefault("stock hybrid (Haystack BM25 + dense, RRF)", {})
        column[dev_set.name] = mean_metrics(stock_rows)[METRIC]
        for system, rows in stock_single(data, dev_set, Path(args.root)).items():
            table.setdefault(f"{system} (Haystack)", {})[dev_set.name] = mean_metrics(rows)[METRIC]
        for label, routing, gate in variants(routed, fixed):
            log(f"[ablation] {dev_set.name}: {label}")
            table.setdefault(label, {})[dev_set.name] = mean_metrics(replay_rows(items, routing, tail, gate))[METRIC]
    names = [s.name for s in sets]
    stock = table["stock hybrid (Haystack BM25 + dense, RRF)"]
    print("| variant | " + " | ".join(f"{n} {METRIC} | × stock" for n in names) + " |")
    print("|---|" + "---|---|" * len(names))
    for label, values in table.items():
        cells = " | ".join(f"{values[n]:.3f} | {values[n] / stock[n]:.2f}×" for n in names)
        print(f"| {label} | {cells} |")
    print()
    for name in names:
        chunks = info[name]["index"].get("chunks"), info[name]["stock_index"].get("chunks")
        print(
            f"{name}: package chunks {chunks[0]}, stock chunks {chunks[1]}; replay check {info[name]['replay_check']}"
        )
    return {"table": table, "datasets": info}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all-dev", required=True, metavar="DATA", help="the development data folder")
    parser.add_argument("--sets", default="adi,time", help="comma-separated set names")
    parser.add_argument("--query-yaml", default="query", help="query pipeline captured")
    parser.add_argument("--check", type=int, default=10, help="questions replayed against real runs")
    parser.add_argument("--root", default=str(ROOT / ".adaptive"))
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    # capture_set captures the packaged pipeline with the opt-in channels this names (none: as shipped).
    args.safe_channels = "dense,sparse"

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    try:
        report = run(args, log)
    finally:
        release_all_clients()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))


if __name__ == "__main__":
    main()
