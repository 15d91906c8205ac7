"""Leave-one-set-out choice with a floor: profiles and routing chosen so that, fitted without a set, they are
never below the stock hybrid on it.

Two levels, both replayed on captured questions (:mod:`evaluation.replay`), so no search runs twice:

1. **The safe profile** (what every query takes when there is no routing, and what a query the router is unsure
   of falls back to): from a grid of candidate profiles, the one with the best mean score over the fitted sets
   among those at least the stock hybrid's on every floor metric of every one of them (:func:`fit_safe`).
2. **Routing** (:class:`RoutingCandidate`): which intents keep a profile of their own (shrunk toward the safe one
   by a share), the confidence under which a query falls back, whether plain searches fall back, and whether the
   keyword intent keeps its lexical profile. Each candidate is judged leave-one-set-out: for every set X the safe
   profile is fitted without X, the candidate routes X's questions with it, and the result on X is compared with
   the stock hybrid's. A candidate is **admissible** when it is at least the stock hybrid's on every floor metric
   of every set left out; among the admissible ones, the best mean score over the sets left out wins. "No
   routing" (the safe profile for every query) is one of the candidates.

A set's score is the mean, over its floor metrics, of the ratio to the stock hybrid's (so sets of different
difficulty weigh alike). What ships is the chosen candidate with the safe profile fitted on every set.

Usage::

    judge = Judge(items_by_set, tails_by_set, stock_rows, floor_metrics)
    safe = fit_safe(judge, SAFE_GRID, sets)
    result = leave_one_out(judge, SAFE_GRID, candidates, routed_profiles, sets)
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from adaptive_retrieval.components.routing import INTENTS
from evaluation.metrics import mean_metrics, question_metrics
from evaluation.profile_fit import everywhere, normalised, shrunk
from evaluation.replay import Captured, Routing, Tail, base_strategy, replay

#: A metric counts as at least the stock hybrid's within this (floating point noise only).
TOLERANCE = 1e-9


def strategy_key(strategy: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a first-attempt strategy (the replay's answer depends on nothing else)."""
    weights = tuple(sorted((c, round(float(w), 4)) for c, w in strategy["weights"].items() if w > 0))
    rest = strategy["top_k"], strategy["fetch_k"], round(strategy["mmr_lambda"], 4), bool(strategy["rerank"])
    return weights, *rest, int(strategy.get("max_per_source", 0))


class Judge:
    """Per-question metrics of a routing on a set, replayed once per question and strategy, and how they compare
    with the stock hybrid's.

    :param items: the captured questions of each set.
    :param tails: each set's query pipeline's router, joiner, MMR, reranker and gate (the gate reads its own
        index's calibration).
    :param stock: each set's per-question metrics of the stock hybrid (same order as ``items``).
    :param floor_metrics: each set's floor metrics.
    """

    def __init__(
        self,
        items: dict[str, list[Captured]],
        tails: dict[str, Tail],
        stock: dict[str, list[dict[str, float]]],
        floor_metrics: dict[str, tuple[str, ...]],
    ) -> None:
        self.items = items
        self.tails = tails
        self.stock = stock
        self.stock_means = {name: mean_metrics(rows) for name, rows in stock.items()}
        self.floor_metrics = floor_metrics
        self._memo: dict[tuple[str, int, tuple[Any, ...]], dict[str, float]] = {}
        self.replays = 0

    def rows(self, name: str, routing: Routing) -> list[dict[str, float]]:
        """Per-question metrics of ``routing`` on set ``name``."""
        out = []
        tail = self.tails[name]
        for index, item in enumerate(self.items[name]):
            key = (name, index, strategy_key(base_strategy(item, routing, tail.router)))
            if key not in self._memo:
                self._memo[key] = question_metrics(replay(item, routing, tail), item.question.gold_ids)
                self.replays += 1
            out.append(self._memo[key])
        return out

    def means(self, name: str, routing: Routing) -> dict[str, float]:
        """Mean metrics of ``routing`` on set ``name``."""
        return mean_metrics(self.rows(name, routing))

    def ratios(self, name: str, means: dict[str, float]) -> dict[str, float]:
        """Each floor metric of ``means`` over the stock hybrid's on set ``name`` (1 + the metric when stock has 0)."""
        stock = self.stock_means[name]
        return {m: means[m] / stock[m] if stock[m] > 0 else 1.0 + means[m] for m in self.floor_metrics[name]}

    def at_floor(self, name: str, means: dict[str, float]) -> bool:
        """Whether ``means`` is at least the stock hybrid's on every floor metric of set ``name``."""
        stock = self.stock_means[name]
        return all(means[m] >= stock[m] - TOLERANCE for m in self.floor_metrics[name])

    def score(self, name: str, means: dict[str, float]) -> float:
        """The set's score: the mean ratio to the stock hybrid over its floor metrics."""
        return float(np.mean(list(self.ratios(name, means).values())))


def fixed_routing(profile: dict[str, Any]) -> Routing:
    """Every query takes ``profile``: no routing, no fallback."""
    return Routing(everywhere(profile, list(INTENTS)), None, 0.0, False)


@dataclass(frozen=True)
class Fit:
    """A safe profile fitted on some sets: its index in the grid, whether it met the floor on all of them, and
    its mean score there."""

    index: int
    at_floor: bool
    score: float


def fit_safe(judge: Judge, grid: Sequence[dict[str, Any]], sets: Sequence[str]) -> Fit:
    """The grid profile with the best mean score over ``sets`` among those at the floor on every one of them (the
    best mean of all when none is; ties: the earlier one)."""
    scored = []
    for index, profile in enumerate(grid):
        routing = fixed_routing(profile)
        means = {name: judge.means(name, routing) for name in sets}
        ok = all(judge.at_floor(name, means[name]) for name in sets)
        scored.append(Fit(index, ok, float(np.mean([judge.score(name, means[name]) for name in sets]))))
    pool = [f for f in scored if f.at_floor] or scored
    return max(pool, key=lambda f: (f.score, -f.index))


@dataclass(frozen=True)
class RoutingCandidate:
    """One way to route around the safe profile.

    :param keep: intents that keep a profile of their own (the routed profiles'), shrunk ``share`` of the way
        toward the safe profile; every other intent takes the safe profile.
    :param share: 0: their own profiles as they are; 1: the safe profile (no routing at all).
    :param min_confidence: a query whose top intent is less probable takes the safe profile.
    :param plain: a plain search (``rules.plain_search``) takes the safe profile.
    :param keyword: the keyword intent keeps its own (lexical) profile, unshrunk.
    :param fallback: the grid index of a safe profile this candidate names itself (fitted on no set, so the same
        whichever set is left out); ``None``: the safe profile fitted without the set left out.
    """

    keep: tuple[str, ...] = ()
    share: float = 1.0
    min_confidence: float = 0.0
    plain: bool = False
    keyword: bool = False
    fallback: int | None = None

    @property
    def label(self) -> str:
        """A short name for tables."""
        if not self.keep and not self.keyword:
            return "fixed (the safe profile for every query)"
        kept = "+".join(self.keep) or "none"
        safe = "fitted without the set" if self.fallback is None else f"grid #{self.fallback}"
        return (
            f"keep {kept} (share {self.share:g}){' + keyword' if self.keyword else ''}, "
            f"fallback ({safe}) < {self.min_confidence:g}{' or plain' if self.plain else ''}"
        )

    def profiles(self, routed: dict[str, dict[str, Any]], safe: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """Every intent's profile: the kept ones shrunk toward ``safe``, keyword's own when kept, else ``safe``."""
        names = sorted({c for p in routed.values() for c in p["weights"]} | set(safe["weights"]))
        plain = {**copy.deepcopy(safe), "weights": {c: float(safe["weights"].get(c, 0.0)) for c in names}}
        out = {}
        for intent, own in routed.items():
            if intent in self.keep:
                profile = shrunk({intent: own}, plain, self.share)[intent]
            elif intent == "keyword" and self.keyword:
                profile = copy.deepcopy(own)
            else:
                profile = copy.deepcopy(plain)
            profile["weights"] = {c: float(profile["weights"].get(c, 0.0)) for c in names}
            out[intent] = profile
        return out

    def routing(self, routed: dict[str, dict[str, Any]], safe: dict[str, Any]) -> Routing:
        """The :class:`Routing` a replay runs: these profiles, the safe profile as the fallback."""
        if not self.keep and not self.keyword:
            return fixed_routing(safe)
        return Routing(self.profiles(routed, safe), copy.deepcopy(safe), self.min_confidence, self.plain)


def routing_candidates(
    keep_sets: Sequence[tuple[str, ...]],
    shares: Sequence[float],
    confidences: Sequence[float],
) -> list[RoutingCandidate]:
    """ "No routing" first, then every combination of kept intents, share, fallback confidence, the plain-search
    fallback on or off and the keyword profile kept or not."""
    out = [RoutingCandidate()]
    for keep, share, confidence, plain, keyword in itertools.product(
        keep_sets, shares, confidences, (False, True), (False, True)
    ):
        out.append(RoutingCandidate(tuple(keep), share, confidence, plain, keyword))
    return out


def safe_grid(
    channels: Sequence[str],
    steps: int,
    top_k: int,
    fetch_k: int | Sequence[int],
    lambdas: Sequence[float],
    rerank: Sequence[bool],
    per_source: Sequence[int] = (0,),
) -> list[dict[str, Any]]:
    """Candidate safe profiles: every way to split ``steps`` equal parts of weight over ``channels``, at each MMR
    λ, rerank setting, ``fetch_k`` and cap of passages per source document (``top_k`` fixed)."""
    depths = (fetch_k,) if isinstance(fetch_k, int) else tuple(fetch_k)
    grid = []
    for parts in itertools.product(range(steps + 1), repeat=len(channels)):
        if sum(parts) != steps:
            continue
        weights = normalised({c: p / steps for c, p in zip(channels, parts, strict=True)})
        for lam, rr, depth, cap in itertools.product(lambdas, rerank, depths, per_source):
            profile = {"weights": weights, "top_k": top_k, "fetch_k": depth, "mmr_lambda": lam, "rerank": rr}
            grid.append({**profile, "max_per_source": cap} if cap else profile)
    return grid


@dataclass
class HeldOut:
    """One candidate's results on the sets left out in turn."""

    candidate: RoutingCandidate
    means: dict[str, dict[str, float]] = field(default_factory=dict)
    ratios: dict[str, dict[str, float]] = field(default_factory=dict)
    scores: dict[str, float] = field(default_factory=dict)
    at_floor: dict[str, bool] = field(default_factory=dict)

    @property
    def admissible(self) -> bool:
        """At the floor on every set left out."""
        return all(self.at_floor.values())

    @property
    def mean_score(self) -> float:
        """Mean score over the sets left out."""
        return float(np.mean(list(self.scores.values())))

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the report."""
        return {
            "candidate": asdict(self.candidate),
            "label": self.candidate.label,
            "admissible": self.admissible,
            "mean_score": self.mean_score,
            "means": self.means,
            "ratios": self.ratios,
            "scores": self.scores,
            "at_floor": self.at_floor,
        }


@dataclass
class LeaveOneOut:
    """The leave-one-set-out results: the safe profile fitted without each set, every routing candidate's results
    on the sets left out, and the chosen candidate."""

    safe_without: dict[str, Fit]
    held_out: list[HeldOut]
    chosen: HeldOut


def leave_one_out(
    judge: Judge,
    grid: Sequence[dict[str, Any]],
    candidates: Sequence[RoutingCandidate],
    routed: dict[str, dict[str, Any]],
    sets: Sequence[str],
    log: Any = print,
) -> LeaveOneOut:
    """Fit the safe profile without each set, judge every candidate on the set left out, choose the admissible
    candidate with the best mean (ties: the earlier in ``candidates``; none admissible: the best mean, reported as
    such)."""
    safe_without = {}
    for name in sets:
        safe_without[name] = fit_safe(judge, grid, [s for s in sets if s != name])
        log(f"[loso] safe profile without {name}: grid #{safe_without[name].index} ({judge.replays} replays so far)")
    results = []
    for candidate in candidates:
        held = HeldOut(candidate)
        for name in sets:
            safe = grid[safe_without[name].index if candidate.fallback is None else candidate.fallback]
            means = judge.means(name, candidate.routing(routed, safe))
            held.means[name] = means
            held.ratios[name] = judge.ratios(name, means)
            held.scores[name] = judge.score(name, means)
            held.at_floor[name] = judge.at_floor(name, means)
        results.append(held)
        log(
            f"[loso] {candidate.label}: mean {held.mean_score:.4f}, admissible {held.admissible} "
            f"({judge.replays} replays so far)"
        )
    pool = [h for h in results if h.admissible] or results
    chosen = max(pool, key=lambda h: (round(h.mean_score, 9), -results.index(h)))
    return LeaveOneOut(safe_without, results, chosen)
