"""scripts/calibrate_profiles.py: the replay matches real pipeline runs; fits go to routing/data/profiles.json."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

from script_modules import load_script

from adaptive_retrieval.components.routing.profiles import (
    DEFAULT_PROFILES,
    PPR_SHARES,
    load_profiles_file,
    validate_profiles,
)
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


def test_write_profiles_file_keeps_the_rest_and_records_provenance(tmp_path: Path) -> None:
    from evaluation import profile_fit as fit

    target = tmp_path / "profiles.json"
    shutil.copy(ROOT / "components" / "routing" / "data" / "profiles.json", target)
    fitted = copy.deepcopy(DEFAULT_PROFILES)
    fitted["relational"]["mmr_lambda"] = 0.9
    fixed = fit.shrunk(fitted, fitted["factual"], 1.0)["relational"]  # share 1: the fixed profile everywhere
    assert fixed["weights"] == fit.normalised(fitted["factual"]["weights"])
    origin = fit.provenance("python scripts/calibrate_profiles.py --hotpot x", ["x"], {"held_out": 1.0}, [])
    for _ in range(2):  # a second write replaces the first
        fit.write_profiles_file(target, profiles=fitted, origin=origin)
        fit.write_profiles_file(target, fixed=fixed, fixed_origin=origin)
    data = json.loads(target.read_text())
    assert data["profiles"] == fitted and data["fixed_profile"]["profile"] == fixed
    assert data["channel_shares"]["graph_ppr"]["shares"] == PPR_SHARES  # untouched
    assert {"datasets", "command", "date", "metric"} <= set(data["provenance"])
    validate_profiles(data["profiles"], tuple(fitted))


def test_packaged_profiles_file_has_provenance() -> None:
    data = load_profiles_file()
    assert data["profiles"] == DEFAULT_PROFILES
    for origin in (data["provenance"], data["channel_shares"]["graph_ppr"]["provenance"]):
        assert {"datasets", "command", "date", "metric"} <= set(origin)


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
    args = ["--hotpot", str(folder), "--rounds", "1", "--min-group", "1", "--held-out", "0.25", "--fixed"]
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
    # The fixed peer is fitted on the same training questions: never below the start it searched from.
    fixed = report["fixed"]
    assert fixed["changes"][0].startswith("start:")
    assert fixed["scores"]["train"]["objective"] >= float(fixed["changes"][0].rsplit(" ", 1)[1]) - 1e-9
    assert 0.0 <= fixed["shrink_share"] <= 1.0
