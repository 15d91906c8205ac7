"""What the command line prints: a query's diagnostics and passages, and the per-source table of an index."""

from __future__ import annotations

import textwrap
from typing import Any, TextIO


def verdict_of(response: Any) -> str | None:
    """The quality gate's verdict of a query response (``found``, ``not_found``, ``uncertain``; ``None`` without a
    gate)."""
    return (response.gate or {}).get("verdict")


def gate_line(gate: dict[str, Any]) -> str:
    """The gate's decision in one line: decision, quality against its threshold, attempts, which model judged."""
    attempts = gate.get("attempts") or []
    model = "the index's calibration" if gate.get("calibration") == "index" else "the built-in prior (no calibration)"
    line = f"gate: {gate.get('decision')} (quality {gate.get('quality', 0.0):.2f}"
    if gate.get("pass_threshold") is not None:
        line += f", passes at {gate['pass_threshold']:.2f}"
    line += f"; attempt {int(gate.get('attempt') or 0) + 1} of {max(len(attempts), 1)}; {model})"
    return line


def print_query(response: Any, out: TextIO, full: bool) -> None:
    """The gate's verdict in words (found / not found / uncertain, and why), the query's diagnostics (intent,
    strategy, weights, gate, failed channels, timings), then each passage in rank order with its provenance (a
    300-character preview unless ``full``)."""
    if response.gate and response.gate.get("reason"):
        print(response.gate["reason"] + "\n", file=out)
    strategy = response.strategy
    print(f"intent: {response.intent} (confidence {response.confidence:.2f})", file=out)
    print(
        "strategy: "
        + " ".join(f"{k}={strategy[k]}" for k in ("top_k", "fetch_k", "mmr_lambda", "rerank") if k in strategy),
        file=out,
    )
    print("weights: " + " ".join(f"{c}={w:.2f}" for c, w in response.weights.items()), file=out)
    if response.structural:
        print(f"structural: {response.structural}", file=out)
    if response.gate:
        print(gate_line(response.gate), file=out)
    failed = (response.fusion or {}).get("failed") or []
    if failed:
        reasons = (response.fusion or {}).get("failed_reasons") or {}
        print("failed channels: " + "; ".join(f"{c} ({reasons.get(c, 'see the log')})" for c in failed), file=out)
    print("timings (ms): " + " ".join(f"{k}={v:.1f}" for k, v in response.timings_ms.items()), file=out)
    if not response.documents:
        print("no document matched: index files first with `adaptive-retrieval index PATH`", file=out)
    for i, doc in enumerate(response.documents, 1):
        where = doc.section or doc.title or ""
        # The list is in the pipeline's order (diversity and a named section reorder the fused ranking), so the
        # rank leads; the fused score, which that order need not follow, is said to be one.
        found = ", ".join(f"{c}#{r}" for c, r in doc.provenance.items())
        score = f"fused score {doc.score:.3f}" if doc.score is not None else ""
        details = "; ".join(part for part in (found, score) if part)
        print(f"\n{i:>2}. {where}  ({details})\n    {doc.source or doc.id}", file=out)
        text = " ".join((doc.content or "").split())
        if not full:
            text = textwrap.shorten(text, width=300, placeholder=" …")
        print(textwrap.indent(textwrap.fill(text, width=100), "    "), file=out)


def print_stats(stats: dict[str, Any], out: TextIO) -> None:
    """One row per source (state, chunks, summaries, graph chunks, entities, hash), then the totals."""
    header = f"{'state':<9} {'chunks':>7} {'summ.':>6} {'graph':>6} {'ent.':>6}  {'hash':<12} source"
    print(header, file=out)
    for source, row in stats["sources"].items():
        graph = "-" if row["graph_chunks"] is None else row["graph_chunks"]
        ents = "-" if row["entities"] is None else row["entities"]
        print(
            f"{row['state']:<9} {row['chunks']:>7} {row['summaries']:>6} {graph:>6} {ents:>6}  "
            f"{row['source_hash'][:12]:<12} {source}" + (f"  ({row['reason']})" if row.get("reason") else ""),
            file=out,
        )
    totals = stats["totals"]
    states = ", ".join(f"{n} {s}" for s, n in sorted(totals["states"].items())) or "empty"
    print(
        f"total: {totals['sources']} sources ({states}); {totals['chunks']} chunks, {totals['summaries']} "
        f"summaries, {totals['graph_chunks']} graph chunks, {totals['orphan_graph_chunks']} orphaned graph chunks",
        file=out,
    )


def error_line(err: BaseException) -> str:
    """One line for ``error: ...``: a Haystack ``PipelineRuntimeError`` as its underlying cause and the component
    it came from (its own message spans four lines around that cause), anything else as its message."""
    from haystack.core.errors import PipelineRuntimeError

    if isinstance(err, PipelineRuntimeError) and err.__cause__ is not None:
        cause = err.__cause__
        text = f"{type(cause).__name__}: {cause}" if str(cause) else type(cause).__name__
        text = f"{text} (in the pipeline component '{err.component_name}')"
    else:
        text = str(err)
    return " ".join(text.split())
