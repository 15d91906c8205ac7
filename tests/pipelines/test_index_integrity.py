"""Crash-safe indexing: manifest records, reconciliation, stats, SIGKILLed indexers, limits and the upload queue.

Real parts throughout: a local Qdrant folder, the SQLite graph, the YAML indexing pipeline, and the CLI run as a
subprocess that the fault hook (``$ADAPTIVE_FAULT_AT``) kills with SIGKILL.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from adaptive_retrieval.components.ids import chunk_id
from adaptive_retrieval.components.indexing.manifest import (
    index_stats,
    manifest_document,
    read_manifests,
    reconcile,
    write_manifests,
)
from adaptive_retrieval.components.manifest_records import MANIFEST_LEVEL, STATE_COMPLETE, STATE_INDEXING
from adaptive_retrieval.components.stores.graph.graph_store import ChunkEntities
from adaptive_retrieval.pipelines.indexer import delete_sources, index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of
from adaptive_retrieval.pipelines.limits import Limits
from adaptive_retrieval.pipelines.serving.upload_queue import QueueFullError, TimeBudgetError, UploadQueue

REPO = Path(__file__).resolve().parents[2]
TOPICS = {"try.md": "try", "with.txt": "with", "lambda.md": "lambda"}


def _topic(name: str) -> str:
    from pydoc_data.topics import topics

    return topics[name]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    folder = tmp_path / "docs"
    folder.mkdir()
    for name, topic in TOPICS.items():
        (folder / name).write_text(f"# {topic}\n\n" + _topic(topic), encoding="utf-8")
    return folder


@pytest.fixture
def indexing(store_path: str) -> Any:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    return load_pipeline("indexing", path=store_path)


#: What a re-index must restore exactly. Entity counts are left out: the extractor weighs phrases by how many
#: documents of the same batch hold them, so they depend on which files were indexed together.
COMPARED = ("chunks", "summaries", "graph_chunks", "state", "source_hash")


def _rows(pipeline: Any) -> dict[str, dict[str, Any]]:
    rows = index_stats(store_of(pipeline), graph_store_of(pipeline))["sources"]
    return {source: {k: row.get(k) for k in COMPARED} for source, row in rows.items()}


def test_manifest_is_complete_and_matches_the_stores(indexing: Any, corpus: Path) -> None:
    counts = index_paths(indexing, [corpus])
    assert counts["indexed"] == 3 and counts["failed"] == []
    store = store_of(indexing)
    records = read_manifests(store)
    rows = index_stats(store, graph_store_of(indexing))["sources"]
    assert set(records) == set(rows) == {str(p) for p in corpus.iterdir()}
    for source, record in records.items():
        assert record["state"] == STATE_COMPLETE and rows[source]["state"] == "complete"
        assert rows[source]["chunks"] == record["chunks"] > 0
        assert rows[source]["summaries"] == record["summaries"]
        assert rows[source]["graph_chunks"] == record["graph_chunks"] == record["chunks"]
        assert rows[source]["entities"] > 0 and len(record["source_hash"]) == 64
    # The skip check reads the records: nothing to do.
    assert index_paths(indexing, [corpus])["indexed"] == 0


def test_manifest_records_never_surface_in_queries(indexing: Any, corpus: Path, store_path: str) -> None:
    from adaptive_retrieval.pipelines.query_pipeline import run_query
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    index_paths(indexing, [corpus])
    query = load_pipeline("query", path=store_path)
    for text in ("lambda expression", "try except finally", "with statement context manager", "section about try"):
        result = run_query(query, text)
        assert result.documents
        assert all(d.meta.get("level", 0) >= 0 and d.meta.get("kind") != "manifest" for d in result.documents)


def test_unfinished_and_damaged_sources_are_redone(indexing: Any, corpus: Path) -> None:
    index_paths(indexing, [corpus])
    store, graph = store_of(indexing), graph_store_of(indexing)
    reference = _rows(indexing)
    try_md, with_txt = str(corpus / "try.md"), str(corpus / "with.txt")
    record = read_manifests(store, [try_md])[try_md]
    # A crash mid-write: the record says "indexing" and a chunk is gone.
    write_manifests(store, [manifest_document(try_md, record["source_hash"], STATE_INDEXING)])
    store.delete_documents([chunk_id(record["source_doc_id"], 1)])
    # A record that outlived its last chunk (partial external delete).
    other = read_manifests(store, [with_txt])[with_txt]
    store.delete_documents([chunk_id(other["source_doc_id"], other["chunks"] - 1)])
    assert _rows(indexing)[try_md]["state"] == "partial"
    assert _rows(indexing)[with_txt]["state"] == "partial"
    # Re-indexing only lambda.md still redoes the unfinished try.md; with.txt is redone when it is named.
    counts = index_paths(indexing, [corpus / "lambda.md"])
    assert counts["redone"] == 1 and counts["indexed"] == 1
    counts = index_paths(indexing, [corpus])
    assert counts["indexed"] == 1
    assert _rows(indexing) == reference
    assert graph is not None


def test_reconcile_removes_orphaned_graph_records_and_finishes_deletes(indexing: Any, corpus: Path) -> None:
    index_paths(indexing, [corpus])
    store, graph = store_of(indexing), graph_store_of(indexing)
    reference = _rows(indexing)
    # Graph written, vectors not (a crash between the two writes of a source that has no record any more).
    graph.replace_chunks([ChunkEntities(chunk_id="ghost-0", doc_id="ghost", title="Ghost", text="boo")])
    assert index_stats(store, graph)["totals"]["orphan_graph_chunks"] == 1
    # A delete that crashed after marking its record.
    lam = str(corpus / "lambda.md")
    write_manifests(store, [manifest_document(lam, "", "deleting")])
    state = reconcile(store, graph)
    assert state.orphan_graph_documents == ["ghost"] and state.deletions_finished == [lam]
    after = _rows(indexing)
    assert lam not in after and after == {k: v for k, v in reference.items() if k != lam}
    assert index_stats(store, graph)["totals"]["orphan_graph_chunks"] == 0
    # A plain delete removes nodes, graph records and the record.
    delete_sources(store, [corpus / "try.md"], graph)
    assert str(corpus / "try.md") not in _rows(indexing)
    with pytest.raises(TypeError, match="list of sources"):
        delete_sources(store, str(corpus / "try.md"), graph)


def test_file_without_text_is_reported_failed(indexing: Any, tmp_path: Path) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "empty.md").write_text("", encoding="utf-8")
    (folder / "latin1.txt").write_bytes("caf\xe9 cr\xe8me".encode("latin-1"))
    (folder / "broken.pdf").write_bytes(b"%PDF-1.4\nthis is not a real pdf\n%%EOF")
    (folder / "good.md").write_text("# Good\n\n" + _topic("with"), encoding="utf-8")
    counts = index_paths(indexing, [folder])
    reasons = {Path(f["source"]).name: f["reason"] for f in counts["failed"]}
    assert set(reasons) == {"empty.md", "latin1.txt", "broken.pdf"}
    assert "empty" in reasons["empty.md"] and "UTF-8" in reasons["latin1.txt"] and "PDF" in reasons["broken.pdf"]
    assert counts["indexed"] == 1
    rows = _rows(indexing)
    assert rows[str(folder / "empty.md")]["state"] == "failed" and rows[str(folder / "good.md")]["state"] == "complete"


def test_index_paths_refuses_a_single_string(indexing: Any, corpus: Path) -> None:
    with pytest.raises(TypeError, match="must be a list"):
        index_paths(indexing, str(corpus / "try.md"))


def test_files_over_a_limit_are_refused_before_any_work(indexing: Any, corpus: Path) -> None:
    counts = index_paths(indexing, [corpus], limits=Limits(file_chars=500))
    assert counts["indexed"] == 0 and len(counts["failed"]) == 3
    assert all("ADAPTIVE_MAX_FILE_CHARS" in f["reason"] for f in counts["failed"])
    assert store_of(indexing).filter_documents({"field": "meta.level", "operator": ">=", "value": 0}) == []
    counts = index_paths(indexing, [corpus], limits=Limits(file_chunks=2))
    reasons = {Path(f["source"]).name: f["reason"] for f in counts["failed"]}
    assert "try.md" in reasons and "lambda.md" not in reasons and "ADAPTIVE_MAX_FILE_CHUNKS" in reasons["try.md"]
    assert counts["indexed"] == 3 - len(reasons)


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", *args],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_sigkilled_indexer_loses_nothing_after_reindex(tmp_path: Path, corpus: Path) -> None:
    """The short version of scripts/lab/fault_test.py: the CLI indexer SIGKILLed at three named moments, then a
    re-index (in this process) must give the same per-source counts as a clean run."""
    from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    clean = load_pipeline("indexing", path=str(tmp_path / "reference"))
    index_paths(clean, [corpus], batch_files=2)
    expected = {Path(k).name: v for k, v in _rows(clean).items()}
    release_all_clients()
    for point in ("writer.before_upsert:2", "graph.after_write:1", "index.before_complete:1"):
        store = tmp_path / point.replace(":", "_")
        env = {"ADAPTIVE_FAULT_AT": point}
        killed = _cli("index", "--store", str(store), str(corpus), "--batch-files", "2", env=env)
        assert killed.returncode == -9, (point, killed.returncode, killed.stderr[-500:])
        pipeline = load_pipeline("indexing", path=str(store))
        assert any(row["state"] != "complete" for row in _rows(pipeline).values()), point
        index_paths(pipeline, [corpus], batch_files=2)
        assert {Path(k).name: v for k, v in _rows(pipeline).items()} == expected, point
        release_all_clients()


def test_stats_cli_prints_a_table_and_totals(tmp_path: Path, corpus: Path) -> None:
    store = tmp_path / "qdrant"
    assert _cli("index", "--store", str(store), str(corpus)).returncode == 0
    done = _cli("stats", "--store", str(store))
    assert done.returncode == 0, done.stderr
    assert "complete" in done.stdout and "total: 3 sources (3 complete)" in done.stdout
    missing = _cli("stats", "--store", str(tmp_path / "nothing"))
    assert missing.returncode == 1 and "No index at" in missing.stderr


def test_upload_queue_bounds_admission_and_time() -> None:
    queue = UploadQueue(capacity=2, concurrency=1, budget_s=0.5)
    started, release = threading.Event(), threading.Event()

    def hold() -> None:
        with queue.admit():
            started.set()
            release.wait(5)

    holder = threading.Thread(target=hold)
    holder.start()
    started.wait(5)
    waiter_error: list[Exception] = []

    def wait() -> None:
        try:
            with queue.admit():
                pass
        except TimeBudgetError as err:
            waiter_error.append(err)

    waiter = threading.Thread(target=wait)
    waiter.start()
    time.sleep(0.1)
    with pytest.raises(QueueFullError) as full, queue.admit():
        pass
    assert full.value.retry_after >= 1 and "ADAPTIVE_UPLOAD_QUEUE" in str(full.value)
    waiter.join(5)
    assert waiter_error and waiter_error[0].retry_after >= 1
    release.set()
    holder.join(5)
    with queue.admit() as ticket:
        ticket.check([Path("a")])
        ticket.deadline = time.monotonic() - 1
        with pytest.raises(TimeBudgetError, match="ADAPTIVE_UPLOAD_TIMEOUT_S"):
            ticket.check([Path("b")])


def test_manifest_level_is_below_every_searched_level() -> None:
    from adaptive_retrieval.components.retrieval.channels import CHUNKS_ONLY

    assert MANIFEST_LEVEL < 0 and CHUNKS_ONLY["value"] == 0
