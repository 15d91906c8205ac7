"""The quality gate's scoring model, and the watcher that swaps in an index's calibration when its file changes.

``GateModel`` holds what was fitted (logistic weights over the signals, bias, the pass threshold and the asked
check's threshold and soft-match floor) and turns signals into one quality score. ``CalibrationWatcher`` reads an
index's ``gate_calibration.json`` when it appears, changes or disappears (one ``stat`` per query) and answers the
model to judge with: the file's, else the prior. A model is frozen and replaced whole, so a query running while the
file changes judges with one model from start to end.

Usage::

    prior = GateModel.from_fitted(load_prior())
    watcher = CalibrationWatcher(prior)
    model = watcher.current(Path("idx/gate_calibration.json"))
    model.quality({"top_score": 0.7, "asked": 1.0}), model.source      # 0.83, 'index'
"""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.gating.calibration import load_calibration

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GateModel:
    """``quality = sigmoid(bias + Σ w_s · signal_s)``, held under ``pass_threshold`` when a check falls short.

    :param source: ``prior`` (the shipped or the init parameters) or ``index`` (the index's calibration file).
    """

    weights: Mapping[str, float] = field(default_factory=dict)
    bias: float = 0.0
    pass_threshold: float = 0.5
    asked_threshold: float = 0.0
    asked_floor: float = 1.0
    source: str = "prior"

    @classmethod
    def from_fitted(cls, fitted: Mapping[str, Any], source: str = "prior") -> GateModel:
        """From a prior's or a calibration file's fields (a missing asked check is off, a missing floor 1.0)."""
        return cls(
            weights={str(k): float(v) for k, v in dict(fitted["weights"]).items()},
            bias=float(fitted["bias"]),
            pass_threshold=float(fitted["pass_threshold"]),
            asked_threshold=float(fitted.get("asked_threshold") or 0.0),
            asked_floor=float(fitted.get("asked_floor", 1.0)),
            source=source,
        )

    def quality(self, signals: Mapping[str, float], reader_threshold: float = 0.0) -> float:
        """The quality score in (0, 1) of a set of signals: the logistic model's, brought below ``pass_threshold``
        when a check falls below its threshold (``asked`` under ``asked_threshold``, ``reader`` under
        ``reader_threshold``): ``min(quality, pass_threshold) · (0.5 + 0.5 · value / threshold)``."""
        z = self.bias + sum(w * signals.get(name, 0.0) for name, w in self.weights.items())
        quality = 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0
        for name, cut in (("asked", self.asked_threshold), ("reader", reader_threshold)):
            value = signals.get(name)
            if cut > 0 and value is not None and value < cut:
                # Below pass_threshold, still ordered by the model's quality and by the shortfall (the loop
                # returns the best attempt when none passes).
                quality = min(quality, self.pass_threshold) * (0.5 + 0.5 * value / cut)
        return quality


class CalibrationWatcher:
    """The model to judge with: an index's calibration file while it exists, else ``prior``."""

    def __init__(self, prior: GateModel) -> None:
        self.prior = prior
        self.model = prior
        self._stamp: tuple[float, int] | None = None

    def current(self, path: Path | None) -> GateModel:
        """Load ``path`` when it appeared or changed since the last look; the prior when it is gone or ``None``."""
        try:
            stat = path.stat() if path is not None else None
        except OSError:  # no file, or a store path that is not a folder (the store itself reports that)
            stat = None
        stamp = (stat.st_mtime, stat.st_size) if stat is not None else None
        if stamp == self._stamp:
            return self.model
        if stamp is None:
            if self.model.source != "prior":
                logger.info("Quality gate: no calibration file any more; using the prior")
            model = self.prior
        else:
            assert path is not None
            model = GateModel.from_fitted(load_calibration(path), source="index")
            logger.info("Quality gate: using the index's self-calibration %s", path)
        # One assignment each: a query that read the model before keeps judging with it.
        self.model, self._stamp = model, stamp
        return model

    def replace_prior(self, prior: GateModel) -> None:
        """Judge with ``prior`` from now on where no calibration file is read."""
        self.prior = prior
        if self.model.source == "prior":
            self.model = prior
