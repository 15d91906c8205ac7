"""The gate's leave-one-domain-out choice and main's old asked rule (scripts/lab/evaluation/gate_lodo.py)."""

from __future__ import annotations

import numpy as np

from adaptive_retrieval.components.gating.calibration import load_prior
from adaptive_retrieval.components.gating.signals import SIGNALS
from evaluation.gate_lodo import (
    Calibrated,
    DomainSignals,
    _model,
    choose_asked_threshold,
    choose_strict_rule,
    legacy_asked_threshold,
    rule_score,
    score,
)


def _domain(name: str, asked: list[float], absent: list[float] | None = None) -> DomainSignals:
    """A domain whose evidence is strong everywhere (the model passes every row): only ``asked`` tells."""

    def rows(values: list[float]) -> np.ndarray:
        x = np.ones((len(values), len(SIGNALS)))
        x[:, SIGNALS.index("asked")] = values
        x[:, SIGNALS.index("redundancy")] = 0.0
        return x

    x = {"answerable": rows(asked)}
    if absent is not None:
        x["absent_built"] = rows(absent)
    return DomainSignals(name, x, {})


class TestGateLodo:
    def test_the_threshold_is_the_strictest_that_keeps_nine_in_ten_answerable_passes_of_every_domain(self) -> None:
        prior = load_prior()
        a = _domain("a", [1.0] * 8 + [0.52, 0.62])  # 0.60 costs it one pass in ten, 0.65 two
        b = _domain("b", [1.0] * 10)
        assert choose_asked_threshold([a, b], prior) == 0.6
        assert choose_asked_threshold([b], prior) == 1.0  # nothing to lose: the strictest of the grid

    def test_score_reads_auroc_and_pass_rates_of_the_held_out_domain(self) -> None:
        prior = {**load_prior(), "asked_threshold": 0.6}
        held = _domain("held", [1.0] * 9 + [0.5], absent=[0.3, 0.4, 0.9, 1.0])
        result = score(_model(prior), held)
        assert result["pass_answerable"] == 0.9 and result["absent"]["pass"] == 0.5 and result["absent"]["n"] == 4
        assert 0.5 < result["absent"]["auroc"] < 1.0

    def test_mains_rule_relaxed_the_check_or_turned_it_off(self) -> None:
        present = np.full(40, 0.9)
        held_back = np.column_stack([present, np.r_[np.full(20, 0.9), np.full(20, 0.2)]])
        assert 0 < legacy_asked_threshold(held_back, 0.55) <= 0.55
        rarely = np.column_stack([present, np.r_[np.full(36, 0.9), np.full(4, 0.2)]])
        assert legacy_asked_threshold(rarely, 0.55) == 0.0  # holds back 10 % < 30 %: off
        assert legacy_asked_threshold(rarely[:5], 0.55) == 0.55  # too few pairs: the prior's


def _calibrated(domain: DomainSignals, pairs: np.ndarray) -> Calibrated:
    prior = load_prior()
    model = {k: prior[k] for k in ("weights", "bias", "pass_threshold", "asked_floor")}
    return Calibrated(domain, model, domain.x, pairs)


class TestStrictRule:
    #: Pseudo-query pairs that separate well: present attributes hold everything, absent ones 0.8 of it.
    PAIRS = np.column_stack([np.ones(40), np.full(40, 0.8)])

    def test_a_rule_that_holds_back_absent_facts_and_keeps_the_floor_is_chosen(self) -> None:
        prior = load_prior()
        a = _calibrated(_domain("a", [1.0] * 10, absent=[0.8] * 10), self.PAIRS)
        b = _calibrated(_domain("b", [1.0] * 9 + [0.8], absent=[0.8] * 10), self.PAIRS)
        assert rule_score(a, prior, (None, 1.0, False))["absent"]["pass"] == 1.0  # shipped: off
        rule = choose_strict_rule([a, b], prior)
        assert rule[0] is not None and rule[1] > 0.8  # the first rule of the grid above the absent attributes
        held = rule_score(a, prior, rule)
        assert held["absent"]["pass"] == 0.0 and held["pass_answerable"] == 1.0

    def test_a_rule_that_costs_a_domain_its_answerable_floor_is_not(self) -> None:
        prior = load_prior()
        a = _calibrated(_domain("a", [1.0] * 10, absent=[0.8] * 10), self.PAIRS)
        costly = _calibrated(_domain("costly", [1.0] * 7 + [0.8] * 3, absent=[0.8] * 10), self.PAIRS)
        assert choose_strict_rule([a, costly], prior) == (None, 1.0, False)  # 70 % < 80 %: the shipped rule stays
