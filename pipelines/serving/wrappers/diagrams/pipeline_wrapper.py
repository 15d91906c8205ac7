"""Hayhooks wrapper that serves the mermaid diagrams of both pipelines (no pipeline of its own).

It is how plain ``hayhooks run --pipelines-dir pipelines/serving/wrappers`` serves the diagrams (a wrapper adds only its
``POST /{name}/run`` route): ``POST /diagrams/run`` answers ``{"indexing": "<mermaid>", "query": "<mermaid>"}``;
``"format": "html"`` a self-contained page (mermaid.js inlined from the local ``node_modules``) that renders them in
a browser; ``"format": "svg"`` one pipeline's SVG rendered on the server by mermaid-cli and kept in this process's
memory. ``"detail": "sockets"`` draws every connection instead of the overview. The app of
``adaptive-retrieval serve`` also has browser-friendly ``GET /diagrams`` routes (see ``pipelines/serving/app.py``);
Haystack's own ``/draw`` route calls a web service and fails offline.

Usage::

    curl -s localhost:1416/diagrams/run -H 'content-type: application/json' -d '{"pipeline": "query"}'
    curl -s localhost:1416/diagrams/run -H 'content-type: application/json' -d '{"format": "html"}' > diagrams.html
    curl -s localhost:1416/diagrams/run -H 'content-type: application/json' \
        -d '{"pipeline": "query", "format": "svg"}' > query.svg
"""

from __future__ import annotations

# First and alone: loads the heavy stack under one import lock (Hayhooks deploys wrappers in parallel threads).
import adaptive_retrieval.pipelines.serving.wrapper_support  # noqa: F401

# isort: split

from typing import Literal

from fastapi import HTTPException
from fastapi.responses import HTMLResponse, JSONResponse, Response
from hayhooks import BasePipelineWrapper
from starlette.datastructures import Headers

from adaptive_retrieval.pipelines.diagrams.drawing import (
    PIPELINE_NAMES,
    RendererNotInstalledError,
    html_page,
    mermaid_texts,
    rendered_svg,
)
from adaptive_retrieval.pipelines.serving.security import guard_request, require_safe_hayhooks


class PipelineWrapper(BasePipelineWrapper):
    """Mermaid text, an HTML page or an SVG of the indexing and query pipelines, built from ``yaml/``."""

    skip_mcp = True
    skip_a2a = True

    def setup(self) -> None:
        """Nothing to load (diagrams are built from the YAML on each request: cheap, and always current); a plain
        Hayhooks server with unsafe settings is stopped here as by the other wrappers."""
        require_safe_hayhooks()
        self.pipeline = None

    def run_api(
        self,
        pipeline: Literal["indexing", "query"] | None = None,
        detail: Literal["overview", "sockets", "haystack"] = "overview",
        format: Literal["mermaid", "html", "svg"] = "mermaid",
        headers: Headers | None = None,
    ) -> Response:
        """Mermaid diagrams of the pipelines.

        :param pipeline: one pipeline, or both when omitted (``svg`` needs one).
        :param detail: ``overview`` (grouped, read at a glance), ``sockets`` (every connection) or ``haystack``
            (Haystack's own, with socket types).
        :param format: ``mermaid`` (JSON of texts), ``html`` (a page rendering them offline) or ``svg`` (one
            pipeline, rendered on the server).
        :param headers: the request's headers (Hayhooks passes them): a request from a foreign web page is refused.
        :returns: the diagrams.
        """
        guard_request(headers)
        if format == "svg" and pipeline is None:
            msg = f"format 'svg' draws one pipeline: name one of {list(PIPELINE_NAMES)}"
            raise HTTPException(status_code=400, detail=msg)
        texts = mermaid_texts([pipeline] if pipeline else PIPELINE_NAMES, detail=detail)
        if format == "mermaid":
            return JSONResponse(texts)
        try:
            if format == "svg":
                return Response(rendered_svg(texts[pipeline]), media_type="image/svg+xml")
            return HTMLResponse(html_page(texts))
        except RendererNotInstalledError as err:
            raise HTTPException(status_code=503, detail=str(err)) from err
