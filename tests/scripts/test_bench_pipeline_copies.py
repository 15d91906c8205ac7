"""scripts/lab/bench_pipeline_copies.py: the document count of an output value and the two-component handover."""

from __future__ import annotations

from haystack import Document

from tests.script_modules import load_script

bench = load_script("bench_pipeline_copies")


def test_documents_in_finds_documents_inside_lists_and_dicts() -> None:
    a, b, c = Document(content="a"), Document(content="b"), Document(content="c")
    assert bench.documents_in({"x": [a, b], "y": {"z": (c,)}, "n": 3}) == [a, b, c]
    assert bench.documents_in(None) == []


def test_values_in_counts_what_haystack_walks_and_a_frozen_value_as_one() -> None:
    from adaptive_retrieval.components import SharedDocuments
    from adaptive_retrieval.components.strategy import ChannelWeights

    a = Document(content="a")
    assert bench.values_in({"x": [a, a], "y": {"z": (1.0, None)}}) == 4
    assert bench.values_in(SharedDocuments([a, a])) == 1 and bench.values_in(ChannelWeights({"dense": 1.0})) == 1


def test_per_document_costs_times_a_real_handover() -> None:
    docs = [Document(content=f"passage {i}", meta={"level": 0, "path": ["a", "b"]}) for i in range(50)]
    costs = bench.per_document_costs(docs, repeats=5)
    assert set(costs) == {"haystack_us", "deepcopy_us", "protocol_check_us"}
    assert costs["deepcopy_us"] > 0 and costs["protocol_check_us"] > 0
