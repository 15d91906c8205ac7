"""Retrieval quality of stock Haystack baselines and the adaptive pipeline, side by side in one run.

    python scripts/lab/evaluate.py --hotpot ../shared/data/hotpotqa100 --json eval-hotpot.json
    python scripts/lab/evaluate.py --hotpot ../shared/data/hotpotqa100 --wiki2 ../shared/data/wiki2_corpus
    python scripts/lab/evaluate.py --aragog ../shared/data/aragog --json eval-aragog.json
    python scripts/lab/evaluate.py --musique musique_ans_v1.0_dev.jsonl --wiki2 ../shared/data/wiki2_corpus
    python scripts/lab/evaluate.py --corpus a.jsonl --corpus b.jsonl --questions q.jsonl --json out.json
    python scripts/lab/evaluate.py --corpus ../shared/data/musique_dev100/corpus.jsonl \
        --corpus ../shared/data/wiki2_corpus/corpus.json --questions ../shared/data/musique_dev100/questions.jsonl \
        --name musique --systems stock_hybrid_rrf,adaptive --drop-channel graph_ppr

Systems: stock_bm25, stock_dense, stock_hybrid_rrf, stock_hybrid_mmr (Haystack's InMemory retrievers,
sentence-transformers embedders and diversity ranker on the packaged all-MiniLM-L6-v2) and adaptive
(yaml/indexing.yaml + yaml/query.yaml over a Qdrant folder under .adaptive/eval-<name>, cached per corpus).
Per system: recall@5, recall@10, full@10, mrr, ndcg@10 over passage ids, p50/p95 wall ms per query (systems run
in turn on each question, so load on the machine affects them alike), and the same per question type. For the
adaptive system the routed intent of every question is tallied against the question type (confusion matrix).
``--drop-channel C`` adds the system ``adaptive_no_C``: the same pipeline and index without channel ``C``, asked
in the same run. ``--fixed-profile [FILE]`` adds ``adaptive_fixed``: the same pipeline with one profile for every
query (the packaged ``fixed_profile`` that ``scripts/lab/calibrate_profiles.py --fixed --write`` fitted on the routed
profiles' training questions, or the one in FILE), the peer that routing has to beat. Question types such as
MuSiQue's 2hop/3hop/4hop get a compact full@10 / recall@10 table with
the ratio to the stock RRF hybrid. With both adaptive and the stock RRF hybrid asked, the report also counts the
questions only one of them fully supports and gives 95 % bootstrap intervals (over the questions) of the full@10
ratio and of adaptive's full@10 per type: on 100 questions one question moves full@10 by 0.01. ``--musique`` reads
MuSiQue as released (the paragraphs of its questions are the corpus). A ``--corpus`` file ending in ``.json`` (or
a folder holding ``corpus.json``) is a 2WikiMultihopQA-style ``[{title, text}]`` list added as distractors,
exactly as ``--wiki2`` adds it.

``--all-dev DATA`` runs every development set found under DATA (``evaluation/dev_sets.py``: hotpotqa100,
musique_dev100 with the 2Wiki distractors, dragonball_law_en's answerable questions, ARAGOG, MEDLINE, CACM, TIME,
LISA, ADI; ``--sets`` picks some) for the stock hybrid, adaptive and adaptive with the packaged fixed profile, and
prints one table: each set's quality metrics with 95 % bootstrap intervals, the ratios to the stock hybrid and
the p50s (``--json``: the table and every set's report). Indexes are cached under ``--root``, so a rerun only asks
the questions. ``--query-style lower|terms`` asks every system each question rewritten (lower case; its content words
only: ``evaluation/query_styles.py``), as collections the package never sees write their needs.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from adaptive_retrieval.components.stores import release_all_clients
from adaptive_retrieval.pipelines import QueryResult
from adaptive_retrieval.pipelines.processes import limit_blas_threads
from evaluation.all_dev import markdown_table, table_rows
from evaluation.data import (
    EvalSet,
    add_jsonl_arguments,
    jsonl_evalset,
    load_aragog,
    load_hotpot,
    load_musique,
    load_wiki2,
)
from evaluation.dev_sets import available_dev_sets
from evaluation.metrics import (
    BOOTSTRAP_RESAMPLES,
    METRICS,
    aggregate,
    bootstrap_interval,
    percentiles,
    question_metrics,
)
from evaluation.query_styles import STYLES, restyle
from evaluation.systems import (
    ADAPTIVE,
    ALL_SYSTEMS,
    STOCK_SYSTEMS,
    AdaptiveSystem,
    StockSystems,
    eval_folder,
    read_fixed_profile,
)

ROOT = Path(__file__).resolve().parents[2]
WARMUP_QUESTIONS = 3


def build_evalset(args: argparse.Namespace) -> EvalSet:
    """The evaluation set the arguments describe (exactly one source, plus optional distractors)."""
    sources = [bool(args.corpus or args.questions), bool(args.hotpot), bool(args.aragog), bool(args.musique)]
    if sum(sources) != 1:
        raise SystemExit("Give exactly one of --corpus/--questions, --hotpot, --aragog or --musique.")
    if args.corpus or args.questions:
        evalset = jsonl_evalset(args.corpus, args.questions, args.name)
    elif args.hotpot:
        evalset = load_hotpot(args.hotpot)
    elif args.musique:
        evalset = load_musique(args.musique, args.name)
    else:
        evalset = load_aragog(args.aragog)
    if args.wiki2:
        evalset = evalset.with_distractors(load_wiki2(args.wiki2, limit=args.wiki2_limit))
    if args.split != "all":
        # The same deterministic split scripts/lab/calibrate_profiles.py fits on: report on questions it never saw.
        train, held_out = evalset.split(args.held_out, args.seed)
        evalset = EvalSet(evalset.name, evalset.passages, held_out if args.split == "held-out" else train)
    if args.limit:
        evalset = EvalSet(evalset.name, evalset.passages, evalset.questions[: args.limit])
    if not evalset.questions:
        raise SystemExit(f"{evalset.name}: no questions to evaluate")
    return restyle(evalset, args.query_style)


def evaluate(
    evalset: EvalSet,
    systems: list[str],
    root: Path,
    top_k: int = 10,
    fetch_k: int = 20,
    mmr_lambda: float = 0.5,
    query_yaml: str = "query",
    indexing_yaml: str = "indexing",
    use_cache: bool = True,
    log: Any = print,
    split: str = "all",
    joiner_k: int | None = None,
    drop_channels: list[str] | None = None,
    fixed_profile: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Index ``evalset`` for every system, ask every question of every system in turn, and aggregate."""
    unknown = sorted(set(systems) - set(ALL_SYSTEMS))
    if unknown:
        raise SystemExit(f"Unknown system(s) {unknown}; choose from {list(ALL_SYSTEMS)}")
    folder = eval_folder(root, evalset.name)
    indexing: dict[str, Any] = {}
    stock = None
    adaptive = None
    variants: dict[str, Any] = {}
    if any(s in STOCK_SYSTEMS for s in systems):
        stock = StockSystems(
            top_k=top_k, fetch_k=fetch_k, mmr_lambda=mmr_lambda, cache_dir=folder if use_cache else None
        )
        log(f"[index] stock: {len(evalset.passages)} passages ...")
        indexing["stock"] = stock.index(evalset)
        log(f"[index] stock: {indexing['stock']}")
    if ADAPTIVE in systems:
        adaptive = AdaptiveSystem(folder / "adaptive", query_yaml=query_yaml, indexing_yaml=indexing_yaml)
        log(f"[index] adaptive: {len(evalset.passages)} passages ...")
        indexing[ADAPTIVE] = adaptive.index(evalset, force=not use_cache)
        log(f"[index] adaptive: {indexing[ADAPTIVE]}")
        variants = adaptive_variants(adaptive, drop_channels or [], fixed_profile, joiner_k)
    elif drop_channels or fixed_profile is not None:
        raise SystemExit("--drop-channel and --fixed-profile need the adaptive system")
    systems = [*systems, *(v for v in variants if v != ADAPTIVE)]

    def ask(system: str, question: str) -> tuple[list[str], float, QueryResult | None]:
        if system in variants:
            assert adaptive is not None
            return adaptive.search(question, variants[system])
        assert stock is not None
        ranked, ms = stock.search(system, question)
        return ranked, ms, None

    for q in evalset.questions[:WARMUP_QUESTIONS]:
        for system in systems:
            ask(system, q.question)

    rows: dict[str, list[dict[str, float]]] = defaultdict(list)
    latencies: dict[str, list[float]] = defaultdict(list)
    stage_ms: dict[str, list[float]] = defaultdict(list)
    per_question: list[dict[str, Any]] = []
    confusion: dict[str, Counter] = defaultdict(Counter)
    start = time.perf_counter()
    for n, q in enumerate(evalset.questions, 1):
        record: dict[str, Any] = {"id": q.id, "type": q.type, "gold": list(q.gold_ids), "systems": {}}
        for system in systems:
            ranked, ms, result = ask(system, q.question)
            metrics = question_metrics(ranked, q.gold_ids)
            rows[system].append(metrics)
            latencies[system].append(ms)
            entry: dict[str, Any] = {"top10": ranked[:10], "ms": round(ms, 2), **metrics}
            if result is not None:
                entry["intent"] = result.intent
                entry["confidence"] = result.confidence
                entry["attempts"] = len(result.gate.attempts) if result.gate else 1
                entry["gate"] = result.gate.decision if result.gate else None
            if result is not None and system == ADAPTIVE:
                confusion[q.type][result.intent] += 1
                entry["probabilities"] = result.routing.get("probabilities")
                for stage, value in result.timings_ms.items():
                    stage_ms[stage].append(value)
            record["systems"][system] = entry
        per_question.append(record)
        if n % 20 == 0 or n == len(evalset.questions):
            log(f"[eval] {n}/{len(evalset.questions)} questions, {time.perf_counter() - start:.0f} s")

    types = [q.type for q in evalset.questions]
    report: dict[str, Any] = {
        "dataset": evalset.name,
        "passages": len(evalset.passages),
        "questions": len(evalset.questions),
        "split": split,
        "machine": machine(),
        "settings": {"top_k": top_k, "fetch_k": fetch_k, "stock_mmr_lambda": mmr_lambda, "joiner_k": joiner_k},
        "indexing": indexing,
        "systems": {s: aggregate(rows[s], types, latencies[s]) for s in systems},
        "per_question": per_question,
    }
    if adaptive is not None:
        report["routing"] = {"confusion": {t: dict(c) for t, c in sorted(confusion.items())}}
        report["adaptive_stages"] = {stage: percentiles(v) for stage, v in stage_ms.items()}
    report["targets"] = targets(report["systems"])
    report["by_hop"] = by_type_table(report["systems"])
    report["uncertainty"] = uncertainty(per_question)
    return report


def adaptive_variants(
    adaptive: AdaptiveSystem, drop_channels: list[str], fixed_profile: dict[str, Any] | None, joiner_k: int | None
) -> dict[str, Any]:
    """The adaptive pipeline and its variants over the same index: without each of ``drop_channels``
    (``adaptive_no_<channel>``), with ``fixed_profile`` for every query (``adaptive_fixed``); ``joiner_k`` sets the
    RRF constant of all of them (a plain attribute of the joiner: swept without editing the YAML)."""
    variants = {ADAPTIVE: adaptive.pipeline}
    for channel in drop_channels:
        variants[f"{ADAPTIVE}_no_{channel}"] = adaptive.load_query(drop_channels=(channel,))
    if fixed_profile is not None:
        variants[f"{ADAPTIVE}_fixed"] = adaptive.load_query(fixed_profile=fixed_profile)
    if joiner_k is not None:
        for pipeline in variants.values():
            pipeline.get_component("joiner").k = joiner_k
    return variants


def uncertainty(per_question: list[dict[str, Any]], baseline: str = "stock_hybrid_rrf") -> dict[str, Any]:
    """How firmly the questions pin adaptive's full@10 against ``baseline``: the questions only one of them fully
    supports, the 95 % bootstrap interval of the ratio of their full@10, and of adaptive's full@10 per type."""
    if not per_question or not {ADAPTIVE, baseline} <= set(per_question[0]["systems"]):
        return {}
    ours = [q["systems"][ADAPTIVE]["full@10"] for q in per_question]
    theirs = [q["systems"][baseline]["full@10"] for q in per_question]
    out: dict[str, Any] = {
        "baseline": baseline,
        "only_adaptive_full": sum(1 for a, b in zip(ours, theirs, strict=True) if a and not b),
        "only_baseline_full": sum(1 for a, b in zip(ours, theirs, strict=True) if b and not a),
        "full@10_ratio_95": bootstrap_interval(ours, theirs),
        "adaptive_full@10_95": {"all": bootstrap_interval(ours)},
    }
    for qtype in sorted({q["type"] for q in per_question}):
        values = [a for a, q in zip(ours, per_question, strict=True) if q["type"] == qtype]
        out["adaptive_full@10_95"][qtype] = bootstrap_interval(values)
    return out


def by_type_table(systems: dict[str, Any], baseline: str = "stock_hybrid_rrf") -> dict[str, Any]:
    """full@10 and recall@10 per question type (hop count on MuSiQue) for every system, with each system's full@10
    relative to ``baseline`` per type and overall."""
    table: dict[str, Any] = {}
    for name, s in systems.items():
        row: dict[str, Any] = {"all": {"full@10": s["full@10"], "recall@10": s["recall@10"], "n": s["n"]}}
        for qtype, entry in s["by_type"].items():
            row[qtype] = {"full@10": entry["full@10"], "recall@10": entry["recall@10"], "n": entry["n"]}
        if baseline in systems and name != baseline:
            base = systems[baseline]
            bases = {"all": base, **base["by_type"]}
            for key, cell in row.items():
                b = bases.get(key, {}).get("full@10")
                cell["full@10_vs_" + baseline] = cell["full@10"] / b if b else None
        table[name] = row
    return table


def targets(systems: dict[str, Any]) -> dict[str, Any]:
    """The issue's targets: adaptive full@10 vs the best stock system, and p50 vs the stock RRF hybrid."""
    stock = {s: v for s, v in systems.items() if s in STOCK_SYSTEMS}
    if ADAPTIVE not in systems or not stock:
        return {}
    best = max(stock, key=lambda s: stock[s]["full@10"])
    ours = systems[ADAPTIVE]
    out: dict[str, Any] = {"best_stock": best, "best_stock_full@10": stock[best]["full@10"]}
    if stock[best]["full@10"] > 0:
        out["full@10_relative_gain"] = ours["full@10"] / stock[best]["full@10"] - 1
    if "stock_hybrid_rrf" in systems:
        out["p50_vs_stock_hybrid_rrf"] = ours["p50_ms"] / systems["stock_hybrid_rrf"]["p50_ms"]
    return out


def machine() -> dict[str, Any]:
    """What the numbers were measured on."""
    info: dict[str, Any] = {
        "cpus": os.cpu_count(),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }
    try:
        import torch

        info["gpu"] = torch.cuda.get_device_name() if torch.cuda.is_available() else None
    except ImportError:
        info["gpu"] = None
    return info


def markdown(report: dict[str, Any]) -> str:
    """Markdown tables: all questions, then per question type, then the routing confusion matrix."""
    head = ["system", *METRICS, "p50 ms", "p95 ms"]
    lines = [
        f"### {report['dataset']}: {report['questions']} questions ({report.get('split', 'all')}), "
        f"{report['passages']} passages",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for name, s in report["systems"].items():
        values = [f"{s[m]:.3f}" for m in METRICS] + [f"{s['p50_ms']:.0f}", f"{s['p95_ms']:.0f}"]
        lines.append(f"| {name} | " + " | ".join(values) + " |")
    types = sorted({t for s in report["systems"].values() for t in s["by_type"]})
    if len(types) > 1:
        for qtype in types:
            lines += ["", f"{qtype} questions:", "", "| system | " + " | ".join(METRICS) + " |"]
            lines.append("|" + "---|" * (len(METRICS) + 1))
            for name, s in report["systems"].items():
                entry = s["by_type"].get(qtype)
                if entry:
                    lines.append(f"| {name} | " + " | ".join(f"{entry[m]:.3f}" for m in METRICS) + " |")
    by_hop = report.get("by_hop") or {}
    if len(types) > 1 and by_hop:
        cols = ["all", *types]
        lines += ["", "full@10 / recall@10 by question type (× stock_hybrid_rrf full@10):", ""]
        lines.append("| system | " + " | ".join(f"{c} (n={by_hop[next(iter(by_hop))][c]['n']})" for c in cols) + " |")
        lines.append("|" + "---|" * (len(cols) + 1))
        for name, row in by_hop.items():
            cells = []
            for c in cols:
                cell = row.get(c)
                if not cell:
                    cells.append("")
                    continue
                ratio = cell.get("full@10_vs_stock_hybrid_rrf")
                extra = f" ({ratio:.2f}×)" if ratio is not None else ""
                cells.append(f"{cell['full@10']:.3f} / {cell['recall@10']:.3f}{extra}")
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
        for name, s in report["systems"].items():
            lines.append(f"p50 {name}: {s['p50_ms']:.0f} ms")
    u = report.get("uncertainty") or {}
    if u:
        low, high = u["full@10_ratio_95"]
        per_type = ", ".join(f"{t} {lo:.2f}–{hi:.2f}" for t, (lo, hi) in u["adaptive_full@10_95"].items())
        lines += [
            "",
            f"full support only by adaptive: {u['only_adaptive_full']} questions; only by {u['baseline']}: "
            f"{u['only_baseline_full']}",
            f"95 % bootstrap intervals ({BOOTSTRAP_RESAMPLES:,} resamples of the questions): full@10 ratio "
            f"{low:.2f}–{high:.2f}×; "
            f"adaptive full@10 {per_type}",
        ]
    if report.get("routing"):
        confusion = report["routing"]["confusion"]
        intents = sorted({i for row in confusion.values() for i in row})
        lines += ["", "routing (question type x routed intent):", "", "| type | " + " | ".join(intents) + " |"]
        lines.append("|" + "---|" * (len(intents) + 1))
        for qtype, row in confusion.items():
            lines.append(f"| {qtype} | " + " | ".join(str(row.get(i, 0)) for i in intents) + " |")
    t = report.get("targets") or {}
    if t:
        lines.append("")
        if "full@10_relative_gain" in t:
            lines.append(
                f"adaptive full@10 vs best stock ({t['best_stock']}, {t['best_stock_full@10']:.3f}): "
                f"{t['full@10_relative_gain']:+.1%} (target >= +10%)"
            )
        if "p50_vs_stock_hybrid_rrf" in t:
            lines.append(f"adaptive p50 / stock_hybrid_rrf p50: {t['p50_vs_stock_hybrid_rrf']:.2f}x (target <= 1.5x)")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_jsonl_arguments(parser)
    parser.add_argument(
        "--all-dev",
        metavar="DATA",
        help="every development set under DATA: stock hybrid, adaptive and the fixed profile, one table",
    )
    parser.add_argument("--sets", help="--all-dev: only these sets (comma-separated names, e.g. medline,time)")
    parser.add_argument("--hotpot", help="HotpotQA folder (corpus.json + questions.json)")
    parser.add_argument("--aragog", help="ARAGOG folder (questions.json + papers/)")
    parser.add_argument(
        "--musique", help="MuSiQue questions as released (JSONL, or a JSON list): their paragraphs are the corpus"
    )
    parser.add_argument("--wiki2", help="2WikiMultihopQA corpus.json (or its folder) to add as distractors")
    parser.add_argument("--wiki2-limit", type=int, default=None, help="use the first N distractor passages")
    parser.add_argument("--limit", type=int, default=None, help="evaluate the first N questions only")
    parser.add_argument(
        "--split",
        choices=("all", "train", "held-out"),
        default="all",
        help="questions to ask: all, or one side of calibrate_profiles.py's split (--held-out, --seed)",
    )
    parser.add_argument("--held-out", type=float, default=0.3, help="held-out fraction of that split")
    parser.add_argument("--seed", type=int, default=0, help="seed of that split")
    parser.add_argument("--systems", default=",".join(ALL_SYSTEMS), help="comma-separated subset of systems")
    parser.add_argument("--top-k", type=int, default=10, help="chunks the stock systems return")
    parser.add_argument("--fetch-k", type=int, default=20, help="candidates per retriever in the stock hybrids")
    parser.add_argument("--stock-mmr-lambda", type=float, default=0.5, help="λ of the stock diversity ranker")
    parser.add_argument("--query-yaml", default="query")
    parser.add_argument("--joiner-k", type=int, default=None, help="override the query pipeline's RRF constant")
    parser.add_argument("--indexing-yaml", default="indexing")
    parser.add_argument(
        "--drop-channel",
        action="append",
        default=[],
        help="also ask the adaptive pipeline without this channel (system adaptive_no_<channel>); repeatable",
    )
    fixed = "also ask the pipeline with one profile for every query (adaptive_fixed): the packaged one, or FILE's"
    parser.add_argument("--fixed-profile", nargs="?", const="packaged", metavar="FILE", help=fixed)
    parser.add_argument(
        "--query-style",
        choices=list(STYLES),
        default="as-written",
        help="ask every question (of every system) rewritten so: lower case, or its content words only "
        "(evaluation/query_styles.py)",
    )
    parser.add_argument("--root", default=str(ROOT / ".adaptive"), help="where the evaluation indexes live")
    parser.add_argument("--no-cache", action="store_true", help="re-index even when a cached index matches")
    parser.add_argument("--json", help="write the full report (with per-question results) here")
    return parser.parse_args(argv)


def all_dev(args: argparse.Namespace, command: str) -> dict[str, Any]:
    """``--all-dev``: every development set for the stock hybrid, adaptive and the fixed profile; one table."""
    if any((args.corpus, args.questions, args.hotpot, args.aragog, args.musique, args.wiki2)):
        raise SystemExit("--all-dev reads every set from its data folder: give no other data option.")
    if args.split != "all" or args.limit:
        raise SystemExit("--all-dev asks every question of every set (no --split or --limit).")
    data = Path(args.all_dev).expanduser()
    dev_sets = available_dev_sets(data, [s for s in (args.sets or "").split(",") if s] or None)
    fixed = read_fixed_profile(args.fixed_profile or "packaged")
    log = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
    reports: dict[str, Any] = {}
    try:
        for dev_set in dev_sets:
            log(f"[all-dev] {dev_set.name} ({dev_set.kind})")
            report = evaluate(
                restyle(dev_set.load(data), args.query_style),
                ["stock_hybrid_rrf", ADAPTIVE],
                Path(args.root),
                top_k=args.top_k,
                fetch_k=args.fetch_k,
                query_yaml=args.query_yaml,
                indexing_yaml=args.indexing_yaml,
                use_cache=not args.no_cache,
                log=log,
                joiner_k=args.joiner_k,
                fixed_profile=fixed,
            )
            reports[dev_set.name] = (dev_set, report)
            log(markdown_table(table_rows({dev_set.name: reports[dev_set.name]})))
    finally:
        release_all_clients()
    rows = table_rows(reports)
    print(f"### Every development set: {command}\n")
    print(markdown_table(rows))
    out = {
        "command": command,
        "machine": machine(),
        "table": [r.to_dict() for r in rows],
        "sets": {name: report for name, (_, report) in reports.items()},
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2, ensure_ascii=False))
    return out


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    limit_blas_threads()  # as the CLI and the server run (every system of the run shares it)
    if args.all_dev:
        return all_dev(args, "python scripts/lab/evaluate.py " + " ".join(sys.argv[1:] if argv is None else argv))
    evalset = build_evalset(args)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    try:
        report = evaluate(
            evalset,
            systems,
            Path(args.root),
            top_k=args.top_k,
            fetch_k=args.fetch_k,
            mmr_lambda=args.stock_mmr_lambda,
            query_yaml=args.query_yaml,
            indexing_yaml=args.indexing_yaml,
            use_cache=not args.no_cache,
            log=lambda m: print(m, file=sys.stderr, flush=True),
            split=args.split,
            joiner_k=args.joiner_k,
            drop_channels=args.drop_channel,
            fixed_profile=None if args.fixed_profile is None else read_fixed_profile(args.fixed_profile),
        )
    finally:
        # Close the local Qdrant clients while the interpreter is intact (and free the folder's lock).
        release_all_clients()
    report["command"] = "python scripts/lab/evaluate.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(markdown(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False))
    return report


if __name__ == "__main__":
    main()
