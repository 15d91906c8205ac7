"""FrozenMapping: a read-only mapping Haystack copies as one value (the router's ChannelWeights, the fusion)."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from haystack import Pipeline, component
from haystack.core.errors import PipelineConnectError
from pydantic import create_model

from adaptive_retrieval.components.frozen_mapping import FrozenMapping, freeze, thaw
from adaptive_retrieval.components.fusion import WeightedRRFJoiner
from adaptive_retrieval.components.strategy import ChannelWeights, Strategy, WeightsInput
from adaptive_retrieval.pipelines.query_result import json_ready

WEIGHTS = {"dense": 0.6, "sparse": 0.4}


@component
class _Router:
    """Sends channel weights as the router does (read-only), or as a plain dict."""

    def __init__(self, frozen: bool) -> None:
        self.frozen = frozen
        component.set_output_types(self, weights=ChannelWeights if frozen else dict[str, float])

    def run(self, trigger: int) -> dict[str, Any]:
        return {"weights": ChannelWeights(WEIGHTS) if self.frozen else dict(WEIGHTS)}


@component
class _Channel:
    """Keeps the weights it received (typed as every channel's ``weights`` input)."""

    received: Any = None

    @component.output_types(count=int)
    def run(self, weights: WeightsInput = None) -> dict[str, Any]:
        _Channel.received = weights
        return {"count": len(weights or {})}


@component
class _DictChannel:
    """A receiver typed ``dict[str, float]``: it cannot take the read-only weights."""

    @component.output_types(count=int)
    def run(self, weights: dict[str, float] | None = None) -> dict[str, Any]:
        return {"count": len(weights or {})}


class TestFrozenMapping:
    def test_reads_as_a_dict_and_equals_one(self) -> None:
        frozen = FrozenMapping(WEIGHTS)
        assert frozen["dense"] == 0.6 and frozen.get("graph", 0.0) == 0.0 and frozen.get("graph") is None
        assert "sparse" in frozen and "graph" not in frozen and len(frozen) == 2 and list(frozen) == list(WEIGHTS)
        assert frozen == WEIGHTS and dict(frozen.items()) == WEIGHTS and list(frozen.values()) == [0.6, 0.4]
        assert frozen != {"dense": 0.6} and "dense" in repr(frozen) and bool(FrozenMapping()) is False
        with pytest.raises(TypeError):
            frozen["dense"] = 1.0  # type: ignore[index]
        with pytest.raises(TypeError):
            hash(frozen)

    def test_copies_are_itself_and_pickling_keeps_its_kind(self) -> None:
        weights = ChannelWeights(WEIGHTS)
        assert copy.deepcopy(weights) is weights and copy.copy(weights) is weights
        back = pickle.loads(pickle.dumps(weights))
        assert type(back) is ChannelWeights and back == weights

    def test_freeze_and_thaw_go_all_the_way_down(self) -> None:
        plain = {"weights": {"dense": 1.0}, "sizes": {"dense": 3}, "skipped": ["bridge"], "failures": {}}
        frozen = freeze(plain)
        assert isinstance(frozen["weights"], FrozenMapping) and frozen["skipped"] == ("bridge",)
        assert thaw(frozen) == plain and frozen.to_dict() == plain and FrozenMapping.from_dict(plain) == frozen
        assert json.loads(json.dumps(json_ready(frozen))) == plain

    def test_pydantic_writes_it_as_plain_json_where_it_meets_it_untyped(self) -> None:
        # Hayhooks answers a deployed YAML pipeline with its outputs in a dict field: the router's weights and its
        # Strategy are among them.
        answer = create_model("Answer", result=(dict, ...))
        strategy = Strategy(weights=WEIGHTS)
        result = {"weights": ChannelWeights(WEIGHTS), "strategy": strategy, "fusion": freeze({"skipped": ["a"]})}
        dumped = json.loads(answer(result=result).model_dump_json())["result"]
        assert dumped == {"weights": WEIGHTS, "strategy": strategy.to_dict(), "fusion": {"skipped": ["a"]}}

    def test_haystack_hands_the_weights_on_as_one_value(self) -> None:
        pipeline = Pipeline()
        pipeline.add_component("router", _Router(frozen=True))
        pipeline.add_component("channel", _Channel())
        pipeline.connect("router.weights", "channel.weights")
        pipeline.run({"router": {"trigger": 1}})
        assert isinstance(_Channel.received, ChannelWeights) and _Channel.received == WEIGHTS

    def test_a_channel_takes_a_plain_dict_too_and_a_dict_receiver_refuses_the_frozen_weights(self) -> None:
        pipeline = Pipeline()
        pipeline.add_component("router", _Router(frozen=False))
        pipeline.add_component("channel", _Channel())
        pipeline.connect("router.weights", "channel.weights")  # a router of one's own, sending a dict
        pipeline.run({"router": {"trigger": 1}})
        assert type(_Channel.received) is dict and _Channel.received == WEIGHTS
        refusing = Pipeline()
        refusing.add_component("router", _Router(frozen=True))
        refusing.add_component("channel", _DictChannel())
        with pytest.raises(PipelineConnectError, match="do not match"):  # at connect, not at run
            refusing.connect("router.weights", "channel.weights")


class TestStrategyAndFusion:
    def test_a_strategy_holds_read_only_weights_and_is_its_own_copy(self) -> None:
        strategy = Strategy(weights=dict(WEIGHTS), top_k=5, fetch_k=20, mmr_lambda=0.7, rerank=True)
        assert isinstance(strategy.weights, ChannelWeights) and copy.deepcopy(strategy) is strategy
        assert Strategy.from_dict(strategy.to_dict()) == strategy and type(strategy.to_dict()["weights"]) is dict
        assert strategy.to_fields()["weights"] is strategy.weights and strategy.to_fields()["rerank"] is True

    def test_a_sharing_joiner_sends_read_only_fusion_and_a_list_joiner_a_dict(self) -> None:
        from haystack import Document

        docs = [Document(id=f"d{i}", content=f"text {i}") for i in range(3)]
        shared = WeightedRRFJoiner(channels=["dense", "sparse"], share_documents=True)
        fusion = shared.run(weights=ChannelWeights(WEIGHTS), dense=docs, sparse=docs[::-1])["fusion"]
        plain = WeightedRRFJoiner(channels=["dense", "sparse"]).run(weights=WEIGHTS, dense=docs, sparse=docs[::-1])
        assert isinstance(fusion, FrozenMapping) and type(plain["fusion"]) is dict
        assert thaw(fusion) == plain["fusion"] and copy.deepcopy(fusion) is fusion
        assert shared.__haystack_output__.fusion.type == FrozenMapping[Any]
