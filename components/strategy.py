"""A query's retrieval strategy: the typed result the router hands to the gate and to the query's callers.

The router mixes the intent profiles (plain dictionaries, as ``routing/data/profiles.json`` holds them) into one
``Strategy`` per attempt; the quality gate compares this attempt's with the next one's to skip a retry that would
fetch the same candidates (:func:`~adaptive_retrieval.components.gating.retry_policy.same_candidates`). It sits on
the ground floor because both the router and the gate read it and neither imports the other.

The router's channel weights travel as one :class:`ChannelWeights` (read-only; Haystack copies it as one value, not
weight by weight, on its way to every channel and the joiner); a component that takes them declares its ``weights``
input :data:`WeightsInput`, which also takes a plain dict from a Python caller or a router of one's own.

Usage::

    from adaptive_retrieval.components.strategy import Strategy

    strategy = Strategy.from_dict({"weights": {"dense": 0.6, "sparse": 0.4}, "top_k": 10, "fetch_k": 30,
                                   "mmr_lambda": 0.7, "rerank": False})
    strategy.fetch_k, strategy.to_dict()["weights"]
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from adaptive_retrieval.components.frozen_mapping import FrozenMapping


class ChannelWeights(FrozenMapping[float]):
    """Channel name → weight for one attempt (the router's ``weights``): a read-only mapping whose copies are itself."""

    __slots__ = ()


#: The type of a component's ``weights`` input: the router's :class:`ChannelWeights`, or a plain dict from a Python
#: caller or another router (``None``: no weights, every channel runs).
WeightsInput = ChannelWeights | dict[str, float] | None

#: The fields of a strategy, in the order they are shown.
STRATEGY_FIELDS: tuple[str, ...] = ("weights", "top_k", "fetch_k", "mmr_lambda", "rerank", "max_per_source")
#: Fields a profile may leave out (profiles written before them), with the value that changes nothing.
OPTIONAL_FIELDS: dict[str, Any] = {"max_per_source": 0}


@dataclass(frozen=True)
class Strategy:
    """How one attempt searches: the channels' weights, how many documents to keep and fetch, MMR's λ, reranking,
    and how many passages of one source document the result may hold.

    :param weights: channel name → weight (the router's, rounded to 4 decimals; the joiner renormalises).
    :param top_k: documents kept after fusion and diversity.
    :param fetch_k: documents each channel is asked for.
    :param mmr_lambda: MMR's relevance/diversity trade-off (1: relevance only).
    :param rerank: whether the cross-encoder reranks the list.
    :param max_per_source: at most this many passages of one source document (``meta["source"]``) in the result;
        0: no cap. A plain search takes 1, so that its ten results are ten documents.
    """

    weights: Mapping[str, float] = field(default_factory=ChannelWeights)
    top_k: int = 10
    fetch_k: int = 30
    mmr_lambda: float = 1.0
    rerank: bool = False
    max_per_source: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.weights, ChannelWeights):  # read-only, so that a copy can be the strategy itself
            object.__setattr__(self, "weights", ChannelWeights(self.weights))

    def __copy__(self) -> Self:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> Self:
        # Frozen, and its weights read-only: Haystack's copy of the gate's inputs need not rebuild it.
        return self

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Strategy:
        """From a profile-shaped mapping (``weights``, ``top_k``, ``fetch_k``, ``mmr_lambda``, ``rerank``, and
        optionally ``max_per_source``).

        :raises ValueError: naming the fields that are missing.
        """
        missing = [name for name in STRATEGY_FIELDS if name not in data and name not in OPTIONAL_FIELDS]
        if missing:
            msg = f"A strategy needs {list(STRATEGY_FIELDS)}; missing {missing}"
            raise ValueError(msg)
        return cls(
            weights=ChannelWeights((str(c), float(w)) for c, w in dict(data["weights"]).items()),
            top_k=int(data["top_k"]),
            fetch_k=int(data["fetch_k"]),
            mmr_lambda=float(data["mmr_lambda"]),
            rerank=bool(data["rerank"]),
            max_per_source=int(data.get("max_per_source", OPTIONAL_FIELDS["max_per_source"])),
        )

    def to_fields(self) -> dict[str, Any]:
        """The fields by name, as they are (the router sends each on its own output)."""
        return {name: getattr(self, name) for name in STRATEGY_FIELDS}

    def to_dict(self) -> dict[str, Any]:
        """The strategy as a plain, JSON-ready dictionary (the profiles' shape)."""
        return {
            "weights": dict(self.weights),
            "top_k": self.top_k,
            "fetch_k": self.fetch_k,
            "mmr_lambda": self.mmr_lambda,
            "rerank": self.rerank,
            "max_per_source": self.max_per_source,
        }
