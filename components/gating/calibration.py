"""The quality gate's logistic model: fitting it (with a prior), scoring it, and keeping a fit beside an index.

Pure numpy and JSON, shared by ``scripts/lab/calibrate_gate.py`` (the labelled hotpotqa fit that ships as the gate's
default, its *prior*) and :mod:`adaptive_retrieval.pipelines.gate_calibration` (the self-calibration on pseudo-queries
of one index, written to ``gate_calibration.json`` in the store folder and read by
:class:`~adaptive_retrieval.components.gating.quality_gate.QualityGate`).

Usage::

    bias, w = fit_logistic(x, y, l2=1.0, prior=np.array([5.9, 5.2, 4.8, -0.3, 1.2]))
    cut = youden_threshold(predict(bias, w, x), y)
    save_calibration(calibration_path(folder), {"weights": dict(zip(SIGNALS, w)), "bias": bias, "pass_threshold": cut})
"""

from __future__ import annotations

import json
import logging
import math
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from adaptive_retrieval.components.gating.signals import SIGNALS

logger = logging.getLogger(__name__)

#: File name of a self-calibration inside the document store's folder.
CALIBRATION_FILE = "gate_calibration.json"
CALIBRATION_VERSION = 1
#: The gate's shipped prior (weights, bias, thresholds and their provenance), written by
#: ``scripts/lab/calibrate_gate.py --write-prior``.
PRIOR_FILE = Path(__file__).resolve().parent / "data" / "gate_prior.json"


def auroc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Probability that a random positive scores above a random negative (ties count half)."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels)
    pos, neg = scores[labels == 1], scores[labels == 0]
    if not len(pos) or not len(neg):
        return float("nan")
    diff = pos[:, None] - neg[None, :]
    return float(((diff > 0) + 0.5 * (diff == 0)).mean())


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float, prior: np.ndarray | None = None) -> tuple[float, np.ndarray]:
    """L2-regularised logistic regression by Newton's method on standardised signals, returned as bias and
    weights on the raw signals (what the gate computes).

    :param prior: raw-signal weights the penalty pulls towards (default 0): with little or ambiguous data the
        fit stays near the prior; with clear data the data win. The intercept is never penalised.
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    mean, std = x.mean(axis=0), np.clip(x.std(axis=0), 1e-9, None)
    a = np.hstack([np.ones((len(x), 1)), (x - mean) / std])
    target = np.zeros(a.shape[1])
    if prior is not None:
        target[1:] = np.asarray(prior, dtype=np.float64) * std  # the prior's weights on standardised signals
    w = target.copy()
    penalty = l2 * np.eye(a.shape[1])
    penalty[0, 0] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(a @ w, -500, 500)))
        grad = a.T @ (p - y) + penalty @ (w - target)
        hess = a.T @ (a * (p * (1 - p))[:, None]) + penalty + 1e-9 * np.eye(a.shape[1])
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.abs(step).max() < 1e-9:
            break
    weights = w[1:] / std
    return float(w[0] - weights @ mean), weights


def predict(bias: float, weights: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Quality in (0, 1) of each row of signals."""
    return 1.0 / (1.0 + np.exp(-np.clip(bias + np.asarray(x) @ np.asarray(weights), -500, 500)))


def youden_threshold(scores: np.ndarray, labels: np.ndarray) -> float:
    """The cut (a midpoint between observed scores) that maximises TPR − FPR."""
    scores, labels = np.asarray(scores, dtype=np.float64), np.asarray(labels)
    values = np.unique(scores)
    cuts = np.concatenate([[values[0] - 1e-6], (values[:-1] + values[1:]) / 2, [values[-1] + 1e-6]])
    best, best_j = 0.5, -1.0
    for cut in cuts:
        j = (scores[labels == 1] >= cut).mean() - (scores[labels == 0] >= cut).mean()
        if j > best_j:
            best, best_j = float(cut), j
    return best


def fit_asked_threshold(
    pairs: np.ndarray,
    prior_threshold: float,
    min_rejection: float = 0.0,
    strict_auroc: float | None = None,
    strict_cap: float = 1.0,
    strict_keeps_check: bool = False,
) -> tuple[dict[str, float], dict[str, Any]]:
    """The ``asked_threshold`` for one index from its pseudo-queries' ``asked`` signal: ``pairs`` has one row per
    named pseudo-query, (present, absent attribute).

    The threshold is the lower of the prior's and the pairs' Youden cut. A present pseudo-query takes its words
    verbatim from one sentence, so its ``asked`` is ~1.0 on every index and says nothing of how far real
    questions paraphrase (the prior's cut was set on real answerable and unanswerable questions; the pairs' cut
    sits higher, 0.89 on dragonball_law_en). What the index does show is where its absent-attribute questions
    fall: where they cover little, the Youden cut drops below the prior's and the gate relaxes to it; it is never
    made stricter than the prior. Fewer than 10 pairs keep the prior.

    The check is turned off (threshold 0) on an index where it holds back fewer than ``min_rejection`` of the
    absent-attribute pseudo-queries: there the returned passages hold almost any word between them (open-domain
    multi-hop corpora: 12 % held back on hotpotqa100 against 54 % on dragonball_law_en), so a veto would mostly
    cost real questions that word what they ask otherwise than their passage.

    With ``strict_auroc`` set, an index whose pairs separate well (the signal's AUROC on them ``>= strict_auroc``)
    takes their Youden cut even above the prior's, at most ``strict_cap`` (``None``: never stricter than the
    prior); with ``strict_keeps_check`` such an index also keeps the check on however few absent attributes it
    holds back. Measured leave-one-domain-out it did not transfer (the pairs' AUROC is 0.91-0.95 on most sets;
    chosen without MEDLINE, MEDLINE's answerable passes fell 87 -> 60 %), so the shipped prior leaves it off.

    Returns ``{"asked_threshold": …}`` and the report (the signal's AUROC on the pairs, their Youden cut, the
    pass rates of both kinds at the chosen threshold, their quartiles, whether the check is on).
    """
    pairs = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    if len(pairs) < 10:
        return {"asked_threshold": prior_threshold}, {"asked_pairs": len(pairs)}
    scores = np.concatenate([pairs[:, 0], pairs[:, 1]])
    labels = np.concatenate([np.ones(len(pairs)), np.zeros(len(pairs))])
    youden = youden_threshold(scores, labels)
    separation = auroc(scores, labels)
    strict = strict_auroc is not None and separation >= strict_auroc
    cut = min(max(prior_threshold, strict_cap), youden) if strict else min(prior_threshold, youden)
    rejection = float((pairs[:, 1] < cut).mean())
    check = rejection >= min_rejection or (strict and strict_keeps_check)
    state = "on" if check else f"off (holds back {rejection:.0%} of absent attributes < {min_rejection:.0%})"
    if check and strict:
        state = f"on (pairs separate: AUROC {separation:.2f} >= {strict_auroc:.2f}, their cut up to {strict_cap:.2f})"
    return {"asked_threshold": round(float(cut), 4) if check else 0.0}, {
        "asked_check": state,
        "asked_pairs": len(pairs),
        "asked_auroc": round(separation, 4),
        "asked_youden": round(float(youden), 4),
        "asked_pass_present": round(float((pairs[:, 0] >= cut).mean()), 4),
        "asked_pass_absent": round(float((pairs[:, 1] >= cut).mean()), 4),
        "asked_present_quartiles": [round(float(v), 3) for v in np.quantile(pairs[:, 0], [0.25, 0.5, 0.75])],
        "asked_absent_quartiles": [round(float(v), 3) for v in np.quantile(pairs[:, 1], [0.25, 0.5, 0.75])],
    }


def asked_check_report(pairs: np.ndarray, threshold: float) -> dict[str, Any]:
    """How the ``asked`` check at ``threshold`` treats one index's pseudo-queries: ``pairs`` has one row per named
    pseudo-query, (its ``asked`` signal, that of its absent-attribute variant), at a given ``threshold`` (the
    leave-one-domain-out measurement reads it for the prior's threshold as well as the index's).

    The self-calibration used to read the threshold off these pairs (the lower of the prior's and their Youden
    cut) and to turn the check off where it held back under 30 % of the absent-attribute variants. Measured on
    the development sets leave-one-domain-out (``scripts/lab/eval_gate_lodo.py``), neither transfers: a present
    pseudo-query takes its words verbatim from one sentence (``asked`` ~1.0 on every index), so the pairs say
    nothing of how far real questions word what they ask otherwise, and on indexes of similar documents (court
    judgments, reports) an absent attribute's words sit in some *other* returned document often enough to turn the
    check off, which is where absent facts then passed (73–82 % of unanswerable questions on two unseen domains).

    Returns the pairs' count, the signal's AUROC on them, the pass rates of both kinds at ``threshold`` and their
    quartiles (empty but the count with fewer than 10 pairs).
    """
    pairs = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    if len(pairs) < 10:
        return {"asked_pairs": len(pairs)}
    scores = np.concatenate([pairs[:, 0], pairs[:, 1]])
    labels = np.concatenate([np.ones(len(pairs)), np.zeros(len(pairs))])
    return {
        "asked_pairs": len(pairs),
        "asked_auroc": round(auroc(scores, labels), 4),
        "asked_pass_present": round(float((pairs[:, 0] >= threshold).mean()), 4),
        "asked_pass_absent": round(float((pairs[:, 1] >= threshold).mean()), 4),
        "asked_present_quartiles": [round(float(v), 3) for v in np.quantile(pairs[:, 0], [0.25, 0.5, 0.75])],
        "asked_absent_quartiles": [round(float(v), 3) for v in np.quantile(pairs[:, 1], [0.25, 0.5, 0.75])],
    }


def fit_asked_floor(unmatched: np.ndarray, quantile: float, prior_floor: float) -> tuple[float, dict[str, Any]]:
    """The soft-match ``asked_floor`` for one index: the ``quantile`` of ``unmatched``, the best word similarity
    that the asked words of absent-attribute pseudo-queries reach in the passages returned for them (words no
    passage holds by stem; :func:`~adaptive_retrieval.components.gating.answerability.unmatched`). An absent
    attribute then earns soft credit only where it comes closer than that share of absent attributes do on this
    index. Fewer than 20 values keep ``prior_floor``. Returns the floor and its report (count, quartiles)."""
    values = np.asarray(unmatched, dtype=np.float64)
    if len(values) < 20:
        return prior_floor, {"asked_unmatched": len(values)}
    floor = float(np.clip(np.quantile(values, quantile), 0.0, 1.0))
    return round(floor, 4), {
        "asked_unmatched": len(values),
        "asked_floor_quantile": quantile,
        "asked_unmatched_quartiles": [round(float(v), 3) for v in np.quantile(values, [0.25, 0.5, 0.75])],
        "asked_unmatched_q90_q95": [round(float(v), 3) for v in np.quantile(values, [0.9, 0.95])],
    }


def validate_calibration(data: dict[str, Any]) -> dict[str, Any]:
    """``weights`` (signal → float), ``bias``, ``pass_threshold``, ``asked_threshold`` (0 when absent: no
    veto, as files written before the ``asked`` signal) and ``asked_floor`` (1.0 when absent: stems only, as
    files written before soft matching) of a calibration, checked.

    :raises ValueError: for an unknown signal, a non-finite number or a threshold outside its range.
    """
    try:
        weights = {str(k): float(v) for k, v in dict(data["weights"]).items()}
        bias, threshold = float(data["bias"]), float(data["pass_threshold"])
        asked = float(data.get("asked_threshold") or 0.0)
        floor = float(data.get("asked_floor", 1.0))
    except (KeyError, TypeError, ValueError) as err:
        msg = f"A gate calibration needs 'weights' (signal -> number), 'bias' and 'pass_threshold': {err}"
        raise ValueError(msg) from err
    unknown = sorted(set(weights) - set(SIGNALS))
    if unknown:
        msg = f"Unknown signal(s) {unknown} in the calibration; the gate's signals are {list(SIGNALS)}"
        raise ValueError(msg)
    if not all(math.isfinite(v) for v in [*weights.values(), bias]) or not 0.0 < threshold < 1.0:
        msg = f"A gate calibration needs finite weights and bias and a pass_threshold in (0, 1); got {data}"
        raise ValueError(msg)
    for name, value in (("asked_threshold", asked), ("asked_floor", floor)):
        if not 0.0 <= value <= 1.0:
            msg = f"A gate calibration's {name} must be within [0, 1], got {value}"
            raise ValueError(msg)
    return {
        "weights": weights,
        "bias": bias,
        "pass_threshold": threshold,
        "asked_threshold": asked,
        "asked_floor": floor,
    }


def load_prior(path: str | Path = PRIOR_FILE) -> dict[str, Any]:
    """The gate's prior (``weights``, ``bias``, ``pass_threshold``, ``asked_threshold``, ``asked_floor``) with its
    ``provenance`` (and ``asked_floor_quantile``, the level the self-calibration reads its floor at).

    :raises ValueError: for a file that is not a valid calibration.
    """
    return load_calibration(path)


def calibration_path(folder: str | Path) -> Path:
    """Where the self-calibration of the index stored in ``folder`` lives."""
    return Path(folder) / CALIBRATION_FILE


def store_calibration_file(document_store: Any) -> Path | None:
    """The calibration file of the index ``document_store`` holds: the one place that says where an index's gate
    calibration lives (the gate reads it, ``calibrate`` and the indexing upkeep write it). An embedded store names
    its folder; a server store has none (``None``: pass the gate a ``calibration_path``)."""
    folder = getattr(document_store, "folder", None) if document_store is not None else None
    return calibration_path(folder) if folder else None


def save_calibration(path: str | Path, data: dict[str, Any]) -> Path:
    """Write ``data`` (validated; extra keys such as the report and the samples are kept) atomically to ``path``: a
    temporary file in the same folder, flushed to disk, then renamed over it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {"version": CALIBRATION_VERSION, **data, **validate_calibration(data)}
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".gate_calibration.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(record, handle, indent=2)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before it replaces the old one: a crash leaves one or the other
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_calibration(path: str | Path) -> dict[str, Any]:
    """Read and validate a calibration file (the whole record: the model and its report).

    :raises ValueError: for a file that is not JSON or not a valid calibration (a corrupt file is an error,
        never a silent fall-back to the prior).
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        msg = f"Gate calibration {path} is not valid JSON ({err}); run `adaptive-retrieval calibrate` again"
        raise ValueError(msg) from err
    if not isinstance(data, dict):
        msg = f"Gate calibration {path} is not a JSON object"
        raise ValueError(msg)
    return {**data, **validate_calibration(data)}
