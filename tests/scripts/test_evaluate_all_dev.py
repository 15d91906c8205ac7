"""``scripts/lab/evaluate.py --all-dev``: every development set found under one folder, three systems, one table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from script_modules import load_script

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients

# Two tiny ad-hoc collections, laid out as ../shared/data lays out MEDLINE and TIME (and CACM's title-only record).
SETS = {
    "medline": (
        {
            "m1": ("", "Lens proteins of the vertebrate eye, crystallins, keep the lens transparent."),
            "m2": ("", "Cataract forms when crystallin proteins of the lens clump together."),
            "m3": ("", "Oxygen tension in cerebrospinal fluid follows the arterial blood."),
            "m4": ("", "Polarography measures dissolved oxygen in blood samples."),
        },
        [
            ("mq1", "crystalline lens proteins in vertebrates", ["m1", "m2"]),
            ("mq2", "the oxygen tension of cerebrospinal fluid", ["m3"]),
        ],
    ),
    "time": (
        {
            "t1": ("", "The premier hinted that he may retire from one of his two posts."),
            "t2": ("Grain exports", ""),  # a record with a title alone is indexed as its title
            "t3": ("", "Polls in Britain show the Labour party in the lead over the Conservatives."),
        },
        [
            ("tq1", "RESULTS OF THE POLITICAL POLLS IN BRITAIN .", ["t3"]),
            ("tq2", "grain exports", ["t2"]),
        ],
    ),
}


def test_all_dev_prints_one_table_with_every_set_and_system(
    tmp_path: Path, model_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    evaluate = load_script("evaluate")
    data = tmp_path / "data"
    for name, (passages, questions) in SETS.items():
        folder = data / name
        folder.mkdir(parents=True)
        lines = [json.dumps({"id": pid, "title": title, "text": text}) for pid, (title, text) in passages.items()]
        (folder / "corpus.jsonl").write_text("\n".join(lines) + "\n")
        rows = [{"id": q, "question": text, "gold_ids": gold, "type": name} for q, text, gold in questions]
        (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out_json = tmp_path / "all.json"
    try:
        report = evaluate.main(["--all-dev", str(data), "--root", str(tmp_path / "idx"), "--json", str(out_json)])
    finally:
        release_all_clients()
    assert set(report["sets"]) == {"medline", "time"}  # the sets whose folders are there, no others
    rows = {(r["dataset"], r["metric"]): r for r in report["table"]}
    assert set(rows) == {("medline", "ndcg@10"), ("time", "ndcg@10")}
    for row in rows.values():
        assert set(row["means"]) == {"stock_hybrid_rrf", "adaptive", "adaptive_fixed"}
        for system, (low, high) in row["intervals"].items():
            assert low <= row["means"][system] <= high
        assert set(row["ratios"]) == {"adaptive", "adaptive_fixed"}
    printed = capsys.readouterr().out
    assert "### Every development set:" in printed and "| medline | ad-hoc | 2 | ndcg@10 * |" in printed
    written = json.loads(out_json.read_text())["table"]
    assert [(r["dataset"], r["means"]) for r in written] == [(r["dataset"], r["means"]) for r in report["table"]]


def test_all_dev_refuses_other_data_options(tmp_path: Path) -> None:
    evaluate = load_script("evaluate")
    with pytest.raises(SystemExit, match="give no other data option"):
        evaluate.main(["--all-dev", str(tmp_path), "--hotpot", str(tmp_path)])
    with pytest.raises(SystemExit, match="no --split or --limit"):
        evaluate.main(["--all-dev", str(tmp_path), "--limit", "3"])
