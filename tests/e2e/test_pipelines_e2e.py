"""End to end: index a small real corpus through yaml/indexing.yaml and query it through yaml/query.yaml."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from haystack import Document

from adaptive_retrieval.pipelines.diagrams.mermaid import pipeline_to_mermaid
from adaptive_retrieval.pipelines.indexer import delete_sources, index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import store_of
from adaptive_retrieval.pipelines.query_pipeline import run_query
from adaptive_retrieval.pipelines.yaml_io import (
    YAML_DIR,
    PipelineLoadError,
    dumps_pipeline,
    load_pipeline,
    loads_pipeline,
)

pytestmark = pytest.mark.slow


@pytest.fixture
def corpus(reference_corpus: Path, tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    shutil.copytree(reference_corpus, folder)
    return folder


def chunk_ids(store, source: Path) -> set[str]:
    """Ids of the source's chunks and summary nodes (not its manifest record, level -1)."""
    return {
        d.id
        for d in store.filter_documents({"field": "meta.source", "operator": "==", "value": str(source)})
        if d.meta.get("level", 0) >= 0
    }


@pytest.mark.parametrize("name", ["indexing", "query"])
def test_yaml_round_trip_is_stable(name: str) -> None:
    text = (YAML_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    assert dumps_pipeline(loads_pipeline(text)) == text


def test_index_query_reindex_delete(corpus: Path, store_path: str, model_dir: Path) -> None:
    indexing = load_pipeline("indexing", path=store_path)
    store = store_of(indexing)
    first = index_paths(indexing, [corpus])
    assert first["indexed"] == first["files"] > 10 and first["chunks_written"] > 0
    total = store.count_documents()

    # A second run skips unchanged files; a forced run overwrites in place, never duplicates.
    assert index_paths(indexing, [corpus])["indexed"] == 0
    index_paths(indexing, [corpus], force=True)
    assert store.count_documents() == total

    # Query through the YAML pipeline, loaded twice in one process (one shared Edge shard).
    load_pipeline("query", path=store_path)
    query = load_pipeline("query", path=store_path)
    result = run_query(query, "What happens when a while loop condition becomes false?")
    # while.txt is the first hit of dense, sparse and section; the shipped factual profile's graph_local weight
    # (which credits what the hits point to, not the hits) lifts break.txt and continue.txt past it by < 0.01 of
    # fused score on this 16-topic corpus (a known ranking weakness, kept open in the issue tracker). What this
    # test guards is the index/query/reindex/delete cycle: the answer is among the first three.
    names = [Path(d.meta["source"]).name for d in result.documents[:3]]
    assert "while.txt" in names, names
    top = result.documents[0]
    assert top.meta["channels"] and top.embedding is not None
    assert result.intent in result.routing["probabilities"]
    assert sum(result.weights.values()) == pytest.approx(1.0)
    assert result.timings_ms["total"] > 0 and "router" in result.timings_ms

    # Changing one source replaces its chunks and leaves the others untouched.
    try_file, while_file = corpus / "try.txt", corpus / "while.txt"
    assert len(chunk_ids(store, try_file)) > 3
    others = chunk_ids(store, while_file)
    try_file.write_text("The try statement\n*****************\n\nA much shorter text about try.\n")
    changed = index_paths(indexing, [corpus])
    assert changed["indexed"] == 1 and changed["chunks_deleted"] >= 3
    assert len(chunk_ids(store, try_file)) == 1 and chunk_ids(store, while_file) == others

    # A removed source can be deleted.
    removed = delete_sources(store, [while_file])
    assert removed == len(others) and not chunk_ids(store, while_file)


def test_bad_input_leaves_the_index_intact(corpus: Path, store_path: str, model_dir: Path) -> None:
    indexing = load_pipeline("indexing", path=store_path)
    index_paths(indexing, [corpus / "for.txt", corpus / "break.txt"])
    store = store_of(indexing)
    count = store.count_documents()
    query = load_pipeline("query", path=store_path)

    with pytest.raises(ValueError, match="empty"):
        run_query(query, "   ")
    with pytest.raises(Exception, match="empty"):
        query.run({"loop": {"query": ""}})
    # A pasted book is refused up front (bounded work), not truncated silently or left to time out.
    with pytest.raises(Exception, match="characters"):
        run_query(query, "while loop " * 5000)

    # An index built with 384-d vectors refuses a 768-d configuration instead of corrupting the collection.
    misconfigured = load_pipeline("query", path=store_path, embedding_dim=768)
    with pytest.raises(Exception, match="stores 384-d vectors"):
        run_query(misconfigured, "while loop")
    with pytest.raises(ValueError, match="dimension"):
        query.get_component("dense").run(query_embedding=[0.1] * 768)
    with pytest.raises(ValueError, match="dimension"):
        store.write_documents([Document(id="bad", content="x", embedding=[0.1] * 10)])

    # Malformed YAML and unknown intents are clear errors.
    with pytest.raises(PipelineLoadError, match="Malformed"):
        loads_pipeline("components: [unclosed")
    with pytest.raises(PipelineLoadError, match="components"):
        loads_pipeline("- just a list")
    text = (YAML_DIR / "query.yaml").read_text(encoding="utf-8").replace("      factual:\n", "      sarcasm:\n", 1)
    with pytest.raises(PipelineLoadError, match="sarcasm"):
        loads_pipeline(text)
    with pytest.raises(FileNotFoundError):
        index_paths(indexing, [corpus / "missing-folder"])

    assert store.count_documents() == count


def test_mermaid_names_every_component() -> None:
    # Every connection with its type: the query pipeline hands its documents on shared (Iterable[Document]).
    for name, documents in (("indexing", "(list[Document])"), ("query", "(Iterable[Document])")):
        pipeline = loads_pipeline((YAML_DIR / f"{name}.yaml").read_text(encoding="utf-8"))
        text = pipeline_to_mermaid(pipeline, detail="haystack")
        assert text.startswith("flowchart TD") and documents in text
        for component_name in pipeline.graph.nodes:
            assert component_name in text and component_name in pipeline_to_mermaid(pipeline)
