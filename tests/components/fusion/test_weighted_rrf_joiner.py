"""WeightedRRFJoiner against hand-computed fusion, weights per query, missing channels, provenance."""

from __future__ import annotations

import pytest
from haystack import Document

from adaptive_retrieval.components.fusion import NoChannelAnsweredError, WeightedRRFJoiner


def docs(*ids: str) -> list[Document]:
    return [Document(id=i, content=f"text {i}", score=1.0 / (n + 1)) for n, i in enumerate(ids)]


def test_rrf_matches_hand_computed_example() -> None:
    joiner = WeightedRRFJoiner(channels=["dense", "sparse"], k=60)
    out = joiner.run(dense=docs("a", "b", "c"), sparse=docs("c", "a", "d"), weights={"dense": 0.75, "sparse": 0.25})
    # a: .75/61 + .25/62 ; b: .75/62 ; c: .75/63 + .25/61 ; d: .25/63  (all times k+1 = 61)
    expected = {
        "a": (0.75 / 61 + 0.25 / 62) * 61,
        "b": (0.75 / 62) * 61,
        "c": (0.75 / 63 + 0.25 / 61) * 61,
        "d": (0.25 / 63) * 61,
    }
    got = {d.id: d.score for d in out["documents"]}
    assert got == pytest.approx(expected)
    assert [d.id for d in out["documents"]] == sorted(expected, key=lambda i: -expected[i])
    first = out["documents"][0]
    assert first.id == "a" and first.meta["channels"] == {"dense": 1, "sparse": 2}


def test_weights_change_per_query() -> None:
    joiner = WeightedRRFJoiner(channels=["dense", "sparse"])
    dense, sparse = docs("x", "y"), docs("y", "x")
    assert joiner.run(dense=dense, sparse=sparse, weights={"dense": 0.9, "sparse": 0.1})["documents"][0].id == "x"
    assert joiner.run(dense=dense, sparse=sparse, weights={"dense": 0.1, "sparse": 0.9})["documents"][0].id == "y"


def test_missing_channel_is_skipped_and_weights_renormalised() -> None:
    joiner = WeightedRRFJoiner(channels=["dense", "sparse", "graph_local"])
    out = joiner.run(dense=docs("a"), sparse=None, weights={"dense": 0.3, "sparse": 0.5, "graph_local": 0.2})
    assert out["fusion"]["weights"] == pytest.approx({"dense": 1.0})
    assert set(out["fusion"]["skipped"]) == {"sparse", "graph_local"}
    assert out["documents"][0].score == pytest.approx(1.0)  # ranked first by every channel used


def test_equal_weights_when_none_given_and_top_k() -> None:
    joiner = WeightedRRFJoiner(channels=["dense", "sparse"], top_k=2)
    out = joiner.run(dense=docs("a", "b", "c"), sparse=docs("b", "a", "c"))
    assert out["fusion"]["weights"] == pytest.approx({"dense": 0.5, "sparse": 0.5})
    assert len(out["documents"]) == 2
    assert len(joiner.run(dense=docs("a", "b", "c"), top_k=1)["documents"]) == 1


def test_bad_configuration_and_inputs() -> None:
    with pytest.raises(ValueError, match="distinct"):
        WeightedRRFJoiner(channels=["dense", "dense"])
    with pytest.raises(ValueError, match="clash"):
        WeightedRRFJoiner(channels=["weights"])
    joiner = WeightedRRFJoiner(channels=["dense"])
    with pytest.raises(ValueError, match=">= 0"):
        joiner.run(dense=docs("a"), weights={"dense": -1.0})
    with pytest.raises(ValueError, match="Unknown channel"):
        joiner.run(dense=docs("a"), graph=docs("b"))


def test_serialisation_round_trip_keeps_channel_sockets() -> None:
    joiner = WeightedRRFJoiner(channels=["dense", "section"], k=10)
    clone = WeightedRRFJoiner.from_dict(joiner.to_dict())
    assert clone.channels == ["dense", "section"] and clone.k == 10
    assert set(clone.__haystack_input__._sockets_dict) >= {"dense", "section", "weights", "top_k"}


def test_a_failed_channel_is_reported_as_data() -> None:
    """A channel that failed sends ``documents=None`` and its reason on ``<channel>_failure``: the joiner skips
    the list and reports the reason in ``fusion["failures"]`` (no log handler needed to learn it)."""
    joiner = WeightedRRFJoiner(channels=["dense", "sparse"])
    out = joiner.run(
        dense=[Document(id="a", content="a")],
        sparse=None,
        sparse_failure="ConnectionError: the store is down",
        weights={"dense": 0.5, "sparse": 0.5},
    )
    assert [d.id for d in out["documents"]] == ["a"]
    assert out["fusion"]["failures"] == {"sparse": "ConnectionError: the store is down"}
    assert out["fusion"]["weights"] == {"dense": 1.0}


def test_every_weighted_channel_failing_raises_instead_of_an_empty_list() -> None:
    """Issue 41 #9: a plain ``Pipeline.run`` returned ``[]`` while another process held the store (each channel's
    lock error only logged); the joiner now raises, so every caller of the pipeline learns it."""
    joiner = WeightedRRFJoiner(channels=["dense", "sparse", "section"])
    with pytest.raises(NoChannelAnsweredError, match="dense: StoreLockedError: locked") as caught:
        joiner.run(
            dense=None,
            dense_failure="StoreLockedError: locked",
            sparse=None,
            sparse_failure="StoreLockedError: locked",
            section=[],
            weights={"dense": 0.5, "sparse": 0.5, "section": 0.0},
        )
    assert set(caught.value.reasons) == {"dense", "sparse"}


def test_some_channels_failing_raises_only_when_nothing_came_back() -> None:
    joiner = WeightedRRFJoiner(channels=["dense", "sparse"])
    weights = {"dense": 0.5, "sparse": 0.5}
    with pytest.raises(NoChannelAnsweredError, match="sparse"):
        joiner.run(dense=[], sparse=None, sparse_failure="OSError: gone", weights=weights)
    out = joiner.run(
        dense=[Document(id="a", content="a")], sparse=None, sparse_failure="OSError: gone", weights=weights
    )
    assert [d.id for d in out["documents"]] == ["a"]
    # A channel that was not connected (no failure reported) is skipped as before, even when nothing came back.
    assert joiner.run(dense=[], weights=weights)["documents"] == []
