"""Fit the intent profiles (channel weights, fetch_k, MMR λ, rerank) on development data, with a held-out split.

    python scripts/lab/calibrate_profiles.py --hotpot ../shared/data/hotpotqa100 --aragog ../shared/data/aragog \
        [--held-out 0.3] [--rounds 2] [--write] [--json OUT.json]

How it works:

1. Every dataset is indexed through yaml/indexing.yaml (the same cached index scripts/lab/evaluate.py uses) and every
   question is run once through yaml/query.yaml with a *capture* profile: every channel on, fetch_k at the largest
   value searched. The router's intent probabilities, the query embedding and each channel's ranked list are kept.
2. A profile set is then scored without searching again: for each question the router's soft mix of the profiles
   gives weights, fetch_k, λ, top_k and rerank; each channel list is cut to fetch_k (a channel with weight 0 sends
   nothing), and the pipeline's own WeightedRRFJoiner, MMRSelector, reranker and QualityGate run on them; a gate
   retry replays the router's escalated strategy, as the pipeline's loop does (reranker scores are memoised per
   question and text). The printed check compares this replay with real pipeline runs.
3. Coordinate search per intent, on the training split (stratified by dataset and question type): each channel
   weight over a grid (the profile's weights renormalised to sum to one), then fetch_k, λ and rerank, keeping a
   change only when the objective strictly improves: mean over datasets of full@10 + 0.5 * MRR. Only intents that
   are the top intent of at least --min-group training questions are fitted; the others keep their values.
4. Before/after on the training and held-out questions. ``--write`` writes the fitted profiles, with their
   provenance (data sets, command, date, metric), into components/routing/data/profiles.json unless the held-out
   objective got worse (``--rounds 0``: no per-intent fit, the profiles as they are).
5. ``--fixed``: the peer routing has to beat. The best single profile for every query is fitted on the same training
   questions (the best start among the mean routed strategy and each intent's profile, then the same coordinate
   search over the one shared profile), and the share of it that the routed profiles are best shrunk toward (0,
   0.25 ... 1) is chosen on the training questions; routed, fixed and shrunk are reported per data set on both
   splits. ``--write`` stores the fixed profile beside the routed ones (``fixed_profile``), which
   ``scripts/lab/evaluate.py --fixed-profile`` runs beside the routed pipeline.
6. ``--merge``: fewer intents. Each subset of the intents that are the top intent of at least --keep-min training
   questions keeps its profile (shrunk 0, 0.25, 0.5 or 0.75 of the way toward the fixed profile); the
   --keep-always intents (default: keyword) keep their profiles as they are (their evidence is lexical, and the
   question-answering sets hold almost no keyword queries to fit or judge them on); every other intent takes the
   fixed profile. The choice: the best held-out objective among the variants whose full@10 and MRR are both at
   least the fixed profile's on every data set, on the held-out questions and on all of them (ties: more kept
   intents, then the smaller share). The fixed profile is ``--fixed``'s fit, or the profiles file's
   ``fixed_profile``. ``--write`` writes the chosen variant as the routed profiles (the fixed profile stays the
   peer).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[2]

from adaptive_retrieval.components.routing import validate_profiles  # noqa: E402
from adaptive_retrieval.components.stores import release_all_clients  # noqa: E402
from evaluation import calibrate_all_dev  # noqa: E402
from evaluation.data import (  # noqa: E402
    EvalSet,
    add_jsonl_arguments,
    jsonl_evalset,
    load_aragog,
    load_hotpot,
    load_wiki2,
)
from evaluation.profile_fit import (  # noqa: E402
    FETCH_GRID,
    METRIC,
    PROFILES_JSON,
    everywhere,
    fit,
    fit_fixed,
    fit_shrinkage,
    merge_variants,
    merged,
    pick_merge,
    provenance,
    shrunk,
    with_all,
    write_profiles_file,
)
from evaluation.replay import Captured, Scorer, Tail, agreement, capture, find_tail  # noqa: E402
from evaluation.systems import AdaptiveSystem, eval_folder  # noqa: E402

#: Channel lists are captured this deep: the largest fetch_k searched, doubled by a quality-gate retry.
CAPTURE_K = 2 * max(FETCH_GRID)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    calibrate_all_dev.add_arguments(parser)
    parser.add_argument("--hotpot", help="HotpotQA folder")
    parser.add_argument("--wiki2", help="2Wiki corpus.json added to HotpotQA as distractors")
    parser.add_argument("--wiki2-limit", type=int, default=None)
    parser.add_argument("--aragog", help="ARAGOG folder")
    add_jsonl_arguments(parser)
    parser.add_argument("--query-yaml", default="query", help="query pipeline YAML to capture (name or path)")
    parser.add_argument("--held-out", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=2, help="coordinate-search rounds (0: no per-intent fit)")
    parser.add_argument("--min-group", type=int, default=5, help="fit an intent only with this many questions")
    parser.add_argument("--fixed", action="store_true", help="also fit the best single fixed profile (and shrinkage)")
    parser.add_argument("--merge", action="store_true", help="choose which intents keep a profile of their own")
    parser.add_argument("--keep-min", type=int, default=20, help="--merge: intents with this many questions may keep")
    parser.add_argument(
        "--keep-always",
        default="keyword",
        help="--merge: intents (comma-separated) kept as they are",
    )
    parser.add_argument("--check", type=int, default=30, help="questions replayed against real runs")
    parser.add_argument("--root", default=str(ROOT / ".adaptive"))
    parser.add_argument("--write", action="store_true", help=f"write the fits into {PROFILES_JSON.name}")
    parser.add_argument("--profiles-file", default=str(PROFILES_JSON), help="the profiles file --write updates")
    parser.add_argument("--json", help="write the report here")
    return parser.parse_args(argv)


def evalsets(args: argparse.Namespace) -> list[EvalSet]:
    sets: list[EvalSet] = []
    if args.hotpot:
        hotpot = load_hotpot(args.hotpot)
        if args.wiki2:
            hotpot = hotpot.with_distractors(load_wiki2(args.wiki2, limit=args.wiki2_limit))
        sets.append(hotpot)
    if args.aragog:
        sets.append(load_aragog(args.aragog))
    if args.corpus or args.questions:
        sets.append(jsonl_evalset(args.corpus, args.questions, args.name))
    if not sets:
        raise SystemExit("Give --hotpot, --aragog and/or --corpus/--questions")
    return sets


def capture_sets(
    args: argparse.Namespace, report: dict[str, Any], log: Any
) -> tuple[list[Captured], list[Captured], Tail]:
    """Index and capture every set; split the captured questions into training and held-out."""
    train: list[Captured] = []
    test: list[Captured] = []
    tail: Tail | None = None
    for evalset in evalsets(args):
        system = AdaptiveSystem(eval_folder(Path(args.root), evalset.name) / "adaptive", query_yaml=args.query_yaml)
        log(f"[calibrate] {evalset.name}: indexing (cached when unchanged) ...")
        stats = system.index(evalset)
        tail = find_tail(system.pipeline)
        train_q, test_q = evalset.split(args.held_out, args.seed)
        held = {q.id for q in test_q}
        log(f"[calibrate] {evalset.name}: capturing {len(evalset.questions)} questions ...")
        began = time.perf_counter()
        items, refetched = capture(system, evalset, tail, CAPTURE_K)
        log(f"[calibrate] {evalset.name}: channels re-run per depth (lists not prefix-stable): {sorted(refetched)}")
        check = agreement(system, items, tail, args.check)
        log(f"[calibrate] {evalset.name}: replay vs real pipeline: {check}")
        report["datasets"][evalset.name] = {
            "index": stats,
            "capture_seconds": round(time.perf_counter() - began, 1),
            "replay_check": check,
            "channels_rerun_per_depth": sorted(refetched),
            "train": len(train_q),
            "held_out": len(test_q),
            "routed": dict(Counter(i.intent for i in items)),
        }
        # The replay needs the components (joiner, MMR, ranker) of one pipeline; they hold no index state.
        train += [i for i in items if i.question.id not in held]
        test += [i for i in items if i.question.id in held]
    assert tail is not None
    return train, test, tail


def both_splits(train: Scorer, test: Scorer, profiles: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {"train": train.summary(profiles), "held_out": test.summary(profiles)}


def fixed_peer(
    args: argparse.Namespace, report: dict[str, Any], scorers: tuple[Scorer, Scorer], channels: list[str], log: Any
) -> None:
    """Fit the fixed profile and the shrinkage share on the training questions; report all three on both splits."""
    train_scorer, test_scorer = scorers
    routed = report["profiles_after"]
    fixed, changes = fit_fixed(train_scorer, routed, channels, max(args.rounds, 1), log)
    share, by_share = fit_shrinkage(train_scorer, routed, fixed)
    report["fixed"] = {
        "profile": fixed,
        "changes": changes,
        "scores": both_splits(train_scorer, test_scorer, everywhere(fixed, list(routed))),
        "shrink_share": share,
        "shrink_train_objective": by_share,
        "shrunk_profiles": shrunk(routed, fixed, share),
        "shrunk_scores": both_splits(train_scorer, test_scorer, shrunk(routed, fixed, share)),
    }


def merge_peer(args: argparse.Namespace, report: dict[str, Any], scorers: tuple[Scorer, Scorer], log: Any) -> None:
    """Score every fewer-intents variant on both splits and pick one on the held-out questions (see step 6)."""
    train_scorer, test_scorer = scorers
    routed = report["profiles_after"]
    packaged = json.loads(Path(args.profiles_file).read_text(encoding="utf-8"))
    fixed = report["fixed"]["profile"] if "fixed" in report else packaged["fixed_profile"]["profile"]
    kept_from = packaged.get("provenance", {})
    counts = report["training_questions_per_intent"]
    always = tuple(i for i in args.keep_always.split(",") if i)
    keepable = sorted(i for i, n in counts.items() if n >= args.keep_min and i not in always)
    variants = []
    for keep, share in merge_variants(keepable):
        scores = with_all(both_splits(train_scorer, test_scorer, merged(routed, fixed, keep, share, always)))
        variants.append({"keep": list(keep), "share": share, "scores": scores})
        log(
            f"[calibrate] keep {list(keep)} share {share}: train {scores['train']['objective']:.4f} "
            f"held-out {scores['held_out']['objective']:.4f} all {scores['all']['objective']:.4f}"
        )
    fixed_scores = with_all(both_splits(train_scorer, test_scorer, everywhere(fixed, list(routed))))
    chosen = pick_merge(variants, fixed_scores)
    report["merge"] = {
        "fixed_profile": fixed,
        "keepable": keepable,
        "keep_always": list(always),
        "fixed_scores": fixed_scores,
        "variants": variants,
        "chosen": {"keep": chosen["keep"], "share": chosen["share"], "keep_always": list(always)},
        "profiles": merged(routed, fixed, tuple(chosen["keep"]), chosen["share"], always),
        "scores": chosen["scores"],
        "kept_from": f"{kept_from.get('command', '?')} ({kept_from.get('date', '?')})",
    }


def write(args: argparse.Namespace, report: dict[str, Any], command: str, log: Any) -> None:
    path = Path(args.profiles_file)
    datasets = list(report["datasets"])
    before, after = report["before"], report["after"]
    result = {
        f"{split}_{label}": round(s[split]["objective"], 4)
        for label, s in (("before", before), ("after", after))
        for split in ("train", "held_out")
    }
    if args.rounds > 0 and report["held_out_not_worse"]:
        origin = provenance(command, datasets, result, [f"fitted intents: {report['fitted_intents']}"])
        write_profiles_file(path, profiles=report["profiles_after"], origin=origin)
        log(f"[calibrate] wrote the routed profiles to {path}; run scripts/build_yaml.py next")
    elif args.rounds > 0:
        log(f"[calibrate] held-out objective got worse: the routed profiles in {path} are left as they are")
    if "merge" in report:
        chosen, scores = report["merge"]["chosen"], report["merge"]["scores"]
        merge_result = {f"{s}": round(scores[s]["objective"], 4) for s in ("train", "held_out", "all")}
        fixed_all = report["merge"]["fixed_scores"]
        merge_result.update({f"fixed_{s}": round(fixed_all[s]["objective"], 4) for s in ("train", "held_out", "all")})
        merge_result.update({f"routed_before_{s}": result[f"{s}_after"] for s in ("train", "held_out")})
        note = (
            f"fewer intents (--merge): {chosen['keep']} keep their profiles, shrunk {chosen['share']} of the way "
            f"toward the fixed profile; {chosen['keep_always']} keep theirs as they are; every other intent takes "
            "the fixed profile; chosen as the best held-out objective among the variants with full@10 and MRR at "
            "least the fixed profile's on every data set (held-out and all questions)"
        )
        origin = provenance(
            command, datasets, merge_result, [note, f"the kept profiles come from {report['merge']['kept_from']}"]
        )
        write_profiles_file(path, profiles=report["merge"]["profiles"], origin=origin)
        log(f"[calibrate] wrote the merged profiles to {path}; run scripts/build_yaml.py next")
    if "fixed" in report:
        scores = report["fixed"]["scores"]
        fixed_result = {f"{s}": round(scores[s]["objective"], 4) for s in ("train", "held_out")}
        fixed_result.update({f"routed_{s}": result[f"{s}_after"] for s in ("train", "held_out")})
        note = "the best single profile for every query, fitted on the training questions the routed profiles were"
        write_profiles_file(
            path, fixed=report["fixed"]["profile"], fixed_origin=provenance(command, datasets, fixed_result, [note])
        )
        log(f"[calibrate] wrote the fixed profile to {path}")


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    command = "python scripts/lab/calibrate_profiles.py " + " ".join(sys.argv[1:] if argv is None else argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.all_dev:
        try:
            return calibrate_all_dev.run(args, command, log)
        finally:
            release_all_clients()
    report: dict[str, Any] = {"command": command, "metric": METRIC, "datasets": {}}
    try:
        train, test, tail = capture_sets(args, report, log)
        start_profiles = copy.deepcopy(tail.router.profiles)
        channels = sorted(tail.channel_of)
        groups = Counter(i.intent for i in train)
        intents = [i for i, n in groups.most_common() if n >= args.min_group]
        log(f"[calibrate] channels {channels}; fitting intents {intents} (training questions per intent: {groups})")
        train_scorer, test_scorer = Scorer(train, tail), Scorer(test, tail)
        before = both_splits(train_scorer, test_scorer, start_profiles)
        fitted, changes = fit(train_scorer, start_profiles, intents, channels, args.rounds, log)
        validate_profiles(fitted, tuple(fitted))
        report.update(
            {
                "channels": channels,
                "fitted_intents": intents,
                "training_questions_per_intent": dict(groups),
                "changes": changes,
                "before": before,
                "after": both_splits(train_scorer, test_scorer, fitted),
                "profiles_before": start_profiles,
                "profiles_after": fitted,
            }
        )
        report["held_out_not_worse"] = report["after"]["held_out"]["objective"] >= before["held_out"]["objective"]
        if args.fixed:
            fixed_peer(args, report, (train_scorer, test_scorer), channels, log)
        if args.merge:
            merge_peer(args, report, (train_scorer, test_scorer), log)
        print_report(report)
        if args.write:
            write(args, report, command, log)
    finally:
        release_all_clients()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    return report


def print_report(report: dict[str, Any]) -> None:
    rows = [("before", report["before"]), ("after", report["after"])]
    if "fixed" in report:
        share = report["fixed"]["shrink_share"]
        rows += [("fixed", report["fixed"]["scores"]), (f"shrunk {share}", report["fixed"]["shrunk_scores"])]
    if "merge" in report:
        chosen = report["merge"]["chosen"]
        rows.append((f"keep {'+'.join(chosen['keep']) or 'none'} shrunk {chosen['share']}", report["merge"]["scores"]))
    print("| split | profiles | objective | " + " | ".join(f"{d} full@10 | {d} mrr" for d in report["datasets"]) + " |")
    print("|---|---|---|" + "---|---|" * len(report["datasets"]))
    for split in ("train", "held_out"):
        for label, scores in rows:
            s = scores[split]
            cells = " | ".join(
                f"{s['datasets'][d]['full@10']:.3f} | {s['datasets'][d]['mrr']:.3f}" for d in report["datasets"]
            )
            print(f"| {split} | {label} | {s['objective']:.4f} | {cells} |")
    print()
    print("changes kept:" if report["changes"] else "no per-intent change improved the training objective")
    for change in report["changes"] + report.get("fixed", {}).get("changes", []):
        print(f"- {change}")


if __name__ == "__main__":
    main()
