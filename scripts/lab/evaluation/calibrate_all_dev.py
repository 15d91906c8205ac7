"""``scripts/lab/calibrate_profiles.py --all-dev DATA``: the safe profile and the routing, chosen leave-one-set-out over
every development set with a floor (:mod:`evaluation.loso`), the leave-one-out table, and the profiles file.

Steps: every fitted set (:data:`evaluation.dev_sets.DEV_SETS` with ``fit=True``) is indexed (cached) and captured
once with every channel on; the stock hybrid answers the same questions (its per-question metrics are the floor);
then :func:`evaluation.loso.leave_one_out` runs on the replays. ``--write`` stores the routed profiles (the
chosen candidate's, around the safe profile fitted on every set), the fallback (the safe profile, the confidence
under which a query takes it, whether plain searches do) and the safe profile as the fixed profile (the peer
``scripts/lab/evaluate.py --fixed-profile`` runs), each with its provenance and the leave-one-out table.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.routing import INTENTS, load_profiles_file
from adaptive_retrieval.pipelines import build_query_pipeline, dump_pipeline, make_store
from evaluation.dev_sets import DevSet, available_dev_sets
from evaluation.loso import (
    HeldOut,
    Judge,
    LeaveOneOut,
    RoutingCandidate,
    fit_safe,
    fixed_routing,
    leave_one_out,
    routing_candidates,
    safe_grid,
)
from evaluation.metrics import question_metrics
from evaluation.profile_fit import provenance, write_profiles_file
from evaluation.replay import Captured, Tail, agreement, capture, find_tail
from evaluation.systems import AdaptiveSystem, StockSystems, eval_folder

#: The channels the safe profile splits its weight over: the two first-pass searches and their feedback
#: channels (the multi-hop channels stay with the intents that keep a profile of their own).
SAFE_CHANNELS = ("dense", "sparse", "sparse_prf", "dense_prf")
#: The opt-in channels of SAFE_CHANNELS: the packaged query pipeline is captured with them added.
FEEDBACK_CHANNELS = ("sparse_prf", "dense_prf")
#: Equal parts of weight the grid splits over :data:`SAFE_CHANNELS` (4: steps of 0.25).
SAFE_STEPS = 4
SAFE_TOP_K = 10
SAFE_FETCH_K = 30
SAFE_LAMBDAS = (1.0, 0.85)
#: Intents that may keep a profile of their own (those the routed profiles were fitted for, with the most
#: development questions), as nested choices.
KEEP_SETS = (("relational",), ("relational", "analytical"), ("relational", "analytical", "factual"))
SHARES = (0.0, 0.5, 0.75)
CONFIDENCES = (0.0, 0.3, 0.4, 0.5, 0.6)
#: Channel lists are captured this deep: the deepest fetch_k replayed (30), doubled by a gate retry.
CAPTURE_K = 60
METRIC = "mean over the sets left out of each set's mean ratio to the stock hybrid over its floor metrics"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The ``--all-dev`` options."""
    parser.add_argument("--all-dev", metavar="DATA", help="fit leave-one-set-out over every development set")
    parser.add_argument("--sets", help="--all-dev: only these sets (comma-separated names)")
    parser.add_argument(
        "--fallback-only",
        action="store_true",
        help="--all-dev: keep the routed profiles as they are; choose only the fallback (safe profile, the "
        "confidence under which a query takes it, whether plain searches do); --write writes only the fallback",
    )
    parser.add_argument("--safe-channels", default=",".join(SAFE_CHANNELS), help="--all-dev: channels of the grid")
    parser.add_argument("--safe-steps", type=int, default=SAFE_STEPS, help="--all-dev: equal parts of weight")
    parser.add_argument("--safe-lambdas", default=",".join(map(str, SAFE_LAMBDAS)), help="--all-dev: grid's MMR λs")
    parser.add_argument(
        "--safe-rerank", default="false", help="--all-dev: grid's rerank settings (false, true or false,true)"
    )
    parser.add_argument("--safe-fetch", default=str(SAFE_FETCH_K), help="--all-dev: grid's fetch_k values")
    parser.add_argument(
        "--safe-per-source", default="0", help="--all-dev: grid's caps of passages per source document (0: none)"
    )
    parser.add_argument("--confidences", default=",".join(map(str, CONFIDENCES)), help="--all-dev: fallback bounds")


def _flag(text: str) -> bool:
    if text.strip().lower() not in ("true", "false"):
        msg = f"--safe-rerank takes true or false, got {text!r}"
        raise SystemExit(msg)
    return text.strip().lower() == "true"


def _floats(text: str) -> tuple[float, ...]:
    return tuple(float(v) for v in text.split(",") if v)


def _ints(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in text.split(",") if v)


def fallback_candidates(confidences: tuple[float, ...], grid_size: int = 0) -> list[RoutingCandidate]:
    """``--fallback-only``: every intent keeps its routed profile (the keyword intent too); a candidate is a
    fallback bound and the plain-search rule on or off, with the safe profile fitted without the set left out,
    then the same with each of the ``grid_size`` grid profiles as a fallback named in advance (fitted on no set).
    The first, (0, off), is the routing as shipped without a fallback."""
    keep = tuple(i for i in INTENTS if i != "keyword")
    return [
        RoutingCandidate(keep, 0.0, confidence, plain, keyword=True, fallback=fallback)
        for fallback in (None, *range(grid_size))
        for plain in (False, True)
        for confidence in confidences
    ]


def capture_yaml(args: argparse.Namespace) -> str:
    """The query pipeline to capture: ``--query-yaml`` as given, or, for the packaged ``query``, the same pipeline
    with the opt-in feedback channels added (written under ``--root``), so that the safe grid can weigh them."""
    if args.query_yaml != "query":
        return str(args.query_yaml)
    opt_in = [c for c in FEEDBACK_CHANNELS if c in args.safe_channels.split(",")]
    if not opt_in:
        return "query"
    pipeline = build_query_pipeline(make_store(create=False), opt_in=opt_in)
    return str(dump_pipeline(pipeline, Path(args.root) / "query_feedback.yaml"))


def capture_set(
    dev_set: DevSet, data: Path, args: argparse.Namespace, log: Any
) -> tuple[list[Captured], list[dict[str, float]], Tail, dict[str, Any]]:
    """Index (cached) and capture one set; the stock hybrid's per-question metrics on it."""
    evalset = dev_set.load(data)
    folder = eval_folder(Path(args.root), evalset.name)
    stock = StockSystems(cache_dir=folder)
    log(f"[calibrate] {dev_set.name}: indexing (cached when unchanged) ...")
    stock_index = stock.index(evalset)
    system = AdaptiveSystem(folder / "adaptive", query_yaml=capture_yaml(args))
    stats = system.index(evalset)
    tail = find_tail(system.pipeline)
    log(f"[calibrate] {dev_set.name}: capturing {len(evalset.questions)} questions ...")
    began = time.perf_counter()
    items, refetched = capture(system, evalset, tail, CAPTURE_K)
    seconds = time.perf_counter() - began
    check = agreement(system, items, tail, args.check)
    log(f"[calibrate] {dev_set.name}: replay vs real pipeline: {check}")
    stock_rows = [
        question_metrics(stock.search("stock_hybrid_rrf", q.question)[0], q.gold_ids) for q in evalset.questions
    ]
    info = {
        "kind": dev_set.kind,
        "questions": len(evalset.questions),
        "index": stats,
        "stock_index": stock_index,
        "capture_seconds": round(seconds, 1),
        "replay_check": check,
        "channels_rerun_per_depth": sorted(refetched),
    }
    return items, stock_rows, tail, info


def leave_one_out_table(result: LeaveOneOut, judge: Judge, grid: list[dict[str, Any]], sets: list[str]) -> str:
    """Per set left out: the stock hybrid's floor metrics, the safe profile fitted without it (fixed, no
    routing) and the chosen routing, each with its ratios to stock."""
    # The first candidate: no routing (the safe profile for every query), or with --fallback-only the routing as
    # shipped without a fallback.
    fixed = result.held_out[0]
    chosen = result.chosen
    lines = [
        f"Chosen: {chosen.candidate.label} (mean {chosen.mean_score:.4f}, admissible {chosen.admissible}); "
        f"{fixed.candidate.label}: mean {fixed.mean_score:.4f}, admissible {fixed.admissible}.",
        "",
        "| set left out | floor metric | stock hybrid | first candidate | × stock | chosen, fitted without it | "
        "× stock | safe profile fitted without it |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name in sets:
        fit = result.safe_without[name]
        weights = ", ".join(f"{c} {w:g}" for c, w in grid[fit.index]["weights"].items() if w > 0)
        cap = grid[fit.index].get("max_per_source", 0)
        profile = (
            f"{weights}; λ {grid[fit.index]['mmr_lambda']:g}"
            + (f"; {cap} per source" if cap else "")
            + ("" if fit.at_floor else " (no grid profile at floor)")
        )
        for metric in judge.floor_metrics[name]:
            stock = judge.stock_means[name][metric]
            lines.append(
                f"| {name} | {metric} | {stock:.3f} | {fixed.means[name][metric]:.3f} | "
                f"{fixed.ratios[name][metric]:.3f} | {chosen.means[name][metric]:.3f} | "
                f"{chosen.ratios[name][metric]:.3f} | {profile} |"
            )
    admissible = [h for h in result.held_out if h.admissible]
    lines += ["", f"{len(admissible)} of {len(result.held_out)} candidates admissible; the best five by mean:", ""]
    lines += ["| candidate | mean score | lowest set ratio |", "|---|---|---|"]
    for h in sorted(admissible, key=lambda h: -h.mean_score)[:5]:
        lowest = min((r, f"{n} {m}") for n, ratios in h.ratios.items() for m, r in ratios.items())
        lines.append(f"| {h.candidate.label} | {h.mean_score:.4f} | {lowest[0]:.3f} ({lowest[1]}) |")
    return "\n".join(lines)


def shipped_scores(judge: Judge, routing: Any, sets: list[str]) -> dict[str, dict[str, float]]:
    """The shipped routing's means on every set (in-sample: it was fitted on all of them)."""
    return {name: judge.means(name, routing) for name in sets}


def run(args: argparse.Namespace, command: str, log: Any) -> dict[str, Any]:
    """The ``--all-dev`` fit; returns the report (``--json`` writes it)."""
    data = Path(args.all_dev).expanduser()
    dev_sets = [s for s in available_dev_sets(data, [n for n in (args.sets or "").split(",") if n] or None) if s.fit]
    items: dict[str, list[Captured]] = {}
    stock: dict[str, list[dict[str, float]]] = {}
    tails: dict[str, Tail] = {}
    report: dict[str, Any] = {"command": command, "metric": METRIC, "datasets": {}}
    for dev_set in dev_sets:
        name = dev_set.name
        items[name], stock[name], tails[name], report["datasets"][name] = capture_set(dev_set, data, args, log)
    sets = [s.name for s in dev_sets]
    safe_channels = tuple(c for c in args.safe_channels.split(",") if c)
    missing = sorted(set(safe_channels) - set(next(iter(tails.values())).channel_of))
    if missing:
        raise SystemExit(
            f"The query pipeline ({args.query_yaml}) lacks the channel(s) {missing} the safe profile weighs"
        )
    judge = Judge(items, tails, stock, {s.name: s.floor_metrics for s in dev_sets})
    lambdas = _floats(args.safe_lambdas)
    reranks = tuple(dict.fromkeys(_flag(v) for v in args.safe_rerank.split(",") if v))
    grid = safe_grid(
        safe_channels,
        args.safe_steps,
        SAFE_TOP_K,
        _ints(args.safe_fetch),
        lambdas,
        reranks,
        _ints(args.safe_per_source),
    )
    routed = load_profiles_file()["profiles"]
    if args.fallback_only:
        candidates = fallback_candidates(_floats(args.confidences), len(grid))
    else:
        candidates = routing_candidates(KEEP_SETS, SHARES, _floats(args.confidences))
    log(f"[calibrate] {len(grid)} safe profiles, {len(candidates)} routing candidates, sets {sets}")
    result = leave_one_out(judge, grid, candidates, routed, sets, log)
    final = fit_safe(judge, grid, sets)
    chosen = result.chosen.candidate
    # A candidate that names its fallback ships that one; else the safe profile fitted on every set.
    safe = grid[final.index if chosen.fallback is None else chosen.fallback]
    profiles = chosen.profiles(routed, safe)
    report.update(
        {
            "safe_grid": grid,
            "routed_from": routed,
            "leave_one_out": {
                "safe_without": {n: {**vars(f), "profile": grid[f.index]} for n, f in result.safe_without.items()},
                "candidates": [h.to_dict() for h in result.held_out],
                "chosen": result.chosen.to_dict(),
            },
            "stock": judge.stock_means,
            "safe": {"profile": grid[final.index], "at_floor_on_every_set": final.at_floor, "score": final.score},
            "shipped": {
                "profiles": profiles,
                "fallback": {"profile": safe, "min_confidence": chosen.min_confidence, "plain": chosen.plain},
                "routed_in_sample": shipped_scores(judge, chosen.routing(routed, safe), sets),
                "fixed_in_sample": shipped_scores(judge, fixed_routing(safe), sets),
            },
            "replays": judge.replays,
        }
    )
    print(leave_one_out_table(result, judge, grid, sets))
    print(f"\nShipped fallback: {json.dumps(safe)}")
    if args.write and args.fallback_only:
        write_fallback(args, report, command, result.chosen, sets)
        log(f"[calibrate] wrote the fallback into {args.profiles_file}")
    elif args.write:
        write(args, report, command, result.chosen, sets)
        log(f"[calibrate] wrote {args.profiles_file}; run scripts/build_yaml.py next")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    return report


def write(args: argparse.Namespace, report: dict[str, Any], command: str, chosen: HeldOut, sets: list[str]) -> None:
    """The chosen routing, its fallback and the safe profile (as the fixed profile) into the profiles file."""
    path = Path(args.profiles_file)
    shipped = report["shipped"]
    loo = {n: {"ratios": chosen.ratios[n], "at_floor": chosen.at_floor[n]} for n in sets}
    note = (
        f"chosen leave-one-set-out with a floor: {chosen.candidate.label}; admissible (at least the stock hybrid on "
        f"every floor metric of every set left out): {chosen.admissible}; mean held-out score {chosen.mean_score:.4f}"
    )
    origin = provenance(command, sets, {"leave_one_out": loo, "mean_score": round(chosen.mean_score, 4)}, [note])
    origin["split"] = "leave one set out (each set's result comes from a fit without it)"
    origin["metric"] = METRIC
    fixed_origin = provenance(
        command,
        sets,
        {"in_sample": shipped["fixed_in_sample"]},
        ["the best grid profile for every query on every set, among those at least the stock hybrid's on each"],
    )
    fixed_origin["split"] = "all questions of every set (leave-one-out results: the routed provenance)"
    write_profiles_file(
        path, profiles=shipped["profiles"], origin=origin, fixed=report["safe"]["profile"], fixed_origin=fixed_origin
    )
    data = json.loads(path.read_text(encoding="utf-8"))
    data["fallback"] = {**shipped["fallback"], "provenance": origin}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def write_fallback(
    args: argparse.Namespace, report: dict[str, Any], command: str, chosen: HeldOut, sets: list[str]
) -> None:
    """``--fallback-only``: the chosen fallback (safe profile fitted on every set, bound, plain rule) and its
    provenance with the leave-one-out table; the routed and fixed profiles stay as they are. Nothing is written
    when no candidate is admissible (the floor failed on some set left out)."""
    if not chosen.admissible:
        raise SystemExit("No candidate is at the floor on every set left out: the profiles file is left as it is")
    loo = {n: {"stock": report["stock"][n], "means": chosen.means[n], "ratios": chosen.ratios[n]} for n in sets}
    note = (
        f"chosen leave-one-set-out with a floor (--fallback-only: the routed profiles kept as they are): "
        f"{chosen.candidate.label}; admissible; mean held-out score {chosen.mean_score:.4f}"
    )
    # The data folder is wherever the user keeps the sets: DATA, as the lab README writes it.
    command = command.replace(str(args.all_dev), "DATA")
    origin = provenance(command, sets, {"leave_one_out": loo, "mean_score": round(chosen.mean_score, 4)}, [note])
    named = chosen.candidate.fallback is not None
    origin["split"] = (
        "leave one set out: the fallback profile named in advance (a grid profile, fitted on no set), judged on "
        "every set; the choice among the admissible candidates is the best mean over the sets"
        if named
        else "leave one set out (each set's result comes from a safe profile fitted without it)"
    )
    origin["metric"] = METRIC
    origin["searched"] = {
        "safe_grid": report["safe_grid"],
        "candidates": len(report["leave_one_out"]["candidates"]),
        "admissible": [c["label"] for c in report["leave_one_out"]["candidates"] if c["admissible"]],
    }
    fallback = report["shipped"]["fallback"]
    path = Path(args.profiles_file)
    data = json.loads(path.read_text(encoding="utf-8"))
    data["fallback"] = {**fallback, "provenance": origin}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
