"""Intent taxonomy and the strategy profile of each intent (channel weights, depth, MMR λ, reranking).

The starting weights follow the seed TD-057 (vector / BM25 / graph-local / graph-global) extended with the
section-tree channel; ``scripts/evaluate.py`` reports how they score and the README says how they were
calibrated. Profiles are ``IntentRouter`` init parameters, so a user changes them in YAML.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from adaptive_retrieval.components.retrieval.channels import CHANNELS

INTENTS: tuple[str, ...] = (
    "factual",
    "keyword",
    "analytical",
    "opinion",
    "contextual",
    "relational",
    "summary",
)

# Calibrated by scripts/calibrate_profiles.py (coordinate search per intent on the training split, checked on
# held-out questions; objective: mean over the data sets of full@10 + 0.5 MRR). The relational and analytical
# profiles (109 / 39 training questions) were fitted on hotpotqa100, ARAGOG and musique_dev100 with the MuSiQue +
# 2Wiki index, starting from the earlier profiles with graph_ppr at 0.35 / 0.2 / 0.2 of the relational / factual /
# analytical weights: held-out objective 1.143 -> 1.160 with the run's fitted profiles (hotpotqa100 full@10 0.833
# -> 0.867, musique 0.267 -> 0.300, ARAGOG 1.000). Two of the run's changes were not taken: factual (40 training
# questions, almost all multi-hop questions routed there; its fit moved 0.45 of the weight to the section channel,
# which duplicates dense on one-chunk passages, and ranked the Rust passage third for "What prevents data races in
# Rust?" on tests/test_evaluate_smoke.py's corpus) and contextual (9 questions; section weight 0, where structural
# questions are routed). The other intents keep the hotpotqa100 + ARAGOG calibration (held-out 1.380 -> 1.394).
# The walk is not in the default pipeline: with it and without it (these profiles, its share removed and the rest
# renormalised) the pipeline scores the same on held-out MuSiQue (full@10 0.300) and on all of hotpotqa100
# (0.880); without it, higher on held-out hotpotqa100 (0.900 against 0.867) at a lower p50 (36 against 52 ms on
# MuSiQue). yaml/query_ppr.yaml has the profiles as fitted (PPR_SHARES). README, "Personalised PageRank".
# The run (it started from the earlier profiles; run today, it starts where this one ended):
# python scripts/calibrate_profiles.py --hotpot ../shared/data/hotpotqa100 --aragog ../shared/data/aragog \
#     --corpus ../shared/data/musique_dev100/corpus.jsonl --corpus ../shared/data/wiki2_corpus/corpus.json \
#     --questions ../shared/data/musique_dev100/questions.jsonl --name musique --query-yaml query_ppr \
#     --json calibrate.json
# The bridge channel (entity-expanded BM25 searches, issue 18) then took 0.3 of the relational, factual and
# analytical weights, the rest scaled down in proportion: chosen among 0.15 / 0.3 / 0.45 on MuSiQue's training split
# (full@10 0.529 -> 0.529 / 0.571 / 0.543), then measured once on the held-out questions (0.300 -> 0.367, stock RRF
# hybrid 0.200) and on hotpotqa100 (0.890 -> 0.920; held-out 0.900 -> 0.933). README, "Bridge expansion".
# The relational, factual and analytical profiles were then refitted with the bridge channel in the pipeline (the
# same command with the default query.yaml; 109 / 40 / 39 training questions): training objective 1.296 -> 1.326,
# held-out 1.206 -> 1.235 in the replay. Measured with real runs: MuSiQue full@10 0.510 -> 0.540 (held-out 0.367 ->
# 0.400), hotpotqa100 0.920 -> 0.950 (held-out 0.933 both), ARAGOG MRR 0.980 -> 0.968. The run's summary and
# contextual fits (10 and 9 training questions, moving all their weight to graph_local, where summary and
# structural questions need the section channel) were not taken.
# ``rerank`` is off in every profile since the ablation of scripts/eval_rerank.py (the same MMR candidates ranked
# with and without the late-interaction ranker, 100 hotpotqa100 + 98 ARAGOG + 100 musique_dev100 questions): no
# intent gained on all three sets (analytical MRR 0.958 -> 0.927 on hotpotqa100, 0.981 -> 0.955 on ARAGOG;
# contextual equal on ARAGOG) while reranking multiplied the p95 latency by 3-4. See the README.
DEFAULT_PROFILES: dict[str, dict[str, Any]] = {
    "analytical": {
        "weights": {
            "bridge": 0.224,
            "dense": 0.102,
            "graph_global": 0.0,
            "graph_local": 0.522,
            "graph_ppr": 0.0,
            "section": 0.085,
            "sparse": 0.068,
        },
        "top_k": 15,
        "fetch_k": 20,
        "mmr_lambda": 1.0,
        "rerank": False,
    },
    "contextual": {
        "weights": {
            "bridge": 0.0,
            "dense": 0.357,
            "graph_global": 0.0,
            "graph_local": 0.0,
            "graph_ppr": 0.0,
            "section": 0.643,
            "sparse": 0.0,
        },
        "top_k": 10,
        "fetch_k": 30,
        "mmr_lambda": 0.8,
        "rerank": False,
    },
    "factual": {
        "weights": {
            "bridge": 0.332,
            "dense": 0.552,
            "graph_global": 0.0,
            "graph_local": 0.052,
            "graph_ppr": 0.0,
            "section": 0.0,
            "sparse": 0.065,
        },
        "top_k": 10,
        "fetch_k": 30,
        "mmr_lambda": 0.85,
        "rerank": False,
    },
    "keyword": {
        "weights": {
            "bridge": 0.0,
            "dense": 0.15,
            "graph_global": 0.0,
            "graph_local": 0.25,
            "graph_ppr": 0.0,
            "section": 0.0,
            "sparse": 0.6,
        },
        "top_k": 10,
        "fetch_k": 30,
        "mmr_lambda": 0.9,
        "rerank": False,
    },
    "opinion": {
        "weights": {
            "bridge": 0.0,
            "dense": 0.4,
            "graph_global": 0.3,
            "graph_local": 0.0,
            "graph_ppr": 0.0,
            "section": 0.15,
            "sparse": 0.15,
        },
        "top_k": 15,
        "fetch_k": 50,
        "mmr_lambda": 0.5,
        "rerank": False,
    },
    "relational": {
        "weights": {
            "bridge": 0.5,
            "dense": 0.098,
            "graph_global": 0.0,
            "graph_local": 0.402,
            "graph_ppr": 0.0,
            "section": 0.0,
            "sparse": 0.0,
        },
        "top_k": 15,
        "fetch_k": 30,
        "mmr_lambda": 0.75,
        "rerank": False,
    },
    "summary": {
        "weights": {
            "bridge": 0.0,
            "dense": 0.25,
            "graph_global": 0.0,
            "graph_local": 0.0,
            "graph_ppr": 0.0,
            "section": 0.75,
            "sparse": 0.0,
        },
        "top_k": 15,
        "fetch_k": 40,
        "mmr_lambda": 0.5,
        "rerank": False,
    },
}

#: graph_ppr's share per intent in yaml/query_ppr.yaml (the opt-in pipeline with the walk): the shares the
#: calibration above fitted with the walk in the pipeline; DEFAULT_PROFILES are those profiles without it
#: (renormalised), so ``with_channel_share(DEFAULT_PROFILES, "graph_ppr", PPR_SHARES)`` gives the fitted profiles.
PPR_SHARES: dict[str, float] = {"analytical": 0.128, "relational": 0.204}

_REQUIRED = ("weights", "top_k", "fetch_k", "mmr_lambda", "rerank")


def with_channel_share(
    profiles: dict[str, dict[str, Any]], channel: str, shares: dict[str, float]
) -> dict[str, dict[str, Any]]:
    """A copy of ``profiles`` where ``channel`` takes ``shares[intent]`` of each listed intent's weights, the
    other channels scaled down in proportion (so dropping the channel again gives back the same profile)."""
    out = copy.deepcopy(profiles)
    for intent, share in shares.items():
        weights = out[intent]["weights"]
        rest = {c: float(w) for c, w in weights.items() if c != channel}
        total = sum(rest.values()) or 1.0
        out[intent]["weights"] = {
            **{c: round(w * (1 - share) / total, 4) for c, w in rest.items()},
            channel: share,
        }
    return out


def default_profiles() -> dict[str, dict[str, Any]]:
    """A deep copy of :data:`DEFAULT_PROFILES`."""
    return copy.deepcopy(DEFAULT_PROFILES)


def validate_profiles(
    profiles: dict[str, dict[str, Any]],
    intents: tuple[str, ...] | list[str],
    channels: Iterable[str] | None = None,
) -> None:
    """Check that ``profiles`` has exactly one complete, sane profile per intent.

    A profile's weights may name any registered channel (one set of profiles serves pipelines with and without an
    opt-in channel), but a channel the pipeline lacks (not in ``channels``; ``None``: every registered channel
    counts as present) must weigh 0: a weight there would be dropped silently and the others renormalised.

    :raises ValueError: naming the unknown or missing intent, the unknown or absent channel, or the offending
        field.
    """
    unknown = sorted(set(profiles) - set(intents))
    if unknown:
        msg = f"Unknown intent(s) {unknown} in profiles; known intents are {list(intents)}"
        raise ValueError(msg)
    missing = sorted(set(intents) - set(profiles))
    if missing:
        msg = f"profiles lacks intent(s) {missing}; every intent in {list(intents)} needs a profile"
        raise ValueError(msg)
    present = set(CHANNELS if channels is None else channels)
    for intent, profile in profiles.items():
        absent = [f for f in _REQUIRED if f not in profile]
        if absent:
            msg = f"profile '{intent}' lacks {absent}"
            raise ValueError(msg)
        weights = profile["weights"]
        if not isinstance(weights, dict) or any(float(w) < 0 for w in weights.values()):
            msg = f"profile '{intent}': weights must map channel names to non-negative numbers, got {weights}"
            raise ValueError(msg)
        unregistered = sorted(set(weights) - set(CHANNELS))
        if unregistered:
            msg = (
                f"profile '{intent}' weighs unknown channel(s) {unregistered}; the registered channels are "
                f"{list(CHANNELS)} (adaptive_retrieval.components.retrieval.channels)"
            )
            raise ValueError(msg)
        lacking = sorted(c for c, w in weights.items() if c not in present and float(w) > 0)
        if lacking:
            msg = (
                f"profile '{intent}' weighs channel(s) {lacking} that this pipeline does not have (the router's "
                f"channels: {sorted(present)}); give them weight 0, or add them to the pipeline and to the "
                "router's `channels`"
            )
            raise ValueError(msg)
        if sum(float(weights.get(c, CHANNELS[c].default_weight)) for c in present) <= 0:
            msg = f"profile '{intent}': at least one channel of {sorted(present)} must have a positive weight"
            raise ValueError(msg)
        if not 0.0 <= float(profile["mmr_lambda"]) <= 1.0:
            msg = f"profile '{intent}': mmr_lambda must be within [0, 1]"
            raise ValueError(msg)
        if int(profile["top_k"]) < 1 or int(profile["fetch_k"]) < int(profile["top_k"]):
            msg = f"profile '{intent}': need 1 <= top_k <= fetch_k"
            raise ValueError(msg)


def mix_profiles(
    profiles: dict[str, dict[str, Any]], probabilities: dict[str, float], channels: Iterable[str] | None = None
) -> dict[str, Any]:
    """Soft routing: the probability-weighted mix of the intent profiles.

    Weights and λ are averaged; ``top_k``/``fetch_k`` are averaged and rounded; ``rerank`` is on when the
    intents that want it hold at least half the probability mass. The weights cover exactly ``channels`` (a
    channel a profile does not name weighs its registered ``default_weight``); ``None``: the channels the profiles
    name.
    """
    if channels is None:
        channels = {c for p in profiles.values() for c in p["weights"]}
    names = sorted(channels)
    default = {c: CHANNELS[c].default_weight if c in CHANNELS else 0.0 for c in names}
    weights = {c: 0.0 for c in names}
    top_k = fetch_k = lam = rerank_mass = 0.0
    for intent, prob in probabilities.items():
        profile = profiles[intent]
        for c in names:
            weights[c] += prob * float(profile["weights"].get(c, default[c]))
        top_k += prob * profile["top_k"]
        fetch_k += prob * profile["fetch_k"]
        lam += prob * profile["mmr_lambda"]
        rerank_mass += prob * bool(profile["rerank"])
    total = sum(weights.values()) or 1.0
    return {
        "weights": {c: round(w / total, 4) for c, w in weights.items()},
        "top_k": max(1, round(top_k)),
        "fetch_k": max(1, round(fetch_k)),
        "mmr_lambda": round(lam, 4),
        "rerank": rerank_mass >= 0.5,
    }


def escalate_strategy(
    strategy: dict[str, Any], level: int, depth: float = 2.0, floor: float = 0.1, max_fetch_k: int = 200
) -> dict[str, Any]:
    """Widen a routed strategy for retry ``level`` of the quality gate's corrective loop (0 leaves it as is).

    ``top_k`` and ``fetch_k`` grow by ``depth ** level`` (``fetch_k`` capped at ``max_fetch_k``); every channel
    weighted below ``floor`` (0, or a trace from the soft mix) is raised to ``floor`` before the weights are
    renormalised, so a retry also asks the channels the first routing skipped.
    """
    if level <= 0:
        return strategy
    if depth < 1.0 or not 0.0 <= floor <= 1.0:
        msg = f"escalation needs depth >= 1 and floor within [0, 1]; got depth={depth}, floor={floor}"
        raise ValueError(msg)
    growth = depth**level
    weights = {c: max(float(w), floor) for c, w in strategy["weights"].items()}
    total = sum(weights.values()) or 1.0
    fetch_k = min(max(max_fetch_k, strategy["fetch_k"]), round(strategy["fetch_k"] * growth))
    return {
        **strategy,
        "weights": {c: round(w / total, 4) for c, w in weights.items()},
        "top_k": min(fetch_k, round(strategy["top_k"] * growth)),
        "fetch_k": fetch_k,
    }
