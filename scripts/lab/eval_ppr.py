"""Does the graph-PPR channel reach 3- and 4-hop passages? Channel-level figures by hop count, a parameter grid for
choosing its settings on a training split, and how well the query's entities are linked to seed the walk.

The index is the one ``scripts/lab/evaluate.py`` caches for the same arguments
(``--corpus/--questions/--wiki2/--name``), so run that first. Per question the router, dense, sparse and
graph_local channels run once; each graph_ppr variant then runs on the same inputs, and the lists are fused by
the pipeline's ``WeightedRRFJoiner`` with the router's weights plus ``graph_ppr`` at ``--ppr-weight`` (a share of
the total), scored at k = 10 (no MMR or reranker).

    python scripts/lab/eval_ppr.py --corpus ../shared/data/musique_dev100/corpus.jsonl \\
        --questions ../shared/data/musique_dev100/questions.jsonl --wiki2 ../shared/data/wiki2_corpus \\
        --name musique --split train --grid "restart=0.3,0.5;similarity_weight=0.3,0.5"
    python scripts/lab/eval_ppr.py ... --split all --linking      # seed-linking precision/recall (MuSiQue)
    python scripts/lab/eval_ppr.py --musique musique_ans_v1.0_dev.jsonl --wiki2 ../shared/data/wiki2_corpus \
        --split all --linking                                  # MuSiQue as released, decompositions included

Seed linking (``--linking``, needs ``meta.decomposition`` in the questions): the entities a question names are
the subjects of its decomposition's ``X >> relation`` steps without ``#``; recall = share of them among the walk's
entity seeds; precision = share of seeds that are such an entity or the title (or title alias) of a gold passage.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import json
import logging
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document

from adaptive_retrieval.components.models import QueryEmbedding
from adaptive_retrieval.components.retrieval import GraphPPRRetriever
from adaptive_retrieval.components.stores import release_all_clients
from adaptive_retrieval.components.text import normalise_key, title_aliases
from evaluation.data import (
    EvalSet,
    Question,
    load_hotpot,
    load_jsonl,
    load_musique,
    load_wiki2,
    read_musique_records,
)
from evaluation.metrics import full_at_k, passage_ranking, recall_at_k
from evaluation.systems import AdaptiveSystem, eval_folder

ROOT = Path(__file__).resolve().parents[2]
INTEGER_SETTINGS = ("hops", "seed_hits", "chunks_per_entity", "expand_per_hop", "candidate_pool", "max_seeds")


@dataclass
class Inputs:
    """One question's channel inputs, computed once."""

    question: Question
    vector: QueryEmbedding  # the query embedder's `vector` (what the pipeline's channels take)
    route: dict[str, Any]
    lists: dict[str, list[Document]]


def parse_grid(text: str) -> list[dict[str, float]]:
    """``"a=1,2;b=3"`` → every combination as a dict (empty text: one empty dict)."""
    axes = []
    for part in filter(None, (p.strip() for p in text.split(";"))):
        name, values = part.split("=", 1)
        axes.append([(name.strip(), float(v)) for v in values.split(",")])
    return [dict(combo) for combo in itertools.product(*axes)] if axes else [{}]


def hop_table(rows: list[tuple[str, float, float]]) -> str:
    """``type: full@10 / R@10 (n)`` per question type and overall."""
    out = []
    for qtype in [*sorted({t for t, _, _ in rows}), "all"]:
        picked = [r for r in rows if qtype in ("all", r[0])]
        full = sum(r[1] for r in picked) / len(picked)
        rec = sum(r[2] for r in picked) / len(picked)
        out.append(f"{qtype} {full:.3f}/{rec:.3f} (n={len(picked)})")
    return "  ".join(out)


def named_entities(question: dict[str, Any]) -> set[str]:
    """Keys of the entities a MuSiQue decomposition names: subjects of ``X >> relation`` steps without ``#``."""
    names = set()
    for step in question.get("meta", {}).get("decomposition", []):
        if ">>" in step:
            subject = step.split(">>", 1)[0].strip()
            if "#" not in subject:
                names.add(normalise_key(subject))
    return names


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", action="append", default=[], help="JSONL corpus; repeatable")
    parser.add_argument("--questions")
    parser.add_argument("--hotpot", help="HotpotQA folder instead of --corpus/--questions")
    parser.add_argument("--musique", help="MuSiQue questions as released (JSONL or a JSON list) instead")
    parser.add_argument("--wiki2", help="2WikiMultihopQA corpus.json (or its folder) as distractors")
    parser.add_argument("--name", default=None)
    parser.add_argument("--split", choices=("all", "train", "held-out"), default="train")
    parser.add_argument("--held-out", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--grid", default="", help='graph_ppr settings to try, e.g. "restart=0.3,0.5;hops=2,3"')
    parser.add_argument("--ppr-weight", default="0.3", help="graph_ppr's share of the fused weights (comma list)")
    parser.add_argument("--linking", action="store_true", help="report seed-linking precision/recall")
    parser.add_argument("--root", default=str(ROOT / ".adaptive"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    if args.hotpot:
        evalset = load_hotpot(args.hotpot)
    elif args.musique:
        evalset = load_musique(args.musique, args.name)
    elif args.corpus and args.questions:
        evalset = load_jsonl(args.corpus, args.questions, name=args.name or Path(args.questions).stem)
    else:
        raise SystemExit("Give --hotpot, --musique, or --corpus and --questions.")
    if args.wiki2:
        evalset = evalset.with_distractors(load_wiki2(args.wiki2))
    if args.split != "all":
        train, held = evalset.split(args.held_out, args.seed)
        evalset = EvalSet(evalset.name, evalset.passages, train if args.split == "train" else held)
    raw = {}
    if args.musique:
        # The released format's decomposition steps, in the shape the JSONL questions carry them.
        for record in read_musique_records(args.musique):
            steps = [step["question"] for step in record.get("question_decomposition", [])]
            raw[str(record["id"])] = {"meta": {"decomposition": steps}}
    elif args.questions:
        with open(args.questions, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    row = json.loads(line)
                    raw[str(row["id"])] = row
    titles = {p.id: p.title for p in evalset.passages}

    adaptive = AdaptiveSystem(eval_folder(Path(args.root), evalset.name) / "adaptive", query_yaml="query_ppr")
    stats = adaptive.index(evalset)
    if not stats.get("cached"):
        print("[eval_ppr] the index was not cached: it was built now", file=sys.stderr)
    pipeline = adaptive.pipeline
    assert pipeline is not None
    get = pipeline.get_component
    embedder, sparse_embedder, router = get("query_embedder"), get("sparse_embedder"), get("router")
    dense, sparse, local, joiner = get("dense"), get("sparse"), get("graph_local"), get("joiner")
    base: GraphPPRRetriever = get("graph_ppr")

    inputs: list[Inputs] = []
    for q in evalset.questions:
        vector = embedder.run(text=q.question)["vector"]
        route = router.run(query=q.question, query_embedding=vector)
        fetch_k = route["fetch_k"]
        lists = {
            "dense": dense.run(query_embedding=vector, top_k=fetch_k)["documents"],
            "sparse": sparse.run(
                query_sparse_embedding=sparse_embedder.run(text=q.question)["sparse_embedding"], top_k=fetch_k
            )["documents"],
        }
        lists["graph_local"] = local.run(
            query=q.question, query_embedding=vector, top_k=fetch_k, nearest=lists["dense"]
        )["documents"]
        inputs.append(Inputs(q, vector, route, lists))
    print(f"{evalset.name}: {len(inputs)} questions ({args.split}), {len(evalset.passages)} passages")

    def fused_rows(weights_of: Any, extra: dict[int, list[Document]] | None = None) -> list[tuple[str, float, float]]:
        rows = []
        for i, item in enumerate(inputs):
            lists = dict(item.lists)
            if extra is not None:
                lists["graph_ppr"] = extra[i]
            weights = weights_of(item.route["weights"], lists)
            docs = joiner.run(weights=weights, **lists)["documents"]
            ranked = passage_ranking(docs)
            gold = item.question.gold_ids
            rows.append((item.question.type, full_at_k(ranked, gold, 10), recall_at_k(ranked, gold, 10)))
        return rows

    def router_only(w: dict[str, float], lists: dict[str, Any]) -> dict[str, float]:
        return {c: w.get(c, 0.0) for c in lists if c != "graph_ppr"}

    print(f"{'router (no graph_ppr)':58s} {hop_table(fused_rows(router_only))}")
    shares = [float(s) for s in args.ppr_weight.split(",")]
    for setting in parse_grid(args.grid):
        params = {k: (int(v) if k in INTEGER_SETTINGS else v) for k, v in setting.items()}
        ppr = copy.copy(base)
        for k, v in params.items():
            setattr(ppr, k, v)
        started = time.perf_counter()
        ms = []
        outs: dict[int, list[Document]] = {}
        for i, item in enumerate(inputs):
            t = time.perf_counter()
            outs[i] = ppr.retrieve(
                item.question.question, item.vector, item.route["fetch_k"], item.lists["dense"], item.lists["sparse"]
            )
            ms.append((time.perf_counter() - t) * 1000)
        ms.sort()
        alone = []
        for i, item in enumerate(inputs):
            ranked = passage_ranking(outs[i])
            gold = item.question.gold_ids
            alone.append((item.question.type, full_at_k(ranked, gold, 10), recall_at_k(ranked, gold, 10)))
        label = ",".join(f"{k}={v}" for k, v in params.items()) or "defaults"
        print(f"{'ppr alone ' + label:58s} {hop_table(alone)}  p50 {ms[len(ms) // 2]:.0f} ms")
        for share in shares:

            def with_ppr(w: dict[str, float], lists: dict[str, Any], share: float = share) -> dict[str, float]:
                kept = {c: w.get(c, 0.0) for c in lists if c != "graph_ppr"}
                total = sum(kept.values()) or 1.0
                return {**{c: v * (1 - share) / total for c, v in kept.items()}, "graph_ppr": share}

            print(f"{'  + router, share ' + str(share):58s} {hop_table(fused_rows(with_ppr, outs))}")
        del started

    if args.linking:
        ppr = base
        exact_only = copy.copy(base)
        exact_only.partial_weight = 0.0
        for name, retriever in (("exact", exact_only), ("exact+partial", ppr)):
            named_hit = named_total = seed_good = seed_total = 0
            for item in inputs:
                row = raw.get(item.question.id, {})
                named = named_entities(row)
                chain = {normalise_key(a) for g in item.question.gold_ids for a in title_aliases(titles[g])}
                hits = retriever.hit_seeds(item.lists["dense"], item.lists["sparse"])
                walk = retriever.walk(item.question.question, hits)
                seeds = set(walk.entity_seeds)
                named_total += len(named)
                named_hit += len(named & seeds)
                seed_total += len(seeds)
                seed_good += len(seeds & (named | chain))
            print(
                f"seed linking [{name}]: recall of decomposition-named entities {named_hit}/{named_total} = "
                f"{named_hit / max(named_total, 1):.3f}; precision of seeds (named or gold-title entity) "
                f"{seed_good}/{seed_total} = {seed_good / max(seed_total, 1):.3f}"
            )
    release_all_clients()


if __name__ == "__main__":
    main()
