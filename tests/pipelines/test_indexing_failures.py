"""Files that cannot be indexed fail one by one, loudly, and never cost the data indexed before.

Real parts: the YAML indexing pipeline on a throw-away Qdrant Edge folder and SQLite graph, and the CLI run as a
subprocess for the unreadable file (as root, with the capabilities that bypass file permissions dropped by
``setpriv``, so that ``chmod 000`` holds as it does for any other user).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from haystack import Document

from adaptive_retrieval.components.indexing import SourceLimitGuard
from adaptive_retrieval.components.indexing.manifest import index_stats, pending_record, read_manifests, write_manifests
from adaptive_retrieval.components.manifest_records import STATE_KEPT
from adaptive_retrieval.pipelines.indexer import index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of

REPO = Path(__file__).resolve().parents[2]
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00" + bytes(range(256)) * 8


def _topic(name: str) -> str:
    from pydoc_data.topics import topics

    return topics[name]


def _headings(n: int) -> str:
    return "".join(f"# h{i}\nw{i}\n" for i in range(n))


@pytest.fixture
def indexing(store_path: str) -> Any:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    return load_pipeline("indexing", path=store_path)


def _chunks(pipeline: Any, source: Path) -> list[Document]:
    return store_of(pipeline).filter_documents(
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.source", "operator": "==", "value": str(source)},
                {"field": "meta.level", "operator": "==", "value": 0},
            ],
        }
    )


def _chunk(text: str, source: str, section: str, path: list[str]) -> Document:
    return Document(content=text, meta={"source": source, "section_id": section, "section_path": path})


def test_guard_counts_chunks_sections_and_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [_chunk("w", "/a.md", f"s{i}", ["h"]) for i in range(5)] + [_chunk("w", "/b.md", "s", ["x"] * 4)]
    out = SourceLimitGuard(max_sections=4).run(documents=docs)
    assert [r["source"] for r in out["refused"]] == ["/a.md"] and "ADAPTIVE_MAX_FILE_SECTIONS" in out["refused"][0][
        "reason"
    ]
    assert {d.meta["source"] for d in out["documents"]} == {"/b.md"}
    monkeypatch.setenv("ADAPTIVE_MAX_SECTION_DEPTH", "3")
    out = SourceLimitGuard().run(documents=docs)
    assert [r["source"] for r in out["refused"]] == ["/b.md"] and "4 headings deep" in out["refused"][0]["reason"]
    monkeypatch.setenv("ADAPTIVE_MAX_FILE_CHUNKS", "-1")
    with pytest.raises(ValueError, match="ADAPTIVE_MAX_FILE_CHUNKS"):
        SourceLimitGuard().run(documents=docs)
    with pytest.raises(ValueError, match="max_chunks"):
        SourceLimitGuard(max_chunks=0)


def test_a_file_is_refused_by_what_splitting_produced_before_embedding(
    indexing: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Few words, many headings: the word estimate lets it through, the counted chunks do not."""
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "headings.md").write_text(_headings(400), encoding="utf-8")
    (folder / "lambda.md").write_text("# Lambda\n\n" + _topic("lambda"), encoding="utf-8")
    monkeypatch.setenv("ADAPTIVE_MAX_FILE_CHUNKS", "300")
    start = time.monotonic()
    counts = index_paths(indexing, [folder])
    assert time.monotonic() - start < 60
    (failure,) = counts["failed"]
    assert failure["source"] == str(folder / "headings.md") and failure["kind"] == "refused"
    assert "produced 400 chunks" in failure["reason"] and "ADAPTIVE_MAX_FILE_CHUNKS" in failure["reason"]
    assert counts["indexed"] == 1 and _chunks(indexing, folder / "headings.md") == []
    graph = graph_store_of(indexing)
    assert index_stats(store_of(indexing), graph)["sources"][str(folder / "headings.md")]["state"] == "failed"


def test_binary_files_fail_one_by_one_and_the_rest_is_indexed(indexing: Any, tmp_path: Path) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "ls.html").write_bytes(ELF)
    (folder / "random.md").write_bytes(os.urandom(4000))
    (folder / "good.md").write_text("# With\n\n" + _topic("with"), encoding="utf-8")
    counts = index_paths(indexing, [folder])
    reasons = {Path(f["source"]).name: f["reason"] for f in counts["failed"]}
    assert set(reasons) == {"ls.html", "random.md"} and "binary file" in reasons["ls.html"]
    assert counts["indexed"] == 1 and counts["files"] == 3
    assert _chunks(indexing, folder / "ls.html") == [] and _chunks(indexing, folder / "good.md")


def test_bad_new_content_keeps_the_version_indexed_before(
    indexing: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "docs"
    folder.mkdir()
    doc = folder / "try.md"
    doc.write_text("# Try\n\n" + _topic("try"), encoding="utf-8")
    assert index_paths(indexing, [folder])["indexed"] == 1
    store, graph = store_of(indexing), graph_store_of(indexing)
    before = {d.id: d.content for d in _chunks(indexing, doc)}
    row_before = index_stats(store, graph)["sources"][str(doc)]
    monkeypatch.setenv("ADAPTIVE_MAX_FILE_SECTIONS", "50")
    for bad in (ELF, b"", _headings(200).encode()):  # binary, emptied, over a limit counted after splitting
        doc.write_bytes(bad)
        counts = index_paths(indexing, [folder])
        (failure,) = counts["failed"]
        assert failure["reason"].endswith("the version indexed before is kept"), failure
        assert {d.id: d.content for d in _chunks(indexing, doc)} == before
        row = index_stats(store, graph)["sources"][str(doc)]
        assert row["state"] == STATE_KEPT and "refused" in row["reason"]
        assert {k: row[k] for k in ("chunks", "summaries", "graph_chunks")} == {
            k: row_before[k] for k in ("chunks", "summaries", "graph_chunks")
        }
    # A crash after the pending record of the bad content: the next run still keeps the version before.
    record = read_manifests(store, [str(doc)])[str(doc)]
    write_manifests(store, [pending_record(str(doc), record["refused_hash"], record)])
    counts = index_paths(indexing, [folder])
    assert counts["failed"][0]["reason"].endswith("kept") and {d.id for d in _chunks(indexing, doc)} == set(before)
    doc.write_text("# Try\n\n" + _topic("try"), encoding="utf-8")
    counts = index_paths(indexing, [folder])
    assert counts["failed"] == [] and index_stats(store, graph)["sources"][str(doc)]["state"] == "complete"


def _unreadable_runner() -> list[str] | None:
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        return None
    caps = "-dac_override,-dac_read_search"
    return [setpriv, f"--inh-caps={caps}", f"--bounding-set={caps}"]


def test_an_unreadable_file_is_skipped_with_a_reason(tmp_path: Path) -> None:
    runner = _unreadable_runner()
    if runner is None:
        pytest.skip("running as root without setpriv: chmod 000 does not stop root from reading")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "secret.md").write_text("# Secret\n\n" + _topic("try"), encoding="utf-8")
    (folder / "open.md").write_text("# Open\n\n" + _topic("lambda"), encoding="utf-8")
    (folder / "secret.md").chmod(0)
    command = [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", "index", "--store", str(tmp_path / "q")]
    done = subprocess.run(
        [*runner, *command, str(folder)], capture_output=True, text=True, timeout=600, cwd=REPO, check=False
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"failed: {folder / 'secret.md'}: cannot read" in done.stderr and "Permission denied" in done.stderr
    assert "error: 1 file(s) not indexed (1 unreadable)" in done.stderr
    assert "2 files: 1 indexed" in done.stdout
