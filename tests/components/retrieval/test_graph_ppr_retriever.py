"""The graph-PPR channel on a small real index (Qdrant local mode, ONNX embeddings, SQLite graph): a three-hop
chain the one-hop channel cannot finish, partial-name linking, the skip and fail-soft rules, and the wiring."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from haystack import Document
from passages import PassageWriter

from adaptive_retrieval.components.ids import stable_id
from adaptive_retrieval.components.indexing import EntityExtractor, GraphWriter
from adaptive_retrieval.components.models import OnnxTextEmbedder
from adaptive_retrieval.components.retrieval import DenseRetriever, GraphPPRRetriever
from adaptive_retrieval.components.retrieval.entity_linking import link_exact, link_partial
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections
from adaptive_retrieval.pipelines.store_config import make_store

#: A chain: the whiskey's page names its distillery, the distillery's page its owner, the owner's page its city.
CHAIN = {
    "Kentucky Tavern": "Kentucky Tavern is a brand of bourbon whiskey produced by the Barton 1792 Distillery in "
    "Bardstown.",
    "Barton 1792 Distillery": "The Barton 1792 Distillery is a bourbon distillery in Bardstown owned by the Sazerac "
    "Company since 2009.",
    "Sazerac Company": "The Sazerac Company is an American alcoholic beverage company with its headquarters in "
    "Metairie.",
    "Metairie": "Metairie is an unincorporated community in Jefferson Parish. Its council has seven members.",
}
OTHERS = {
    "Trent Reznor": "Trent Reznor is an American musician, the founder of the industrial rock band Nine Inch Nails.",
    "Nine Inch Nails": "Nine Inch Nails is an American industrial rock band formed in Cleveland by Trent Reznor.",
    "Cleveland": "Cleveland is a city in Ohio on the southern shore of Lake Erie.",
    "Jim Beam": "Jim Beam is a brand of bourbon whiskey produced in Clermont by Beam Suntory.",
    "Beam Suntory": "Beam Suntory is a Japanese spirits company headquartered in Chicago.",
    "Leland, North Carolina": "Leland is a town in Brunswick County, North Carolina.",
    "Marie Curie": "Marie Curie was a Polish physicist and chemist who conducted research on radioactivity.",
}
QUERY = "Where is the headquarters of the company that owns the maker of Kentucky Tavern?"


class Index:
    """A real small index: Qdrant local mode + ONNX embeddings + the SQLite graph."""

    def __init__(self, folder: Path) -> None:
        self.store = make_store(path=str(folder / "qdrant"))
        self.graph = SQLiteGraphStore(path=str(folder / "graph.sqlite"))
        docs = PassageWriter(self.store).write({**CHAIN, **OTHERS})
        GraphWriter(graph_store=self.graph).run(entities=EntityExtractor().run(documents=docs)["entities"])
        self.embedder = OnnxTextEmbedder()

    def vector(self, text: str) -> list[float]:
        return self.embedder.run(text=text)["embedding"]


@pytest.fixture
def index(tmp_path: Path, model_dir: Path) -> Iterator[Index]:
    built = Index(tmp_path)
    yield built
    release_all_clients()
    release_all_connections()


def titles(docs: list[Document]) -> list[str]:
    return [d.meta["title"] for d in docs]


def test_the_walk_reaches_the_end_of_a_four_hop_chain(index: Index) -> None:
    # The walk alone (no similarity), seeded by the query's entity only: Kentucky Tavern -> its page -> the
    # distillery -> its page -> the company -> its page names Metairie -> Metairie's page. Each growth round
    # reaches one passage further.
    def found(hops: int) -> list[str]:
        walk = GraphPPRRetriever(
            graph_store=index.graph, document_store=index.store, top_k=6, similarity_weight=0, hops=hops
        )
        return titles(walk.run(query=QUERY)["documents"])

    assert found(4)[0] == "Kentucky Tavern"
    assert set(CHAIN) <= set(found(4))
    assert "Sazerac Company" in found(3) and "Metairie" not in found(3)
    assert "Barton 1792 Distillery" in found(2) and "Sazerac Company" not in found(2)


def test_hits_seed_the_walk_and_are_not_credited_for_being_hits(index: Index) -> None:
    vector = index.vector(QUERY)
    dense = DenseRetriever(document_store=index.store, top_k=3).run(query_embedding=vector)["documents"]
    retriever = GraphPPRRetriever(graph_store=index.graph, document_store=index.store, top_k=5)
    walk = retriever.walk("", retriever.hit_seeds(dense))  # no query text: the hits alone seed it
    assert set(walk.chunk_seeds) == {d.id for d in dense[:3]}
    assert walk.chunks  # mass flowed out of the hits into the chunks their entities lead to
    docs = retriever.run(query=QUERY, query_embedding=vector, nearest=dense)["documents"]
    assert docs and all(d.embedding is None and "graph_ppr" in d.meta for d in docs)  # handed on without vectors
    # exclude_hits: the walk nominates only chunks the first lists did not already rank high.
    retriever.exclude_hits = 3
    novel = retriever.run(query=QUERY, query_embedding=vector, nearest=dense)["documents"]
    assert novel and not {d.id for d in novel} & {d.id for d in dense[:3]}


def test_partial_names_link_through_the_entities_near_the_query(index: Index) -> None:
    total = index.graph.chunk_count()
    assert "trent reznor" not in link_exact(index.graph, "Which band did Reznor found?", total)
    context = ["trent reznor", "nine inch nails", "cleveland"]
    df = {k: 2 for k in context}
    linked = link_partial("Which band did Reznor found?", context, df, total)
    assert set(linked) == {"trent reznor"}
    # Possessives, case and a leading article are spelling variants of the same key.
    assert "kentucky tavern" in link_exact(index.graph, "What is THE Kentucky Tavern's maker?", total)
    # A generic word of a longer name is not a partial name when the graph knows it as a common entity.
    assert link_partial("the company", ["sazerac company"], {"sazerac company": 1}, 100, {"company": 0.1}) == {}
    retriever = GraphPPRRetriever(graph_store=index.graph, document_store=index.store)
    hits = retriever.hit_seeds([Document(id=stable_id("test", "Nine Inch Nails"), content="")])
    assert "trent reznor" in retriever.walk("Where was the band of Reznor formed?", hits).entity_seeds


def test_skip_at_zero_weight_and_fail_soft(index: Index) -> None:
    retriever = GraphPPRRetriever(graph_store=index.graph, document_store=index.store)
    assert retriever.run(query=QUERY, weights={"graph_ppr": 0.0, "dense": 1.0})["documents"] == []
    assert retriever.run(query=QUERY, weights={"graph_ppr": 0.3})["documents"]
    assert retriever.run(query="completely unrelated words")["documents"] == []
    with pytest.raises(TypeError, match="GraphStore"):
        GraphPPRRetriever(graph_store=object(), document_store=index.store)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="exclude_hits"):
        GraphPPRRetriever(graph_store=index.graph, document_store=index.store, exclude_hits=-1)
    with pytest.raises(ValueError, match="restart"):
        GraphPPRRetriever(graph_store=index.graph, document_store=index.store, restart=1.0)
    index.graph._conn().connection.close()  # the database goes away under a running pipeline
    assert retriever.run(query=QUERY)["documents"] is None


def test_the_query_pipeline_wires_the_channel_on_request(tmp_path: Path) -> None:
    from adaptive_retrieval.components.retrieval.channels import CHANNELS
    from adaptive_retrieval.components.routing.profiles import (
        DEFAULT_PROFILES,
        PPR_SHARES,
        default_profiles,
        with_channel_share,
    )
    from adaptive_retrieval.pipelines.query_pipeline import build_query_pipeline
    from adaptive_retrieval.pipelines.yaml_io import dumps_pipeline, loads_pipeline
    from evaluation.systems import without_channels

    assert CHANNELS["graph_ppr"].opt_in and all("graph_ppr" in p["weights"] for p in DEFAULT_PROFILES.values())
    store = make_store(path=str(tmp_path / "qdrant"))
    assert "graph_ppr" not in build_query_pipeline(store=store).get_component("joiner").channels  # opt-in
    profiles = with_channel_share(default_profiles(), "graph_ppr", PPR_SHARES)
    assert max(profiles, key=lambda i: profiles[i]["weights"]["graph_ppr"]) == "relational"
    pipeline = build_query_pipeline(store=store, graph_ppr=True, profiles=profiles)
    text = dumps_pipeline(pipeline)
    loaded = loads_pipeline(text, path=str(tmp_path / "other" / "qdrant"))
    ppr = loaded.get_component("graph_ppr")
    assert isinstance(ppr, GraphPPRRetriever)
    assert ppr.graph_store.path == str(tmp_path / "other" / "qdrant" / "graph.sqlite")  # each index its own graph
    senders = {(s, r) for s, r, _ in loaded.graph.in_edges("graph_ppr", data="from_socket")}
    assert {("dense", "graph_ppr"), ("sparse", "graph_ppr")} <= senders
    # Dropping the channel again gives back the default pipeline's profiles (up to rounding).
    ablated = loads_pipeline(without_channels(text, ["graph_ppr"]), path=str(tmp_path / "q" / "qdrant"))
    relational = ablated.get_component("router").profiles["relational"]["weights"]
    assert abs(relational["graph_local"] - DEFAULT_PROFILES["relational"]["weights"]["graph_local"]) < 1e-3
