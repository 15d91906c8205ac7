"""Indexing keeps the quality gate's calibration current: incremental, bounded, crash-safe, in the background."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from adaptive_retrieval.components.gating.calibration import load_calibration, store_calibration_file
from adaptive_retrieval.components.gating.verdict import NO_CALIBRATION
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import release_all_connections
from adaptive_retrieval.pipelines.gate_calibration import sample_version
from adaptive_retrieval.pipelines.gate_upkeep import CalibrationKeeper, update_calibration
from adaptive_retrieval.pipelines.indexer import delete_sources, index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import store_of
from adaptive_retrieval.pipelines.query_pipeline import run_query
from adaptive_retrieval.pipelines.yaml_io import load_pipeline

FILES = {
    "product-faq.md": "# Widget Pro FAQ\n\n## Installation\n\nWidget Pro 3.0 requires PostgreSQL 14 or later and "
    "Python 3.10. Older PostgreSQL versions are not supported because the audit log uses generated columns.\n\n"
    "## Licensing\n\nA Widget Pro licence covers up to 25 seats. Extra seats are sold in packs of five through the "
    "customer portal.\n",
    "hr-policy.md": "# Employee Handbook\n\n## Vacation\n\nFull-time employees receive 25 days of paid vacation per "
    "calendar year. Up to five unused days carry over to the next year.\n\n## Parental leave\n\nParents receive "
    "16 weeks of paid parental leave, taken within the first year after birth or adoption.\n",
    "security.md": "# Security Guidelines\n\n## Passwords\n\nPasswords must have at least 14 characters. Use the "
    "company password manager and never reuse a password.\n\n## Laptops\n\nLaptops must use full-disk encryption. "
    "Report a lost laptop to the IT helpdesk within 24 hours.\n",
}
EXPENSES = "# Travel and Expenses\n\n## Meals\n\nMeals on business trips are reimbursed up to 60 euros per day with "
EXPENSES += "receipts. Book flights through the travel portal at least 14 days before departure.\n"


@pytest.fixture
def index(tmp_path: Path, model_dir: Path) -> Iterator[dict]:
    """Three small Markdown files indexed with the shipped indexing pipeline, and a query pipeline over them."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in FILES.items():
        (docs / name).write_text(text, encoding="utf-8")
    path = str(tmp_path / "qdrant")
    indexing = load_pipeline("indexing", path=path, model=str(model_dir))
    index_paths(indexing, [docs])
    query = load_pipeline("query", path=path, model=str(model_dir))
    query.warm_up()
    yield {"docs": docs, "indexing": indexing, "query": query, "file": store_calibration_file(store_of(indexing))}
    release_all_clients()
    release_all_connections()


class TestUpdateCalibration:
    def test_first_update_calibrates_and_the_gate_uses_it(self, index: dict) -> None:
        before = run_query(index["query"], "How many days of sick leave do I get?")
        assert before.gate.calibration == "prior" and NO_CALIBRATION in before.reason

        seen: list[tuple[int, int]] = []
        result = update_calibration(index["query"], progress=lambda d, t: seen.append((d, t)))
        assert result.written and result.path == index["file"] and result.path.exists()
        # Bounded: a few pseudo-queries per chunk of a small index, never more than the budget.
        assert 0 < result.added <= 200 and seen[-1][0] == seen[-1][1] == result.added
        saved = load_calibration(result.path)
        assert saved["samples"]["version"] == sample_version()
        assert set(saved["samples"]["sources"]) == {str(index["docs"] / n) for n in FILES}
        # The index's own pairs may relax the asked check or turn it off, never make it stricter than the prior.
        assert 0.0 <= saved["asked_threshold"] <= index["query"].get_component("gate").prior["asked_threshold"]

        after = run_query(index["query"], "How many days of sick leave do I get?")
        assert after.gate.calibration == "index" and NO_CALIBRATION not in after.reason
        again = update_calibration(index["query"])
        assert not again.written and again.reason == "up to date" and again.added == 0

    def test_updates_follow_added_changed_and_deleted_sources(self, index: dict) -> None:
        first = update_calibration(index["query"])
        rows = load_calibration(first.path)["samples"]["rows"]
        faq = str(index["docs"] / "product-faq.md")

        (index["docs"] / "expenses.md").write_text(EXPENSES, encoding="utf-8")
        index_paths(index["indexing"], [index["docs"]])
        added = update_calibration(index["query"])
        new_rows = load_calibration(added.path)["samples"]["rows"]
        assert added.written and added.dropped == 0 and added.new_sources == 1
        assert new_rows[: len(rows)] == rows  # the samples of unchanged sources are kept as they were
        assert all(r["sources"] == [str(index["docs"] / "expenses.md")] for r in new_rows[len(rows) :])

        (index["docs"] / "product-faq.md").write_text(FILES["product-faq.md"] + "\nWidget Pro 4.0 is planned.\n")
        index_paths(index["indexing"], [index["docs"]])
        changed = update_calibration(index["query"])
        kept = load_calibration(changed.path)["samples"]["rows"]
        assert changed.dropped == sum(faq in r["sources"] for r in new_rows) > 0 and changed.new_sources == 1
        assert any(faq in r["sources"] for r in kept)  # drawn again from its new content

        store = store_of(index["indexing"])
        delete_sources(store, [faq], index["indexing"].get_component("graph_writer").graph_store)
        gone = update_calibration(index["query"])
        assert gone.dropped > 0 and not any(faq in r["sources"] for r in load_calibration(gone.path)["samples"]["rows"])

    def test_a_failed_update_leaves_the_previous_calibration(self, index: dict) -> None:
        first = update_calibration(index["query"])
        saved = first.path.read_bytes()
        (index["docs"] / "expenses.md").write_text(EXPENSES, encoding="utf-8")
        index_paths(index["indexing"], [index["docs"]])

        def crash(done: int, total: int) -> None:
            if done == 2:
                raise KeyboardInterrupt  # the process stopped in the middle of an update

        with pytest.raises(KeyboardInterrupt):
            update_calibration(index["query"], progress=crash)
        assert first.path.read_bytes() == saved  # written only complete (temporary file, then rename)
        assert not list(first.path.parent.glob(".gate_calibration.*"))
        assert update_calibration(index["query"]).new_sources == 1  # the next update takes up the new file

    def test_a_damaged_calibration_is_drawn_again(self, index: dict) -> None:
        index["file"].write_text("{not json", encoding="utf-8")
        result = update_calibration(index["query"])
        assert result.written and json.loads(index["file"].read_text())["samples"]["rows"]
        assert index["file"].with_name("gate_calibration.json.damaged").read_text() == "{not json"


class TestCalibrationKeeper:
    def test_the_keeper_updates_in_the_background_while_queries_run(self, index: dict) -> None:
        loaded = threading.Event()

        def pipeline():  # the keeper's own pipeline: the test's, shared (one store per process)
            loaded.set()
            return index["query"]

        keeper = CalibrationKeeper(pipeline, budget=12)
        keeper.request()
        keeper.request()  # folded into the running update, or one more after it
        assert loaded.wait(60)
        answered = run_query(index["query"], "Which PostgreSQL version does Widget Pro 3.0 require?")
        assert answered.documents  # a query is answered while the keeper samples
        assert keeper.wait(600) and keeper.error is None
        assert keeper.last is not None and keeper.last.path == index["file"] and index["file"].exists()
        assert keeper.last.added <= 12 or not keeper.last.written
