"""A damaged index fails loudly: ``stats``, ``stats --verify`` and ``query`` exit 1 with a line that says what is
wrong and what to run, never a traceback nor an answer; the repair the message names brings it back.

Real parts: an index built by the YAML indexing pipeline (Qdrant Edge folder and SQLite graph), damaged on disk
the ways ``scripts/lab/fault_test.py --damage`` does (the same functions), and the CLI's ``main``.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path
from typing import Any

import pytest
from script_modules import load_script

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import release_all_connections

fault_test = load_script("fault_test")
QUESTION = "what does a lambda expression yield?"
#: What each damage's error (stats, query) or problem line (stats --verify) says.
EXPECTED = {
    "segments folder deleted": ("lost its 'segments' folder", "lost its 'segments' folder"),
    "3 chunks deleted behind the manifests": ("partial", "missing"),
    "vector bytes flipped": (None, "where 1 is stored"),
    "payload page damaged": ("looks damaged", "looks damaged"),
    "zero-byte graph.sqlite": ("is empty (no tables)", "is empty (no tables)"),
    "garbage graph.sqlite": ("cannot be read", "cannot be read"),
    "graph table dropped": ("lacks the table(s) mentions", "lacks the table(s) mentions"),
}


def _release() -> None:
    release_all_clients()
    release_all_connections()


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pydoc_data.topics import topics

    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    base = tmp_path_factory.mktemp("damage")
    docs = base / "docs"
    docs.mkdir()
    for name in ("lambda", "try", "with"):
        (docs / f"{name}.md").write_text(f"# {name}\n\n" + topics[name], encoding="utf-8")
    counts = index_paths(load_pipeline("indexing", path=str(base / "index" / "qdrant")), [docs])
    assert counts["indexed"] == 3
    _release()
    return base


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from adaptive_retrieval.pipelines.cli.main import main

    out = io.StringIO()
    code = main(argv, out=out)
    _release()
    captured = capsys.readouterr()
    return code, out.getvalue() + captured.out + captured.err


@pytest.fixture
def damaged(built: Path, tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    index = tmp_path / "index"
    shutil.copytree(built / "index", index)
    fault_test.DAMAGES[request.param][0](index)
    _release()
    return index


@pytest.mark.parametrize("damaged", list(EXPECTED), indirect=True)
def test_a_damaged_index_fails_loudly(damaged: Path, capsys: pytest.CaptureFixture[str], request: Any) -> None:
    name = request.node.callspec.params["damaged"]
    in_stats, in_verify = EXPECTED[name]
    store = str(damaged / "qdrant")
    code, text = _cli(["stats", "--store", store], capsys)
    assert "Traceback" not in text
    if in_stats is not None:
        assert code == 1 and in_stats in text, text[-800:]
    code, text = _cli(["stats", "--verify", "--store", store], capsys)
    assert code == 1 and in_verify in text and "Traceback" not in text, text[-800:]
    assert "error:" in text or "fix: adaptive-retrieval" in text
    code, text = _cli(["query", "--store", store, QUESTION], capsys)
    assert code == 1 and "Traceback" not in text and "error:" in text, text[-800:]
    assert "damaged" in text or "graph file" in text, text[-800:]
    # One line naming the cause, not Haystack's four-line message nor its snapshot's serialisation warnings.
    assert "Component name:" not in text and "Failed to serialize" not in text, text[-800:]


@pytest.mark.parametrize(
    ("damaged", "repair"),
    [
        ("segments folder deleted", ["index"]),
        ("3 chunks deleted behind the manifests", ["index"]),
        ("vector bytes flipped", ["index", "--force"]),
        ("zero-byte graph.sqlite", ["move graph", "index"]),
    ],
    indirect=["damaged"],
)
def test_the_repair_the_message_names_restores_the_index(
    damaged: Path, built: Path, repair: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    if repair[0] == "move graph":
        fault_test._move_graph_away(damaged)
        repair = repair[1:]
    code, text = _cli([*repair, "--store", str(damaged / "qdrant"), str(built / "docs")], capsys)
    assert code == 0, text[-800:]
    code, text = _cli(["stats", "--verify", "--store", str(damaged / "qdrant")], capsys)
    assert code == 0 and "verify: 3 sources checked, 0 problem(s)" in text, text[-800:]
    code, text = _cli(["query", "--store", str(damaged / "qdrant"), QUESTION], capsys)
    assert code == 0 and "lambda" in text


@pytest.mark.parametrize("cache", ["0", "10000"])
@pytest.mark.parametrize("damaged", ["vector bytes flipped"], indirect=True)
def test_a_damaged_vector_raises_on_the_query_path_and_stays_readable_for_repair(
    damaged: Path, cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``fetch_documents`` (the channels' reads) raises as a search does, with the point cache or without it;
    ``get_documents_by_id`` (the indexing side, ``stats --verify``) reads what is stored."""
    from adaptive_retrieval.components.stores import EdgeDocumentStore
    from adaptive_retrieval.components.stores.caches.point_cache import CAPACITY_ENV
    from adaptive_retrieval.components.stores.documents.edge_errors import StoreDamagedError

    monkeypatch.setenv(CAPACITY_ENV, cache)
    store = EdgeDocumentStore(path=str(damaged / "qdrant"))
    try:
        ids = [d.id for d in store.filter_documents({"field": "meta.level", "operator": "==", "value": 0})]
        assert len(store.get_documents_by_id(ids)) == len(ids)
        with pytest.raises(StoreDamagedError, match="where 1 is stored"):
            store.fetch_documents(ids)
    finally:
        store.close()
        _release()
