"""scripts/lab/calibrate_profiles.py: the replay matches real pipeline runs; fits go to routing/data/profiles.json."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import pytest
from script_modules import load_script

from adaptive_retrieval.components.routing.profiles import (
    DEFAULT_PROFILES,
    PPR_SHARES,
    load_profiles_file,
    validate_profiles,
)
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients

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
    origin = fit.provenance("python scripts/lab/calibrate_profiles.py --hotpot x", ["x"], {"held_out": 1.0}, [])
    for _ in range(2):  # a second write replaces the first
        fit.write_profiles_file(target, profiles=fitted, origin=origin)
        fit.write_profiles_file(target, fixed=fixed, fixed_origin=origin)
    data = json.loads(target.read_text())
    assert data["profiles"] == fitted and data["fixed_profile"]["profile"] == fixed
    assert data["channel_shares"]["graph_ppr"]["shares"] == PPR_SHARES  # untouched
    assert {"datasets", "command", "date", "metric"} <= set(data["provenance"])
    validate_profiles(data["profiles"], tuple(fitted))


def test_merged_gives_the_fixed_profile_to_every_intent_not_kept() -> None:
    from evaluation import profile_fit as fit

    fixed = {**copy.deepcopy(DEFAULT_PROFILES["factual"]), "top_k": 12, "fetch_k": 24}
    fixed["weights"] = {c: w for c, w in fixed["weights"].items() if w > 0}  # a fixed fit names fewer channels
    out = fit.merged(DEFAULT_PROFILES, fixed, ("relational",), 0.0)
    names = set(DEFAULT_PROFILES["relational"]["weights"])
    for intent, profile in out.items():
        assert set(profile["weights"]) == names  # every channel named, the missing ones at 0
        if intent != "relational":
            assert profile["top_k"] == 12 and profile["fetch_k"] == 24
            assert {c: w for c, w in profile["weights"].items() if w > 0} == fixed["weights"]
    assert out["relational"]["weights"] == fit.normalised(DEFAULT_PROFILES["relational"]["weights"])
    halfway = fit.merged(DEFAULT_PROFILES, fixed, ("relational",), 0.5)["relational"]
    assert halfway["top_k"] == round((DEFAULT_PROFILES["relational"]["top_k"] + 12) / 2)
    validate_profiles(out, tuple(out))
    # An always-kept intent (keyword) keeps its own profile, unshrunk, whatever else is merged.
    kept = fit.merged(DEFAULT_PROFILES, fixed, ("relational",), 0.5, keep_always=("keyword",))
    assert kept["keyword"]["weights"] == {c: float(DEFAULT_PROFILES["keyword"]["weights"].get(c, 0.0)) for c in names}
    assert kept["keyword"]["top_k"] == DEFAULT_PROFILES["keyword"]["top_k"] and kept["relational"] == halfway
    # One "keep nothing" variant, then every non-empty subset at each share below 1.
    variants = fit.merge_variants(["a", "b"])
    assert variants[0] == ((), 0.0) and len(variants) == 1 + 3 * (len(fit.SHRINK_GRID) - 1)


def test_pick_merge_needs_both_metrics_on_every_set_and_split_at_least_the_fixed_profiles() -> None:
    from evaluation import profile_fit as fit

    def split(per_set: dict[str, tuple[float, float]]) -> dict[str, object]:
        datasets = {d: {"full@10": f, "mrr": m, "n": 10} for d, (f, m) in per_set.items()}
        return {"objective": sum(f + 0.5 * m for f, m in per_set.values()) / len(per_set), "datasets": datasets}

    def scores(held: dict[str, tuple[float, float]], train: dict[str, tuple[float, float]] | None = None) -> dict:
        return fit.with_all({"train": split(train or held), "held_out": split(held)})

    fixed = scores({"x": (0.5, 0.8), "y": (0.9, 0.9)})
    variants = [
        {"keep": [], "share": 0.0, "scores": fixed},
        {"keep": ["a"], "share": 0.0, "scores": scores({"x": (0.7, 0.8), "y": (0.8, 0.9)})},  # best mean, y worse
        {"keep": ["a"], "share": 0.25, "scores": scores({"x": (0.7, 0.8), "y": (0.9, 0.85)})},  # y's MRR worse
        # better on the held-out questions, worse on all of them (the training questions drag y's MRR down)
        {
            "keep": ["a"],
            "share": 0.5,
            "scores": scores({"x": (0.7, 0.8), "y": (0.9, 0.9)}, {"x": (0.7, 0.8), "y": (0.9, 0.7)}),
        },
        {"keep": ["a"], "share": 0.75, "scores": scores({"x": (0.6, 0.8), "y": (0.9, 0.9)})},
    ]
    assert fixed["all"]["datasets"]["x"] == {"full@10": 0.5, "mrr": 0.8, "n": 20}
    assert fit.pick_merge(variants, fixed) == variants[4]
    assert fit.pick_merge(variants[:4], fixed) == variants[0]  # nothing better everywhere: the fixed profile


def test_packaged_profiles_file_has_provenance() -> None:
    data = load_profiles_file()
    assert data["profiles"] == DEFAULT_PROFILES
    for origin in (data["provenance"], data["channel_shares"]["graph_ppr"]["provenance"]):
        assert {"datasets", "command", "date", "metric"} <= set(origin)


def test_replay_matches_the_pipeline_and_fit_never_hurts_training(tmp_path: Path, model_dir: Path) -> None:
    calibrate = load_script("calibrate_profiles")
    from evaluation import profile_fit as fit

    folder = tmp_path / "hotpot"
    folder.mkdir()
    (folder / "corpus.json").write_text(json.dumps(CORPUS))
    rows = [
        {"_id": qid, "question": q, "type": "bridge", "supporting_facts": [[t, 0] for t in gold]}
        for qid, q, gold in QUESTIONS
    ]
    (folder / "questions.json").write_text(json.dumps(rows))
    out = tmp_path / "report.json"
    args = [
        "--hotpot",
        str(folder),
        "--rounds",
        "1",
        "--min-group",
        "1",
        "--held-out",
        "0.25",
        "--fixed",
        "--merge",
        "--keep-min",
        "1",
    ]
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
    # --merge: the chosen variant is at least the fixed profile on every data set, held-out and all questions,
    # unless no variant is (then the best held-out one); keyword keeps its own profile.
    merge = report["merge"]
    assert merge["fixed_profile"] == fixed["profile"] and merge["keep_always"] == ["keyword"]
    qualifying = [v for v in merge["variants"] if fit.at_least(v["scores"], merge["fixed_scores"], ("held_out", "all"))]
    assert not qualifying or fit.at_least(merge["scores"], merge["fixed_scores"], ("held_out", "all"))
    assert merge["profiles"]["keyword"]["top_k"] == report["profiles_after"]["keyword"]["top_k"]
    validate_profiles(merge["profiles"], tuple(merge["profiles"]))


ADHOC = {
    "medline": (
        {
            "m1": "Lens proteins of the vertebrate eye, crystallins, keep the lens transparent.",
            "m2": "Cataract forms when crystallin proteins of the lens clump together.",
            "m3": "Oxygen tension in cerebrospinal fluid follows the arterial blood.",
            "m4": "Polarography measures dissolved oxygen in blood samples.",
            "m5": "Bronchial tumours were grown in tissue culture for the study.",
            "m6": "Electron microscopy of lung tissue shows the alveolar walls.",
        },
        [
            ("mq1", "the crystalline lens in vertebrates.", ["m1", "m2"]),
            ("mq2", "oxygen in blood and cerebrospinal fluid, measured by polarography.", ["m3", "m4"]),
            ("mq3", "ELECTRON MICROSCOPY OF LUNG.", ["m6"]),
        ],
    ),
    "cacm": (
        {
            "c1": "Time sharing systems let many users share one computer interactively.",
            "c2": "A compiler for several target machines uses an intermediate language.",
            "c3": "Processes communicate through messages in distributed systems.",
            "c4": "Sorting algorithms for tape files: merge sort and its variants.",
            "c5": "A scheduler for a time sharing operating system on an IBM machine.",
            "c6": "Hash tables give constant expected lookup time.",
        },
        [
            ("cq1", "What articles exist which deal with time sharing systems for IBM computers?", ["c1", "c5"]),
            ("cq2", "I am interested in intermediate languages for multi-target compilers", ["c2"]),
            ("cq3", "communication between disjoint processes in a distributed environment", ["c3"]),
        ],
    ),
}


def test_all_dev_fit_leaves_each_set_out_and_writes_the_fallback(tmp_path: Path, model_dir: Path) -> None:
    calibrate = load_script("calibrate_profiles")
    data = tmp_path / "data"
    for name, (passages, questions) in ADHOC.items():
        folder = data / name
        folder.mkdir(parents=True)
        corpus = "".join(json.dumps({"id": pid, "title": "", "text": text}) + "\n" for pid, text in passages.items())
        (folder / "corpus.jsonl").write_text(corpus)
        rows = [{"id": q, "question": text, "gold_ids": gold, "type": name} for q, text, gold in questions]
        (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    profiles_file = tmp_path / "profiles.json"
    shutil.copy(ROOT / "components" / "routing" / "data" / "profiles.json", profiles_file)
    args = ["--all-dev", str(data), "--check", "3", "--root", str(tmp_path / "idx"), "--write"]
    try:
        report = calibrate.main([*args, "--profiles-file", str(profiles_file), "--json", str(tmp_path / "r.json")])
    finally:
        release_all_clients()
    for name in ADHOC:
        check = report["datasets"][name]["replay_check"]
        assert check["checked"] == 3 and check["identical_top10"] == 3  # the replay is exact, fallback included
    loo = report["leave_one_out"]
    assert set(loo["safe_without"]) == set(ADHOC)  # a safe profile fitted without each set
    chosen = loo["chosen"]
    admissible = [c for c in loo["candidates"] if c["admissible"]]
    # Admissible: at least the stock hybrid's on the floor metric of every set left out; the chosen one is the best
    # admissible mean (or, with none admissible, the best mean).
    for c in admissible:
        assert all(c["at_floor"].values())
    pool = admissible or loo["candidates"]
    assert chosen["mean_score"] == pytest.approx(max(c["mean_score"] for c in pool))
    data_file = json.loads(profiles_file.read_text())
    assert data_file["fixed_profile"]["profile"] == report["safe"]["profile"]
    assert data_file["fallback"]["profile"] == report["safe"]["profile"]
    assert data_file["fallback"]["provenance"]["split"].startswith("leave one set out")
    validate_profiles(data_file["profiles"], tuple(data_file["profiles"]))
    validate_profiles({"fallback": data_file["fallback"]["profile"]}, ("fallback",))
