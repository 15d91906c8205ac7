"""Replay the query pipeline's first pass and its gate loop under any profiles, without searching again.

:func:`capture` runs every question once through a loaded query pipeline with every channel on (fetch_k deep) and
keeps the router's intent probabilities, the query embedding and each channel's ranked list; :func:`replay` then
gives the pipeline's answer under any profile set with the pipeline's own joiner, MMR selector, reranker and
quality gate (a retry replays the router's escalated strategy, as the loop does); :func:`agreement` checks it
against real runs. Used by ``scripts/lab/calibrate_profiles.py``.
"""

from __future__ import annotations

import copy
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adaptive_retrieval.components import Strategy
from adaptive_retrieval.components.fusion import WeightedRRFJoiner
from adaptive_retrieval.components.retrieval import channel_enabled
from adaptive_retrieval.components.routing import IntentRouter, choose_strategy, escalate_strategy, plain_search
from adaptive_retrieval.components.selection import MMRSelector
from adaptive_retrieval.pipelines import query_inputs, run_query
from evaluation.data import EvalSet, Question
from evaluation.metrics import mean_metrics, passage_ranking, question_metrics
from evaluation.systems import PASSAGE_KEY, AdaptiveSystem

#: The objective's weight of MRR (objective: full@10 + MRR_WEIGHT * MRR, averaged over data sets).
MRR_WEIGHT = 0.5

MAX_ATTEMPTS = 5
#: Router outputs that make up a strategy (the rest, e.g. ``structural``, do not depend on the profiles).
STRATEGY_KEYS = ("weights", "top_k", "fetch_k", "mmr_lambda", "rerank", "max_per_source")


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
    #: Why the question reads as a plain search (rules.plain_search), or None.
    plain: str | None = None
    signals_memo: dict[tuple[Any, ...], dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class Routing:
    """What a replay routes with: the intent profiles and the fallback (its profile, the confidence under which
    a query takes it, and whether a plain search takes it), as the router's init parameters say."""

    profiles: dict[str, dict[str, Any]]
    fallback_profile: dict[str, Any] | None = None
    min_confidence: float = 0.0
    plain: bool = True

    @classmethod
    def of(cls, profiles: dict[str, dict[str, Any]] | Routing, router: IntentRouter) -> Routing:
        """``profiles`` with the router's own fallback, or a :class:`Routing` as it is."""
        if isinstance(profiles, Routing):
            return profiles
        plain = router.rule_strengths.get("plain", 0.0) > 0
        return cls(profiles, router.fallback_profile, router.min_confidence, plain)


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


def capture_profiles(channels: list[str], fetch_k: int, intents: list[str]) -> dict[str, dict[str, Any]]:
    """Every channel on, at the largest fetch_k searched (lists are cut to fetch_k when replayed)."""
    profile = {
        "weights": dict.fromkeys(channels, 1.0),
        "top_k": 10,
        "fetch_k": fetch_k,
        "mmr_lambda": 1.0,
        "rerank": False,
    }
    return {intent: copy.deepcopy(profile) for intent in intents}


def unstable_channels(pipeline: Any, evalset: EvalSet, tail: Tail, deep: int, probes: int = 6) -> set[str]:
    """Channels whose list at depth 30 is not the prefix of their list at ``deep`` on some probe question."""
    unstable: set[str] = set()
    for q in evalset.questions[:probes]:
        lists = {}
        for k in (30, deep):
            tail.router.profiles = capture_profiles(sorted(tail.channel_of), k, list(tail.router.profiles))
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
    # Every question runs every channel: no fallback profile takes a question away from the capture profile.
    saved_fallback = tail.router.fallback_profile
    tail.router.fallback_profile = None
    # One pass per question is enough: the replay runs the gate and its retries itself.
    saved_retries = getattr(tail.gate, "max_retries", None)
    if tail.gate is not None:
        tail.gate.max_retries = 0
    out = []
    try:
        unstable = unstable_channels(pipeline, evalset, tail, fetch_k)
        tail.router.profiles = capture_profiles(sorted(tail.channel_of), fetch_k, list(saved))
        feeders = {
            sender
            for sender, receiver, _ in pipeline.graph.edges(data=True)
            if receiver in {tail.channel_of[c] for c in unstable}
        }
        wanted = {tail.router_name, "query_embedder", *tail.channel_of.values(), *feeders}
        for q in evalset.questions:
            result = pipeline.run(query_inputs(pipeline, q.question), include_outputs_from=wanted)
            router = result[tail.router_name]
            channels = {c: result.get(sender, {}).get("documents") for c, sender in tail.channel_of.items()}
            compact_embeddings(channels)
            out.append(
                Captured(
                    dataset=evalset.name,
                    question=q,
                    # Rounded to 4 places in the router's output: renormalised, so that a mix of profiles that
                    # all have λ = 1 stays at 1.
                    probabilities=unit_sum(router["routing"]["probabilities"]),
                    intent=router["intent"],
                    embedding=result["query_embedder"]["vector"].tolist(),
                    channels=channels,
                    fetchers={c: fetcher(pipeline, tail.channel_of[c], tail, result, q.question) for c in unstable},
                    plain=plain_search(q.question),
                )
            )
    finally:
        tail.router.profiles = saved
        tail.router.fallback_profile = saved_fallback
        if tail.gate is not None:
            tail.gate.max_retries = saved_retries
    return out, unstable


def compact_embeddings(channels: dict[str, list[Any] | None]) -> None:
    """Give every captured document one float32 array per chunk id for its vector, in place of its list of Python
    floats (12 KB each: a capture of every development set held ~7 GB of them; the arrays take 1.5 KB, and the
    same chunk found by several channels shares one). Exact: the store's vectors are float32, and MMR and the gate
    read them as float32 arrays anyway. Set through ``__dict__``, as a deep copy fills a document (Haystack's
    setter warns on every field it changes, and its constructor makes a list again)."""
    shared: dict[str, np.ndarray] = {}
    for docs in channels.values():
        for doc in docs or []:
            if doc.embedding is None:
                continue
            if doc.id not in shared:
                shared[doc.id] = np.asarray(doc.embedding, dtype=np.float32)
            doc.__dict__["embedding"] = shared[doc.id]


def unit_sum(probabilities: dict[str, float]) -> dict[str, float]:
    """``probabilities`` rescaled to sum to exactly one."""
    total = sum(probabilities.values()) or 1.0
    return {intent: p / total for intent, p in probabilities.items()}


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


def memo_signals(gate: Any, item: Captured) -> Any:
    """The gate's ``signals`` memoised per question, list (ids and the channels that found each) and active
    channels: everything they read besides the question, which is the item's."""
    original = type(gate).signals

    def signals(
        documents: list[Any],
        query: str,
        query_embedding: Any = None,
        fusion: dict[str, Any] | None = None,
        scoring: Any = None,
    ) -> dict[str, float]:
        active = tuple(sorted((fusion or {}).get("weights") or {}))
        sizes = tuple(sorted(((fusion or {}).get("sizes") or {}).items()))
        # The model's asked-check settings change the signals: part of the key (one model per replay in practice).
        model = scoring or gate.scoring
        check = (model.asked_floor, model.asked_threshold)
        key = (tuple((d.id, tuple(sorted(d.meta.get("channels", {})))) for d in documents), active, sizes, check)
        if key not in item.signals_memo:
            item.signals_memo[key] = original(gate, documents, query, query_embedding, fusion, scoring)
        return dict(item.signals_memo[key])

    return signals


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
        max_per_source=strategy.get("max_per_source", 0),
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


def base_strategy(item: Captured, routing: Routing, router: IntentRouter) -> dict[str, Any]:
    """The router's first strategy for one captured question under ``routing``."""
    strategy, _ = choose_strategy(
        routing.profiles,
        item.probabilities,
        getattr(router, "channels", None),
        router.soft,
        routing.fallback_profile,
        routing.min_confidence,
        item.plain if routing.plain else None,
    )
    return strategy


def replay(item: Captured, profiles: dict[str, dict[str, Any]] | Routing, tail: Tail) -> list[str]:
    """The pipeline's answer for one captured question under ``profiles`` (with the router's own fallback) or a
    :class:`Routing`: ranked passage ids.

    Without a quality gate this is the first pass; with one, the gate judges each attempt and a retry replays
    the router's escalated strategy (wider fetch_k/top_k, skipped channels at the floor weight), as the loop does.
    """
    base = base_strategy(item, Routing.of(profiles, tail.router), tail.router)
    if tail.gate is None:
        return passage_ranking(first_pass(item, base, tail)[0], PASSAGE_KEY)
    attempt, previous = 0, None
    depth = getattr(tail.router, "escalation_depth", 2.0)
    floor = getattr(tail.router, "escalation_floor", 0.1)
    tail.gate.signals = memo_signals(tail.gate, item)
    try:
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
                strategy=Strategy.from_dict(strategy),
                next_strategy=Strategy.from_dict(escalate_strategy(base, attempt + 1, depth, floor)),
            )
            if not out.get("retry"):
                return passage_ranking(out["documents"], PASSAGE_KEY)
            previous = out["retry"]
            attempt = previous.attempt
    finally:
        del tail.gate.signals
    msg = f"The quality gate asked for more than {MAX_ATTEMPTS} attempts"
    raise RuntimeError(msg)


def objective_of_means(means_by_dataset: Iterable[dict[str, float]]) -> float:
    """Mean over datasets of full@10 + 0.5 * MRR from each dataset's mean metrics (each dataset weighs the same)."""
    values = [means["full@10"] + MRR_WEIGHT * means["mrr"] for means in means_by_dataset]
    return float(np.mean(values)) if values else 0.0


def objective(rows_by_dataset: dict[str, list[dict[str, float]]]) -> float:
    """Mean over datasets of full@10 + 0.5 * MRR (each dataset weighs the same)."""
    return objective_of_means(mean_metrics(rows) for rows in rows_by_dataset.values())


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


def agreement(system: AdaptiveSystem, items: list[Captured], tail: Tail, limit: int) -> dict[str, Any]:
    """How often the replay's top 10 equals a real pipeline run's (it should always: same components, same lists)."""
    same = 0
    retried = 0
    checked = items[:limit]
    for item in checked:
        real = run_query(system.pipeline, item.question.question)
        ranked = passage_ranking(real.documents, PASSAGE_KEY)[:10]
        same += ranked == replay(item, tail.router.profiles, tail)[:10]
        retried += real.gate is not None and len(real.gate.attempts) > 1
    return {"checked": len(checked), "identical_top10": same, "gate_retried": retried}
