"""scripts/lab/evaluation/loso.py: the floor (a candidate is admissible only when, fitted without a set, it is at least
the stock hybrid's on that set), the choice among admissible candidates, and the routing candidates' profiles;
scripts/lab/evaluation/dev_sets.py and all_dev.py: the set registry and the --all-dev table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from adaptive_retrieval.components.routing.profiles import DEFAULT_PROFILES, INTENTS


def profile(dense: float, sparse: float) -> dict[str, Any]:
    return {
        "weights": {"dense": dense, "sparse": sparse},
        "top_k": 10,
        "fetch_k": 30,
        "mmr_lambda": 1.0,
        "rerank": False,
    }


class TableJudge:
    """A judge whose means come from a table: set -> dense weight of the (fixed) profile -> nDCG@10."""

    def __init__(self, table: dict[str, dict[float, float]], stock: dict[str, float]) -> None:
        from evaluation.loso import Judge

        self.table = table
        self.judge = Judge(
            {}, {}, {n: [{"ndcg@10": v, **ZERO}] for n, v in stock.items()}, dict.fromkeys(stock, ("ndcg@10",))
        )

    def means(self, name: str, routing: Any) -> dict[str, float]:
        dense = next(iter(routing.profiles.values()))["weights"]["dense"]
        if routing.fallback_profile is not None:  # a routed candidate: a bonus on "multi" only
            return {"ndcg@10": self.table[name][dense] + (0.05 if name == "multi" else -0.01), **ZERO}
        return {"ndcg@10": self.table[name][dense], **ZERO}

    def __getattr__(self, attr: str) -> Any:
        return getattr(self.judge, attr)


ZERO = {"recall@5": 0.0, "recall@10": 0.0, "full@10": 0.0, "mrr": 0.0}


def test_fit_safe_prefers_a_profile_at_the_floor_everywhere_to_a_better_mean() -> None:
    from evaluation.loso import fit_safe

    grid = [profile(1.0, 0.0), profile(0.5, 0.5)]
    # dense alone: best mean, but below stock on "b"; the even split: at the floor on both.
    judge = TableJudge({"a": {1.0: 0.9, 0.5: 0.6}, "b": {1.0: 0.4, 0.5: 0.5}}, {"a": 0.5, "b": 0.5})
    fit = fit_safe(judge, grid, ["a", "b"])
    assert fit.index == 1 and fit.at_floor
    # Without "b", dense alone is at the floor on what is left, and better.
    assert fit_safe(judge, grid, ["a"]).index == 0
    # Nothing at the floor: the best mean, flagged.
    low = TableJudge({"a": {1.0: 0.1, 0.5: 0.2}}, {"a": 0.5})
    flagged = fit_safe(low, grid, ["a"])
    assert flagged.index == 1 and not flagged.at_floor


def test_leave_one_out_admits_only_candidates_at_the_floor_on_every_set_left_out() -> None:
    from evaluation.loso import RoutingCandidate, leave_one_out

    grid = [profile(1.0, 0.0), profile(0.5, 0.5)]
    table = {"multi": {1.0: 0.60, 0.5: 0.60}, "adhoc": {1.0: 0.70, 0.5: 0.52}, "other": {1.0: 0.70, 0.5: 0.70}}
    judge = TableJudge(table, {"multi": 0.62, "adhoc": 0.50, "other": 0.60})
    fixed, routed = RoutingCandidate(), RoutingCandidate(keep=("relational",), share=0.0, min_confidence=0.5)
    result = leave_one_out(
        judge, grid, [fixed, routed], DEFAULT_PROFILES, ["multi", "adhoc", "other"], log=lambda m: None
    )
    by_label = {h.candidate: h for h in result.held_out}
    # Fixed: below stock on "multi" (0.60 < 0.62), so not admissible; routed adds 0.05 there and stays at the floor
    # on the others (adhoc 0.69, other 0.69).
    assert not by_label[fixed].admissible and by_label[routed].admissible
    assert result.chosen.candidate == routed
    assert by_label[routed].ratios["multi"]["ndcg@10"] == pytest.approx(0.65 / 0.62)


def test_routing_candidates_build_profiles_around_the_safe_one() -> None:
    from evaluation.loso import RoutingCandidate, routing_candidates

    safe = profile(0.6, 0.4)
    candidate = RoutingCandidate(keep=("relational",), share=0.5, min_confidence=0.4, plain=True, keyword=True)
    profiles = candidate.profiles(DEFAULT_PROFILES, safe)
    assert set(profiles) == set(INTENTS)
    assert profiles["factual"]["weights"]["dense"] == 0.6 and profiles["factual"]["weights"]["bridge"] == 0.0
    assert profiles["keyword"]["weights"] == {
        c: float(DEFAULT_PROFILES["keyword"]["weights"].get(c, 0.0)) for c in profiles["keyword"]["weights"]
    }
    own = DEFAULT_PROFILES["relational"]["weights"]
    assert profiles["relational"]["weights"]["bridge"] == pytest.approx(own["bridge"] / sum(own.values()) / 2, abs=1e-3)
    routing = candidate.routing(DEFAULT_PROFILES, safe)
    assert routing.fallback_profile == safe and routing.min_confidence == 0.4 and routing.plain
    assert RoutingCandidate().routing(DEFAULT_PROFILES, safe).fallback_profile is None  # no routing: safe everywhere
    candidates = routing_candidates([("relational",)], [0.0, 0.5], [0.0, 0.4])
    assert candidates[0] == RoutingCandidate() and len(candidates) == 1 + 2 * 2 * 2 * 2


def test_fallback_only_candidates_keep_every_routed_profile_and_vary_the_fallback() -> None:
    from evaluation.calibrate_all_dev import fallback_candidates

    safe = profile(0.5, 0.5)
    candidates = fallback_candidates((0.0, 0.4))
    assert [(c.min_confidence, c.plain) for c in candidates] == [(0.0, False), (0.4, False), (0.0, True), (0.4, True)]
    for candidate in candidates:
        routing = candidate.routing(DEFAULT_PROFILES, safe)
        assert routing.fallback_profile == safe
        for intent, own in DEFAULT_PROFILES.items():  # every intent keeps its own profile, keyword included
            mine = routing.profiles[intent]
            assert (mine["top_k"], mine["fetch_k"], mine["mmr_lambda"]) == (
                own["top_k"],
                own["fetch_k"],
                own["mmr_lambda"],
            )
            total = sum(own["weights"].values())
            assert all(mine["weights"][c] == pytest.approx(w / total, abs=1e-3) for c, w in own["weights"].items())


def test_safe_grid_splits_the_weight_in_equal_parts() -> None:
    from evaluation.loso import safe_grid

    grid = safe_grid(("dense", "sparse", "sparse_prf"), 2, 10, 30, (1.0,), (False,))
    splits = sorted(tuple(p["weights"].values()) for p in grid)
    assert splits == sorted([(1.0, 0, 0), (0, 1.0, 0), (0, 0, 1.0), (0.5, 0.5, 0), (0.5, 0, 0.5), (0, 0.5, 0.5)])


def test_dev_sets_are_found_by_folder_and_the_law_set_keeps_its_answerable_questions(tmp_path: Path) -> None:
    from evaluation.dev_sets import UNANSWERABLE_TYPE, available_dev_sets

    law = tmp_path / "dragonball_law_en"
    law.mkdir()
    (law / "corpus.jsonl").write_text(json.dumps({"id": "d1", "title": "Judgment", "text": "The court ruled."}) + "\n")
    rows = [
        {"id": "q1", "question": "What did the court rule?", "gold_ids": ["d1"], "type": "Factual Question"},
        {"id": "q2", "question": "What is the judge's favourite food?", "gold_ids": ["d1"], "type": UNANSWERABLE_TYPE},
    ]
    (law / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    sets = available_dev_sets(tmp_path)
    assert [s.name for s in sets] == ["law"] and sets[0].floor_metrics == ("ndcg@10", "full@10")
    evalset = sets[0].load(tmp_path)
    assert evalset.name == "law" and [q.id for q in evalset.questions] == ["q1"]
    with pytest.raises(SystemExit, match="Unknown development set"):
        available_dev_sets(tmp_path, ["nope"])
    with pytest.raises(SystemExit, match="No development set"):
        available_dev_sets(tmp_path / "empty")


def test_all_dev_table_gives_intervals_and_ratios() -> None:
    from evaluation.all_dev import markdown_table, set_rows
    from evaluation.dev_sets import DEV_SETS

    medline = next(s for s in DEV_SETS if s.name == "medline")
    per_question = [
        {"systems": {"stock_hybrid_rrf": {"ndcg@10": s}, "adaptive": {"ndcg@10": a}, "adaptive_fixed": {"ndcg@10": f}}}
        for s, a, f in ((0.5, 0.6, 0.5), (0.4, 0.5, 0.4), (0.6, 0.6, 0.7))
    ]
    systems = {
        name: {"ndcg@10": sum(q["systems"][name]["ndcg@10"] for q in per_question) / 3, "p50_ms": ms}
        for name, ms in (("stock_hybrid_rrf", 40.0), ("adaptive", 30.0), ("adaptive_fixed", 31.0))
    }
    rows = set_rows(medline, {"questions": 3, "systems": systems, "per_question": per_question})
    assert len(rows) == 1 and rows[0].floor
    row = rows[0]
    assert row.ratios["adaptive"] == pytest.approx(1.7 / 1.5)
    low, high = row.ratio_intervals["adaptive"]
    assert low <= row.ratios["adaptive"] <= high
    text = markdown_table(rows)
    assert "| medline | ad-hoc | 3 | ndcg@10 * |" in text and "1.13×" in text and "40 / 30 / 31" in text


def test_fallback_only_writes_the_fallback_alone_and_nothing_when_no_candidate_is_admissible(tmp_path: Path) -> None:
    import argparse

    from evaluation.calibrate_all_dev import fallback_candidates, write_fallback
    from evaluation.loso import HeldOut

    path = tmp_path / "profiles.json"
    before = {"profiles": DEFAULT_PROFILES, "fixed_profile": {"profile": profile(0.3, 0.7)}, "provenance": {}}
    path.write_text(json.dumps(before))
    candidate = fallback_candidates((0.0,), grid_size=1)[-1]  # plain on, grid #0 named in advance
    held = HeldOut(candidate)
    for name, (stock, mine) in {"a": (0.5, 0.6), "b": (0.4, 0.4)}.items():
        held.means[name] = {"ndcg@10": mine}
        held.ratios[name] = {"ndcg@10": mine / stock}
        held.scores[name] = mine / stock
        held.at_floor[name] = mine >= stock
    safe = profile(0.5, 0.5)
    report = {
        "stock": {"a": {"ndcg@10": 0.5}, "b": {"ndcg@10": 0.4}},
        "safe_grid": [safe],
        "leave_one_out": {"candidates": [held.to_dict()]},
        "shipped": {"fallback": {"profile": safe, "min_confidence": 0.0, "plain": True}},
    }
    args = argparse.Namespace(profiles_file=str(path), all_dev="/somewhere/data")
    write_fallback(args, report, "calibrate_profiles.py --all-dev /somewhere/data --fallback-only", held, ["a", "b"])
    data = json.loads(path.read_text())
    assert data["profiles"] == before["profiles"] and data["fixed_profile"] == before["fixed_profile"]
    assert data["fallback"]["profile"] == safe and data["fallback"]["plain"] is True
    origin = data["fallback"]["provenance"]
    assert origin["split"].startswith("leave one set out: the fallback profile named in advance")
    assert origin["command"] == "calibrate_profiles.py --all-dev DATA --fallback-only"
    assert origin["result"]["leave_one_out"]["a"]["ratios"]["ndcg@10"] == pytest.approx(1.2)
    # Below stock on a set left out: not admissible, and the file stays as it was.
    held.means["b"], held.at_floor["b"] = {"ndcg@10": 0.3}, False
    path.write_text(json.dumps(before))
    with pytest.raises(SystemExit, match="No candidate is at the floor"):
        write_fallback(args, report, "cmd", held, ["a", "b"])
    assert json.loads(path.read_text()) == before
