"""Section tree: builder structure and summaries, bounded expansion, structural filters, incremental rebuilds."""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path

import numpy as np
import pytest
from haystack import Document
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.utils import Secret

from adaptive_retrieval.components.ids import tree_node_id
from adaptive_retrieval.components.indexing import ReplacingDocumentWriter, SectionSplitter, SectionTreeBuilder
from adaptive_retrieval.components.indexing.section_segments import segment_runs
from adaptive_retrieval.components.models import OnnxDocumentEmbedder, OnnxTextEmbedder
from adaptive_retrieval.components.retrieval.section_tree_retriever import (
    SectionTreeRetriever,
    heading_matches_name,
    heading_matches_ref,
)
from adaptive_retrieval.components.stores import EdgeDocumentStore
from adaptive_retrieval.pipelines.indexer import delete_sources, index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import build_indexing_pipeline, store_of
from adaptive_retrieval.pipelines.query_pipeline import build_query_pipeline
from adaptive_retrieval.pipelines.store_config import make_store
from adaptive_retrieval.pipelines.yaml_io import load_pipeline


def chunks_of(corpus: Path, names: list[str]) -> list[Document]:
    """Real chunks of reference topics, embedded as the indexing pipeline embeds them."""
    docs = [
        Document(content=(corpus / n).read_text(encoding="utf-8"), meta={"file_path": str(corpus / n)}) for n in names
    ]
    chunks = SectionSplitter().run(docs)["documents"]
    embedder = OnnxDocumentEmbedder(progress_bar=False, meta_fields_to_embed=["title", "section_path"])
    return embedder.run(chunks)["documents"]


def nodes(store, level: int, source: str | None = None) -> list[Document]:
    conditions = [{"field": "meta.level", "operator": "==", "value": level}]
    if source:
        conditions.append({"field": "meta.source", "operator": "==", "value": source})
    return store.filter_documents({"operator": "AND", "conditions": conditions})


def embed(text: str) -> list[float]:
    return OnnxTextEmbedder().run(text)["embedding"]


@pytest.fixture(scope="module")
def corpus_chunks(reference_corpus: Path, model_dir: Path) -> list[Document]:
    """Embedded chunks of four reference topics (embedded once for the module)."""
    return chunks_of(reference_corpus, ["execmodel.txt", "typesseq.txt", "try.txt", "while.txt"])


def of_source(chunks: list[Document], name: str) -> list[Document]:
    return [c for c in chunks if Path(c.meta["source"]).name == name]


@pytest.fixture(scope="module")
def corpus_tree(corpus_chunks: list[Document]) -> list[Document]:
    """The chunks followed by their section-tree nodes."""
    return SectionTreeBuilder(max_section_chunks=4).run(corpus_chunks)["documents"]


@pytest.fixture
def indexed(corpus_tree: list[Document], store_path: str) -> EdgeDocumentStore:
    """The four topics with their section trees in a fresh store."""
    store = make_store(path=store_path)
    ReplacingDocumentWriter(store).run(corpus_tree)
    return store


def test_tree_structure_on_a_document_with_headings(corpus_chunks: list[Document]) -> None:
    chunks = of_source(corpus_chunks, "typesseq.txt")
    builder = SectionTreeBuilder(max_section_chunks=4, summary_sentences=3, summary_words=80)
    out = builder.run(chunks)
    docs = out["documents"]
    assert docs[: len(chunks)] == chunks  # chunks pass through untouched, nodes follow
    sections = [d for d in docs if d.meta["level"] == 1]
    (document,) = [d for d in docs if d.meta["level"] == 2]
    assert out["tree"] == {"sections": len(sections), "documents": 1, "llm_summaries": 0, "llm_fallbacks": 0}

    by_id = {c.id: c for c in chunks}
    covered: list[str] = []
    for node in sections:
        children = [by_id[c] for c in node.meta["children_ids"]]
        assert 2 <= len(children) <= 4  # single chunks get no parent; long sections are cut into segments
        assert {c.meta["section_id"] for c in children} == {node.meta["section_id"]}
        assert node.meta["section_path"] == children[0].meta["section_path"]
        assert [c.meta["position"] for c in children] == sorted(c.meta["position"] for c in children)
        assert node.meta["doc_id"] == document.meta["doc_id"] and node.meta["source"] == children[0].meta["source"]
        # Extractive: every summary word comes from the section's own text, within the budget.
        source_words = set(" ".join(c.content for c in children).split())
        assert 0 < len(node.content.split()) <= 80
        assert set(node.content.split()) - {"…"} <= source_words
        assert len(node.embedding) == 384 and node.sparse_embedding is None
        covered.extend(node.meta["children_ids"])
    # "Common Sequence Operations" has 7 chunks: two segments of the same section.
    segmented = [s for s in sections if s.meta.get("segments", 1) > 1]
    assert len(segmented) == 2 and len({s.meta["section_id"] for s in segmented}) == 1

    loose = [c for c in document.meta["children_ids"] if c in by_id]
    assert sorted(covered + loose) == sorted(by_id)  # every chunk sits exactly once under the document
    assert [c for c in document.meta["children_ids"] if c not in by_id] == [s.id for s in sections]
    outline = document.meta["outline"]
    assert [e["section_id"] for e in outline] == list(dict.fromkeys(c.meta["section_id"] for c in chunks))
    assert all(e["section_path"] for e in outline[1:])
    assert document.id == tree_node_id(2, document.meta["doc_id"])

    # Deterministic: the same input gives the same ids and texts.
    again = builder.run(chunks)["documents"]
    assert [(d.id, d.content) for d in again] == [(d.id, d.content) for d in docs]


def test_segments_are_bounded_and_cut_at_the_weakest_link() -> None:
    rng = np.random.default_rng(0)
    topics = rng.normal(size=(2, 16))
    vectors = np.vstack([topics[0] + 0.1 * rng.normal(size=(5, 16)), topics[1] + 0.1 * rng.normal(size=(6, 16))])
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    runs = segment_runs(vectors, max_size=8)
    assert runs == [(0, 5), (5, 11)]  # the topic change, not the middle
    for n in (1, 8, 9, 30, 101):
        runs = segment_runs(np.tile(vectors[:1], (n, 1)), max_size=8)
        assert runs[0][0] == 0 and runs[-1][1] == n and all(a[1] == b[0] for a, b in itertools.pairwise(runs))
        assert all(end - start <= 8 for start, end in runs)
        assert n <= 8 or all(end - start >= 4 for start, end in runs)


def test_llm_failure_falls_back_to_extractive(corpus_chunks: list[Document], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SECTION_TREE_TEST_KEY", "unused")
    chunks = of_source(corpus_chunks, "execmodel.txt")
    # A real ChatGenerator whose server is unreachable: every call fails, the run does not.
    generator = OpenAIChatGenerator(
        api_key=Secret.from_env_var("SECTION_TREE_TEST_KEY"),
        api_base_url="http://127.0.0.1:9/v1",
        timeout=2.0,
        max_retries=0,
    )
    with_llm = SectionTreeBuilder(chat_generator=generator)
    out = with_llm.run(chunks)
    plain = SectionTreeBuilder().run(chunks)["documents"]
    assert out["tree"]["llm_summaries"] == 0 and out["tree"]["llm_fallbacks"] == out["tree"]["sections"] + 1
    assert [d.content for d in out["documents"]] == [d.content for d in plain]
    assert {d.meta.get("summary") for d in out["documents"] if d.meta["level"] > 0} == {"extractive"}

    restored = SectionTreeBuilder.from_dict(with_llm.to_dict())
    assert isinstance(restored.chat_generator, OpenAIChatGenerator)
    assert restored.chat_generator.api_base_url == "http://127.0.0.1:9/v1"
    with pytest.raises(ValueError, match="embedding"):
        SectionTreeBuilder().run([Document(content="x", meta={"doc_id": "d", "level": 0})])
    with pytest.raises(ValueError, match="max_section_chunks"):
        SectionTreeBuilder(max_section_chunks=1)


def test_expansion_is_bounded(indexed: EdgeDocumentStore) -> None:
    query = embed("How are names resolved in a code block, and which scope is searched first?")
    retriever = SectionTreeRetriever(document_store=indexed, max_sections=2, chunks_per_section=1, top_k=6)
    out = retriever.run(query_embedding=query)
    docs = out["documents"]
    assert 0 < len(docs) <= 6
    assert all(d.meta["level"] == 0 and d.embedding is None for d in docs)  # handed on without vectors
    assert out["structural_hits"] == []  # no structural reference
    via = [d.meta["section_tree"]["via"] for d in docs]
    parents = [d.meta["section_tree"]["parent_id"] for d in docs if d.meta["section_tree"]["via"] == "section"]
    assert len(out["tree"]["sections"]) <= 2 and len(parents) == len(set(parents)) <= 2
    assert set(via) <= {"direct", "section"}
    assert [d.score for d in docs] == sorted((d.score for d in docs), reverse=True)
    assert "Resolution of names" in docs[0].meta["section"] or "Binding" in docs[0].meta["section"]

    wide = SectionTreeRetriever(document_store=indexed, max_sections=3, chunks_per_section=2, top_k=50)
    docs = wide.run(query_embedding=query, top_k=40)["documents"]
    per_parent: dict[str, int] = {}
    for d in docs:
        if d.meta["section_tree"]["via"] == "section":
            per_parent[d.meta["section_tree"]["parent_id"]] = per_parent.get(d.meta["section_tree"]["parent_id"], 0) + 1
    assert per_parent and max(per_parent.values()) <= 2 and len(per_parent) <= 3
    # A zero weight skips the channel.
    assert retriever.run(query_embedding=query, weights={"section": 0.0, "dense": 1.0})["documents"] == []


def test_structural_filter_hit_and_fallback(indexed: EdgeDocumentStore) -> None:
    retriever = SectionTreeRetriever(document_store=indexed, top_k=8)
    query = embed("What does the section on naming and binding say?")
    out = retriever.run(query_embedding=query, structural={"kind": "section", "name": "resolution of names"})
    hits = [d for d in out["documents"] if d.meta["section_tree"]["via"] == "structural"]
    assert out["tree"]["structural"]["matched"] == 1 and not out["tree"]["structural"]["fallback"]
    assert len(hits) == 4 and out["documents"][:4] == hits  # the section's four chunks come first
    assert all(d.meta["section_path"][-1] == "Resolution of names" for d in hits)
    # The same four on their own output, with their vectors (what StructuralFirst puts first and the gate reads).
    lead = out["structural_hits"]
    assert [(d.id, d.score, d.meta) for d in lead] == [(d.id, d.score, d.meta) for d in hits]
    assert all(d.embedding is not None and len(d.embedding) == 384 for d in lead)

    missing = retriever.run(query_embedding=query, structural={"kind": "section", "ref": "9.9"})
    assert missing["structural_hits"] == []
    assert missing["tree"]["structural"] == {"matched": 0, "chunks": 0, "fallback": True}
    assert missing["documents"] and all(d.meta["section_tree"]["via"] != "structural" for d in missing["documents"])
    assert missing["documents"][0].meta["source"].endswith("execmodel.txt")

    assert heading_matches_ref("3.2 Fine-tuning BERT", "3.2") and heading_matches_ref("3.2.1 Data", "3.2")
    assert not heading_matches_ref("13.2 Other", "3.2") and not heading_matches_ref("3.21 Other", "3.2")
    assert heading_matches_ref("Appendix B Details", "B") and heading_matches_ref("§ 4", "4")
    assert heading_matches_name("3 Methods", "methodology") and heading_matches_name("Related Work", "related work")
    assert not heading_matches_name("Results", "methodology")


def test_reindexing_one_document_rebuilds_only_its_nodes(
    reference_corpus: Path, store_path: str, tmp_path: Path, model_dir: Path
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in ("execmodel.txt", "try.txt", "while.txt"):
        shutil.copy(reference_corpus / name, corpus / name)
    indexing = build_indexing_pipeline(make_store(path=store_path), progress_bar=False)
    store = store_of(indexing)
    index_paths(indexing, [corpus])
    snapshot = {
        d.id: (d.content, d.embedding) for d in store.filter_documents() if "execmodel" not in d.meta.get("source", "")
    }
    before = {d.id for d in nodes(store, 1, str(corpus / "execmodel.txt"))}
    assert before and nodes(store, 2, str(corpus / "execmodel.txt"))

    # execmodel loses most of its sections: its old summaries go, the other documents' nodes stay as they were.
    text = (corpus / "execmodel.txt").read_text(encoding="utf-8")
    (corpus / "execmodel.txt").write_text(text[: len(text) // 3], encoding="utf-8")
    assert index_paths(indexing, [corpus])["indexed"] == 1
    after = {
        d.id: (d.content, d.embedding) for d in store.filter_documents() if "execmodel" not in d.meta.get("source", "")
    }
    assert after == snapshot
    rebuilt = nodes(store, 1, str(corpus / "execmodel.txt"))
    assert rebuilt and {d.id for d in rebuilt} != before
    chunk_ids = {d.id for d in nodes(store, 0, str(corpus / "execmodel.txt"))}
    assert all(set(d.meta["children_ids"]) <= chunk_ids for d in rebuilt)  # no dangling children
    assert index_paths(indexing, [corpus])["indexed"] == 0  # hashes still read from the chunks

    # The query pipeline's dense channel sees chunks only; deleting a source removes its summaries too.
    dense = build_query_pipeline(store).get_component("dense")
    found = dense.run(query_embedding=embed("how names are bound in a program"), top_k=50)["documents"]
    assert found and all(d.meta["level"] == 0 for d in found)
    delete_sources(store, [corpus / "execmodel.txt"])
    assert not [d for d in store.filter_documents() if "execmodel" in d.meta.get("source", "")]


def test_yaml_query_pipeline_shares_the_store(indexed: EdgeDocumentStore, store_path: str) -> None:
    pipeline = load_pipeline("query", path=store_path)
    section = pipeline.get_component("section")
    assert isinstance(section, SectionTreeRetriever)
    assert isinstance(section.document_store, EdgeDocumentStore)
    docs = section.run(query_embedding=embed("the while loop else clause"), top_k=5)["documents"]
    assert docs and docs[0].meta["source"].endswith("while.txt")
