"""The bridge channel on a small real index (Qdrant Edge, ONNX embeddings, BM25): the second passage of a chain,
named only by the first, comes back; the skip rule and the pure helpers (its YAML
round trip is tests/components/retrieval/test_channels.py's, with every registered channel)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from haystack import Document
from passages import PassageWriter

from adaptive_retrieval.components.models import Bm25TextEmbedder, OnnxTextEmbedder
from adaptive_retrieval.components.retrieval import DenseRetriever, RankedHits, SparseRetriever
from adaptive_retrieval.components.retrieval.bridge_retriever import BridgeRetriever, bridge_names, first_hits
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.pipelines.store_config import make_store

PASSAGES = {
    "We Sweat Blood": "We Sweat Blood is the second studio album by the Canadian rock band Danko Jones, released "
    "in 2003.",
    "Danko Jones": "Danko Jones is a rock trio from Toronto. The band consists of Danko Jones, John Calabrese and "
    "Rich Knox.",
    "Casa Loma": "Casa Loma is a Gothic Revival castle and garden in midtown Toronto, now a historic house museum.",
    "Edinburgh Castle": "Edinburgh Castle is a historic castle in Edinburgh, Scotland, on Castle Rock.",
    "Himeji Castle": "Himeji Castle is a hilltop castle complex in the city of Himeji in Japan.",
    "Prague Castle": "Prague Castle is a castle complex in Prague, the seat of the head of state.",
    "Blood Sugar Sex Magik": "Blood Sugar Sex Magik is the fifth album by the band Red Hot Chili Peppers, formed in "
    "Los Angeles.",
    "Sweat": "Sweat is a fluid excreted by the sweat glands of mammals to regulate body temperature.",
}
QUERY = "Which castle is in the city where the band of the album We Sweat Blood formed?"


class Index:
    """A real small index: Qdrant Edge with dense and BM25 vectors."""

    def __init__(self, folder: Path) -> None:
        self.store = make_store(path=str(folder / "qdrant"))
        PassageWriter(self.store).write(PASSAGES)
        self.dense = DenseRetriever(document_store=self.store, top_k=3)
        self.sparse = SparseRetriever(document_store=self.store, top_k=3)
        self.text_embedder = OnnxTextEmbedder()
        self.sparse_embedder = Bm25TextEmbedder()

    def first_lists(self, query: str) -> tuple[list[Document], list[Document]]:
        vector = self.text_embedder.run(text=query)["embedding"]
        sparse = self.sparse_embedder.run(text=query)["sparse_embedding"]
        return (
            self.dense.run(query_embedding=vector)["documents"],
            self.sparse.run(query_sparse_embedding=sparse)["documents"],
        )


@pytest.fixture
def index(tmp_path: Path, model_dir: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    yield built
    release_all_clients()


def test_the_name_a_hit_writes_finds_the_next_passage(index: Index) -> None:
    nearest, lexical = index.first_lists(QUERY)
    first = {d.meta["title"] for d in nearest + lexical}
    assert "We Sweat Blood" in first and "Danko Jones" not in first  # the question never names the band
    bridge = BridgeRetriever(document_store=index.store, top_k=5)
    docs = bridge.run(query=QUERY, nearest=nearest, lexical=lexical)["documents"]
    titles = [d.meta["title"] for d in docs]
    # Found only through the album's page, which names the band; the other hits' expansions fill the rest.
    assert "Danko Jones" in titles, titles
    band = docs[titles.index("Danko Jones")]
    # Without its vector, as every channel's document: MMR reads the vectors of its candidates from the store.
    assert "Danko Jones" in band.meta["bridge_names"] and band.embedding is None
    # What the pipeline hands it: the dense and sparse channels' hits (ids and texts) find the same.
    hits = bridge.run(query=QUERY, nearest=RankedHits.of(nearest), lexical=RankedHits.of(lexical))["documents"]
    assert [(d.id, d.score, d.meta) for d in hits] == [(d.id, d.score, d.meta) for d in docs]


def test_skips_at_zero_weight_and_without_new_names(index: Index) -> None:
    nearest, lexical = index.first_lists(QUERY)
    bridge = BridgeRetriever(document_store=index.store)
    assert bridge.run(query=QUERY, nearest=nearest, lexical=lexical, weights={"bridge": 0.0})["documents"] == []
    # Without the sparse channel's list (its weight was 0) the channel reads the BM25 first hop itself.
    own = bridge.run(query=QUERY, nearest=nearest, weights={"bridge": 0.3})["documents"]
    assert [d.id for d in own] == [d.id for d in bridge.run(query=QUERY, nearest=nearest, lexical=lexical)["documents"]]
    plain = [Document(id="x", content="a passage that names nothing at all")]
    assert bridge.run(query=QUERY, nearest=plain, lexical=plain)["documents"] == []
    with pytest.raises(ValueError, match="seed_hits"):
        BridgeRetriever(document_store=index.store, seed_hits=0)


def test_helpers() -> None:
    assert bridge_names("Danko Jones formed in Toronto in 1996 with Danko Jones.", "Who is Danko Jones?", 5) == [
        "Toronto"
    ]
    assert bridge_names("The band Alpha met Beta and Gamma in 1999.", "Q?", 2) == ["Alpha", "Beta"]
    a, b, c = (Document(id=i, content=i) for i in "abc")
    # b is second in both lists: fused, it leads a (first in one list only).
    assert [d.id for d in first_hits([[a, b], [c, b]], 2)] == ["b", "a"]
