"""Each index has a graph of its own (issue 41 #2): two index folders side by side no longer share one graph file;
a graph an earlier version kept beside its index folder is moved in when it is that index's, refused with what to
do when several indexes could own it, and used where it is while another process holds it; a graph written by
another index is refused, never mixed into. Real parts: the CLI and the YAML pipelines over Qdrant Edge folders
and SQLite graph files."""

from __future__ import annotations

import io
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections

NOTES = {
    "curie.md": "# Curie\n\nMarie Curie worked in Paris on radium with Pierre Curie.\n",
    "einstein.md": "# Einstein\n\nAlbert Einstein taught in Berlin and wrote on relativity.\n",
}


def _release() -> None:
    release_all_clients()
    release_all_connections()


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from adaptive_retrieval.pipelines.cli.main import main

    out = io.StringIO()
    code = main(argv, out=out)
    _release()
    captured = capsys.readouterr()
    return code, out.getvalue() + captured.out + captured.err


@pytest.fixture
def notes(tmp_path: Path) -> dict[str, Path]:
    folder = tmp_path / "notes"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return {name: folder / name for name in NOTES}


def _graph_chunks(path: Path) -> int:
    try:
        return SQLiteGraphStore(path=str(path), create=False).chunk_count()
    finally:
        release_all_connections()


def test_two_indexes_side_by_side_keep_their_own_graphs(
    tmp_path: Path, notes: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``index A --store /x/a`` then ``index B --store /x/b`` shared ``/x/graph.sqlite``: B's run dropped A's graph
    records as orphans, and ``stats --store /x/a`` said ``partial`` with an orphaned graph chunk."""
    a, b = tmp_path / "x" / "a", tmp_path / "x" / "b"
    assert _cli(["index", "--store", str(a), str(notes["curie.md"])], capsys)[0] == 0
    assert _cli(["index", "--store", str(b), str(notes["einstein.md"])], capsys)[0] == 0
    code, text = _cli(["stats", "--store", str(a)], capsys)
    assert code == 0 and "partial" not in text and "0 orphaned graph chunks" in text, text
    assert not (tmp_path / "x" / "graph.sqlite").exists()
    assert _graph_chunks(a / "graph.sqlite") == 1 and _graph_chunks(b / "graph.sqlite") == 1


def _legacy_layout(root: Path, notes: list[Path], *, folders: tuple[str, ...] = ("a",)) -> Path:
    """Index folders under ``root`` sharing ``root/graph.sqlite``, as earlier versions laid them out (the graph
    beside the folders, and no record of the index it belongs to)."""
    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    legacy = root / "graph.sqlite"
    for name, note in zip(folders, notes, strict=False):
        pipeline = load_pipeline("indexing", path=str(root / name), graph_path=str(legacy))
        for _, instance in pipeline.walk():
            if hasattr(instance, "progress_bar"):
                instance.progress_bar = False
        index_paths(pipeline, [note])
        _release()
        _forget_owner(legacy)  # written before graphs recorded their index
    return legacy


def _forget_owner(graph: Path) -> None:
    conn = sqlite3.connect(graph)
    with conn:
        conn.execute("DELETE FROM meta WHERE key IN ('owner_id', 'owner_where')")
    conn.close()


def test_a_graph_beside_one_index_is_moved_into_it(
    tmp_path: Path, notes: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """An index (or an evaluation cache) laid out by an earlier version keeps working: its graph moves in."""
    from adaptive_retrieval.pipelines.query_pipeline import run_query
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    root = tmp_path / "idx"
    legacy = _legacy_layout(root, [notes["curie.md"]])
    code, text = _cli(["stats", "--store", str(root / "a")], capsys)
    assert code == 0 and "1 complete" in text, text
    assert not legacy.exists() and (root / "a" / "graph.sqlite").is_file()
    assert not Path(f"{legacy}-wal").exists() and not Path(f"{legacy}-shm").exists()
    result = run_query(load_pipeline("query", path=str(root / "a")), "Who worked on radium in Paris?")
    _release()
    assert Path(result.documents[0].meta["source"]).name == "curie.md"
    assert "graph_local" not in result.failed


def test_a_graph_beside_several_indexes_is_refused_with_what_to_do(
    tmp_path: Path, notes: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """Several index folders beside one old graph: whose records it holds cannot be told. Nothing is moved or
    mixed; every command says so and what to do."""
    root = tmp_path / "x"
    legacy = _legacy_layout(root, [notes["curie.md"], notes["einstein.md"]], folders=("a", "b"))
    for argv in (["stats", "--store", str(root / "a")], ["index", "--store", str(root / "b"), str(notes["curie.md"])]):
        code, text = _cli(argv, capsys)
        assert code == 1 and "Traceback" not in text, text
        assert "holds several" in text and f"mv {legacy} {root / 'a' / 'graph.sqlite'}" in text, text
    assert (
        legacy.is_file() and not (root / "a" / "graph.sqlite").exists() and not (root / "b" / "graph.sqlite").exists()
    )
    # The user's move settles it: a gets the old graph, b starts one of its own; indexing again redoes the sources
    # whose graph records the mixed file lost (here b's earlier run dropped a's as orphans).
    legacy.rename(root / "a" / "graph.sqlite")
    assert _cli(["index", "--store", str(root / "a"), str(notes["curie.md"])], capsys)[0] == 0
    assert _cli(["stats", "--store", str(root / "a")], capsys)[0] == 0
    assert _cli(["index", "--store", str(root / "b"), str(notes["einstein.md"])], capsys)[0] == 0
    assert _cli(["stats", "--store", str(root / "b")], capsys)[0] == 0


def test_a_graph_open_in_another_process_is_used_where_it_is(tmp_path: Path, notes: dict[str, Path]) -> None:
    """Moving a SQLite file another process has open would split it from its write-ahead log: not moved then."""
    root = tmp_path / "idx"
    legacy = _legacy_layout(root, [notes["curie.md"]])
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sqlite3, sys, time; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT 1 FROM meta').fetchall();"
            " print('open', flush=True); time.sleep(60)",
            str(legacy),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        store = SQLiteGraphStore(path=str(root / "a" / "graph.sqlite"), create=False)
        assert store.chunk_count() == 1
        _release()
        assert legacy.is_file() and not (root / "a" / "graph.sqlite").exists()
    finally:
        holder.kill()
        holder.wait()
    assert SQLiteGraphStore(path=str(root / "a" / "graph.sqlite"), create=False).chunk_count() == 1
    _release()
    assert not legacy.exists()


def test_a_graph_another_index_wrote_is_refused(tmp_path: Path, notes: dict[str, Path]) -> None:
    """One graph file named for two indexes (``graph_path``, ``$ADAPTIVE_GRAPH_PATH``): the second is refused before
    it writes anything, and the first keeps its graph whole."""
    from adaptive_retrieval.components.indexing.manifest import index_stats
    from adaptive_retrieval.components.stores.graph.graph_store import GraphOwnedError
    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    shared = tmp_path / "shared" / "graph.sqlite"
    pipelines: dict[str, Any] = {}
    for name in ("a", "b"):
        pipelines[name] = load_pipeline("indexing", path=str(tmp_path / name), graph_path=str(shared))
    assert index_paths(pipelines["a"], [notes["curie.md"]])["indexed"] == 1
    with pytest.raises(GraphOwnedError, match=f"another index \\({tmp_path / 'a'}\\)"):
        index_paths(pipelines["b"], [notes["einstein.md"]])
    stats = index_stats(store_of(pipelines["a"]), graph_store_of(pipelines["a"]))
    _release()
    assert stats["totals"]["states"] == {"complete": 1} and stats["totals"]["orphan_graph_chunks"] == 0
    assert _graph_chunks(shared) == 1
