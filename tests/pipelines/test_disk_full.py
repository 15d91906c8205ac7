"""A disk that fills while files are indexed (issue 41 #8): what the refusal says ("Nothing was written") is true.
The batch the disk refused is taken back (no source left ``indexing`` for a later, unrelated run to redo), an
upload's files that were not indexed leave ``uploads/`` (a replaced one comes back), and no ``.partial`` file is
left. Real parts: a small tmpfs (root only: it is mounted, as ``scripts/lab/fault_test.py --disk-full`` does), the YAML
indexing pipeline, and the served app over HTTP."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adaptive_retrieval.components.indexing.manifest import index_stats, read_manifests
from adaptive_retrieval.components.stores.disk_space import InsufficientSpaceError, free_bytes
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import release_all_connections

MB = 1024 * 1024
MARGIN_MB = 8
#: Free space left above the margin: a manifest record's write (~11 KB estimated) passes, a file's chunks do not.
ROOM = 48 * 1024


def _note(word: str, paragraphs: int = 30) -> str:
    body = "\n\n".join(
        f"Paragraph {i}: the {word} colony counts {i} nests on the eastern cliffs." for i in range(paragraphs)
    )
    return f"# {word.title()}\n\n{body}\n"


@pytest.fixture
def disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96m", "tmpfs", str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"mount failed: {mounted.stderr.decode().strip()}")
    monkeypatch.setenv("ADAPTIVE_MIN_FREE_MB", str(MARGIN_MB))
    # No background gate calibration after the uploads here: its thread would still read the graph while the
    # teardown below closes every SQLite connection (a segfault seen in CI); calibration has its own tests.
    monkeypatch.setenv("ADAPTIVE_GATE_CALIBRATION_QUERIES", "0")
    try:
        yield folder
    finally:
        release_all_clients()
        release_all_connections()
        subprocess.run(["umount", str(folder)], check=False)


def _fill(folder: Path, leave: int) -> Path:
    """A file taking the disk's free space but ``leave`` bytes."""
    filler = folder / "filler"
    filler.unlink(missing_ok=True)
    with filler.open("wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, free_bytes(folder) - leave)
    return filler


def _pipeline(store: Path) -> Any:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    pipeline = load_pipeline("indexing", path=str(store))
    for _, instance in pipeline.walk():
        if hasattr(instance, "progress_bar"):
            instance.progress_bar = False
    return pipeline


def test_a_batch_the_disk_refuses_is_taken_back(disk: Path, tmp_path: Path) -> None:
    """The run stops with the free-space error; the refused batch leaves no record ``indexing`` (the next run of
    other files redid it) and the version indexed before of a changed file is still whole."""
    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of

    docs = tmp_path / "docs"
    docs.mkdir()
    old, new = docs / "old.md", docs / "new.md"
    old.write_text(_note("puffin"), encoding="utf-8")
    pipeline = _pipeline(disk / "qdrant")
    assert index_paths(pipeline, [old])["indexed"] == 1
    before = read_manifests(store_of(pipeline))[str(old)]
    old.write_text(_note("gannet"), encoding="utf-8")
    new.write_text(_note("tern"), encoding="utf-8")
    filler = _fill(disk, MARGIN_MB * MB + ROOM)
    with pytest.raises(Exception) as caught:
        index_paths(pipeline, [old, new])
    assert isinstance(caught.value, InsufficientSpaceError) or isinstance(
        caught.value.__cause__, InsufficientSpaceError
    ), caught.value
    records = read_manifests(store_of(pipeline))
    assert set(records) == {str(old)} and records[str(old)]["source_hash"] == before["source_hash"], records
    stats = index_stats(store_of(pipeline), graph_store_of(pipeline))
    assert stats["totals"]["states"] == {"complete": 1} and stats["totals"]["orphan_graph_chunks"] == 0, stats
    filler.unlink()
    other = docs / "other.md"
    other.write_text(_note("skua"), encoding="utf-8")
    counts = index_paths(pipeline, [other])
    assert counts["indexed"] == 1 and counts["redone"] == 0, counts  # the refused files are not redone behind


def _sections(word: str) -> str:
    """A short file of many sections: its chunks and section summaries take far more room than its bytes, so the
    check before a batch lets it through and the store refuses its nodes after the graph took its records."""
    return "".join(f"## {word.title()} {i}\n\nThe {word} {i} nests.\n\n" for i in range(40))


def test_a_changed_file_refused_after_its_graph_records_keeps_the_version_before(
    disk: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of

    note = tmp_path / "note.md"
    note.write_text(_sections("puffin"), encoding="utf-8")
    pipeline = _pipeline(disk / "qdrant")
    assert index_paths(pipeline, [note])["indexed"] == 1
    store, graph = store_of(pipeline), graph_store_of(pipeline)
    before = read_manifests(store)[str(note)]
    note.write_text(_sections("gannet"), encoding="utf-8")
    filler = _fill(disk, MARGIN_MB * MB + 256 * 1024)
    with pytest.raises(Exception, match="free disk space"):
        index_paths(pipeline, [note])
    filler.unlink()
    assert "written again from its chunks" in caplog.text  # the batch had replaced them before the refusal
    assert read_manifests(store)[str(note)]["source_hash"] == before["source_hash"]
    stats = index_stats(store, graph)
    assert stats["sources"][str(note)]["state"] == "complete", stats["sources"]
    chunks = store.filter_documents({"field": "meta.level", "operator": "==", "value": 0})
    texts = graph.chunk_texts([c.id for c in chunks])
    assert len(texts) == len(chunks) and all(texts[c.id][1] == c.content for c in chunks)
    assert all("puffin" in c.content and "gannet" not in c.content for c in chunks)


def test_an_upload_the_disk_refuses_writes_nothing(disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hayhooks.server.pipelines.registry import registry

    from adaptive_retrieval.pipelines.serving.app import create_app, running_server

    store, uploads = disk / "qdrant", disk / "uploads"
    registry.clear()
    monkeypatch.setenv("ADAPTIVE_QDRANT_PATH", str(store))
    for name in ("QDRANT_URL", "ADAPTIVE_UPLOAD_DIR", "ADAPTIVE_API_TOKEN", "ADAPTIVE_CORS_ORIGINS"):
        monkeypatch.delenv(name, raising=False)
    try:
        with running_server(create_app()) as url, httpx.Client(base_url=url, timeout=300) as client:
            first = client.post("/indexing/run", files=[("files", ("kept.md", _note("puffin")))])
            assert first.status_code == 200, first.text
            filler = _fill(disk, MARGIN_MB * MB + ROOM)
            refused = client.post(
                "/indexing/run",
                files=[("files", ("kept.md", _note("gannet"))), ("files", ("fresh.md", _note("tern")))],
            )
            assert refused.status_code == 507 and "Nothing was written" in refused.text, refused.text
            assert sorted(p.name for p in uploads.iterdir()) == ["kept.md"]  # no fresh.md, no .partial/.previous
            assert "puffin" in (uploads / "kept.md").read_text(encoding="utf-8")
            filler.unlink()
            later = client.post("/indexing/run", files=[("files", ("later.md", _note("skua")))])
            assert later.status_code == 200, later.text
            assert later.json()["result"]["redone"] == 0 and later.json()["result"]["indexed"] == 1
            answer = client.post("/query/run", json={"query": "tern colony nests", "top_k": 10})
            sources = {Path(d["source"]).name for d in answer.json()["result"]["documents"]}
            assert "fresh.md" not in sources and "kept.md" in sources
    finally:
        registry.clear()
