"""scripts/calibrate_profiles.py: the replay matches real pipeline runs, and fitted profiles are written in place."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from script_modules import load_script

from adaptive_retrieval.components.routing.profiles import DEFAULT_PROFILES, validate_profiles
from adaptive_retrieval.components.stores.edge_document_store import release_all_clients

ROOT = Path(__file__).resolve().parents[2]

CORPUS = {
    "Mount Etna": ["Mount Etna is an active stratovolcano on the east coast of Sicily."],
    "Sicily": ["Sicily is the largest island in the Mediterranean Sea and a region of Italy."],
    "Catania": ["Catania is a city on the east coast of Sicily at the foot of Mount Etna."],
    "Honey bees": ["Honey bees tell the hive where flowers are with a waggle dance."],
    "Rust language": ["Rust is a systems programming language whose borrow checker prevents data races."],
    "Glaciers": ["Glaciers form where snow accumulates faster than it melts."],
    "La Traviata": ["La Traviata is an opera by Giuseppe Verdi first performed in Venice in 1853."],
    "Giuseppe Verdi": ["Giuseppe Verdi was an Italian composer born in Le Roncole in 1813."],
    "Coffee": ["Coffee beans are the roasted seeds of Coffea plants."],
    "Emperor penguin": ["Emperor penguins breed in the Antarctic winter."],
}
QUESTIONS = [
    ("a", "Which city lies at the foot of the volcano on the east coast of Sicily?", ["Mount Etna", "Catania"]),
    ("b", "In which year was the composer of La Traviata born?", ["La Traviata", "Giuseppe Verdi"]),
    ("c", "What prevents data races in Rust?", ["Rust language"]),
    ("d", "Which is larger, Sicily or the island of Malta?", ["Sicily"]),
]


def test_format_and_write_profiles_round_trip(tmp_path: Path) -> None:
    calibrate = load_script("calibrate_profiles")
    target = tmp_path / "profiles.py"
    shutil.copy(ROOT / "components" / "routing" / "profiles.py", target)
    fitted = copy.deepcopy(DEFAULT_PROFILES)
    fitted["relational"]["mmr_lambda"] = 0.9
    fitted["relational"]["weights"] = {
        c: round(1 / len(fitted["relational"]["weights"]), 3) for c in fitted["relational"]["weights"]
    }
    for _ in range(2):  # a second write replaces the first, comment included
        calibrate.write_profiles(fitted, "python scripts/calibrate_profiles.py --hotpot x", "a note", path=target)
    text = target.read_text()
    assert text.count("# Calibrated by scripts/calibrate_profiles.py") == 1
    assert text.count("DEFAULT_PROFILES: dict[str, dict[str, Any]] = {") == 1
    namespace: dict = {}
    exec(compile(text, str(target), "exec"), namespace)  # the file still imports and defines everything
    assert namespace["DEFAULT_PROFILES"] == fitted and callable(namespace["mix_profiles"])
    validate_profiles(namespace["DEFAULT_PROFILES"], tuple(fitted))


def test_replay_matches_the_pipeline_and_fit_never_hurts_training(tmp_path: Path, model_dir: Path) -> None:
    calibrate = load_script("calibrate_profiles")
    folder = tmp_path / "hotpot"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps(CORPUS))
    rows = [
        {"_id": qid, "question": q, "type": "bridge", "supporting_facts": [[t, 0] for t in gold]}
        for qid, q, gold in QUESTIONS
    ]
    (folder / "questions.json").write_text(json.dumps(rows))
    out = tmp_path / "report.json"
    args = ["--hotpot", str(folder), "--rounds", "1", "--min-group", "1", "--held-out", "0.25"]
    try:
        report = calibrate.main([*args, "--check", "4", "--root", str(tmp_path / "idx"), "--json", str(out)])
    finally:
        release_all_clients()
    check = report["datasets"]["hotpotqa100"]["replay_check"]
    # The replay is exact: same channel lists, and the pipeline's own joiner, MMR, reranker and gate loop.
    assert check["checked"] == 4 and check["identical_top10"] == 4
    assert report["after"]["train"]["objective"] >= report["before"]["train"]["objective"]
    assert json.loads(out.read_text())["fitted_intents"] == report["fitted_intents"]
    validate_profiles(report["profiles_after"], tuple(report["profiles_after"]))
