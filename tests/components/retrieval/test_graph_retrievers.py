"""Graph channels on a small real index (Qdrant Edge, ONNX embeddings, SQLite graph): the bridge hop,
incremental updates, communities and the global channel, and how the pipelines wire and load them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from haystack import Document
from passages import PassageWriter

from adaptive_retrieval.components.indexing import CommunityDetector, EntityExtractor, GraphWriter
from adaptive_retrieval.components.models import Bm25TextEmbedder, OnnxTextEmbedder
from adaptive_retrieval.components.retrieval import (
    DenseRetriever,
    GraphGlobalRetriever,
    GraphLocalRetriever,
    SparseRetriever,
)
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections
from adaptive_retrieval.pipelines.store_config import make_store

PASSAGES = {
    "Leland, North Carolina": "Leland is a town in Brunswick County, North Carolina. The horror comedy Maximum "
    "Overdrive was filmed around the town in 1986.",
    "Maximum Overdrive": "Maximum Overdrive is a 1986 American horror comedy written and helmed by Stephen King.",
    "Wilmington, North Carolina": "Wilmington is a port city in New Hanover County, North Carolina. Many movies "
    "and television series were filmed around the city.",
    "Stephen King": "Stephen King is an American author of horror novels such as Carrie and The Shining.",
    "Brunswick County, North Carolina": "Brunswick County is a county in the southeastern corner of North "
    "Carolina. Its county seat is Bolivia.",
    "Marie Curie": "Marie Curie was a Polish physicist and chemist who conducted pioneering research on "
    "radioactivity. She shared the Nobel Prize in Physics with Pierre Curie and Henri Becquerel.",
    "Pierre Curie": "Pierre Curie was a French physicist, a pioneer in crystallography and magnetism. He worked "
    "on radioactivity with Marie Curie and shared the Nobel Prize with Henri Becquerel.",
    "Henri Becquerel": "Henri Becquerel was a French physicist who discovered radioactivity. The Nobel Prize in "
    "Physics went to Henri Becquerel, Marie Curie and Pierre Curie.",
    "Radium Institute": "The Radium Institute in Paris was founded for research on radioactivity. Marie Curie led "
    "its laboratory and Pierre Curie's work on radioactivity continued there.",
    "Leyenda de Azul": "The Leyenda de Azul is a tournament held by the Mexican promotion Consejo Mundial de Lucha "
    "Libre (CMLL). It honors Blue Demon and takes place in Arena México.",
    "Arena México": "Arena México is an indoor arena in Mexico City where CMLL holds its shows, including the Leyenda "
    "de Azul tournament honoring Blue Demon.",
    "Blue Demon": "Blue Demon was a Mexican luchador of CMLL, honored by the Leyenda de Azul tournament held in Arena "
    "México.",
}
BRIDGE_QUERY = "Which movie was filmed around Leland?"


class Index:
    """A real small index: Qdrant Edge + ONNX INT8 embeddings + the SQLite graph."""

    def __init__(self, folder: Path) -> None:
        self.store = make_store(path=str(folder / "qdrant"))
        self.graph = SQLiteGraphStore(path=str(folder / "graph.sqlite"))
        self.passages = PassageWriter(self.store)
        self.extractor, self.writer = EntityExtractor(), GraphWriter(graph_store=self.graph)
        self.embedder = OnnxTextEmbedder()

    def add(self, passages: dict[str, str]) -> None:
        docs = self.passages.write(passages)
        self.writer.run(entities=self.extractor.run(documents=docs)["entities"])

    def vector(self, text: str) -> list[float]:
        return self.embedder.run(text=text)["embedding"]


@pytest.fixture
def index(tmp_path: Path, model_dir: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    built.add(PASSAGES)
    yield built
    release_all_clients()
    release_all_connections()


def titles(docs: list[Document]) -> list[str]:
    return [d.meta["title"] for d in docs]


def words(text: str) -> set[str]:
    return set(re.findall(r"\w+", text.lower()))


def test_graph_local_finds_a_bridge_passage_that_shares_no_word_with_the_query(index: Index) -> None:
    bridge = PASSAGES["Maximum Overdrive"]
    assert not words(BRIDGE_QUERY) & (words(bridge) | words("Maximum Overdrive"))  # the premise of the test

    # BM25 cannot reach it: no query term occurs in it.
    sparse = SparseRetriever(document_store=index.store)
    query_sparse = Bm25TextEmbedder().run(text=BRIDGE_QUERY)["sparse_embedding"]
    assert "Maximum Overdrive" not in titles(sparse.run(query_sparse_embedding=query_sparse, top_k=5)["documents"])

    retriever = GraphLocalRetriever(graph_store=index.graph, document_store=index.store, top_k=3)
    found = retriever.run(query=BRIDGE_QUERY, query_embedding=index.vector(BRIDGE_QUERY))["documents"]
    assert len(found) <= 3
    assert "Maximum Overdrive" in titles(found)  # with the first hop (the town page) and its county
    hop = found[titles(found).index("Maximum Overdrive")]
    assert "maximum overdrive" in hop.meta["graph_entities"]  # reached through the entity the town page names
    assert hop.embedding is None  # scored with its vector, handed on without it (MMR reads it from the store)

    # Seeded by the query's entity alone (no vector), the hop still happens: Leland → its page → the film.
    by_name = retriever.run(query=BRIDGE_QUERY)["documents"]
    assert "Maximum Overdrive" in titles(by_name)
    # A query naming nothing in the graph and no vector gives nothing rather than noise.
    assert retriever.run(query="completely unrelated words")["documents"] == []


def test_graph_local_reuses_the_dense_channels_hits_for_its_seeds(index: Index) -> None:
    vector = index.vector(BRIDGE_QUERY)
    own = GraphLocalRetriever(graph_store=index.graph, document_store=index.store, top_k=3)
    expected = own.run(query=BRIDGE_QUERY, query_embedding=vector)["documents"]
    found = DenseRetriever(document_store=index.store, top_k=20).run(query_embedding=vector)
    dense, hits = found["documents"], found["hits"]
    assert [h.id for h in hits] == [d.id for d in dense]  # the dense channel's list as its hits

    spy = CountingStore(index.store)  # a counting spy around the real store
    reused = GraphLocalRetriever(graph_store=index.graph, document_store=spy, top_k=3)
    got = reused.run(query=BRIDGE_QUERY, query_embedding=vector, nearest=hits)["documents"]
    assert spy.dense_searches == 0 and [d.id for d in got] == [d.id for d in expected]
    assert [d.id for d in reused.run(query=BRIDGE_QUERY, query_embedding=vector, nearest=dense)["documents"]] == [
        d.id for d in expected
    ]  # the documents themselves, from a Python caller, read the same
    reused.run(query=BRIDGE_QUERY, query_embedding=vector, nearest=[])  # dense off: it searches itself
    assert spy.dense_searches == 1


class CountingStore:
    """The real store's searches, counting the dense ones (a spy: the searches themselves are real)."""

    def __init__(self, store: Any) -> None:
        self.store, self.embedding_dim, self.dense_searches = store, store.embedding_dim, 0

    def search_dense(self, *args: Any, **kwargs: Any) -> list[Document]:
        self.dense_searches += 1
        return self.store.search_dense(*args, **kwargs)

    def search_sparse(self, *args: Any, **kwargs: Any) -> list[Document]:
        return self.store.search_sparse(*args, **kwargs)

    def fetch_documents(self, *args: Any, **kwargs: Any) -> list[Document]:
        return self.store.fetch_documents(*args, **kwargs)

    def dense_vectors(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return self.store.dense_vectors(*args, **kwargs)


def test_graph_local_skips_when_the_router_gives_it_no_weight(index: Index) -> None:
    retriever = GraphLocalRetriever(graph_store=index.graph, document_store=index.store)
    assert retriever.run(query=BRIDGE_QUERY, weights={"graph_local": 0.0, "dense": 1.0})["documents"] == []
    assert retriever.run(query=BRIDGE_QUERY, weights={"graph_local": 0.2})["documents"]
    with pytest.raises(TypeError, match="GraphStore"):
        GraphLocalRetriever(graph_store=object(), document_store=index.store)  # type: ignore[arg-type]


def test_a_failing_graph_store_skips_the_channel_instead_of_failing_the_query(index: Index) -> None:
    local = GraphLocalRetriever(graph_store=index.graph, document_store=index.store)
    glob = GraphGlobalRetriever(graph_store=index.graph, document_store=index.store)
    index.graph._conn().connection.close()  # the database goes away under a running pipeline
    assert local.run(query=BRIDGE_QUERY, query_embedding=index.vector(BRIDGE_QUERY))["documents"] is None
    assert glob.run(query_embedding=index.vector(BRIDGE_QUERY))["documents"] is None


def test_incremental_update_moves_the_bridge(index: Index) -> None:
    graph = index.graph
    assert ("maximum overdrive", 1.0) in graph.neighbours(["leland"])["leland"]
    chunks_before = graph.chunk_count()

    # The town page is rewritten to name another film, and that film gets a page.
    index.add(
        {
            "Leland, North Carolina": "Leland is a town in Brunswick County, North Carolina. The thriller "
            "Domestic Disturbance was filmed around the town in 2001.",
            "Domestic Disturbance": "Domestic Disturbance is a 2001 American thriller starring John Travolta.",
        }
    )
    assert graph.chunk_count() == chunks_before + 1
    near = dict(graph.neighbours(["leland"], limit=50)["leland"])
    assert "domestic disturbance" in near and "maximum overdrive" not in near
    assert graph.find_entities(["maximum overdrive"])["maximum overdrive"].df == 1  # only its own page now

    retriever = GraphLocalRetriever(graph_store=graph, document_store=index.store, top_k=3)
    found = titles(retriever.run(query=BRIDGE_QUERY)["documents"])
    assert "Domestic Disturbance" in found and "Maximum Overdrive" not in found


def test_communities_and_the_global_channel(index: Index) -> None:
    detector = CommunityDetector(graph_store=index.graph, min_community_size=2, change_threshold=0.5)
    result = detector.run(chunks_changed=len(PASSAGES))  # first run: every chunk is a change
    assert result["recomputed"] and result["communities"] >= 3 and result["pending_changes"] == 0
    communities = index.graph.communities(level=0)
    home = {key: c.id for c in communities for key in c.entities}
    assert home["marie curie"] == home["pierre curie"] == home["henri becquerel"]
    assert home["leyenda de azul"] == home["blue demon"] != home["marie curie"]
    assert home["leland"] != home["marie curie"]
    science = next(c for c in communities if c.id == home["marie curie"])
    assert science.summary.startswith("Themes: ") and "Curie" in science.summary
    assert science.embedding is not None and len(science.embedding) == 384
    assert science.chunks and science.chunks[0][1] >= science.chunks[-1][1]

    retriever = GraphGlobalRetriever(graph_store=index.graph, document_store=index.store, max_communities=1)
    query = index.vector("What were the main discoveries in physics about radioactivity?")
    found = retriever.run(query_embedding=query, top_k=4)["documents"]
    assert found and set(titles(found)) <= {"Marie Curie", "Pierre Curie", "Henri Becquerel", "Radium Institute"}
    assert found[0].meta["community"]["id"] == home["marie curie"] and found[0].embedding is None  # handed on lean
    assert retriever.run(query_embedding=query, weights={"graph_global": 0.0})["documents"] == []
    with pytest.raises(ValueError, match="dimension"):
        retriever.run(query_embedding=[0.1] * 8)

    # Below the change threshold nothing is recomputed; past it, communities are rebuilt automatically.
    index.add({"Blue Demon": PASSAGES["Blue Demon"] + " He starred in many films."})
    assert not detector.run(chunks_changed=1)["recomputed"]
    index.add(dict(list(PASSAGES.items())[:6]))
    assert index.graph.pending_changes() >= 0.5 * index.graph.chunk_count()
    assert detector.run(chunks_changed=6)["recomputed"]
    assert index.graph.pending_changes() == 0
    assert detector.run(force=True)["recomputed"]


def test_pipelines_wire_the_graph_and_load_it_from_the_index_folder(tmp_path: Path) -> None:
    from adaptive_retrieval.components.retrieval.channels import pipeline_channels
    from adaptive_retrieval.pipelines.indexing_pipeline import build_indexing_pipeline, graph_store_of
    from adaptive_retrieval.pipelines.query_pipeline import build_query_pipeline
    from adaptive_retrieval.pipelines.yaml_io import dumps_pipeline, loads_pipeline

    store = make_store(path=str(tmp_path / "qdrant"))
    # graph_global is opt-in: asked for here so that two graph channels share the graph store.
    query = build_query_pipeline(store=store, opt_in=("graph_global",))
    assert "graph_local" in pipeline_channels() and "graph_global" not in pipeline_channels()
    assert query.get_component("graph_local").graph_store.path == str(tmp_path / "qdrant" / "graph.sqlite")
    indexing = build_indexing_pipeline(store=store)
    assert graph_store_of(indexing).path == str(tmp_path / "qdrant" / "graph.sqlite")

    text = dumps_pipeline(query)
    other = tmp_path / "elsewhere" / "qdrant"
    first, second = loads_pipeline(text, path=str(other)), loads_pipeline(text, path=str(other))
    expected = str(other / "graph.sqlite")  # each index keeps its graph in its own folder
    for loaded in (first, second):
        for name in ("graph_local", "graph_global"):
            assert loaded.get_component(name).graph_store.path == expected
    # Both loads (and both components of each) share one SQLite connection; the query side opens the graph the
    # indexing side created (it never creates one).
    SQLiteGraphStore(path=expected).chunk_count()
    stores = [p.get_component(n).graph_store for p in (first, second) for n in ("graph_local", "graph_global")]
    assert len({id(s._conn()) for s in stores}) == 1
    explicit = loads_pipeline(text, graph_path=str(tmp_path / "g.sqlite"))
    assert explicit.get_component("graph_local").graph_store.path == str(tmp_path / "g.sqlite")
    neo = loads_pipeline(text, graph_url="bolt://graph-db:7687")
    data: dict[str, Any] = neo.get_component("graph_local").graph_store.to_dict()
    assert data["init_parameters"]["url"] == "bolt://graph-db:7687"
    assert data["init_parameters"]["password"]["type"] == "env_var"
    release_all_clients()
    release_all_connections()
