"""The corrective loop's memory: each attempt's record, the best attempt so far, and what a retry carries.

The quality gate judges one attempt at a time and keeps no state between them (one gate serves concurrent
queries): what it must remember travels around the pipeline's cycle as a :class:`RetryState`, which
:class:`~adaptive_retrieval.components.gating.retry_loop.RetryLoop` checks and hands back to the gate with the
next attempt. Kept apart from the gate's scoring model (``quality_gate.py``) and its retry policy
(``retry_policy.py``).

Usage::

    current = Attempt(attempt=0, documents=docs, quality=0.41, signals={"top_score": 0.5})
    state = RetryState.first(current, record)          # what the gate's ``retry`` output carries
    state.best.quality, state.attempt, [r.decision for r in state.history]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from haystack import Document


@dataclass(frozen=True)
class AttemptRecord:
    """How the gate judged one attempt: its decision, quality, signals and how many documents it had.

    :param retry_skipped: why a retry was not spent on it (``"same strategy"``), or ``None``.
    """

    attempt: int
    decision: str
    quality: float
    signals: Mapping[str, float] = field(default_factory=dict)
    documents: int = 0
    retry_skipped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as a JSON-ready dictionary (``retry_skipped`` only when set)."""
        out: dict[str, Any] = {
            "attempt": self.attempt,
            "decision": self.decision,
            "quality": self.quality,
            "signals": dict(self.signals),
            "documents": self.documents,
        }
        if self.retry_skipped:
            out["retry_skipped"] = self.retry_skipped
        return out


@dataclass(frozen=True)
class Attempt:
    """One attempt's evidence, kept so that the loop can return the best one when none passes."""

    attempt: int
    documents: Sequence[Document]
    quality: float
    signals: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class RetryState:
    """What a retry carries around the loop: the number of the attempt to run, the best attempt so far and the
    record of every attempt judged."""

    attempt: int
    best: Attempt
    history: tuple[AttemptRecord, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.attempt, int) or isinstance(self.attempt, bool) or self.attempt < 1:
            msg = f"A retry runs attempt 1 or later; got attempt={self.attempt!r}"
            raise ValueError(msg)
        if not isinstance(self.best, Attempt):
            msg = f"A retry carries the best earlier Attempt; got {type(self.best).__name__}"
            raise TypeError(msg)


def best_attempt(current: Attempt, previous: RetryState | None) -> Attempt:
    """The better of ``current`` and the best earlier attempt; a tie goes to ``current``, which searched more
    widely."""
    if previous is None or current.quality >= previous.best.quality:
        return current
    return previous.best


def history_of(previous: RetryState | None, record: AttemptRecord) -> tuple[AttemptRecord, ...]:
    """Every attempt's record up to and including ``record``."""
    return (*(previous.history if previous is not None else ()), record)
