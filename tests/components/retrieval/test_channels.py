"""The channel registry: every channel follows the channel contract, and the joiner's sockets, the router's weights,
profile validation and the query pipeline's wiring all come from it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from haystack import Document, Pipeline, component
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.retrieval.channels import (
    CHANNELS,
    SOURCES,
    check_channel_set,
    check_channel_sockets,
    pipeline_channels,
)
from adaptive_retrieval.components.routing import IntentRouter
from adaptive_retrieval.components.routing.profiles import (
    PPR_SHARES,
    default_profiles,
    validate_profiles,
    with_channel_share,
)
from adaptive_retrieval.components.shared_documents import RankedDocuments
from adaptive_retrieval.pipelines.query_pipeline import CHANNEL_SOURCES, build_query_pipeline
from adaptive_retrieval.pipelines.store_config import make_store
from adaptive_retrieval.pipelines.yaml_io import dumps_pipeline, loads_pipeline


def channel_components(pipeline: Pipeline) -> list[str]:
    """The pipeline's components that are retrieval channels (their class names a channel), in pipeline order."""
    return [name for name, instance in pipeline.walk() if getattr(type(instance), "channel", "")]


@pytest.fixture(scope="module")
def pipelines(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Pipeline]:
    store = make_store(path=str(tmp_path_factory.mktemp("channels") / "qdrant"))  # never opened
    ppr = with_channel_share(default_profiles(), "graph_ppr", PPR_SHARES)
    return {
        "default": build_query_pipeline(store=store),
        # As yaml/query_ppr.yaml: every channel, the opt-in ones too.
        "ppr": build_query_pipeline(store=store, opt_in=("graph_global", "graph_ppr"), profiles=ppr),
        # Every registered channel, the feedback ones too (opt-in, in no packaged YAML yet).
        "every": build_query_pipeline(
            store=store, opt_in=("graph_global", "graph_ppr", "sparse_prf", "dense_prf"), profiles=ppr
        ),
    }


def test_every_registered_channel_follows_the_channel_contract(pipelines: dict[str, Pipeline]) -> None:
    pipeline = pipelines["every"]
    assert set(channel_components(pipeline)) == set(CHANNELS)  # with every opt-in channel
    inputs = pipeline.inputs(include_components_with_connected_inputs=True)
    outputs = pipeline.outputs(include_components_with_connected_outputs=True)
    for name, spec in CHANNELS.items():
        instance = pipeline.get_component(name)
        check_channel_sockets(name, instance, inputs[name], outputs[name])
        assert type(instance).channel == name and isinstance(instance, spec.component)
        assert all(s in SOURCES or s.removesuffix(".hits") in CHANNELS for s in spec.inputs.values())
        # Zero weight: the channel does not search and sends an empty list, shared (None would mean "failed").
        given = {
            "query_embedding": [0.1] * 384,
            "query_sparse_embedding": SparseEmbedding(indices=[1], values=[1.0]),
            "query": "Who founded the band?",
        }
        query = {k: v for k, v in given.items() if k in inputs[name] and (k in spec.inputs or k == "query")}
        assert list(instance.run(**query, weights={name: 0.0})["documents"]) == []


def test_a_component_that_breaks_the_contract_is_named() -> None:
    @component
    class NoWeights:
        channel = "dense"

        @component.output_types(documents=list[Document])
        def run(self, query_embedding: list[float], other: str) -> dict[str, Any]:
            return {"documents": []}

    pipeline = Pipeline()
    pipeline.add_component("dense", NoWeights())
    inputs = pipeline.inputs(include_components_with_connected_inputs=True)["dense"]
    outputs = pipeline.outputs(include_components_with_connected_outputs=True)["dense"]
    with pytest.raises(TypeError) as err:
        check_channel_sockets("dense", pipeline.get_component("dense"), inputs, outputs)
    for part in ("registered as DenseRetriever", "no input 'weights'", "no input 'top_k'", "['other']", "documents"):
        assert part in str(err.value)
    assert "must output hits: RankedHits" in str(err.value)  # graph_local and bridge read dense's hits


def test_a_channel_reading_another_channels_hits_takes_them_as_hits_input() -> None:
    @component
    class ListNearest:
        channel = "graph_local"

        @component.output_types(documents=list[Document] | None, failure=str | None)
        def run(
            self,
            query_embedding: list[float],
            nearest: list[Document],
            weights: dict[str, float] | None = None,
            top_k: int | None = None,
        ) -> dict[str, Any]:
            return {"documents": []}

    pipeline = Pipeline()
    pipeline.add_component("graph_local", ListNearest())
    inputs = pipeline.inputs(include_components_with_connected_inputs=True)["graph_local"]
    outputs = pipeline.outputs(include_components_with_connected_outputs=True)["graph_local"]
    with pytest.raises(TypeError, match="input 'nearest' takes another channel's hits: its type must be HitsInput"):
        check_channel_sockets("graph_local", pipeline.get_component("graph_local"), inputs, outputs)
    # The router sends its weights read-only (ChannelWeights): a dict-typed input could not be connected to it.
    with pytest.raises(TypeError, match="input 'weights' takes the router's weights: its type must be WeightsInput"):
        check_channel_sockets("graph_local", pipeline.get_component("graph_local"), inputs, outputs)


@pytest.mark.parametrize("kind", ["default", "ppr"])
def test_joiner_router_and_wiring_come_from_the_registry(pipelines: dict[str, Pipeline], kind: str) -> None:
    pipeline = pipelines[kind]
    expected = pipeline_channels(opt_in=["graph_global", "graph_ppr"] if kind == "ppr" else [])
    joiner, router = pipeline.get_component("joiner"), pipeline.get_component("router")
    assert joiner.channels == router.channels == expected == channel_components(pipeline)
    edges = {(s, r, d["from_socket"].name, d["to_socket"].name) for s, r, d in pipeline.graph.edges(data=True)}
    for name in expected:
        assert (name, "joiner", "documents", name) in edges
        assert ("router", name, "weights", "weights") in edges and ("router", name, "fetch_k", "top_k") in edges
        for socket, source in CHANNELS[name].inputs.items():
            sender, output = CHANNEL_SOURCES.get(source, source).split(".")
            assert (sender, name, output, socket) in edges
    # The YAML carries the router's channel set.
    loaded = loads_pipeline(dumps_pipeline(pipeline))
    assert loaded.get_component("router").channels == expected


def test_a_misspelt_or_missing_channel_in_a_profile_is_an_error() -> None:
    misspelt = default_profiles()
    misspelt["factual"]["weights"]["dens"] = misspelt["factual"]["weights"].pop("dense")
    with pytest.raises(ValueError, match=r"profile 'factual' weighs unknown channel\(s\) \['dens'\]"):
        IntentRouter(profiles=misspelt)
    # A weight for a registered channel the pipeline does not have would be dropped silently: an error too.
    ppr = with_channel_share(default_profiles(), "graph_ppr", PPR_SHARES)
    with pytest.raises(ValueError, match=r"weighs channel\(s\) \['graph_ppr'\] that this pipeline does not have"):
        IntentRouter(profiles=ppr)
    IntentRouter(profiles=ppr, channels=pipeline_channels(opt_in=["graph_ppr"]))
    # At weight 0 a profile may name a channel the pipeline lacks: one set of profiles serves both pipelines.
    validate_profiles(default_profiles(), tuple(default_profiles()), pipeline_channels())
    nothing = {"summary": {**default_profiles()["summary"], "weights": {"dense": 0.0, "graph_ppr": 0.0}}}
    with pytest.raises(ValueError, match=r"at least one channel of \['dense', 'sparse'\]"):
        validate_profiles(nothing, ("summary",), ["dense", "sparse"])


def test_the_router_channel_set_is_checked() -> None:
    with pytest.raises(ValueError, match="Unknown retrieval channel 'graph_remote'"):
        IntentRouter(channels=["dense", "graph_remote"])
    with pytest.raises(ValueError, match="'graph_local' takes its documents from channel 'dense'"):
        check_channel_set(["sparse", "graph_local"])
    with pytest.raises(ValueError, match="distinct"):
        check_channel_set(["dense", "dense"])
    with pytest.raises(ValueError, match="Unknown retrieval channel"):
        pipeline_channels(opt_in=["graph_pr"])


def test_the_router_weighs_only_the_channels_of_its_pipeline(model_dir: Path) -> None:
    query = "Which company employs the engineer who designed the bridge that collapsed?"
    embedding = get_encoder(str(model_dir), "int8").encode([query])[0].tolist()
    default = IntentRouter(model=str(model_dir))
    ppr = IntentRouter(
        model=str(model_dir),
        profiles=with_channel_share(default_profiles(), "graph_ppr", PPR_SHARES),
        channels=pipeline_channels(opt_in=["graph_ppr", "graph_global"]),
    )
    with_ppr = pipeline_channels(opt_in=["graph_ppr", "graph_global"])
    for router, expected in ((default, pipeline_channels()), (ppr, with_ppr)):
        for escalation in (0, 1):  # a retry raises every channel to the floor: still only the pipeline's
            out = router.run(query=query, query_embedding=embedding, escalation=escalation)
            for weights in (out["weights"], out["next_strategy"].weights):
                assert sorted(weights) == sorted(expected)
                assert sum(weights.values()) == pytest.approx(1.0, abs=1e-3)
    assert ppr.run(query=query, query_embedding=embedding)["weights"]["graph_ppr"] > 0
    # A channel a profile does not name weighs its registered default weight.
    profiles = default_profiles()
    for profile in profiles.values():
        profile["weights"].pop("graph_global")
    unnamed = IntentRouter(model=str(model_dir), profiles=profiles, channels=pipeline_channels(opt_in=["graph_global"]))
    weights = unnamed.run(query=query, query_embedding=embedding, escalation=0)["weights"]
    assert weights["graph_global"] == CHANNELS["graph_global"].default_weight == 0.0


def test_the_query_pipeline_hands_channel_documents_on_shared_and_a_channel_alone_hands_a_list(
    pipelines: dict[str, Pipeline], tmp_path: Path
) -> None:
    outputs = pipelines["every"].outputs(include_components_with_connected_outputs=True)
    for name in pipelines["every"].get_component("joiner").channels:
        assert outputs[name]["documents"]["type"] == RankedDocuments | None, name
    assert outputs["joiner"]["documents"]["type"] == RankedDocuments
    # After the joiner: MMR, the reranker, StructuralFirst and the gate share theirs too; the answer hands a list.
    for name in ("mmr", "ranker", "structural_first", "gate"):
        assert outputs[name]["documents"]["type"] == RankedDocuments, name
    assert outputs["answer"]["documents"]["type"] == list[Document]
    alone = CHANNELS["dense"].build({"document_store": make_store(path=str(tmp_path / "qdrant"))})
    assert not alone.share_documents and alone.__haystack_output__.documents.type == list[Document] | None
