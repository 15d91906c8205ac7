"""The gate's scoring model and the watcher that swaps in an index's calibration."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from adaptive_retrieval.components.gating.gate_model import CalibrationWatcher, GateModel
from adaptive_retrieval.components.gating.quality_gate import PRIOR, QualityGate

FITTED = {"weights": {"top_score": 4.0, "asked": 2.0}, "bias": -3.0, "pass_threshold": 0.6, "asked_threshold": 0.5}


class TestGateModel:
    def test_from_fitted_reads_the_prior_and_defaults_what_a_file_lacks(self) -> None:
        model = GateModel.from_fitted(FITTED, source="index")
        assert model.asked_floor == 1.0 and model.asked_threshold == 0.5 and model.source == "index"
        assert GateModel.from_fitted({**FITTED, "asked_threshold": None}).asked_threshold == 0.0

    def test_a_check_below_its_threshold_holds_the_quality_under_the_pass_threshold(self) -> None:
        model = GateModel.from_fitted(FITTED)
        strong = model.quality({"top_score": 1.0, "asked": 1.0})
        held = model.quality({"top_score": 1.0, "asked": 0.25})
        assert strong > model.pass_threshold > held == pytest.approx(model.pass_threshold * 0.75)
        assert model.quality({"top_score": 1.0, "asked": 1.0, "reader": 0.1}, reader_threshold=0.5) < 0.6

    def test_the_gate_scores_with_its_model(self) -> None:
        gate = QualityGate(soft_match=False)
        signals = {"top_score": 0.7, "margin": 0.1, "coverage": 0.8, "asked": 1.0}
        assert gate.quality(signals) == GateModel.from_fitted(PRIOR).quality(signals)


class TestCalibrationWatcher:
    def test_the_file_is_read_when_it_appears_changes_and_goes(self, tmp_path: Path) -> None:
        prior = GateModel.from_fitted(PRIOR)
        watcher, path = CalibrationWatcher(prior), tmp_path / "gate_calibration.json"
        assert watcher.current(path) is prior and watcher.current(None) is prior
        path.write_text(json.dumps({**FITTED, "version": 1}))
        first = watcher.current(path)
        assert first.source == "index" and first.pass_threshold == 0.6
        assert watcher.current(path) is first  # unchanged: not read again
        path.write_text(json.dumps({**FITTED, "pass_threshold": 0.7, "version": 1}))
        os.utime(path, (1, 1))
        assert watcher.current(path).pass_threshold == 0.7
        path.unlink()
        assert watcher.current(path) is prior

    def test_a_new_prior_judges_only_where_no_calibration_is_read(self, tmp_path: Path) -> None:
        watcher = CalibrationWatcher(GateModel.from_fitted(PRIOR))
        watcher.replace_prior(GateModel.from_fitted(FITTED))
        assert watcher.model.pass_threshold == 0.6
        gate = QualityGate(soft_match=False)
        gate.pass_threshold = 0.4  # a calibration script's assignment changes the prior the gate judges with
        assert gate.scoring.pass_threshold == 0.4 and gate.prior["pass_threshold"] == 0.4
