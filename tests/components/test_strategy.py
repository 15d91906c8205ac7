"""The router's typed strategy and the gate's retry state."""

from __future__ import annotations

import pytest
from haystack import Document

from adaptive_retrieval.components.gating.attempts import Attempt, AttemptRecord, RetryState, best_attempt, history_of
from adaptive_retrieval.components.strategy import Strategy

PROFILE = {"weights": {"dense": 0.6, "sparse": 0.4}, "top_k": 10, "fetch_k": 30, "mmr_lambda": 0.7, "rerank": False}


class TestStrategy:
    def test_from_and_to_a_profile_shaped_dict(self) -> None:
        strategy = Strategy.from_dict(PROFILE)
        assert strategy.fetch_k == 30 and strategy.weights["dense"] == 0.6
        assert strategy.to_dict() == {**PROFILE, "max_per_source": 0}

    def test_a_profile_may_cap_passages_per_source(self) -> None:
        # Profiles written before the cap have none (0); a plain-search profile takes 1.
        assert Strategy.from_dict(PROFILE).max_per_source == 0
        capped = Strategy.from_dict({**PROFILE, "max_per_source": 1})
        assert capped.max_per_source == 1 and capped.to_dict()["max_per_source"] == 1

    def test_a_missing_field_is_named(self) -> None:
        with pytest.raises(ValueError, match="fetch_k"):
            Strategy.from_dict({k: v for k, v in PROFILE.items() if k != "fetch_k"})


class TestRetryState:
    def test_the_best_attempt_is_kept_and_a_tie_goes_to_the_later_one(self) -> None:
        first = Attempt(0, [Document(content="a")], 0.4)
        state = RetryState(1, first, (AttemptRecord(0, "retry", 0.4),))
        worse, tie = Attempt(1, [], 0.3), Attempt(1, [], 0.4)
        assert best_attempt(worse, state) is first and best_attempt(tie, state) is tie
        assert best_attempt(worse, None) is worse
        record = AttemptRecord(1, "insufficient", 0.3)
        assert [r.attempt for r in history_of(state, record)] == [0, 1]

    def test_a_retry_runs_attempt_one_or_later_with_an_attempt(self) -> None:
        with pytest.raises(ValueError, match="attempt 1 or later"):
            RetryState(0, Attempt(0, [], 0.1))
        with pytest.raises(TypeError, match="Attempt"):
            RetryState(1, {"quality": 0.1})  # type: ignore[arg-type]

    def test_a_record_says_a_skipped_retry_only_when_there_was_one(self) -> None:
        assert "retry_skipped" not in AttemptRecord(0, "pass", 0.9).to_dict()
        assert AttemptRecord(0, "insufficient", 0.2, retry_skipped="same strategy").to_dict()["retry_skipped"]
