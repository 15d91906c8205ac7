"""Fit profiles on captured questions (:mod:`evaluation.replay`): a coordinate search per intent, the best single
fixed profile for every query (the peer that routing has to beat), profiles shrunk toward it, and the profiles
file (``components/routing/data/profiles.json``) these fits are written to, with their provenance.
"""

from __future__ import annotations

import copy
import datetime
import itertools
import json
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.routing import mix_profiles
from evaluation.replay import MRR_WEIGHT, Scorer, objective_of_means

ROOT = Path(__file__).resolve().parents[3]
PROFILES_JSON = ROOT / "components" / "routing" / "data" / "profiles.json"
WEIGHT_GRID = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
# Deeper lists cost latency at every stage (Haystack copies each component's inputs): the grid stays within the
# range the hand-set profiles used, so calibration trades weights and λ, not the latency budget.
FETCH_GRID = (20, 30, 40, 50)
LAMBDA_GRID = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
#: Shares of the fixed profile tried by :func:`fit_shrinkage` (0: the routed profiles as they are).
SHRINK_GRID = (0.0, 0.25, 0.5, 0.75, 1.0)
METRIC = f"mean over the data sets of full@10 + {MRR_WEIGHT} MRR"


def normalised(weights: dict[str, float]) -> dict[str, float]:
    """Weights rescaled to sum to one (rounded to 3 places); all-zero weights as they are."""
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


def mean_strategy(scorer: Scorer, profiles: dict[str, dict[str, Any]], channels: list[str]) -> dict[str, Any]:
    """The routed strategy averaged over the scorer's questions: the mix of the profiles at the mean routing."""
    mean: dict[str, float] = {}
    for item in scorer.items:
        for intent, p in item.probabilities.items():
            mean[intent] = mean.get(intent, 0.0) + p
    total = sum(mean.values())  # the router's probabilities are rounded: renormalise so λ stays within [0, 1]
    strategy = mix_profiles(profiles, {i: p / total for i, p in mean.items()}, channels)
    return {**strategy, "mmr_lambda": min(1.0, strategy["mmr_lambda"])}


def everywhere(profile: dict[str, Any], intents: list[str]) -> dict[str, dict[str, Any]]:
    """One profile for every intent: whatever the router says, the strategy is ``profile``."""
    return {intent: copy.deepcopy(profile) for intent in intents}


def fit_fixed(
    scorer: Scorer, routed: dict[str, dict[str, Any]], channels: list[str], rounds: int, log: Any
) -> tuple[dict[str, Any], list[str]]:
    """The best single profile for every query on the scorer's (training) questions: the best start among the
    mean routed strategy and each intent's own profile, then a coordinate search over the one shared profile
    (each channel weight, fetch_k, λ), a change kept only when the objective strictly improves."""
    intents = list(routed)
    starts = {"mean routed strategy": mean_strategy(scorer, routed, channels)}
    starts.update({f"the {i} profile": {**routed[i], "weights": dict(routed[i]["weights"])} for i in intents})
    scored = {label: scorer.score_all(everywhere(p, intents)) for label, p in starts.items()}
    label = max(scored, key=scored.__getitem__)
    profile, best = starts[label], scored[label]
    changes = [f"start: {label} -> {best:.4f}"]
    log(changes[-1])
    for round_ in range(1, rounds + 1):
        improved = False
        for name, candidate in candidates(profile, channels, scorer.tail.ranker is not None):
            value = scorer.score_all(everywhere(candidate, intents))
            if value > best + 1e-9:
                best, profile, improved = value, candidate, True
                changes.append(f"round {round_}: fixed {name} -> {value:.4f}")
                log(changes[-1])
        if not improved:
            break
    return profile, changes


def shrunk(routed: dict[str, dict[str, Any]], fixed: dict[str, Any], share: float) -> dict[str, dict[str, Any]]:
    """Every intent's profile moved ``share`` of the way to ``fixed`` (weights, depths and λ blended; rerank as
    the larger share has it)."""
    out = {}
    for intent, p in routed.items():
        names = set(p["weights"]) | set(fixed["weights"])
        weights = {
            c: (1 - share) * float(p["weights"].get(c, 0.0)) + share * float(fixed["weights"].get(c, 0.0))
            for c in sorted(names)
        }
        top_k = round((1 - share) * p["top_k"] + share * fixed["top_k"])
        out[intent] = {
            "weights": normalised(weights),
            "top_k": top_k,
            "fetch_k": max(top_k, round((1 - share) * p["fetch_k"] + share * fixed["fetch_k"])),
            "mmr_lambda": round((1 - share) * p["mmr_lambda"] + share * fixed["mmr_lambda"], 3),
            "rerank": bool(fixed["rerank"] if share >= 0.5 else p["rerank"]),
        }
    return out


def fit_shrinkage(
    scorer: Scorer, routed: dict[str, dict[str, Any]], fixed: dict[str, Any]
) -> tuple[float, dict[float, float]]:
    """The share of the fixed profile (:data:`SHRINK_GRID`) that scores best on the scorer's questions (the
    smallest among equals), and the objective at each share."""
    values = {share: scorer.score_all(shrunk(routed, fixed, share)) for share in SHRINK_GRID}
    best = max(values.values())
    return min(s for s, v in values.items() if v >= best - 1e-9), values


def provenance(command: str, datasets: list[str], result: dict[str, Any], notes: list[str]) -> dict[str, Any]:
    """Where a fit comes from: data sets, command, date, metric and what it scored."""
    return {
        "datasets": datasets,
        "split": "stratified by data set and question type (--held-out, --seed of the command)",
        "command": command,
        "date": datetime.date.today().isoformat(),
        "metric": METRIC,
        "result": result,
        "notes": notes,
    }


def write_profiles_file(
    path: Path,
    profiles: dict[str, dict[str, Any]] | None = None,
    fixed: dict[str, Any] | None = None,
    origin: dict[str, Any] | None = None,
    fixed_origin: dict[str, Any] | None = None,
) -> None:
    """Replace the routed profiles and/or the fixed profile in the profiles file (each with its provenance),
    keeping everything else in it (``channel_shares``, the other fit)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    if profiles is not None:
        data["profiles"], data["provenance"] = profiles, origin or {}
    if fixed is not None:
        data["fixed_profile"] = {"profile": fixed, "provenance": fixed_origin or {}}
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def merged(
    routed: dict[str, dict[str, Any]],
    fixed: dict[str, Any],
    keep: tuple[str, ...],
    share: float,
    keep_always: tuple[str, ...] = (),
) -> dict[str, dict[str, Any]]:
    """Fewer intents: every intent outside ``keep`` and ``keep_always`` takes the fixed profile (its questions get
    the fixed mix, and a soft mix sends that intent's probability to it); the ``keep`` intents are shrunk ``share``
    of the way toward it; the ``keep_always`` intents keep their profiles as they are (the keyword intent: its
    evidence is lexical, and question-answering sets hold almost no keyword queries to fit or judge it on).
    Every profile names the routed profiles' channels (a channel the fixed profile lacks weighs 0)."""
    names = sorted({c for p in routed.values() for c in p["weights"]} | set(fixed["weights"]))
    plain = {**fixed, "weights": {c: float(fixed["weights"].get(c, 0.0)) for c in names}}
    out = {}
    for intent, profile in routed.items():
        if intent in keep_always:
            out[intent] = copy.deepcopy(profile)
        elif intent in keep:
            out[intent] = shrunk({intent: profile}, plain, share)[intent]
        else:
            out[intent] = copy.deepcopy(plain)
        out[intent]["weights"] = {c: float(out[intent]["weights"].get(c, 0.0)) for c in names}
    return out


def merge_variants(keepable: list[str]) -> list[tuple[tuple[str, ...], float]]:
    """Every subset of ``keepable`` intents kept (the others merged into the fixed profile), each at every share
    of :data:`SHRINK_GRID` below 1 (share 1 is the fixed profile everywhere: the empty subset, listed once)."""
    out: list[tuple[tuple[str, ...], float]] = [((), 0.0)]
    for size in range(1, len(keepable) + 1):
        for keep in itertools.combinations(keepable, size):
            out.extend((keep, share) for share in SHRINK_GRID if share < 1.0)
    return out


def with_all(scores: dict[str, Any]) -> dict[str, Any]:
    """``scores`` (train and held_out summaries) with ``all``: each data set's means over both splits, weighted by
    their question counts, and the objective on them."""
    datasets = {}
    for name, train in scores["train"]["datasets"].items():
        held = scores["held_out"]["datasets"][name]
        n = train["n"] + held["n"]
        datasets[name] = {
            **{m: (train[m] * train["n"] + held[m] * held["n"]) / n for m in train if m != "n"},
            "n": n,
        }
    return {**scores, "all": {"objective": objective_of_means(datasets.values()), "datasets": datasets}}


def at_least(scores: dict[str, Any], peer: dict[str, Any], splits: tuple[str, ...]) -> bool:
    """Whether ``scores`` has full@10 and MRR both at least ``peer``'s on every data set of every split."""
    return all(
        mine[metric] >= theirs[metric] - 1e-9
        for split in splits
        for name, theirs in peer[split]["datasets"].items()
        for mine in (scores[split]["datasets"][name],)
        for metric in ("full@10", "mrr")
    )


def pick_merge(variants: list[dict[str, Any]], fixed: dict[str, Any]) -> dict[str, Any]:
    """The variant the routed pipeline ships: the best held-out objective among those with full@10 and MRR both at
    least the fixed profile's on every data set, on the held-out questions and on all of them (``all`` when the
    scores have it; ties: more kept intents, then the smaller share, so routing does the most it safely can). The
    empty variant (the fixed profile everywhere, up to the always-kept intents) qualifies whenever it ties the
    fixed profile, as it does on sets without keyword queries; with no qualifying variant, the best held-out one."""
    splits = tuple(s for s in ("held_out", "all") if s in fixed)
    fair = [v for v in variants if at_least(v["scores"], fixed, splits)] or variants
    return max(fair, key=lambda v: (round(v["scores"]["held_out"]["objective"], 9), len(v["keep"]), -v["share"]))
