"""Per-file indexing progress: ``index_paths`` reports ``progress(done, total)`` as files finish (their manifest
record is ``complete``), and a large file runs in a batch of its own so the count moves file by file; small files
still share a pipeline run. Real parts: the YAML indexing pipeline over a local Qdrant folder."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from adaptive_retrieval.components.indexing.manifest import read_manifests
from adaptive_retrieval.components.manifest_records import STATE_COMPLETE
from adaptive_retrieval.pipelines.index_files import BATCH_BYTES, file_batches
from adaptive_retrieval.pipelines.indexer import index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import store_of

TOPICS = ("lambda", "try", "with")


def _sized(folder: Path, sizes: list[int]) -> list[Path]:
    folder.mkdir(exist_ok=True)
    paths = []
    for i, size in enumerate(sizes):
        path = folder / f"f{i}.txt"
        path.write_bytes(b"x" * size)
        paths.append(path)
    return paths


def test_file_batches_close_by_count_and_by_bytes(tmp_path: Path) -> None:
    small, large = BATCH_BYTES // 4, BATCH_BYTES + 1
    files = _sized(tmp_path, [small, small, large, small, small, small, small, small, large, large])
    names = [[p.stem for p in batch] for batch in file_batches(files, batch_files=2)]
    assert names == [["f0", "f1"], ["f2"], ["f3", "f4"], ["f5", "f6"], ["f7"], ["f8"], ["f9"]]
    names = [[p.stem for p in batch] for batch in file_batches(files, batch_files=16)]
    # Small files fill a batch up to the byte budget; a file over it runs alone.
    assert names == [["f0", "f1"], ["f2"], ["f3", "f4", "f5", "f6"], ["f7"], ["f8"], ["f9"]]
    assert [len(b) for b in file_batches(files, batch_files=16, batch_bytes=1)] == [1] * len(files)
    with pytest.raises(ValueError, match="at least 1"):
        file_batches(files, batch_files=0)


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    from pydoc_data.topics import topics

    folder = tmp_path / "docs"
    folder.mkdir()
    for name in TOPICS:
        (folder / f"{name}.txt").write_text(topics[name], encoding="utf-8")
    return folder


@pytest.fixture
def indexing(store_path: str) -> Any:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    pipeline = load_pipeline("indexing", path=store_path)
    for _, instance in pipeline.walk():
        if hasattr(instance, "progress_bar"):
            instance.progress_bar = False
    return pipeline


def test_progress_is_reported_as_each_file_finishes(docs: Path, indexing: Any) -> None:
    files = sorted(str(p) for p in docs.iterdir())
    calls: list[tuple[int, int]] = []
    complete_at_call: list[list[str]] = []

    def progress(done: int, total: int) -> None:
        calls.append((done, total))
        records = read_manifests(store_of(indexing), files)
        complete_at_call.append(sorted(s for s, r in records.items() if r.get("state") == STATE_COMPLETE))

    # batch_bytes=1: every file is "large", so each runs alone and is reported when it is done.
    counts = index_paths(indexing, [docs], batch_files=16, batch_bytes=1, progress=progress)
    assert counts["indexed"] == 3
    assert calls == [(1, 3), (2, 3), (3, 3)]
    assert complete_at_call == [files[:1], files[:2], files[:3]]  # reported exactly when its record is complete

    # Small files share a run (the default budget): one report for the three of them.
    calls.clear()
    complete_at_call.clear()
    index_paths(indexing, [docs], force=True, batch_files=16, progress=progress)
    assert calls == [(3, 3)]
