"""The quality gate judged leave-one-domain-out, on the lists ``scripts/lab/eval_gate_lodo.py`` collected.

Each development set is a *domain*. For each held-out domain the gate's free number, the ``asked`` check's
threshold, is chosen on the other domains only; the evidence model is the shipped prior (refitting it on the other
domains' missing-evidence labels scored lower held out, see ``scripts/lab/README.md``). The held-out domain is then
scored twice: with that prior (a gate without calibration) and self-calibrated on the held-out index's own
pseudo-queries (:func:`~adaptive_retrieval.pipelines.gate_calibration.fit_samples`), as indexing calibrates it.

- **absent fact**: answerable questions against on-topic questions whose fact is absent (the law set's real
  'Irrelevant Unsolvable' ones and the ones :mod:`evaluation.absent_facts` builds);
- **missing evidence**: answerable questions against the same questions with their gold documents deleted.

Signals come from the shipped :class:`~adaptive_retrieval.components.gating.quality_gate.QualityGate` on the
dumped lists, so the table measures the code as it ships; the self-calibrated rows recompute the ``asked`` signal
at the soft-match floor that index reads off its pseudo-queries.

``old rules``: the same signals judged by main's rules (the threshold 0.55 set on the law set, and a
self-calibration that relaxed the check to the pairs' Youden cut or turned it off where it held back under 30 % of
absent-attribute pseudo-queries).

Usage::

    domains = [domain_signals(dump, gate) for dump in dumps]
    rows = lodo_rows(domains, prior)
    print_table(rows)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from adaptive_retrieval.components.gating import SIGNALS, QualityGate, asked_coverage, auroc, youden_threshold
from adaptive_retrieval.components.text import query_names
from adaptive_retrieval.pipelines import fit_samples
from evaluation.gate_dump import GateRecord

#: Kinds of held-out questions: answerable, and the two kinds of unanswerable ones.
ABSENT = ("absent_real", "absent_built")
MISSING = ("missing",)
#: Thresholds tried for the asked check.
GRID = tuple(round(x, 2) for x in np.arange(0.0, 1.0001, 0.05))
#: Share of each training domain's answerable passes the check may cost at most (``1 - KEEP``).
KEEP = 0.9


@dataclass
class DomainSignals:
    """One domain's gate signals: per kind of record, a matrix of :data:`SIGNALS` rows (at the prior's floor),
    the records (to recompute ``asked`` at another floor) and the pseudo-query samples as indexing stores them."""

    name: str
    x: dict[str, np.ndarray]
    records: dict[str, list[GateRecord]]
    pseudo: list[dict[str, Any]] = field(default_factory=list)


def _signals(gate: QualityGate, record: GateRecord) -> dict[str, float]:
    return gate.signals(record.documents(), record.query, record.vector.tolist(), record.fusion)


def domain_signals(dump: dict[str, Any], gate: QualityGate, progress: Any = None) -> DomainSignals:
    """The signals of a dump's records (the gate's loop off; every record as the pipeline judged it) and its
    pseudo-query samples (present, excluded, absent attribute, the unmatched similarities)."""
    from adaptive_retrieval.components.gating import unmatched

    records: dict[str, list[GateRecord]] = {}
    for record in dump["records"]:
        records.setdefault(record.kind, []).append(record)
    x = {}
    for kind in ("answerable", *ABSENT, *MISSING):
        rows = [[_signals(gate, r)[s] for s in SIGNALS] for r in records.get(kind, [])]
        x[kind] = np.asarray(rows, dtype=np.float64).reshape(-1, len(SIGNALS))
        if progress:
            progress(f"{dump['set']}: {kind} {len(rows)}")
    present = {r.group: r for r in records.get("pseudo_present", [])}
    excluded = {r.group: r for r in records.get("pseudo_excluded", [])}
    absent = {r.group: r for r in records.get("pseudo_absent", [])}
    pseudo = []
    for group in sorted(present):
        row: dict[str, Any] = {
            "doc_ids": [],
            "kind": present[group].extra.get("pseudo", "named"),
            "present": _signals(gate, present[group]),
            "excluded": _signals(gate, excluded[group]),
            "absent": None,
            "unmatched": [],
        }
        if group in absent:
            a = absent[group]
            row["absent"] = _signals(gate, a)
            row["unmatched"] = unmatched(a.documents(), a.query, query_names(a.query), gate.word_vectors)
        pseudo.append(row)
    if progress:
        progress(f"{dump['set']}: {len(pseudo)} pseudo-queries")
    return DomainSignals(dump["set"], x, records, pseudo)


def with_asked(domain: DomainSignals, coverage: Any, unmatched: Any, vectors: Any, floor: float) -> DomainSignals:
    """``domain`` with its ``asked`` signal (and the pseudo-queries' unmatched similarities) computed by another
    version of the check: ``coverage`` and ``unmatched`` are that version's
    :func:`~adaptive_retrieval.components.gating.answerability.asked_coverage` and ``unmatched`` (the ``before``
    rows read the branch point's, see ``scripts/lab/eval_gate_lodo.py``)."""
    j = SIGNALS.index("asked")

    def asked(record: GateRecord) -> float:
        return float(coverage(record.documents(), record.query, query_names(record.query), vectors, floor))

    x = {}
    for kind, matrix in domain.x.items():
        matrix = matrix.copy()
        if len(matrix):
            matrix[:, j] = [asked(r) for r in domain.records.get(kind, [])]
        x[kind] = matrix
    by_group = {
        kind: {r.group: r for r in domain.records.get(kind, [])}
        for kind in ("pseudo_present", "pseudo_excluded", "pseudo_absent")
    }
    pseudo = []
    for row, group in zip(domain.pseudo, sorted(by_group["pseudo_present"]), strict=True):
        row = {**row, "present": {**row["present"], "asked": asked(by_group["pseudo_present"][group])}}
        row["excluded"] = {**row["excluded"], "asked": asked(by_group["pseudo_excluded"][group])}
        if row["absent"] is not None:
            a = by_group["pseudo_absent"][group]
            row["absent"] = {**row["absent"], "asked": asked(a)}
            row["unmatched"] = unmatched(a.documents(), a.query, query_names(a.query), vectors)
        pseudo.append(row)
    return DomainSignals(domain.name, x, domain.records, pseudo)


def _model(prior: dict[str, Any], **changes: Any) -> QualityGate:
    model = {**prior, **changes}
    return QualityGate(
        weights=model["weights"],
        bias=model["bias"],
        pass_threshold=model["pass_threshold"],
        asked_threshold=model["asked_threshold"],
        asked_floor=model.get("asked_floor", prior["asked_floor"]),
        soft_match=False,
    )


def quality(gate: QualityGate, x: np.ndarray) -> np.ndarray:
    """The gate's quality of each row of signals (its own :meth:`QualityGate.quality`, the asked check included)."""
    return np.asarray([gate.quality(dict(zip(SIGNALS, row, strict=True))) for row in x])


def _asked_at(
    domain: DomainSignals, kind: str, floor: float, vectors: Any, coverage: Any = asked_coverage
) -> np.ndarray:
    """The ``asked`` signal of a kind's records at another soft-match floor (``coverage``: the check's version)."""
    return np.asarray(
        [coverage(r.documents(), r.query, query_names(r.query), vectors, floor) for r in domain.records.get(kind, [])]
    )


def score(gate: QualityGate, domain: DomainSignals, x: dict[str, np.ndarray] | None = None) -> dict[str, Any]:
    """AUROC and pass rates (answerable / unanswerable) for absent facts, the real ones alone, and missing evidence."""
    x = x or domain.x
    qa = quality(gate, x["answerable"])
    cut = gate.pass_threshold
    out: dict[str, Any] = {"answerable": len(qa), "pass_answerable": float((qa >= cut).mean())}
    for name, kinds in (("absent", ABSENT), ("absent_real", ("absent_real",)), ("missing", MISSING)):
        xs = [x[k] for k in kinds if len(x.get(k, []))]
        if not xs:
            continue
        qu = quality(gate, np.vstack(xs))
        y = np.r_[np.ones(len(qa)), np.zeros(len(qu))]
        out[name] = {"auroc": auroc(np.r_[qa, qu], y), "pass": float((qu >= cut).mean()), "n": len(qu)}
    return out


def choose_asked_threshold(train: list[DomainSignals], prior: dict[str, Any], keep: float = KEEP) -> float:
    """The strictest asked threshold (of :data:`GRID`) that keeps at least ``keep`` of every training domain's
    answerable passes (with the check off as the reference): answerable questions only, so the choice never
    leans on how unanswerable questions were built."""
    off = _model(prior, asked_threshold=0.0)
    base = {d.name: float((quality(off, d.x["answerable"]) >= off.pass_threshold).mean()) for d in train}
    best = 0.0
    for theta in GRID:
        gate = _model(prior, asked_threshold=theta)
        passes = {d.name: float((quality(gate, d.x["answerable"]) >= gate.pass_threshold).mean()) for d in train}
        if all(passes[n] >= keep * base[n] for n in base):
            best = theta
    return float(best)


def self_calibrated(
    domain: DomainSignals, prior: dict[str, Any], vectors: Any, coverage: Any = asked_coverage
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The held-out index's self-calibration (as indexing writes it: weights, bias, pass threshold, the asked
    threshold by the prior's rule and the soft-match floor read off its pseudo-queries) and its signals at that
    floor."""
    model = fit_samples(domain.pseudo, prior)
    x = dict(domain.x)
    if abs(model["asked_floor"] - prior["asked_floor"]) > 1e-9:
        j = SIGNALS.index("asked")
        for kind in x:
            if len(x[kind]):
                x[kind] = x[kind].copy()
                x[kind][:, j] = _asked_at(domain, kind, model["asked_floor"], vectors, coverage)
    return {k: model[k] for k in ("weights", "bias", "pass_threshold", "asked_threshold", "asked_floor")}, x


@dataclass
class Calibrated:
    """One domain self-calibrated once (the model and its signals at its floor) and its pseudo-query ``pairs``
    (``asked`` present, absent attribute): every asked rule below re-reads only the pairs."""

    domain: DomainSignals
    model: dict[str, Any]
    x: dict[str, np.ndarray]
    pairs: np.ndarray


def calibrated(domain: DomainSignals, prior: dict[str, Any], vectors: Any) -> Calibrated:
    model, x = self_calibrated(domain, prior, vectors)
    pairs = [[r["present"].get("asked", 1.0), r["absent"].get("asked", 1.0)] for r in domain.pseudo if r["absent"]]
    return Calibrated(domain, model, x, np.asarray(pairs, dtype=np.float64).reshape(-1, 2))


#: A strictness rule for the per-index asked threshold: (AUROC bound of the index's pairs, cap of their cut,
#: whether such an index keeps the check on however few absent attributes it holds back); ``(None, 1.0, False)``
#: is the shipped rule (never stricter than the prior). The candidates tried leave-one-domain-out.
StrictRule = tuple[float | None, float, bool]
STRICT_GRID: tuple[StrictRule, ...] = (
    (None, 1.0, False),
    *(
        (bound, cap, keep)
        for keep in (False, True)
        for bound in (0.8, 0.85, 0.9, 0.95)
        for cap in (0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 1.0)
    ),
)
#: No domain's answerable pass rate may fall below this (nor below the shipped rule's, where that is lower).
PASS_FLOOR = 0.8


def rule_threshold(cal: Calibrated, prior: dict[str, Any], rule: StrictRule) -> float:
    """The asked threshold a self-calibration under ``rule`` gives ``cal``'s index."""
    from adaptive_retrieval.components.gating import fit_asked_threshold

    bound, cap, keep = rule
    model, _ = fit_asked_threshold(
        cal.pairs,
        prior["asked_threshold"],
        float(prior["asked_min_rejection"]),
        strict_auroc=bound,
        strict_cap=cap,
        strict_keeps_check=keep,
    )
    return float(model["asked_threshold"])


def rule_score(cal: Calibrated, prior: dict[str, Any], rule: StrictRule) -> dict[str, Any]:
    theta = rule_threshold(cal, prior, rule)
    model = {k: v for k, v in cal.model.items() if k != "asked_threshold"}
    return {**score(_model(prior, **model, asked_threshold=theta), cal.domain, cal.x), "asked_threshold": theta}


def _objective(results: list[dict[str, Any]]) -> float:
    """Mean over the domains with absent facts of pass answerable − pass unanswerable (Youden's J)."""
    js = [r["pass_answerable"] - r["absent"]["pass"] for r in results if "absent" in r]
    return float(np.mean(js)) if js else 0.0


def choose_strict_rule(train: list[Calibrated], prior: dict[str, Any], floor: float = PASS_FLOOR) -> StrictRule:
    """The rule of :data:`STRICT_GRID` with the best :func:`_objective` on ``train`` among those that keep every
    training domain's answerable pass rate at ``floor`` or more (or at the shipped rule's, where that is lower);
    ties keep the earlier rule (the shipped one first)."""
    shipped = [rule_score(c, prior, STRICT_GRID[0]) for c in train]
    floors = [min(floor, r["pass_answerable"]) for r in shipped]
    best, best_value = STRICT_GRID[0], _objective(shipped)
    for rule in STRICT_GRID[1:]:
        results = [rule_score(c, prior, rule) for c in train]
        if any(r["pass_answerable"] < f - 1e-9 for r, f in zip(results, floors, strict=True)):
            continue
        value = _objective(results)
        if value > best_value + 1e-9:
            best, best_value = rule, value
    return best


def legacy_asked_threshold(pairs: np.ndarray, prior_threshold: float, min_rejection: float = 0.3) -> float:
    """main's rule (before this change), for the ``before`` rows only: the lower of the prior's and the pairs'
    Youden cut, and off (0) where it holds back under ``min_rejection`` of the absent-attribute variants."""
    pairs = np.asarray(pairs, dtype=np.float64).reshape(-1, 2)
    if len(pairs) < 10:
        return prior_threshold
    scores = np.concatenate([pairs[:, 0], pairs[:, 1]])
    labels = np.concatenate([np.ones(len(pairs)), np.zeros(len(pairs))])
    cut = min(prior_threshold, youden_threshold(scores, labels))
    return round(float(cut), 4) if (pairs[:, 1] < cut).mean() >= min_rejection else 0.0


def lodo_rows(
    domains: list[DomainSignals],
    prior: dict[str, Any],
    vectors: Any,
    before: dict[str, Any] | None = None,
    before_domains: list[DomainSignals] | None = None,
    before_coverage: Any = asked_coverage,
) -> list[dict]:
    """One row per held-out domain: this gate as it ships (``prior``, uncalibrated, and self-calibrated by the
    shipped per-index rule), with the prior's asked threshold chosen without the held-out domain
    (:func:`choose_asked_threshold`, self-calibrated), and with the strictness rule chosen without it
    (:func:`choose_strict_rule`); with ``before`` and ``before_domains`` (the same lists with another commit's
    ``asked`` signal) also that gate, uncalibrated and self-calibrated by main's old rule."""
    rows = []
    cals = [calibrated(d, prior, vectors) for d in domains]
    for i, (held, cal) in enumerate(zip(domains, cals, strict=True)):
        train = [d for d in domains if d is not held]
        theta = choose_asked_threshold(train, prior)
        rule = choose_strict_rule([c for j, c in enumerate(cals) if j != i], prior)
        model = {k: v for k, v in cal.model.items() if k != "asked_threshold"}
        row: dict[str, Any] = {
            "domain": held.name,
            "asked_threshold": theta,
            "strict_rule": list(rule),
            "prior": {**score(_model(prior), held), "asked_threshold": prior["asked_threshold"]},
            "self": rule_score(cal, prior, STRICT_GRID[0]),
            "lodo_self": {
                **score(_model(prior, **model, asked_threshold=theta), held, cal.x),
                "asked_threshold": theta,
            },
            "strict_self": {**rule_score(cal, prior, rule), "rule": list(rule)},
        }
        if before is not None and before_domains is not None:
            old = before_domains[i]
            old_fitted, old_x = self_calibrated(old, before, vectors, before_coverage)
            old_fitted.pop("asked_threshold")
            pairs = [[r["present"]["asked"], r["absent"]["asked"]] for r in old.pseudo if r["absent"]]
            old_theta = legacy_asked_threshold(np.asarray(pairs), before["asked_threshold"])
            row["before_prior"] = {**score(_model(before), old), "asked_threshold": before["asked_threshold"]}
            row["before_self"] = {
                **score(_model(before, **old_fitted, asked_threshold=old_theta), old, old_x),
                "asked_threshold": old_theta,
            }
        rows.append(row)
    return rows


#: The table's rows per held-out domain.
MODELS = (
    ("before_prior", "main, no cal."),
    ("before_self", "main, self-cal."),
    ("prior", "now, no cal."),
    ("self", "now, self-cal."),
    ("lodo_self", "LODO θ, self-cal."),
    ("strict_self", "strict rule, LODO"),
)


def _cell(result: dict[str, Any], key: str) -> str:
    if key not in result:
        return f"{'—':^20}"
    r = result[key]
    return f"{r['auroc']:.3f} {result['pass_answerable']:>4.0%} / {r['pass']:>4.0%}"


def print_table(rows: list[dict[str, Any]], out: Any = None) -> None:
    """The leave-one-domain-out table: per held-out domain and model, AUROC and pass % answerable / unanswerable
    for absent facts (all, and the real ones) and missing evidence."""
    import sys

    out = out or sys.stdout
    head = f"{'held-out domain':<20} {'model':<18} {'θ':>5}  {'absent fact':^20}  {'real absent':^20}  {'missing':^20}"
    print(head, file=out)
    print("-" * len(head), file=out)
    models = [(m, label) for m, label in MODELS if all(m in r for r in rows)]
    for row in rows:
        for model, label in models:
            result = row[model]
            theta = result["asked_threshold"]
            print(
                f"{row['domain']:<20} {label:<18} {theta:>5.2f}  {_cell(result, 'absent')}  "
                f"{_cell(result, 'absent_real')}  {_cell(result, 'missing')}",
                file=out,
            )
        if "strict_rule" in row:
            bound, cap, keep = row["strict_rule"]
            chosen = "never stricter" if bound is None else f"AUROC >= {bound:.2f} -> the pairs' cut up to {cap:.2f}"
            chosen += ", kept on" if keep else ""
            print(f"{'':<20} strict rule chosen without {row['domain']}: {chosen}", file=out)
    for model, label in models:
        absent = [r[model]["absent"]["auroc"] for r in rows if "absent" in r[model]]
        missing = [r[model]["missing"]["auroc"] for r in rows if "missing" in r[model]]
        passes = [r[model]["pass_answerable"] for r in rows]
        unans = [r[model]["absent"]["pass"] for r in rows if "absent" in r[model]]
        print(
            f"{'mean':<20} {label:<18} {'':>5}  absent AUROC {np.mean(absent):.3f}, pass unanswerable "
            f"{np.mean(unans):.0%}; missing AUROC {np.mean(missing):.3f}; pass answerable {np.mean(passes):.0%} "
            f"(lowest {min(passes):.0%})",
            file=out,
        )


def print_fixed_rule(cals: list[Calibrated], prior: dict[str, Any], rule: StrictRule, out: Any = None) -> None:
    """``rule`` scored as it stands (not chosen leave-one-out) on every domain: its asked threshold there, the
    answerable pass rate, absent-fact AUROC and pass rate, missing-evidence AUROC and pass rate."""
    import sys

    out = out or sys.stdout
    head = "asked threshold; pass answerable; absent fact, missing evidence: AUROC, pass"
    print(f"\nrule {rule} on every domain ({head})", file=out)
    for cal in cals:
        r = rule_score(cal, prior, rule)
        absent = f"{r['absent']['auroc']:.3f} {r['absent']['pass']:>4.0%}" if "absent" in r else f"{'—':^10}"
        print(
            f"  {cal.domain.name:<18} {r['asked_threshold']:.2f}  {r['pass_answerable']:>4.0%}  {absent}  "
            f"{r['missing']['auroc']:.3f} {r['missing']['pass']:>4.0%}",
            file=out,
        )


def finite(value: float) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else round(value, 4)
