"""Hayhooks wrapper that serves the mermaid diagrams of both pipelines (no pipeline of its own).

``POST /diagrams/run`` answers ``{"indexing": "<mermaid>", "query": "<mermaid>"}``, or with
``"format": "html"`` a self-contained page that renders them with the locally installed mermaid.js. The app of
``adaptive-retrieval serve`` also has browser-friendly ``GET /diagrams`` routes (see ``pipelines/app.py``);
Haystack's own ``/draw`` route calls a web service and fails offline.

Usage::

    curl -s localhost:1416/diagrams/run -H 'content-type: application/json' -d '{"pipeline": "query"}'
"""

from __future__ import annotations

# First and alone: loads the heavy stack under one import lock (Hayhooks deploys wrappers in parallel threads).
import adaptive_retrieval.pipelines.serving  # noqa: F401

# isort: split

from typing import Literal

from fastapi import HTTPException
from fastapi.responses import HTMLResponse, JSONResponse, Response
from hayhooks import BasePipelineWrapper

from adaptive_retrieval.pipelines.drawing import PIPELINE_NAMES, RendererNotInstalledError, html_page, mermaid_texts


class PipelineWrapper(BasePipelineWrapper):
    """Mermaid text (or an HTML page) of the indexing and query pipelines, built from ``yaml/``."""

    skip_mcp = True
    skip_a2a = True

    def setup(self) -> None:
        """Nothing to load: diagrams are built from the YAML on each request (cheap, and always current)."""
        self.pipeline = None

    def run_api(
        self,
        pipeline: Literal["indexing", "query"] | None = None,
        style: Literal["compact", "detailed"] = "compact",
        format: Literal["mermaid", "html"] = "mermaid",
    ) -> Response:
        """Mermaid diagrams of the pipelines.

        :param pipeline: one pipeline, or both when omitted.
        :param style: ``compact`` (names, classes, sockets) or ``detailed`` (Haystack's own, with socket types).
        :param format: ``mermaid`` (JSON of texts) or ``html`` (a page rendering them offline).
        :returns: the diagrams.
        """
        texts = mermaid_texts([pipeline] if pipeline else PIPELINE_NAMES, style=style)
        if format == "mermaid":
            return JSONResponse(texts)
        try:
            return HTMLResponse(html_page(texts))
        except RendererNotInstalledError as err:
            raise HTTPException(status_code=503, detail=str(err)) from err
