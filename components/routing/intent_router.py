"""Classify a query's intent and turn it into a retrieval strategy: channel weights, depth, MMR λ, reranking."""

from __future__ import annotations

import json
import logging
import time
from importlib import resources
from typing import Any

import numpy as np
from haystack import component

from adaptive_retrieval.components.blas_threads import one_blas_thread
from adaptive_retrieval.components.channel_names import check_channel_set, pipeline_channels
from adaptive_retrieval.components.limits import MAX_QUERY_CHARS, check_query
from adaptive_retrieval.components.models.embedding_cache import cached_encode
from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.query_vector import QueryEmbedding
from adaptive_retrieval.components.routing.profiles import (
    DEFAULT_MIN_CONFIDENCE,
    DEFAULT_PLAIN_FALLBACK,
    INTENTS,
    choose_strategy,
    default_fallback_profile,
    default_profiles,
    escalate_strategy,
    validate_profiles,
)
from adaptive_retrieval.components.routing.rules import apply_rules
from adaptive_retrieval.components.strategy import ChannelWeights, Strategy

logger = logging.getLogger(__name__)

DEFAULT_RULE_STRENGTHS: dict[str, float] = {
    "structural": 0.7,
    "code": 0.6,
    "terse": 0.35,
    "comparison": 0.5,
    "summary": 0.5,
    "opinion": 0.35,
    "nested": 0.3,
    # Not a prior: any positive strength sends a plain search (rules.plain_search) to the fallback profile (on when
    # the fit chose it: routing/data/profiles.json, fallback.plain).
    "plain": 1.0 if DEFAULT_PLAIN_FALLBACK else 0.0,
}


def load_exemplars() -> dict[str, list[str]]:
    """The exemplar queries shipped with the package (``routing/data/exemplars.json``)."""
    data = resources.files("adaptive_retrieval.components.routing").joinpath("data/exemplars.json")
    text = data.read_text(encoding="utf-8")
    return json.loads(text)


def _fallback(
    profile: dict[str, Any] | None, min_confidence: float | None, packaged: bool, channels: list[str]
) -> tuple[dict[str, Any] | None, float]:
    """The router's fallback profile and confidence bound: the given ones, else the packaged fit's when the
    profiles are the packaged ones too (see :class:`IntentRouter`)."""
    fallback = profile if profile is not None else default_fallback_profile() if packaged else None
    if fallback is not None:
        validate_profiles({"fallback": fallback}, ("fallback",), channels)
    if min_confidence is None:
        min_confidence = DEFAULT_MIN_CONFIDENCE if packaged and profile is None else 0.0
    if not 0.0 <= min_confidence <= 1.0:
        msg = f"min_confidence must be within [0, 1], got {min_confidence}"
        raise ValueError(msg)
    return fallback, float(min_confidence)


@component
class IntentRouter:
    """Soft intent routing with no LLM: surface rules plus a nearest-exemplar classifier on the query embedding.

    The classifier scores each intent by the mean cosine of the query to its ``neighbours`` closest exemplar
    queries and turns the scores into probabilities with a softmax at ``temperature``; rules (structural
    references, code-like tokens, comparisons, summaries...) add priors. The strategy is the probability mix of
    the intent profiles (``soft=True``) or the top intent's profile, except for two kinds of query, which take the
    ``fallback_profile`` (the safest one: fitted never to fall below the stock hybrid on any development set): a
    query whose top intent has a probability under ``min_confidence``, and a plain search (a topic described
    rather than a question asked: a request for documents, a statement, a query in capitals; see
    :func:`~adaptive_retrieval.components.routing.rules.plain_search`). Given the query embedding it takes well
    under 2 ms: one ``[n_exemplars, dim]`` matrix product.

    Usage::

        router = IntentRouter()
        router.warm_up()
        out = router.run(query="What does Section 3.2 say?", query_embedding=embedding)
        out["intent"], out["confidence"], out["weights"]  # 'contextual', 0.8, {'dense': 0.25, ...}
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str | None = None,
        device: str | None = None,
        profiles: dict[str, dict[str, Any]] | None = None,
        exemplars: dict[str, list[str]] | None = None,
        temperature: float = 0.05,
        neighbours: int = 3,
        soft: bool = True,
        rule_strengths: dict[str, float] | None = None,
        max_query_chars: int = MAX_QUERY_CHARS,
        escalation_depth: float = 2.0,
        escalation_floor: float = 0.1,
        channels: list[str] | None = None,
        fallback_profile: dict[str, Any] | None = None,
        min_confidence: float | None = None,
    ) -> None:
        """
        :param model: ONNX model folder used to embed the exemplars (the same model must embed the query).
        :param precision: ``int8`` or ``fp32``; ``None``: ``$ADAPTIVE_PRECISION``, else ``int8`` (read at warm-up).
        :param device: ``cpu`` or ``cuda``; ``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``.
        :param profiles: strategy per intent (see :mod:`~adaptive_retrieval.components.routing.profiles`); defaults to
            the built-ins.
        :param exemplars: example queries per intent; defaults to the packaged set.
        :param temperature: softmax temperature over cosine scores (lower is sharper).
        :param neighbours: exemplars per intent averaged into its score.
        :param soft: mix profiles by probability (``True``) or use the top intent's profile.
        :param rule_strengths: prior weight of each rule (see ``DEFAULT_RULE_STRENGTHS``); 0 disables a rule.
        :param max_query_chars: longer queries are rejected.
        :param escalation_depth: on a quality-gate retry (``escalation`` = n), ``top_k`` and ``fetch_k`` grow by
            ``escalation_depth ** n``.
        :param escalation_floor: minimum weight of every channel on a retry (so skipped channels are asked).
        :param channels: the retrieval channels of the router's pipeline (registered names, see
            :mod:`~adaptive_retrieval.components.channel_names`); ``weights`` has exactly these keys, and a
            profile giving weight to any other channel is an error. Defaults to the channels that are not opt-in
            (``build_query_pipeline`` fills it from the registry).
        :param fallback_profile: the strategy of a query the router is unsure of or that reads as a plain search
            (same fields as a profile); defaults to the fitted one in ``routing/data/profiles.json`` when
            ``profiles`` is not given either, else none (every query then takes its intents' mix).
        :param min_confidence: a query whose top intent has a lower probability takes ``fallback_profile``;
            defaults to the fitted value with the packaged fallback, else 0.
        """
        self.model = model
        self.precision = precision
        self.device = device
        self.exemplars = exemplars
        intents = tuple(exemplars) if exemplars is not None else INTENTS
        packaged = profiles is None
        self.profiles = profiles if profiles is not None else default_profiles()
        self.channels = check_channel_set(channels if channels is not None else pipeline_channels())
        validate_profiles(self.profiles, intents, self.channels)
        self.fallback_profile, self.min_confidence = _fallback(
            fallback_profile, min_confidence, packaged, self.channels
        )
        if exemplars is not None and (empty := [i for i, qs in exemplars.items() if not qs]):
            msg = f"exemplars for intent(s) {empty} are empty"
            raise ValueError(msg)
        if temperature <= 0:
            msg = "temperature must be > 0"
            raise ValueError(msg)
        self.intents = intents
        self.temperature = temperature
        self.neighbours = neighbours
        self.soft = soft
        self.rule_strengths = {**DEFAULT_RULE_STRENGTHS, **(rule_strengths or {})}
        self.max_query_chars = max_query_chars
        if escalation_depth < 1.0 or not 0.0 <= escalation_floor <= 1.0:
            msg = "escalation_depth must be >= 1 and escalation_floor within [0, 1]"
            raise ValueError(msg)
        self.escalation_depth = escalation_depth
        self.escalation_floor = escalation_floor
        self._matrix: np.ndarray | None = None
        self._labels: np.ndarray | None = None

    def warm_up(self) -> None:
        """Embed the exemplars once (the ONNX session is shared with the embedders; the embeddings are cached on
        disk per model file, see :mod:`~adaptive_retrieval.components.models.embedding_cache`)."""
        if self._matrix is not None:
            return
        exemplars = self.exemplars if self.exemplars is not None else load_exemplars()
        texts: list[str] = []
        labels: list[int] = []
        for index, intent in enumerate(self.intents):
            texts.extend(exemplars[intent])
            labels.extend([index] * len(exemplars[intent]))
        encoder = get_encoder(self.model, self.precision, self.device)
        self._matrix = cached_encode(encoder, texts)
        self._labels = np.asarray(labels)

    def classify(self, query_embedding: list[float] | np.ndarray) -> dict[str, float]:
        """Probability of each intent from the exemplar classifier alone."""
        self.warm_up()
        assert self._matrix is not None and self._labels is not None
        q = np.asarray(query_embedding, dtype=np.float32)
        if q.shape != (self._matrix.shape[1],):
            msg = (
                f"query_embedding has dimension {q.shape[-1] if q.ndim else 0}; the router's model "
                f"'{self.model}' produces {self._matrix.shape[1]}: embed the query with the same model."
            )
            raise ValueError(msg)
        q = q / max(float(np.linalg.norm(q)), 1e-12)
        sims = self._matrix @ q
        scores = np.empty(len(self.intents))
        for index in range(len(self.intents)):
            own = sims[self._labels == index]
            take = min(self.neighbours, own.size)
            scores[index] = np.partition(own, own.size - take)[-take:].mean()
        logits = (scores - scores.max()) / self.temperature
        probs = np.exp(logits)
        probs /= probs.sum()
        return {intent: float(p) for intent, p in zip(self.intents, probs, strict=True)}

    def base_strategy(
        self, probabilities: dict[str, float], plain: str | None = None
    ) -> tuple[dict[str, Any], str | None]:
        """The first attempt's strategy for intent ``probabilities`` (classifier and rules mixed), and why it is the
        fallback profile's (``None`` when it is the intents' mix); see
        :func:`~adaptive_retrieval.components.routing.profiles.choose_strategy`.

        :param plain: why the query reads as a plain search (the rules' ``plain``), or ``None``.
        """
        return choose_strategy(
            self.profiles,
            probabilities,
            self.channels,
            self.soft,
            self.fallback_profile,
            self.min_confidence,
            plain,
        )

    @component.output_types(
        intent=str,
        confidence=float,
        weights=ChannelWeights,
        top_k=int,
        fetch_k=int,
        mmr_lambda=float,
        rerank=bool,
        max_per_source=int,
        structural=dict[str, Any] | None,
        routing=dict[str, Any],
        strategy=Strategy,
        next_strategy=Strategy,
    )
    def run(self, query: str, query_embedding: QueryEmbedding, escalation: int | None = None) -> dict[str, Any]:
        """Route one query.

        :param escalation: retry level sent back by the quality gate (``None``/0: first attempt); it widens the
            strategy (see :func:`adaptive_retrieval.components.routing.profiles.escalate_strategy`).
        :returns: ``intent`` (top intent), ``confidence`` (its probability), the strategy (``weights``,
            ``top_k``, ``fetch_k``, ``mmr_lambda``, ``rerank``, ``max_per_source``), ``structural`` (a section/table
            reference or ``None``) and ``routing`` (probabilities, rules fired, ``fallback``: why the fallback
            profile was taken, or ``None``; time taken) for diagnostics; ``strategy`` (the same fields as one
            :class:`~adaptive_retrieval.components.strategy.Strategy`) and ``next_strategy`` (what a retry one
            level up would use), so the quality gate can skip a retry that would change nothing.
        :raises ValueError: for an empty or too long query, or a query embedding of the wrong dimension.
        """
        check_query(query, self.max_query_chars)
        start = time.perf_counter()
        with one_blas_thread():
            classifier = self.classify(query_embedding)
        rules = apply_rules(query, self.rule_strengths)
        priors = {i: p for i, p in rules.priors.items() if i in self.profiles and p > 0}
        mass = min(sum(priors.values()), 0.85)
        scale = mass / sum(priors.values()) if priors else 0.0
        probs = {i: (1 - mass) * p + scale * priors.get(i, 0.0) for i, p in classifier.items()}
        intent = max(probs, key=probs.__getitem__)
        base, fallback = self.base_strategy(probs, rules.plain)
        # The quality gate sends a weak result back with escalation n >= 1: same intent, a wider strategy.
        strategy = escalate_strategy(base, escalation or 0, self.escalation_depth, self.escalation_floor)
        following = escalate_strategy(base, (escalation or 0) + 1, self.escalation_depth, self.escalation_floor)
        chosen = Strategy.from_dict(strategy)
        elapsed_ms = (time.perf_counter() - start) * 1000
        routing = {
            "probabilities": {i: round(p, 4) for i, p in sorted(probs.items(), key=lambda kv: -kv[1])},
            "classifier": {i: round(p, 4) for i, p in classifier.items()},
            "rules": rules.fired,
            "fallback": fallback,
            "soft": self.soft,
            "escalation": escalation or 0,
            "router_ms": round(elapsed_ms, 3),
        }
        return {
            "intent": intent,
            "confidence": round(probs[intent], 4),
            "structural": rules.structural,
            "routing": routing,
            **chosen.to_fields(),
            "strategy": chosen,
            "next_strategy": Strategy.from_dict(following),
        }
