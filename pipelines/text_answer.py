"""A query's answer as text a person or a language model reads: the verdict in one sentence, then each passage
with where it is and why it was chosen. What the MCP tool and the OpenAI-compatible chat return; the diagnostics
(routing, fusion, signals, timings) stay in the REST answer and ``run_query``'s result.

Usage::

    print(answer_text(run_query(pipeline, "How many vacation days do employees get?")))
"""

from __future__ import annotations

from pathlib import PurePath

from adaptive_retrieval.pipelines.query_result import QueryResult

#: Characters of each passage's text shown (the rest ends in "…").
MAX_PASSAGE_CHARS = 1200

#: What an answer without passages says.
NO_PASSAGE = "No passage matched: index documents first (adaptive-retrieval index PATH, POST /indexing/run)."


def source_name(source: str | None) -> str | None:
    """A source as a reader cites it: the file's name (the index keeps the whole path as its id)."""
    if not source:
        return None
    return PurePath(source).name if "/" in source or "\\" in source else source


def answer_text(result: QueryResult, max_chars: int = MAX_PASSAGE_CHARS) -> str:
    """The verdict sentence (when the pipeline has a gate), then ``[n] where — source (found by: channel #rank,
    …)`` and the passage's text for each document in rank order."""
    lines: list[str] = []
    if result.reason:
        lines.append(result.reason)
    for i, doc in enumerate(result.documents, 1):
        meta = doc.meta or {}
        where = meta.get("section") or meta.get("title") or doc.id
        found = ", ".join(f"{c} #{r}" for c, r in (meta.get("channels") or {}).items())
        head = f"[{i}] {where}"
        if name := source_name(meta.get("source")):
            head += f" — {name}"
        if found:
            head += f" (found by {found})"
        text = (doc.content or "").strip()
        if len(text) > max_chars:
            text = text[:max_chars].rstrip() + " …"
        lines.append(f"\n{head}\n{text}")
    if not result.documents:
        lines.append(NO_PASSAGE)
    return "\n".join(lines)
