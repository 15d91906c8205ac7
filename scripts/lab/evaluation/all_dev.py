"""One table over every development set: the stock hybrid, the adaptive pipeline and its best fixed profile, each
quality metric with its 95 % bootstrap interval over the questions, the ratio to the stock hybrid (with its
interval: the questions resampled in pairs) and the p50 latencies. ``scripts/lab/evaluate.py --all-dev`` builds it
from one :func:`~evaluate.evaluate` report per set.

Usage::

    rows = table_rows({"medline": (dev_set, report), ...})
    print(markdown_table(rows))
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from evaluation.dev_sets import DevSet
from evaluation.metrics import bootstrap_interval

STOCK = "stock_hybrid_rrf"
ADAPTIVE = "adaptive"
FIXED = "adaptive_fixed"
#: Besides the floor metrics, MRR where the README has always reported it (one gold passage or paper first).
EXTRA_METRICS = {"hotpotqa100": ("mrr",), "aragog": ("mrr",)}


@dataclass(frozen=True)
class Row:
    """One set and metric: each system's mean and 95 % interval, the ratios to stock with theirs, and p50s."""

    dataset: str
    kind: str
    questions: int
    metric: str
    floor: bool
    means: dict[str, float]
    intervals: dict[str, tuple[float, float]]
    ratios: dict[str, float | None]
    ratio_intervals: dict[str, tuple[float, float] | None]
    p50_ms: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return asdict(self)


def _values(report: dict[str, Any], system: str, metric: str) -> list[float]:
    return [q["systems"][system][metric] for q in report["per_question"]]


def set_rows(dev_set: DevSet, report: dict[str, Any]) -> list[Row]:
    """The rows of one set's :func:`evaluate.evaluate` report: its floor metrics, then any extra metric."""
    systems = [s for s in (STOCK, ADAPTIVE, FIXED) if s in report["systems"]]
    rows = []
    for metric in (*dev_set.floor_metrics, *EXTRA_METRICS.get(dev_set.name, ())):
        values = {s: _values(report, s, metric) for s in systems}
        stock = values.get(STOCK)
        ratios: dict[str, float | None] = {}
        ratio_intervals: dict[str, tuple[float, float] | None] = {}
        for s in systems:
            if s == STOCK or stock is None:
                continue
            total = sum(stock)
            ratios[s] = sum(values[s]) / total if total > 0 else None
            ratio_intervals[s] = bootstrap_interval(values[s], stock) if total > 0 else None
        rows.append(
            Row(
                dataset=dev_set.name,
                kind=dev_set.kind,
                questions=report["questions"],
                metric=metric,
                floor=metric in dev_set.floor_metrics,
                means={s: report["systems"][s][metric] for s in systems},
                intervals={s: bootstrap_interval(values[s]) for s in systems},
                ratios=ratios,
                ratio_intervals=ratio_intervals,
                p50_ms={s: report["systems"][s]["p50_ms"] for s in systems},
            )
        )
    return rows


def table_rows(reports: dict[str, tuple[DevSet, dict[str, Any]]]) -> list[Row]:
    """Every set's rows, in the order of ``reports``."""
    return [row for dev_set, report in reports.values() for row in set_rows(dev_set, report)]


def _cell(mean: float, interval: tuple[float, float]) -> str:
    return f"{mean:.3f} ({interval[0]:.3f}–{interval[1]:.3f})"


def _ratio(value: float | None, interval: tuple[float, float] | None) -> str:
    if value is None or interval is None:
        return "–"
    return f"{value:.2f}× ({interval[0]:.2f}–{interval[1]:.2f})"


def markdown_table(rows: list[Row]) -> str:
    """The table: set, kind, questions, metric, stock / adaptive / fixed means with 95 % intervals, adaptive's and
    fixed's ratio to stock with theirs, and p50 ms stock / adaptive / fixed. A metric the floor is judged on is
    marked ``*``."""
    head = (
        "| set | kind | n | metric | stock hybrid | adaptive | adaptive ÷ stock | fixed profile | fixed ÷ stock "
        "| p50 ms stock / adaptive / fixed |"
    )
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        cells = [
            r.dataset,
            r.kind,
            str(r.questions),
            r.metric + (" *" if r.floor else ""),
            *(_cell(r.means[s], r.intervals[s]) if s in r.means else "–" for s in (STOCK, ADAPTIVE)),
            _ratio(r.ratios.get(ADAPTIVE), r.ratio_intervals.get(ADAPTIVE)),
            _cell(r.means[FIXED], r.intervals[FIXED]) if FIXED in r.means else "–",
            _ratio(r.ratios.get(FIXED), r.ratio_intervals.get(FIXED)),
            " / ".join(f"{r.p50_ms[s]:.0f}" if s in r.p50_ms else "–" for s in (STOCK, ADAPTIVE, FIXED)),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    lines += [
        "",
        "`*`: a floor metric (the fit's candidates must be at least the stock hybrid's on it, on every set left out). "
        "Intervals: 95 % percentile bootstrap over the questions (ratios: the questions resampled in pairs).",
    ]
    return "\n".join(lines)
