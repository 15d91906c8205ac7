"""What the command line prints: a query's diagnostics and passages, and the per-source table of an index."""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:  # the CLI starts without Haystack; a query imports it
    from haystack import Document

    from adaptive_retrieval.pipelines.query_result import GateOutcome, QueryResult


def gate_line(gate: GateOutcome) -> str:
    """The gate's decision in one line: decision, quality against its threshold, attempts, which model judged."""
    model = "the index's calibration" if gate.calibration == "index" else "the built-in prior (no calibration)"
    line = f"gate: {gate.decision} (quality {gate.quality:.2f}"
    if gate.pass_threshold is not None:
        line += f", passes at {gate.pass_threshold:.2f}"
    line += f"; attempt {gate.attempt + 1} of {max(len(gate.attempts), 1)}; {model})"
    return line


def print_query(result: QueryResult, out: TextIO, full: bool) -> None:
    """The gate's verdict in words (found / not found / uncertain, and why), the query's diagnostics (intent,
    strategy, weights, gate, failed channels, timings), then each passage in rank order with its provenance (a
    300-character preview unless ``full``)."""
    if result.reason:
        print(result.reason + "\n", file=out)
    strategy = result.strategy
    print(f"intent: {result.intent} (confidence {result.confidence:.2f})", file=out)
    fallback = result.routing.get("fallback")
    print(
        f"strategy: top_k={strategy.top_k} fetch_k={strategy.fetch_k} mmr_lambda={strategy.mmr_lambda} "
        f"rerank={strategy.rerank}"
        + (f" max_per_source={strategy.max_per_source}" if strategy.max_per_source else "")
        + (f" (the fallback profile: {fallback})" if fallback else ""),
        file=out,
    )
    print("weights: " + " ".join(f"{c}={w:.2f}" for c, w in result.weights.items()), file=out)
    if result.structural:
        print(f"structural: {dict(result.structural)}", file=out)
    if result.gate:
        print(gate_line(result.gate), file=out)
    if result.failed:
        print("failed channels: " + "; ".join(f"{c} ({why})" for c, why in result.failed.items()), file=out)
    print("timings (ms): " + " ".join(f"{k}={v:.1f}" for k, v in result.timings_ms.items()), file=out)
    if not result.documents:
        print("no document matched: index files first with `adaptive-retrieval index PATH`", file=out)
    for i, doc in enumerate(result.documents, 1):
        meta = doc.meta or {}
        where = meta.get("section") or meta.get("title") or ""
        print(f"\n{i:>2}. {where}  ({provenance(doc)})\n    {meta.get('source') or doc.id}", file=out)
        text = " ".join((doc.content or "").split())
        if not full:
            text = textwrap.shorten(text, width=300, placeholder=" …")
        print(textwrap.indent(textwrap.fill(text, width=100), "    "), file=out)


def provenance(doc: Document) -> str:
    """How a listed passage was found, as a person reads it: "the named section" for a chunk of the section the
    question names, each channel's rank ("dense#1, sparse#3") and the score, named for what it is. The list is in
    the pipeline's order (diversity and a named section reorder the fused ranking), so the rank leads and the
    score, which that order need not follow, is said to be the fusion's (or, for a named section's chunk that
    fusion did not return, the section channel's)."""
    # Here, not at the top: the CLI starts without Haystack, which a printed query result has loaded.
    from adaptive_retrieval.components.selection.structural_first import is_structural, is_unfused

    named = is_structural(doc)
    found = ", ".join(f"{c}#{r}" for c, r in (doc.meta.get("channels") or {}).items())
    label = "section score" if is_unfused(doc) else "fused score"
    score = f"{label} {doc.score:.3f}" if doc.score is not None else ""
    return "; ".join(part for part in ("the named section" if named else "", found, score) if part)


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
