"""SharedDocuments: a ranked list of documents handed on as one value (shared channel and joiner documents)."""

from __future__ import annotations

import copy
from typing import Any

import numpy as np
import pytest
from haystack import Document, Pipeline, component
from haystack.core.errors import PipelineConnectError
from haystack.core.serialization import component_from_dict, component_to_dict

from adaptive_retrieval.components import RankedDocuments, SharedDocuments
from adaptive_retrieval.components.fusion import WeightedRRFJoiner
from adaptive_retrieval.components.gating import LeanAnswer, QualityGate
from adaptive_retrieval.components.ranking import LateInteractionRanker
from adaptive_retrieval.components.selection import MMRSelector, StructuralFirst

DOCS = [
    Document(id=f"d{i}", content=f"text {i}", meta={"level": 0, "path": ["a"]}, score=1.0 - i / 10) for i in range(5)
]


@component
class _Channel:
    """Sends its documents as a list, or shared (as a channel does with ``share_documents``)."""

    def __init__(self, share: bool) -> None:
        self.share = share
        component.set_output_types(self, documents=(RankedDocuments if share else list[Document]) | None)

    def run(self, trigger: int) -> dict[str, Any]:
        return {"documents": SharedDocuments(DOCS) if self.share else DOCS}


@component
class _ListReader:
    """A receiver typed as most Haystack components are."""

    @component.output_types(count=int)
    def run(self, documents: list[Document] | None = None) -> dict[str, Any]:
        return {"count": len(documents or [])}


@component
class _Reader:
    """Keeps what it received (typed as the joiner's channel inputs)."""

    received: Any = None

    @component.output_types(count=int)
    def run(self, documents: RankedDocuments | None = None) -> dict[str, Any]:
        _Reader.received = documents
        return {"count": len(list(documents or []))}


class TestSharedDocuments:
    def test_reads_like_the_list_it_stands_for(self) -> None:
        shared = SharedDocuments(DOCS)
        assert len(shared) == 5 and shared[0] is DOCS[0] and list(shared) == DOCS
        assert shared[:2] == tuple(DOCS[:2]) and not SharedDocuments() and shared == SharedDocuments(DOCS)
        assert shared != SharedDocuments(DOCS[:2]) and "d0" in repr(shared)

    def test_is_immutable_so_its_copy_is_itself(self) -> None:
        shared = SharedDocuments(DOCS)
        assert copy.deepcopy(shared) is shared and copy.copy(shared) is shared
        with pytest.raises(TypeError):
            shared[0] = DOCS[1]  # type: ignore[index]
        with pytest.raises(TypeError):
            hash(shared)

    def test_serialises(self) -> None:
        shared = SharedDocuments(DOCS)
        assert SharedDocuments.from_dict(shared.to_dict()) == shared

    @pytest.mark.parametrize("share", [True, False])
    def test_a_receiver_typed_iterable_takes_a_list_and_shared_documents(self, share: bool) -> None:
        pipeline = Pipeline()
        pipeline.add_component("channel", _Channel(share))
        pipeline.add_component("reader", _Reader())
        pipeline.connect("channel.documents", "reader.documents")
        assert pipeline.run({"channel": {"trigger": 0}})["reader"]["count"] == 5
        if share:  # Haystack's copy of the input is the value itself
            assert isinstance(_Reader.received, SharedDocuments) and _Reader.received[0] is DOCS[0]
        else:  # a list is copied, document by document, as Haystack copies every input
            assert _Reader.received == DOCS and _Reader.received[0] is not DOCS[0]

    def test_a_list_receiver_cannot_take_shared_documents(self) -> None:
        pipeline = Pipeline()
        pipeline.add_component("channel", _Channel(share=True))
        pipeline.add_component("reader", _ListReader())
        with pytest.raises(PipelineConnectError, match="do not match"):  # at connect, not a wrong list at run
            pipeline.connect("channel.documents", "reader.documents")

    def test_the_joiner_and_mmr_read_shared_documents_and_change_none(self) -> None:
        before = [d.to_dict() for d in DOCS]
        joiner = WeightedRRFJoiner(channels=["dense", "sparse"], share_documents=True)
        fused = joiner.run(dense=SharedDocuments(DOCS), sparse=SharedDocuments(DOCS[::-1]))["documents"]
        as_lists = WeightedRRFJoiner(channels=["dense", "sparse"]).run(dense=DOCS, sparse=DOCS[::-1])["documents"]
        assert isinstance(fused, SharedDocuments) and list(fused) == as_lists and isinstance(as_lists, list)
        assert WeightedRRFJoiner.from_dict(joiner.to_dict()).share_documents
        vectors = np.eye(5, 8, dtype=np.float32)
        with_vectors = [
            Document(id=d.id, content=d.content, embedding=v.tolist()) for d, v in zip(DOCS, vectors, strict=True)
        ]
        picked = MMRSelector(top_k=3).run(documents=SharedDocuments(with_vectors))["documents"]
        assert [d.meta["mmr_rank"] for d in picked] == [1, 2, 3]
        assert [d.to_dict() for d in DOCS] == before and all("mmr_rank" not in d.meta for d in with_vectors)

    def test_mmr_the_rankers_structural_first_and_the_gate_share_what_they_select_and_change_nothing(self) -> None:
        vectors = np.eye(5, 8, dtype=np.float32)
        docs = [Document(id=d.id, content=d.content, embedding=v.tolist()) for d, v in zip(DOCS, vectors, strict=True)]
        before = [d.to_dict() for d in docs]
        shared_mmr, list_mmr = MMRSelector(top_k=3, share_documents=True), MMRSelector(top_k=3)
        picked = shared_mmr.run(documents=SharedDocuments(docs))["documents"]
        assert isinstance(picked, SharedDocuments) and list(picked) == list_mmr.run(documents=docs)["documents"]
        assert MMRSelector.from_dict(shared_mmr.to_dict()).share_documents
        ranker = LateInteractionRanker(share_documents=True)
        passed = ranker.run(documents=picked, query="text", rerank=False, top_k=2)["documents"]
        assert isinstance(passed, SharedDocuments) and [d.id for d in passed] == [d.id for d in picked][:2]
        assert isinstance(LateInteractionRanker().run(documents=picked, query="q", rerank=False)["documents"], list)
        first = StructuralFirst(share_documents=True)
        kept = first.run(documents=passed)["documents"]
        assert isinstance(kept, SharedDocuments) and list(kept) == list(passed)
        assert component_from_dict(StructuralFirst, component_to_dict(first, "first"), "first").share_documents
        gate = QualityGate(max_retries=0, soft_match=False, share_documents=True)
        judged = gate.run(documents=kept, query="text")["documents"]
        assert isinstance(judged, SharedDocuments) and list(judged) == list(kept)
        alone = QualityGate(max_retries=0, soft_match=False).run(documents=kept, query="text")["documents"]
        assert isinstance(alone, list) and alone == list(kept)
        assert QualityGate.from_dict(gate.to_dict()).share_documents and not QualityGate().share_documents
        answer = LeanAnswer().run(documents=judged, include_embeddings=True)["documents"]
        assert isinstance(answer, list) and answer == list(kept)
        assert [d.to_dict() for d in docs] == before
