"""Intent taxonomy and the strategy profile of each intent (channel weights, depth, MMR λ, reranking).

The fitted profiles are data: ``routing/data/profiles.json``, with their provenance (data sets, command, date,
metric), written by ``scripts/lab/calibrate_profiles.py --write``; ``scripts/lab/README.md`` says how they score.
Profiles are ``IntentRouter`` init parameters, so a user changes them in YAML.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable
from importlib import resources
from typing import Any

from adaptive_retrieval.components.channel_names import CHANNEL_NAMES, default_weight

INTENTS: tuple[str, ...] = (
    "factual",
    "keyword",
    "analytical",
    "opinion",
    "contextual",
    "relational",
    "summary",
)

#: Where the fitted profiles live (with their provenance: data sets, command, date, metric); written by
#: ``scripts/lab/calibrate_profiles.py --write``.
PROFILES_RESOURCE = "data/profiles.json"


def load_profiles_file() -> dict[str, Any]:
    """The packaged ``routing/data/profiles.json``: ``profiles`` (one per intent), ``provenance`` and
    ``channel_shares`` (an opt-in channel's share per intent, with its own provenance)."""
    data = resources.files("adaptive_retrieval.components.routing").joinpath(PROFILES_RESOURCE)
    return json.loads(data.read_text(encoding="utf-8"))


_FILE = load_profiles_file()
#: The fitted profile of each intent (from :data:`PROFILES_RESOURCE`).
DEFAULT_PROFILES: dict[str, dict[str, Any]] = _FILE["profiles"]
#: graph_ppr's share per intent in yaml/query_ppr.yaml (the opt-in pipeline with the walk): the shares the
#: calibration fitted with the walk in the pipeline; DEFAULT_PROFILES are those profiles without it
#: (renormalised), so ``with_channel_share(DEFAULT_PROFILES, "graph_ppr", PPR_SHARES)`` gives the fitted profiles.
PPR_SHARES: dict[str, float] = _FILE["channel_shares"]["graph_ppr"]["shares"]
#: graph_global's share per intent in yaml/query_ppr.yaml (the pipeline with every channel, the opt-in ones too):
#: hand-set, taken out of DEFAULT_PROFILES when the channel became opt-in.
GLOBAL_SHARES: dict[str, float] = _FILE["channel_shares"]["graph_global"]["shares"]

#: The profile a query takes when the router is unsure of its intent or it reads as a plain search (the one the
#: fit measured never to fall below the stock hybrid on any development set), and the confidence below which the
#: router takes it; ``None`` / 0 when the profiles file has none (every query takes its intents' mix).
DEFAULT_FALLBACK_PROFILE: dict[str, Any] | None = (_FILE.get("fallback") or {}).get("profile")
DEFAULT_MIN_CONFIDENCE: float = float((_FILE.get("fallback") or {}).get("min_confidence", 0.0))
#: Whether a plain search (``rules.plain_search``) takes the fallback profile (the fit's choice).
DEFAULT_PLAIN_FALLBACK: bool = bool((_FILE.get("fallback") or {}).get("plain", False))

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


def default_fallback_profile() -> dict[str, Any] | None:
    """A deep copy of :data:`DEFAULT_FALLBACK_PROFILE` (``None`` when the profiles file has none)."""
    return copy.deepcopy(DEFAULT_FALLBACK_PROFILE)


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
    present = set(CHANNEL_NAMES if channels is None else channels)
    for intent, profile in profiles.items():
        absent = [f for f in _REQUIRED if f not in profile]
        if absent:
            msg = f"profile '{intent}' lacks {absent}"
            raise ValueError(msg)
        weights = profile["weights"]
        if not isinstance(weights, dict) or any(float(w) < 0 for w in weights.values()):
            msg = f"profile '{intent}': weights must map channel names to non-negative numbers, got {weights}"
            raise ValueError(msg)
        unregistered = sorted(set(weights) - set(CHANNEL_NAMES))
        if unregistered:
            msg = (
                f"profile '{intent}' weighs unknown channel(s) {unregistered}; the registered channels are "
                f"{list(CHANNEL_NAMES)} (adaptive_retrieval.components.channel_names)"
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
        if sum(float(weights.get(c, default_weight(c))) for c in present) <= 0:
            msg = f"profile '{intent}': at least one channel of {sorted(present)} must have a positive weight"
            raise ValueError(msg)
        if not 0.0 <= float(profile["mmr_lambda"]) <= 1.0:
            msg = f"profile '{intent}': mmr_lambda must be within [0, 1]"
            raise ValueError(msg)
        if int(profile["top_k"]) < 1 or int(profile["fetch_k"]) < int(profile["top_k"]):
            msg = f"profile '{intent}': need 1 <= top_k <= fetch_k"
            raise ValueError(msg)
        if int(profile.get("max_per_source", 0)) < 0:
            msg = f"profile '{intent}': max_per_source must be 0 (no cap) or more"
            raise ValueError(msg)


def mix_profiles(
    profiles: dict[str, dict[str, Any]], probabilities: dict[str, float], channels: Iterable[str] | None = None
) -> dict[str, Any]:
    """Soft routing: the probability-weighted mix of the intent profiles.

    Weights and λ are averaged; ``top_k``/``fetch_k`` are averaged and rounded; ``rerank`` is on when the
    intents that want it hold at least half the probability mass; ``max_per_source`` is the profiles' cap when
    every profile in the mix has the same one, else 0 (no cap: a cap is for a whole profile, not a share of one).
    The weights cover exactly ``channels`` (a channel a profile does not name weighs its registered
    ``default_weight``); ``None``: the channels the profiles name.
    """
    if channels is None:
        channels = {c for p in profiles.values() for c in p["weights"]}
    names = sorted(channels)
    default = {c: default_weight(c) for c in names}
    weights = {c: 0.0 for c in names}
    top_k = fetch_k = lam = rerank_mass = 0.0
    caps = set()
    for intent, prob in probabilities.items():
        profile = profiles[intent]
        if prob > 0:
            caps.add(int(profile.get("max_per_source", 0)))
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
        "max_per_source": caps.pop() if len(caps) == 1 else 0,
    }


def choose_strategy(
    profiles: dict[str, dict[str, Any]],
    probabilities: dict[str, float],
    channels: Iterable[str] | None = None,
    soft: bool = True,
    fallback_profile: dict[str, Any] | None = None,
    min_confidence: float = 0.0,
    plain: str | None = None,
) -> tuple[dict[str, Any], str | None]:
    """A query's first strategy from its intent ``probabilities``, and why it is the fallback profile's (``None``
    when it is the intents' mix).

    With a ``fallback_profile``, a query that reads as a plain search (``plain``: why, from the rules) or whose top
    intent's probability is under ``min_confidence`` takes it; every other query takes the probability mix of the
    ``profiles`` (``soft``) or its top intent's profile.
    """
    intent = max(probabilities, key=probabilities.__getitem__)
    reason = None
    if fallback_profile is not None:
        if plain is not None:
            reason = f"plain search ({plain})"
        elif probabilities[intent] < min_confidence:
            reason = "low confidence"
    if reason is not None:
        return mix_profiles({"fallback": fallback_profile}, {"fallback": 1.0}, channels), reason
    return mix_profiles(profiles, probabilities if soft else {intent: 1.0}, channels), None


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
