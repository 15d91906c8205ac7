"""Does the late-interaction reranker earn its time? The same candidates ranked with it and without it.

python scripts/lab/eval_rerank.py --hotpot ../shared/data/hotpotqa100 [--aragog ../shared/data/aragog] \\
    [--corpus C.jsonl --questions Q.jsonl] [--root .adaptive/eval-gate-transfer] [--rerank-top N ...]
    [--limit N] [--json out.json]

Every question runs once through ``yaml/query.yaml`` with the quality gate's loop off (so a retry does not mix
into the comparison). The MMR selection that reaches the reranker is then ranked four ways, in turn, on the
same machine state:

- ``off``: the MMR order (the reranker passes through);
- ``on``: the reranker over the whole selection (what a profile with ``rerank: true`` does);
- ``on_topN``: the reranker over the first N of the selection only, the rest kept in MMR order after them
  (``--rerank-top``, repeatable);
- ``routed``: what the profiles decided for this question (on or off per intent).

Per way: recall@10, full@10, MRR over passage ids, and the end-to-end latency = the pipeline's time without
its ranker stage plus that way's ranking time (p50/p95), overall and per routed intent, so a profile keeps
``rerank`` only where it gains.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from adaptive_retrieval.pipelines import query_inputs, stage_timings  # noqa: E402
from evaluation.data import EvalSet, load_aragog, load_hotpot, load_jsonl  # noqa: E402
from evaluation.metrics import passage_ranking, percentiles, question_metrics  # noqa: E402
from evaluation.systems import PASSAGE_KEY, AdaptiveSystem, eval_folder  # noqa: E402

METRICS = ("recall@10", "full@10", "mrr")


def rank_ways(ranker: Any, docs: list[Any], query: str, top_k: int, tops: list[int]) -> dict[str, tuple[list, float]]:
    """Each way's documents and ranking milliseconds (see the module docstring)."""
    ways: dict[str, tuple[list, float]] = {}
    ranker.clear_query_cache()  # each way pays for its own query encoding
    t = time.perf_counter()
    ways["off"] = (ranker.run(documents=docs, query=query, top_k=top_k, rerank=False)["documents"], 0.0)
    ways["off"] = (ways["off"][0], (time.perf_counter() - t) * 1000)
    t = time.perf_counter()
    ways["on"] = (ranker.run(documents=docs, query=query, top_k=top_k, rerank=True)["documents"], 0.0)
    ways["on"] = (ways["on"][0], (time.perf_counter() - t) * 1000)
    for n in tops:
        ranker.clear_query_cache()
        t = time.perf_counter()
        head = ranker.run(documents=docs[:n], query=query, top_k=None, rerank=True)["documents"]
        ms = (time.perf_counter() - t) * 1000
        ways[f"on_top{n}"] = ([*head, *docs[n:]][:top_k], ms)
    return ways


def evaluate_set(evalset: EvalSet, root: Path, tops: list[int], limit: int | None) -> dict[str, Any]:
    system = AdaptiveSystem(eval_folder(root, evalset.name))
    print(f"[{evalset.name}] index: {system.index(evalset)}", flush=True)
    pipeline = system.pipeline
    gate, ranker = pipeline.get_component("gate"), pipeline.get_component("ranker")
    gate.max_retries = 0
    ranker.rerank_top = None  # "on" is the unbounded reranker; the bounded ones are the on_topN ways
    questions = evalset.questions[:limit] if limit else evalset.questions
    for q in questions[:2]:  # warm-up (sessions, caches)
        pipeline.run(query_inputs(pipeline, q.question))
    rows: list[dict[str, Any]] = []
    start = time.perf_counter()
    for n, q in enumerate(questions, 1):
        with stage_timings() as times:
            t = time.perf_counter()
            result = pipeline.run(query_inputs(pipeline, q.question), include_outputs_from={"router", "mmr"})
            total = (time.perf_counter() - t) * 1000
        base = total - times.get("ranker", 0.0)  # the pipeline without its ranker stage
        router = result["router"]
        ways = rank_ways(ranker, result["mmr"]["documents"], q.question, router["top_k"], tops)
        ways["routed"] = ways["on"] if router["rerank"] else ways["off"]
        row: dict[str, Any] = {"id": q.id, "intent": router["intent"], "rerank": router["rerank"], "ways": {}}
        for way, (docs, ms) in ways.items():
            metrics = question_metrics(passage_ranking(docs, PASSAGE_KEY), q.gold_ids)
            row["ways"][way] = {**{m: metrics[m] for m in METRICS}, "ms": base + ms, "rank_ms": ms}
        row["candidates"] = len(result["mmr"]["documents"])
        rows.append(row)
        if n % 20 == 0 or n == len(questions):
            print(f"  {evalset.name}: {n}/{len(questions)}, {time.perf_counter() - start:.0f} s", flush=True)
    return summarise(rows)


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    def block(subset: list[dict[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {"questions": len(subset)}
        for way in subset[0]["ways"]:
            vals = [r["ways"][way] for r in subset]
            out[way] = {m: round(float(np.mean([v[m] for v in vals])), 4) for m in METRICS}
            out[way].update({k: round(v, 1) for k, v in percentiles([v["ms"] for v in vals]).items()})
            out[way]["rank_p95_ms"] = round(percentiles([v["rank_ms"] for v in vals])["p95_ms"], 1)
        return out

    by_intent: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        by_intent[r["intent"]].append(r)
    return {
        "all": block(rows),
        "by_intent": {i: block(rs) for i, rs in sorted(by_intent.items())},
        "routed_rerank_share": round(float(np.mean([r["rerank"] for r in rows])), 3),
    }


def print_block(name: str, block: dict[str, Any]) -> None:
    print(f"  {name} ({block['questions']} q)")
    for way, v in block.items():
        if way == "questions":
            continue
        print(
            f"    {way:<10} R@10 {v['recall@10']:.3f} full@10 {v['full@10']:.3f} MRR {v['mrr']:.3f}  "
            f"p50/p95 {v['p50_ms']:.0f}/{v['p95_ms']:.0f} ms (ranking p95 {v['rank_p95_ms']:.0f} ms)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hotpot", default=None)
    parser.add_argument("--aragog", default=None)
    parser.add_argument("--corpus", action="append", default=[])
    parser.add_argument("--questions", default=None)
    parser.add_argument("--root", default=str(ROOT / ".adaptive" / "eval-gate-transfer"))
    parser.add_argument("--rerank-top", type=int, action="append", default=[], help="rerank the first N only")
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sets = []
    if args.hotpot:
        sets.append(load_hotpot(args.hotpot))
    if args.aragog:
        sets.append(load_aragog(args.aragog))
    if args.corpus and args.questions:
        sets.append(load_jsonl(args.corpus, args.questions, name=Path(args.questions).parent.name))
    if not sets:
        raise SystemExit("Give --hotpot, --aragog and/or --corpus/--questions")
    out = {}
    for evalset in sets:
        report = evaluate_set(evalset, Path(args.root), args.rerank_top, args.limit)
        out[evalset.name] = report
        print(f"[{evalset.name}] routed rerank share {report['routed_rerank_share']:.0%}")
        print_block("all", report["all"])
        for intent, block in report["by_intent"].items():
            print_block(intent, block)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
