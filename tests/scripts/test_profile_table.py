"""scripts/profile_table.py: components/README.md's intent-profile table is the one profiles.json gives."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from tests.script_modules import load_script

ROOT = Path(__file__).resolve().parents[2]


def test_the_readme_table_is_generated_from_the_profiles() -> None:
    table = load_script("profile_table")
    readme = (ROOT / "components" / "README.md").read_text(encoding="utf-8")
    assert table.with_table(readme) == readme, "run: python scripts/profile_table.py --readme"


def test_a_changed_profile_changes_the_table() -> None:
    """Every row follows the file: a weight changed in profiles.json is a README that no longer matches."""
    table = load_script("profile_table")
    readme = (ROOT / "components" / "README.md").read_text(encoding="utf-8")
    data = json.loads((ROOT / "components" / "routing" / "data" / "profiles.json").read_text(encoding="utf-8"))
    changed = copy.deepcopy(data)
    changed["profiles"]["keyword"]["weights"].update({"sparse": 0.5, "dense": 0.25})
    assert "BM25 0.50, dense 0.25, graph local 0.25" in table.markdown_table(changed)
    assert table.with_table(readme, changed) != readme
    assert table.with_table(readme, data) == readme


def test_intents_that_share_a_profile_share_a_row() -> None:
    table = load_script("profile_table").markdown_table()
    data = json.loads((ROOT / "components" / "routing" / "data" / "profiles.json").read_text(encoding="utf-8"))
    rows = table.splitlines()[2:]
    named = [intent for row in rows for intent in row.split(" | ")[0].lstrip("| ").split(", ")]
    assert sorted(named) == sorted(data["profiles"])
    assert len(rows) == len({json.dumps(p, sort_keys=True) for p in data["profiles"].values()})
