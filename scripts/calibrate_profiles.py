"""Fit the intent profiles (channel weights, fetch_k, MMR λ, rerank) on development data, with a held-out split.

    python scripts/calibrate_profiles.py --hotpot ../shared/data/hotpotqa100 --aragog ../shared/data/aragog \
        [--held-out 0.3] [--rounds 2] [--write] [--json OUT.json]

How it works:

1. Every dataset is indexed through yaml/indexing.yaml (the same cached index scripts/evaluate.py uses) and every
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
4. Before/after on the training and held-out questions. ``--write`` writes the fitted profiles into
   components/routing/profiles.py (DEFAULT_PROFILES) unless the held-out objective got worse.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import sys
import textwrap
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[1]

from adaptive_retrieval.components.fusion.weighted_rrf_joiner import WeightedRRFJoiner  # noqa: E402
from adaptive_retrieval.components.retrieval.channel import channel_enabled  # noqa: E402
from adaptive_retrieval.components.routing.intent_router import IntentRouter  # noqa: E402
from adaptive_retrieval.components.routing.profiles import (  # noqa: E402
    DEFAULT_PROFILES,
    escalate_strategy,
    mix_profiles,
    validate_profiles,
)
from adaptive_retrieval.components.selection.mmr_selector import MMRSelector  # noqa: E402
from adaptive_retrieval.components.stores.edge_document_store import release_all_clients  # noqa: E402
from adaptive_retrieval.pipelines.query_pipeline import query_inputs, run_query  # noqa: E402
from evaluation.data import (  # noqa: E402
    EvalSet,
    Question,
    add_jsonl_arguments,
    jsonl_evalset,
    load_aragog,
    load_hotpot,
    load_wiki2,
)
from evaluation.metrics import mean_metrics, passage_ranking, question_metrics  # noqa: E402
from evaluation.systems import PASSAGE_KEY, AdaptiveSystem, eval_folder  # noqa: E402

PROFILES_FILE = ROOT / "components" / "routing" / "profiles.py"
WEIGHT_GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
# Deeper lists cost latency at every stage (Haystack copies each component's inputs): the grid stays within the
# range the hand-set profiles used, so calibration trades weights and λ, not the latency budget.
FETCH_GRID = (20, 30, 40, 50)
LAMBDA_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
MRR_WEIGHT = 0.5
MAX_ATTEMPTS = 5
#: Channel lists are captured this deep: the largest fetch_k searched, doubled by a quality-gate retry.
CAPTURE_K = 2 * max(FETCH_GRID)


#: Router outputs that make up a strategy (the rest, e.g. ``structural``, do not depend on the profiles).
STRATEGY_KEYS = ("weights", "top_k", "fetch_k", "mmr_lambda", "rerank")


@dataclass
class Fetcher:
    """Runs one channel again for a captured question at a given depth, memoised per depth.

    For channels whose top-k list is not a prefix of a deeper one (the graph-local channel seeds its walk from a
    number of hits that grows with k): their lists cannot be cut from the captured one. Channels read their
    weight only to skip themselves (components/retrieval/channel.py), so the list depends on the depth alone.
    """

    component: Any
    fixed: dict[str, Any]
    from_router: dict[str, str]
    memo: dict[int, list[Any] | None] = field(default_factory=dict)

    def get(self, strategy: dict[str, Any]) -> list[Any] | None:
        k = int(strategy["fetch_k"])
        if k not in self.memo:
            inputs = {**self.fixed, **{socket: strategy[out] for socket, out in self.from_router.items()}}
            self.memo[k] = self.component.run(**inputs)["documents"]
        return self.memo[k]


@dataclass
class Captured:
    """One question's router output and channel lists, enough to replay the first pass under any profiles."""

    dataset: str
    question: Question
    probabilities: dict[str, float]
    intent: str
    embedding: list[float]
    channels: dict[str, list[Any] | None]
    fetchers: dict[str, Fetcher] = field(default_factory=dict)
    rerank_memo: dict[str, float] = field(default_factory=dict)


@dataclass
class Tail:
    """The components after the channels, taken from the loaded query pipeline."""

    router: IntentRouter
    joiner: WeightedRRFJoiner
    channel_of: dict[str, str]  # joiner socket (channel) -> sending component
    mmr: MMRSelector
    ranker: Any | None
    gate: Any | None = None
    router_name: str = "router"


def find_tail(pipeline: Any) -> Tail:
    """Locate the router, joiner (and its channel senders), MMR selector and reranker by type."""
    router = joiner = mmr = ranker = gate = None
    joiner_name = router_name = ""
    for name, instance in pipeline.walk():
        if isinstance(instance, IntentRouter):
            router, router_name = instance, name
        elif isinstance(instance, WeightedRRFJoiner):
            joiner, joiner_name = instance, name
        elif isinstance(instance, MMRSelector):
            mmr = instance
        elif hasattr(instance, "rerank") and hasattr(instance, "score") and hasattr(instance, "document_text"):
            ranker = instance
        elif type(instance).__name__ == "QualityGate":
            gate = instance
    if router is None or joiner is None or mmr is None:
        raise SystemExit("The query pipeline needs an IntentRouter, a WeightedRRFJoiner and an MMRSelector")
    channel_of = {
        data["to_socket"].name: sender
        for sender, receiver, data in pipeline.graph.edges(data=True)
        if receiver == joiner_name and data["to_socket"].name in joiner.channels
    }
    return Tail(router, joiner, channel_of, mmr, ranker, gate, router_name)


def capture_profiles(channels: list[str], fetch_k: int) -> dict[str, dict[str, Any]]:
    """Every channel on, at the largest fetch_k searched (lists are cut to fetch_k when replayed)."""
    profile = {
        "weights": dict.fromkeys(channels, 1.0),
        "top_k": 10,
        "fetch_k": fetch_k,
        "mmr_lambda": 1.0,
        "rerank": False,
    }
    return {intent: copy.deepcopy(profile) for intent in DEFAULT_PROFILES}


def unstable_channels(pipeline: Any, evalset: EvalSet, tail: Tail, deep: int, probes: int = 6) -> set[str]:
    """Channels whose list at depth 30 is not the prefix of their list at ``deep`` on some probe question."""
    unstable: set[str] = set()
    for q in evalset.questions[:probes]:
        lists = {}
        for k in (30, deep):
            tail.router.profiles = capture_profiles(sorted(tail.channel_of), k)
            result = pipeline.run(
                query_inputs(pipeline, q.question), include_outputs_from=set(tail.channel_of.values())
            )
            lists[k] = {c: [d.id for d in result[s]["documents"] or []] for c, s in tail.channel_of.items()}
        unstable |= {c for c in tail.channel_of if lists[deep][c][: len(lists[30][c])] != lists[30][c]}
    return unstable


def fetcher(pipeline: Any, channel_component: str, tail: Tail, outputs: dict[str, Any], question: str) -> Fetcher:
    """A :class:`Fetcher` fed like the pipeline feeds ``channel_component``: strategy values from the router,
    everything else as captured."""
    fixed: dict[str, Any] = dict(query_inputs(pipeline, question).get(channel_component, {}))
    from_router: dict[str, str] = {}
    for sender, receiver, data in pipeline.graph.edges(data=True):
        if receiver != channel_component:
            continue
        out, into = data["from_socket"].name, data["to_socket"].name
        if sender == tail.router_name and out in STRATEGY_KEYS:
            from_router[into] = out
        else:
            fixed[into] = outputs[sender][out]
    return Fetcher(pipeline.get_component(channel_component), fixed, from_router)


def capture(system: AdaptiveSystem, evalset: EvalSet, tail: Tail, fetch_k: int) -> tuple[list[Captured], set[str]]:
    """Run every question once with the capture profile and keep what a replay needs; also returns the channels
    that are re-run at each depth instead of cut (see :class:`Fetcher`)."""
    pipeline = system.pipeline
    saved = tail.router.profiles
    # One pass per question is enough: the replay runs the gate and its retries itself.
    saved_retries = getattr(tail.gate, "max_retries", None)
    if tail.gate is not None:
        tail.gate.max_retries = 0
    out = []
    try:
        unstable = unstable_channels(pipeline, evalset, tail, fetch_k)
        tail.router.profiles = capture_profiles(sorted(tail.channel_of), fetch_k)
        feeders = {
            sender
            for sender, receiver, _ in pipeline.graph.edges(data=True)
            if receiver in {tail.channel_of[c] for c in unstable}
        }
        wanted = {tail.router_name, "query_embedder", *tail.channel_of.values(), *feeders}
        for q in evalset.questions:
            result = pipeline.run(query_inputs(pipeline, q.question), include_outputs_from=wanted)
            router = result[tail.router_name]
            out.append(
                Captured(
                    dataset=evalset.name,
                    question=q,
                    probabilities=dict(router["routing"]["probabilities"]),
                    intent=router["intent"],
                    embedding=result["query_embedder"]["vector"].tolist(),
                    channels={c: result.get(sender, {}).get("documents") for c, sender in tail.channel_of.items()},
                    fetchers={c: fetcher(pipeline, tail.channel_of[c], tail, result, q.question) for c in unstable},
                )
            )
    finally:
        tail.router.profiles = saved
        if tail.gate is not None:
            tail.gate.max_retries = saved_retries
    return out, unstable


def memo_score(ranker: Any, item: Captured) -> Any:
    """The ranker's ``score`` memoised per question and text (MaxSim depends on nothing else)."""
    original = type(ranker).score

    def score(query: str, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in item.rerank_memo]
        if missing:
            for text, value in zip(missing, original(ranker, query, missing), strict=True):
                item.rerank_memo[text] = float(value)
        return np.array([item.rerank_memo[t] for t in texts], dtype=np.float32)

    return score


def first_pass(item: Captured, strategy: dict[str, Any], tail: Tail) -> tuple[list[Any], dict[str, Any]]:
    """Joiner, MMR and reranker on the captured channel lists for one routed strategy."""
    weights, fetch_k = strategy["weights"], strategy["fetch_k"]
    inputs: dict[str, list[Any] | None] = {}
    for c, docs in item.channels.items():
        if not channel_enabled(c, weights):
            inputs[c] = [] if docs is not None else None
        elif c in item.fetchers:
            inputs[c] = item.fetchers[c].get(strategy)
        else:
            inputs[c] = docs[:fetch_k] if docs is not None else None
    joined = tail.joiner.run(weights=weights, **inputs)
    picked = tail.mmr.run(
        documents=joined["documents"],
        query_embedding=item.embedding,
        lambda_threshold=strategy["mmr_lambda"],
        top_k=strategy["top_k"],
    )["documents"]
    if tail.ranker is not None:
        tail.ranker.score = memo_score(tail.ranker, item)
        try:
            picked = tail.ranker.run(
                documents=picked, query=item.question.question, top_k=strategy["top_k"], rerank=strategy["rerank"]
            )["documents"]
        finally:
            del tail.ranker.score
    return picked, joined["fusion"]


def replay(item: Captured, profiles: dict[str, dict[str, Any]], tail: Tail) -> list[str]:
    """The pipeline's answer for one captured question under ``profiles``: ranked passage ids.

    Without a quality gate this is the first pass; with one, the gate judges each attempt and a retry replays
    the router's escalated strategy (wider fetch_k/top_k, skipped channels at the floor weight), as the loop does.
    """
    mix = item.probabilities if tail.router.soft else {item.intent: 1.0}
    base = mix_profiles(profiles, mix, getattr(tail.router, "channels", None))
    if tail.gate is None:
        return passage_ranking(first_pass(item, base, tail)[0], PASSAGE_KEY)
    attempt, previous = 0, None
    depth = getattr(tail.router, "escalation_depth", 2.0)
    floor = getattr(tail.router, "escalation_floor", 0.1)
    for _ in range(MAX_ATTEMPTS):
        strategy = escalate_strategy(base, attempt, depth, floor)
        docs, fusion = first_pass(item, strategy, tail)
        out = tail.gate.run(
            documents=docs,
            query=item.question.question,
            query_embedding=item.embedding,
            fusion=fusion,
            attempt=attempt,
            previous=previous,
        )
        if not out.get("retry"):
            return passage_ranking(out["documents"], PASSAGE_KEY)
        attempt, previous = out["retry"]["attempt"], out["retry"]["previous"]
    msg = f"The quality gate asked for more than {MAX_ATTEMPTS} attempts"
    raise RuntimeError(msg)


def objective(rows_by_dataset: dict[str, list[dict[str, float]]]) -> float:
    """Mean over datasets of full@10 + 0.5 * MRR (each dataset weighs the same)."""
    values = []
    for rows in rows_by_dataset.values():
        means = mean_metrics(rows)
        values.append(means["full@10"] + MRR_WEIGHT * means["mrr"])
    return float(np.mean(values)) if values else 0.0


class Scorer:
    """Scores profile sets on a list of captured questions, caching per-question metrics."""

    def __init__(self, items: list[Captured], tail: Tail) -> None:
        self.items = items
        self.tail = tail
        self.rows: list[dict[str, float]] = []

    def score_all(self, profiles: dict[str, dict[str, Any]]) -> float:
        self.rows = [question_metrics(replay(i, profiles, self.tail), i.question.gold_ids) for i in self.items]
        return self.value(self.rows)

    def value(self, rows: list[dict[str, float]]) -> float:
        grouped: dict[str, list[dict[str, float]]] = defaultdict(list)
        for item, row in zip(self.items, rows, strict=True):
            grouped[item.dataset].append(row)
        return objective(grouped)

    def try_profiles(self, profiles: dict[str, dict[str, Any]], intent: str) -> tuple[float, list[dict[str, float]]]:
        """Score a candidate that changes only ``intent``'s profile: questions that give that intent no
        probability cannot change, so only the others are replayed."""
        rows = list(self.rows)
        for index, item in enumerate(self.items):
            if item.probabilities.get(intent, 0.0) > 1e-4 or not self.tail.router.soft:
                rows[index] = question_metrics(replay(item, profiles, self.tail), item.question.gold_ids)
        return self.value(rows), rows

    def summary(self, profiles: dict[str, dict[str, Any]]) -> dict[str, Any]:
        rows = [question_metrics(replay(i, profiles, self.tail), i.question.gold_ids) for i in self.items]
        by_dataset: dict[str, list[dict[str, float]]] = defaultdict(list)
        for item, row in zip(self.items, rows, strict=True):
            by_dataset[item.dataset].append(row)
        return {
            "objective": objective(by_dataset),
            "datasets": {name: {**mean_metrics(r), "n": len(r)} for name, r in by_dataset.items()},
        }


def normalised(weights: dict[str, float]) -> dict[str, float]:
    total = sum(weights.values())
    return {c: round(w / total, 3) for c, w in weights.items()} if total > 0 else weights


def candidates(profile: dict[str, Any], channels: list[str], can_rerank: bool) -> list[tuple[str, dict[str, Any]]]:
    """One coordinate at a time: each channel weight, then fetch_k, λ and rerank."""
    out = []
    for channel in channels:
        for value in WEIGHT_GRID:
            weights = {**profile["weights"], channel: value}
            if sum(weights[c] for c in channels) <= 0:
                continue
            out.append((f"weights.{channel}={value}", {**profile, "weights": normalised(weights)}))
    for value in FETCH_GRID:
        if value >= profile["top_k"]:
            out.append((f"fetch_k={value}", {**profile, "fetch_k": value}))
    out.extend((f"mmr_lambda={value}", {**profile, "mmr_lambda": value}) for value in LAMBDA_GRID)
    if can_rerank:
        out.extend((f"rerank={value}", {**profile, "rerank": value}) for value in (False, True))
    return out


def fit(
    scorer: Scorer, start: dict[str, dict[str, Any]], intents: list[str], channels: list[str], rounds: int, log: Any
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """Coordinate search per intent; a change is kept only when the training objective strictly improves."""
    profiles = copy.deepcopy(start)
    best = scorer.score_all(profiles)
    changes = []
    for round_ in range(1, rounds + 1):
        improved = False
        for intent in intents:
            for label, candidate in candidates(profiles[intent], channels, scorer.tail.ranker is not None):
                trial = {**profiles, intent: candidate}
                value, rows = scorer.try_profiles(trial, intent)
                if value > best + 1e-9:
                    best, profiles, scorer.rows, improved = value, trial, rows, True
                    changes.append(f"round {round_}: {intent} {label} -> {value:.4f}")
                    log(changes[-1])
        if not improved:
            break
    return profiles, changes


def format_profiles(profiles: dict[str, dict[str, Any]]) -> str:
    """``DEFAULT_PROFILES`` as Python source in the style of profiles.py."""
    lines = ["DEFAULT_PROFILES: dict[str, dict[str, Any]] = {"]
    for intent, p in profiles.items():
        weights = ", ".join(f'"{c}": {float(w)!r}' for c, w in p["weights"].items())
        lines += [
            f'    "{intent}": {{',
            f'        "weights": {{{weights}}},',
            f'        "top_k": {int(p["top_k"])},',
            f'        "fetch_k": {int(p["fetch_k"])},',
            f'        "mmr_lambda": {float(p["mmr_lambda"])!r},',
            f'        "rerank": {bool(p["rerank"])},',
            "    },",
        ]
    lines.append("}")
    return "\n".join(lines)


def write_profiles(profiles: dict[str, dict[str, Any]], command: str, note: str, path: Path = PROFILES_FILE) -> None:
    """Replace the DEFAULT_PROFILES literal (and its calibration comment) in profiles.py, nothing else."""
    text = path.read_text(encoding="utf-8")
    pattern = re.compile(
        r"(?:# Calibrated by scripts/calibrate_profiles\.py[^\n]*\n(?:#[^\n]*\n)*)?"
        r"DEFAULT_PROFILES: dict\[str, dict\[str, Any\]\] = \{\n.*?\n\}\n",
        re.DOTALL,
    )
    if not pattern.search(text):
        raise SystemExit(f"Could not find the DEFAULT_PROFILES literal in {path}")
    # The command can be longer than a line: wrap it as a shell continuation so the file stays ruff-clean.
    wrapped = textwrap.wrap(command, width=100, break_on_hyphens=False, break_long_words=False)
    comment = (
        "# Calibrated by scripts/calibrate_profiles.py (coordinate search per intent on the training split, checked\n"
        f"# on held-out questions; {note}). Reproduce with:\n# " + " \\\n#     ".join(wrapped) + "\n"
    )
    path.write_text(pattern.sub(lambda _: comment + format_profiles(profiles) + "\n", text, count=1), encoding="utf-8")


def agreement(system: AdaptiveSystem, items: list[Captured], tail: Tail, limit: int) -> dict[str, Any]:
    """How often the replay's top 10 equals a real pipeline run's (it should always: same components, same lists)."""
    same = 0
    retried = 0
    checked = items[:limit]
    for item in checked:
        real = run_query(system.pipeline, item.question.question)
        ranked = passage_ranking(real["documents"], PASSAGE_KEY)[:10]
        same += ranked == replay(item, tail.router.profiles, tail)[:10]
        retried += len((real.get("gate") or {}).get("attempts") or [None]) > 1
    return {"checked": len(checked), "identical_top10": same, "gate_retried": retried}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hotpot", help="HotpotQA folder")
    parser.add_argument("--wiki2", help="2Wiki corpus.json added to HotpotQA as distractors")
    parser.add_argument("--wiki2-limit", type=int, default=None)
    parser.add_argument("--aragog", help="ARAGOG folder")
    add_jsonl_arguments(parser)
    parser.add_argument("--query-yaml", default="query", help="query pipeline YAML to capture (name or path)")
    parser.add_argument("--held-out", type=float, default=0.3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--min-group", type=int, default=5, help="fit an intent only with this many questions")
    parser.add_argument("--check", type=int, default=30, help="questions replayed against real runs")
    parser.add_argument("--root", default=str(ROOT / ".adaptive"))
    parser.add_argument("--write", action="store_true", help="write the fitted DEFAULT_PROFILES into profiles.py")
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    command = "python scripts/calibrate_profiles.py " + " ".join(sys.argv[1:] if argv is None else argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

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

    train: list[Captured] = []
    test: list[Captured] = []
    report: dict[str, Any] = {"command": command, "datasets": {}}
    tail: Tail | None = None
    start_profiles: dict[str, dict[str, Any]] | None = None
    try:
        for evalset in sets:
            system = AdaptiveSystem(eval_folder(Path(args.root), evalset.name) / "adaptive", query_yaml=args.query_yaml)
            log(f"[calibrate] {evalset.name}: indexing (cached when unchanged) ...")
            stats = system.index(evalset)
            tail = find_tail(system.pipeline)
            start_profiles = copy.deepcopy(tail.router.profiles)
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
        assert tail is not None and start_profiles is not None
        channels = sorted(tail.channel_of)
        groups = Counter(i.intent for i in train)
        intents = [i for i, n in groups.most_common() if n >= args.min_group]
        log(f"[calibrate] channels {channels}; fitting intents {intents} (training questions per intent: {groups})")
        train_scorer, test_scorer = Scorer(train, tail), Scorer(test, tail)
        before = {"train": train_scorer.summary(start_profiles), "held_out": test_scorer.summary(start_profiles)}
        fitted, changes = fit(train_scorer, start_profiles, intents, channels, args.rounds, log)
        validate_profiles(fitted, tuple(fitted))
        after = {"train": train_scorer.summary(fitted), "held_out": test_scorer.summary(fitted)}
        report.update(
            {
                "channels": channels,
                "fitted_intents": intents,
                "training_questions_per_intent": dict(groups),
                "changes": changes,
                "before": before,
                "after": after,
                "profiles_before": start_profiles,
                "profiles_after": fitted,
            }
        )
        improved = after["held_out"]["objective"] >= before["held_out"]["objective"]
        report["held_out_not_worse"] = improved
        print_report(report)
        if args.write:
            if improved:
                note = (
                    f"objective full@10 + {MRR_WEIGHT} MRR, held-out {before['held_out']['objective']:.3f} -> "
                    f"{after['held_out']['objective']:.3f}"
                )
                write_profiles(fitted, command, note)
                log(f"[calibrate] wrote DEFAULT_PROFILES to {PROFILES_FILE}; run scripts/build_yaml.py next")
            else:
                log("[calibrate] held-out objective got worse: profiles.py left unchanged")
    finally:
        release_all_clients()
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2, default=str))
    return report


def print_report(report: dict[str, Any]) -> None:
    print("| split | profiles | objective | " + " | ".join(f"{d} full@10 | {d} mrr" for d in report["datasets"]) + " |")
    print("|---|---|---|" + "---|---|" * len(report["datasets"]))
    for split in ("train", "held_out"):
        for label in ("before", "after"):
            s = report[label][split]
            cells = " | ".join(
                f"{s['datasets'][d]['full@10']:.3f} | {s['datasets'][d]['mrr']:.3f}" for d in report["datasets"]
            )
            print(f"| {split} | {label} | {s['objective']:.4f} | {cells} |")
    print()
    print("changes kept:" if report["changes"] else "no change improved the training objective")
    for change in report["changes"]:
        print(f"- {change}")


if __name__ == "__main__":
    main()
