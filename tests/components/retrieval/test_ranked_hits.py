"""RankedHits: a channel's ranked list as the channels that read it take it (ids and texts), one immutable value."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from haystack import Document, Pipeline, component

from adaptive_retrieval.components.retrieval.ranked_hits import Hit, HitsInput, RankedHits

DOCS = [Document(id=f"d{i}", content=f"text {i}", meta={"level": 0}, score=1.0 - i / 10) for i in range(5)]


@component
class _Sender:
    """Sends the hits it was made with (as DenseRetriever sends its hits)."""

    def __init__(self, hits: RankedHits) -> None:
        self.hits = hits

    @component.output_types(hits=RankedHits)
    def run(self, trigger: int) -> dict[str, Any]:
        return {"hits": self.hits}


@component
class _Reader:
    """Keeps what it received (as BridgeRetriever reads ``nearest``)."""

    received: Any = None

    @component.output_types(count=int)
    def run(self, nearest: HitsInput = None) -> dict[str, Any]:
        _Reader.received = nearest
        return {"count": len(nearest or [])}


class TestRankedHits:
    def test_reads_like_the_list_it_stands_for(self) -> None:
        hits = RankedHits.of(DOCS)
        assert len(hits) == 5 and hits[0] == Hit("d0", "text 0") and hits[0].id == "d0"
        assert [h.id for h in hits[:2]] == ["d0", "d1"] and [h.content for h in hits][-1] == "text 4"
        assert not RankedHits() and hits and hits == RankedHits.of(DOCS) and hits != RankedHits.of(DOCS[:2])
        assert "d0" in repr(hits) and hash(hits) == hash(RankedHits.of(DOCS))

    def test_is_immutable_so_its_copy_is_itself(self) -> None:
        hits = RankedHits.of(DOCS)
        assert copy.deepcopy(hits) is hits and copy.copy(hits) is hits
        with pytest.raises(TypeError):
            hits[0] = Hit("x", "y")  # type: ignore[index]
        with pytest.raises(AttributeError):
            hits[0].id = "x"  # type: ignore[misc]

    def test_serialises(self) -> None:
        hits = RankedHits.of(DOCS)
        assert hits.to_dict() == {"hits": [[d.id, d.content] for d in DOCS]}
        assert RankedHits.from_dict(hits.to_dict()) == hits

    def test_a_pipeline_hands_it_over_as_one_value(self) -> None:
        hits = RankedHits.of(DOCS)
        pipeline = Pipeline()
        pipeline.add_component("sender", _Sender(hits))
        pipeline.add_component("reader", _Reader())
        pipeline.connect("sender.hits", "reader.nearest")
        assert pipeline.run({"sender": {"trigger": 0}})["reader"]["count"] == 5
        assert _Reader.received is hits  # Haystack's copy of the input is the value itself

    def test_a_channels_documents_still_connect_to_a_hits_input(self) -> None:
        @component
        class _Documents:
            @component.output_types(documents=list[Document] | None)
            def run(self, trigger: int) -> dict[str, Any]:
                return {"documents": DOCS}

        pipeline = Pipeline()
        pipeline.add_component("channel", _Documents())
        pipeline.add_component("reader", _Reader())
        pipeline.connect("channel.documents", "reader.nearest")  # YAML written before the hits existed
        assert pipeline.run({"channel": {"trigger": 0}})["reader"]["count"] == 5
