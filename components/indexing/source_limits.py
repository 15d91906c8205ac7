"""Refuse a source by what splitting it actually produced (chunks, sections, heading depth), before any embedding.

A size estimate from the file's bytes or words cannot bound the cost of a file: 764 KB of Markdown holding 50,000
one-word headings passes a 3,000-chunk estimate, then yields 50,000 chunks and 50,000 section summaries to embed
(238 s and 1.7 GB measured) and one-word chunks in every later answer. This component sits between the splitter
and the embedders and counts what the splitter made, per source.

==========================  ================================  =======
limit (per file)            environment variable              default
==========================  ================================  =======
chunks                      ``ADAPTIVE_MAX_FILE_CHUNKS``      3,000
sections                    ``ADAPTIVE_MAX_FILE_SECTIONS``    1,500
heading nesting depth       ``ADAPTIVE_MAX_SECTION_DEPTH``    12
==========================  ================================  =======

Usage::

    guard = SourceLimitGuard()                      # limits from the environment, read at each run
    out = guard.run(documents=splitter.run(documents=docs)["documents"])
    out["documents"]   # the chunks of every source within the limits
    out["refused"]     # [{"source": "/docs/huge.md", "reason": "'huge.md' produced 50000 chunks; the limit ..."}]
"""

from __future__ import annotations

import logging
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Document, component

from adaptive_retrieval.components import settings

logger = logging.getLogger(__name__)

CHUNKS_ENV, SECTIONS_ENV, DEPTH_ENV = (
    "ADAPTIVE_MAX_FILE_CHUNKS",
    "ADAPTIVE_MAX_FILE_SECTIONS",
    "ADAPTIVE_MAX_SECTION_DEPTH",
)


@dataclass(frozen=True)
class ProducedCounts:
    """What splitting one source produced."""

    chunks: int
    sections: int
    depth: int


def produced_counts(documents: list[Document]) -> dict[str, ProducedCounts]:
    """``{source: ProducedCounts}`` over the chunks of each source (``meta.source``, else ``file_path``)."""
    chunks: dict[str, int] = defaultdict(int)
    sections: dict[str, set[str]] = defaultdict(set)
    depth: dict[str, int] = defaultdict(int)
    for doc in documents:
        meta = doc.meta or {}
        source = str(meta.get("source") or meta.get("file_path") or doc.id)
        chunks[source] += 1
        sections[source].add(str(meta.get("section_id") or meta.get("section") or ""))
        depth[source] = max(depth[source], len(meta.get("section_path") or ()))
    return {s: ProducedCounts(chunks[s], len(sections[s]), depth[s]) for s in chunks}


@component
class SourceLimitGuard:
    """Drops every chunk of a source whose split is over a limit and reports the source in ``refused`` with the
    limit and the variable that raises it; the other sources' chunks pass unchanged (see the module docstring).

    Usage::

        guard = SourceLimitGuard(max_chunks=3000)
        guard.run(documents=chunks)["refused"]
    """

    def __init__(self, max_chunks: int | None = None, max_sections: int | None = None, max_depth: int | None = None):
        """
        :param max_chunks: most chunks per source (``None``: ``$ADAPTIVE_MAX_FILE_CHUNKS``, default 3,000).
        :param max_sections: most sections per source (``None``: ``$ADAPTIVE_MAX_FILE_SECTIONS``, default 1,500).
        :param max_depth: deepest heading path (``None``: ``$ADAPTIVE_MAX_SECTION_DEPTH``, default 12).
        """
        for name, value in (("max_chunks", max_chunks), ("max_sections", max_sections), ("max_depth", max_depth)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                msg = f"{name} must be a positive integer or None, got {value!r}"
                raise ValueError(msg)
        self.max_chunks = max_chunks
        self.max_sections = max_sections
        self.max_depth = max_depth

    def limits(self) -> dict[str, tuple[int, str]]:
        """``{count: (limit, variable)}`` in force (the environment is read at each call)."""
        return {
            "chunks": (self.max_chunks or int(settings.number(CHUNKS_ENV, strict=True)), CHUNKS_ENV),
            "sections": (self.max_sections or int(settings.number(SECTIONS_ENV, strict=True)), SECTIONS_ENV),
            "depth": (self.max_depth or int(settings.number(DEPTH_ENV, strict=True)), DEPTH_ENV),
        }

    def problem(self, source: str, counts: ProducedCounts) -> str | None:
        """Why a source with these counts is refused, or ``None``."""
        name = Path(source).name
        for field, (limit, variable) in self.limits().items():
            value = getattr(counts, field)
            if value > limit:
                what = "headings deep" if field == "depth" else field
                return (
                    f"'{name}' produced {value} {what} when split; the limit is {limit} per file (raise it with "
                    f"${variable})"
                )
        return None

    @component.output_types(documents=list[Document], refused=list[dict[str, str]])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Pass the chunks of the sources within the limits; list the others in ``refused``."""
        refused = {
            source: reason
            for source, counts in produced_counts(documents).items()
            if (reason := self.problem(source, counts))
        }
        for reason in refused.values():
            logger.info("Not indexed: %s", reason)
        kept = [d for d in documents if str(d.meta.get("source") or d.meta.get("file_path") or d.id) not in refused]
        return {"documents": kept, "refused": [{"source": s, "reason": r} for s, r in refused.items()]}
