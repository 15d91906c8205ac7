"""Where the router sends each type of question: a confusion table of question type × routed intent, no index needed.

    python scripts/lab/eval_routing.py --corpus DATA/dragonball_law_en/corpus.jsonl \
        --questions DATA/dragonball_law_en/questions.jsonl --name law
    python scripts/lab/eval_routing.py --hotpot DATA/hotpotqa100 --aragog DATA/aragog --json routing.json
    python scripts/lab/eval_routing.py --all-dev DATA     # every development set (evaluation/dev_sets.py)

Every question is embedded with the shipped model and routed by the ``IntentRouter`` of ``yaml/query.yaml`` (its
rules, exemplars and profiles, soft routing as shipped). Printed per set: the count of each (type, top intent)
pair with how many took the fallback profile and why (a plain search, or low confidence), the share of the
routing probability each type gives each intent (the soft mix the strategy is made of), and the mean channel
weights each type ends up with. Routing takes no retrieval, so this runs in seconds; the
quality each routing decision leads to is ``scripts/lab/evaluate.py``'s (its report has the same table).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from adaptive_retrieval.components.models import OnnxTextEmbedder
from adaptive_retrieval.components.routing import IntentRouter
from adaptive_retrieval.pipelines import resolve_yaml
from evaluation.data import EvalSet, add_jsonl_arguments, jsonl_evalset, load_aragog, load_hotpot
from evaluation.dev_sets import available_dev_sets


def shipped_router(query_yaml: str) -> IntentRouter:
    """The router of a query-pipeline YAML, built from its init parameters alone (no store is opened)."""
    from haystack.core.serialization import component_from_dict
    from haystack.marshal import YamlMarshaller

    data = YamlMarshaller().unmarshal(resolve_yaml(query_yaml).read_text(encoding="utf-8"))
    for name, component in data["components"].items():
        if component.get("type", "").endswith("IntentRouter"):
            return component_from_dict(IntentRouter, component, name)
    raise SystemExit(f"{query_yaml}: no IntentRouter")


def route_set(evalset: EvalSet, router: IntentRouter, embedder: OnnxTextEmbedder) -> dict[str, Any]:
    """Route every question of ``evalset``: counts, probability mass and mean weights per question type."""
    counts: dict[str, Counter] = defaultdict(Counter)
    mass: dict[str, Counter] = defaultdict(Counter)
    weights: dict[str, Counter] = defaultdict(Counter)
    per_type: Counter = Counter()
    fallback: dict[str, Counter] = defaultdict(Counter)
    for q in evalset.questions:
        out = router.run(query=q.question, query_embedding=embedder.run(text=q.question)["vector"])
        counts[q.type][out["intent"]] += 1
        per_type[q.type] += 1
        reason = out["routing"].get("fallback")
        fallback[q.type]["low confidence" if reason == "low confidence" else "plain search" if reason else "mix"] += 1
        for intent, p in out["routing"]["probabilities"].items():
            mass[q.type][intent] += p
        for channel, w in out["weights"].items():
            weights[q.type][channel] += w
    return {
        "questions": len(evalset.questions),
        "counts": {t: dict(c) for t, c in sorted(counts.items())},
        "fallback": {t: dict(c) for t, c in sorted(fallback.items())},
        "probability_share": {t: {i: round(v / per_type[t], 3) for i, v in mass[t].items()} for t in sorted(mass)},
        "mean_weights": {t: {c: round(v / per_type[t], 3) for c, v in weights[t].items()} for t in sorted(weights)},
    }


def markdown(name: str, result: dict[str, Any], intents: list[str]) -> str:
    lines = [f"### {name}: {result['questions']} questions, question type × routed (top) intent", ""]
    head = " | ".join(intents) + " | n | fallback: plain search / low confidence"
    lines += ["| type | " + head + " |", "|" + "---|" * (len(intents) + 3)]
    for qtype, row in result["counts"].items():
        cells = " | ".join(str(row.get(i, 0)) for i in intents)
        fell = result["fallback"].get(qtype, {})
        taken = f"{fell.get('plain search', 0)} / {fell.get('low confidence', 0)}"
        lines.append(f"| {qtype} | {cells} | {sum(row.values())} | {taken} |")
    lines += ["", "share of the routing probability (the soft mix):", ""]
    lines += ["| type | " + " | ".join(intents) + " |", "|" + "---|" * (len(intents) + 1)]
    for qtype, row in result["probability_share"].items():
        lines.append(f"| {qtype} | " + " | ".join(f"{row.get(i, 0.0):.2f}" for i in intents) + " |")
    channels = sorted({c for row in result["mean_weights"].values() for c in row})
    lines += ["", "mean channel weights:", "", "| type | " + " | ".join(channels) + " |"]
    lines.append("|" + "---|" * (len(channels) + 1))
    for qtype, row in result["mean_weights"].items():
        lines.append(f"| {qtype} | " + " | ".join(f"{row.get(c, 0.0):.2f}" for c in channels) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--all-dev", metavar="DATA", help="every development set under DATA")
    parser.add_argument("--hotpot", help="HotpotQA folder")
    parser.add_argument("--aragog", help="ARAGOG folder")
    add_jsonl_arguments(parser)
    parser.add_argument("--query-yaml", default="query", help="query pipeline YAML whose router is used")
    parser.add_argument("--json", help="write the tables here")
    args = parser.parse_args(argv)
    sets: list[EvalSet] = []
    if args.all_dev:
        sets += [d.load(Path(args.all_dev)) for d in available_dev_sets(Path(args.all_dev))]
    if args.hotpot:
        sets.append(load_hotpot(args.hotpot))
    if args.aragog:
        sets.append(load_aragog(args.aragog))
    if args.corpus or args.questions:
        sets.append(jsonl_evalset(args.corpus, args.questions, args.name))
    if not sets:
        raise SystemExit("Give --all-dev, --hotpot, --aragog and/or --corpus/--questions")
    router = shipped_router(args.query_yaml)
    embedder = OnnxTextEmbedder(model=router.model, precision=router.precision, return_list=False)
    embedder.warm_up()
    router.warm_up()
    report = {"command": "python scripts/lab/eval_routing.py " + " ".join(sys.argv[1:] if argv is None else argv)}
    for evalset in sets:
        report[evalset.name] = route_set(evalset, router, embedder)
        print(markdown(evalset.name, report[evalset.name], list(router.intents)))
        print()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
