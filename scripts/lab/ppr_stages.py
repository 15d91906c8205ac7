"""Where does a channel's gain go between the fused list and the final answer? full@10 at every stage of the
adaptive query pipeline, with and without ``graph_ppr``, by question type (hop count on MuSiQue).

Stages, per pipeline (the index is the one ``scripts/lab/evaluate.py`` caches for the same corpus arguments):

- ``fused``: the joiner's first 10 on the first attempt (what ``scripts/lab/eval_ppr.py`` scores);
- ``mmr``: MMR's first 10 on the first attempt;
- ``first``: the final list of the first attempt (after the ranker and StructuralFirst, no retry);
- ``final``: what the pipeline returns (with the quality gate's retries).

``--variant NAME:key=value,...`` adds pipelines with component attributes changed (``mmr.lambda_override=1``
sets every profile's MMR λ to 1; ``gate.max_retries=0``; ``graph_ppr.similarity_weight=0.5``; ...), all asked
on the same questions.

    python scripts/lab/ppr_stages.py --corpus ../shared/data/musique_dev100/corpus.jsonl \\
        --corpus ../shared/data/wiki2_corpus/corpus.json --questions ../shared/data/musique_dev100/questions.jsonl \\
        --name musique --query-yaml query_ppr --split train \
        --variant "ex20:graph_ppr.exclude_hits=20" --variant "share:router.relational.ppr_share=0.2"
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from evaluate import build_evalset, parse_args  # a sibling: the script's folder is first on sys.path
from haystack import Pipeline

from adaptive_retrieval.components.stores import release_all_clients
from adaptive_retrieval.pipelines import query_inputs
from evaluation.metrics import full_at_k, passage_ranking, recall_at_k
from evaluation.systems import AdaptiveSystem, eval_folder

STAGES = ("fused", "mmr", "first", "final")


def set_attributes(pipeline: Pipeline, settings: dict[str, str]) -> None:
    """``component.attribute=value`` settings; ``router.<intent>.<key>`` changes one profile entry (``*``: every
    intent; ``ppr_share``: graph_ppr's share of the weights), and ``mmr.lambda_override`` sets every profile's MMR
    λ."""
    for key, raw in settings.items():
        value: Any = float(raw) if raw.replace(".", "", 1).isdigit() else raw
        parts = key.split(".")
        if parts[0] == "mmr" and parts[1] == "lambda_override":
            for profile in pipeline.get_component("router").profiles.values():
                profile["mmr_lambda"] = float(value)
            continue
        if parts[0] == "router" and len(parts) == 3:
            profiles = pipeline.get_component("router").profiles
            targets = profiles.values() if parts[1] == "*" else [profiles[parts[1]]]
            for profile in targets:
                if parts[2] == "ppr_share":  # graph_ppr's share of the weights, the others scaled in proportion
                    others = {c: w for c, w in profile["weights"].items() if c != "graph_ppr"}
                    total = sum(others.values()) or 1.0
                    profile["weights"] = {**{c: w * (1 - value) / total for c, w in others.items()}}
                    profile["weights"]["graph_ppr"] = value
                else:
                    profile[parts[2]] = value
            continue
        component = pipeline.get_component(parts[0])
        current = getattr(component, parts[1])
        if isinstance(current, list):
            value = [v for v in str(raw).split("+") if v]
        elif current is not None:
            value = type(current)(value)
        setattr(component, parts[1], value)


def stage_lists(
    pipeline: Pipeline, question: str, final_only: bool = False
) -> tuple[dict[str, list[str]], dict[str, Any]]:
    """Ranked passage ids at each stage of the first attempt and at the end (``final_only``: the end only, one
    run; the other stages repeat it)."""
    if final_only:
        out = pipeline.run(query_inputs(pipeline, question), include_outputs_from={"router", "gate"})
        ranked = passage_ranking(out["gate"]["documents"])
        info = {"intent": out["router"]["intent"], "attempt": out["gate"]["attempt"]}
        info["attempts"] = len(out["gate"]["attempts"])
        return dict.fromkeys(STAGES, ranked), info
    gate = pipeline.get_component("gate")
    keep = gate.max_retries
    outputs = {"router", "joiner", "mmr", "gate"}
    try:
        gate.max_retries = 0
        first = pipeline.run(query_inputs(pipeline, question), include_outputs_from=outputs)
    finally:
        gate.max_retries = keep
    lists = {
        "fused": passage_ranking(first["joiner"]["documents"]),
        "mmr": passage_ranking(first["mmr"]["documents"]),
        "first": passage_ranking(first["gate"]["documents"]),
    }
    info = {"intent": first["router"]["intent"], "decision0": first["gate"]["decision"]}
    if keep:
        final = pipeline.run(query_inputs(pipeline, question), include_outputs_from={"gate"})
        lists["final"] = passage_ranking(final["gate"]["documents"])
        info["attempt"] = final["gate"]["attempt"]
        info["attempts"] = len(final["gate"]["attempts"])
    else:
        lists["final"] = lists["first"]
        info["attempt"] = 0
        info["attempts"] = 1
    return lists, info


def main() -> None:
    pre = argparse.ArgumentParser(add_help=False)
    pre.add_argument("--variant", action="append", default=[])
    pre.add_argument("--no-base", action="store_true", help="skip the with/without graph_ppr pair")
    pre.add_argument("--final-only", action="store_true", help="score the final list only (one run per question)")
    pre.add_argument("--per-question", help="write per-question stage hits (JSON) here")
    own, rest = pre.parse_known_args()
    args = parse_args(rest)
    logging.basicConfig(level=logging.WARNING)
    evalset = build_evalset(args)
    adaptive = AdaptiveSystem(eval_folder(Path(args.root), evalset.name) / "adaptive", query_yaml=args.query_yaml)
    stats = adaptive.index(evalset)
    if not stats.get("cached"):
        print("[stages] the index was not cached: it was built now", file=sys.stderr)
    pipelines: dict[str, Pipeline] = {}
    if not own.no_base:
        pipelines["with graph_ppr"] = adaptive.pipeline
        pipelines["without"] = adaptive.load_query(drop_channels=("graph_ppr",))
    for spec in own.variant:
        name, _, body = spec.partition(":")
        drop = ()
        settings = {}
        for item in filter(None, body.split(",")):
            k, v = item.split("=", 1)
            if k == "drop":
                drop = (v,)
            else:
                settings[k] = v
        p = adaptive.load_query(drop_channels=drop)
        set_attributes(p, settings)
        pipelines[name] = p
    types = sorted({q.type for q in evalset.questions})
    full: dict[str, dict[str, list[tuple[str, float, float]]]] = {n: defaultdict(list) for n in pipelines}
    intents: dict[str, Counter] = {n: Counter() for n in pipelines}
    retries: dict[str, Counter] = {n: Counter() for n in pipelines}
    per_q: list[dict[str, Any]] = []
    for i, q in enumerate(evalset.questions, 1):
        row: dict[str, Any] = {"id": q.id, "type": q.type}
        for name, p in pipelines.items():
            lists, info = stage_lists(p, q.question, own.final_only)
            intents[name][info["intent"]] += 1
            retries[name][f"attempts={info['attempts']},kept={info['attempt']}"] += 1
            for stage in STAGES:
                ranked = lists[stage]
                full[name][stage].append(
                    (q.type, full_at_k(ranked, q.gold_ids, 10), recall_at_k(ranked, q.gold_ids, 10))
                )
            row[name] = {s: full[name][s][-1][1] for s in STAGES} | {"intent": info["intent"]}
        per_q.append(row)
        if i % 10 == 0:
            print(f"[stages] {i}/{len(evalset.questions)}", file=sys.stderr, flush=True)
    print(f"{evalset.name}: {len(evalset.questions)} questions ({args.split}); full@10 / recall@10")
    print("| pipeline | stage | all | " + " | ".join(types) + " |")
    print("|---|---|---|" + "---|" * len(types))
    for name in pipelines:
        for stage in STAGES:
            rows = full[name][stage]
            cells = []
            for t in ["all", *types]:
                picked = [r for r in rows if t in ("all", r[0])]
                cells.append(
                    f"{sum(r[1] for r in picked) / len(picked):.3f} / {sum(r[2] for r in picked) / len(picked):.3f}"
                )
            print(f"| {name} | {stage} | " + " | ".join(cells) + " |")
    for name in pipelines:
        print(f"{name}: intents {dict(intents[name])}; attempts {dict(retries[name])}")
    if own.per_question:
        import json

        Path(own.per_question).write_text(json.dumps(per_q, indent=1))
    release_all_clients()


if __name__ == "__main__":
    main()
