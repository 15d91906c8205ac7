"""The REST app: Hayhooks' own app (exactly what ``hayhooks run --pipelines-dir pipelines`` builds) plus
browser-friendly diagram routes.

``GET /diagrams`` is an HTML page rendering both pipelines with mermaid.js served from the local
``node_modules``; ``GET /diagrams/{name}.mmd`` is the mermaid text and ``GET /diagrams/{name}.svg`` an SVG
rendered on the server by mermaid-cli. ``adaptive-retrieval serve`` runs this app.

Usage::

    from pipelines.app import create_app
    import uvicorn

    uvicorn.run(create_app(), host="127.0.0.1", port=1416)
"""

from __future__ import annotations

import contextlib
import hashlib
import socket
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from fastapi import APIRouter, FastAPI, HTTPException, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, PlainTextResponse, Response

from pipelines.drawing import PIPELINE_NAMES, RendererNotInstalledError, html_page, mermaid_js, mermaid_texts, render

PIPELINES_DIR = Path(__file__).resolve().parent
_RENDER_DIR = Path(tempfile.gettempdir()) / "adaptive-retrieval-diagrams"
_RENDER_LOCK = threading.Lock()


def _text(name: str, style: str) -> str:
    if name not in PIPELINE_NAMES:
        raise HTTPException(status_code=404, detail=f"No pipeline '{name}': choose from {list(PIPELINE_NAMES)}")
    if style not in ("compact", "detailed"):
        raise HTTPException(status_code=400, detail=f"style must be 'compact' or 'detailed', got '{style}'")
    return mermaid_texts([name], style=style)[name]  # type: ignore[arg-type]


def diagram_router() -> APIRouter:
    """GET routes for the pipeline diagrams (HTML page, mermaid.js, ``.mmd`` text, ``.svg``)."""
    router = APIRouter(prefix="/diagrams", tags=["diagrams"])

    @router.get("", response_class=HTMLResponse, summary="HTML page rendering both pipelines offline")
    def page(style: str = "compact") -> HTMLResponse:
        texts = {name: _text(name, style) for name in PIPELINE_NAMES}
        return HTMLResponse(html_page(texts, script_src="/diagrams/mermaid.min.js"))

    @router.get("/mermaid.min.js", summary="The locally installed mermaid.js")
    def script() -> FileResponse:
        try:
            return FileResponse(mermaid_js(), media_type="text/javascript")
        except RendererNotInstalledError as err:
            raise HTTPException(status_code=503, detail=str(err)) from err

    @router.get("/{filename}", summary="Mermaid text (name.mmd) or rendered SVG (name.svg) of one pipeline")
    def diagram(filename: str, style: str = "compact") -> Response:
        name, _, suffix = filename.rpartition(".")
        if suffix not in ("mmd", "svg"):
            raise HTTPException(status_code=404, detail=f"Ask for <name>.mmd or <name>.svg, not '{filename}'")
        text = _text(name, style)
        if suffix == "mmd":
            return PlainTextResponse(text)
        out = _RENDER_DIR / f"{name}-{hashlib.sha256(text.encode()).hexdigest()[:16]}.svg"
        # Rendering starts chromium (~2 s): render once per distinct diagram, one render at a time.
        with _RENDER_LOCK:
            if not out.exists():
                try:
                    render(text, out)
                except RendererNotInstalledError as err:
                    raise HTTPException(status_code=503, detail=str(err)) from err
        return FileResponse(out, media_type="image/svg+xml")

    return router


def create_app(pipelines_dir: str | Path | None = None) -> FastAPI:
    """Hayhooks' app serving the wrappers under ``pipelines_dir`` (default: this package's folder), plus the
    diagram routes. The wrappers are deployed when the app starts (its lifespan), as with ``hayhooks run``."""
    from hayhooks.server.app import create_app as create_hayhooks_app
    from hayhooks.settings import settings

    settings.pipelines_dir = str(Path(pipelines_dir or PIPELINES_DIR).resolve())
    app = create_hayhooks_app()
    app.include_router(diagram_router())
    app.add_exception_handler(RequestValidationError, validation_error_response)
    require_deployed(app, Path(settings.pipelines_dir))
    return app


def _encodable(value: Any) -> Any:
    """``value`` with every string made UTF-8-encodable (a lone surrogate becomes ``\\ud800``)."""
    if isinstance(value, str):
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, dict):
        return {_encodable(k): _encodable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_encodable(v) for v in value]
    return value


async def validation_error_response(request: Request, exc: Exception) -> JSONResponse:
    """FastAPI's 422 for an invalid request, with the echoed input made encodable.

    The default handler echoes the input, and a JSON body holding a lone surrogate (``"\\ud800"``, valid JSON)
    made rendering that echo fail with a 500.
    """
    errors = exc.errors() if isinstance(exc, RequestValidationError) else [{"msg": str(exc)}]
    return JSONResponse(
        status_code=422,
        content={
            "detail": _encodable(
                jsonable_encoder(errors, custom_encoder={bytes: lambda b: b.decode("utf-8", "backslashreplace")})
            )
        },
    )


def require_deployed(app: FastAPI, pipelines_dir: Path) -> None:
    """Make startup fail unless every wrapper under ``pipelines_dir`` deployed.

    Hayhooks logs a wrapper whose ``setup()`` raised (missing models, locked store) and serves without its
    routes, so ``/status`` said "Up!" while ``/query/run`` was a 404; raising in the lifespan makes uvicorn
    refuse to start instead, with the reason.
    """
    expected = sorted(d.name for d in pipelines_dir.iterdir() if (d / "pipeline_wrapper.py").is_file())
    inner = app.router.lifespan_context

    @contextlib.asynccontextmanager
    async def checked(app: FastAPI) -> AsyncIterator[None]:
        async with inner(app):
            # This app's routes, not the process-wide registry: a second app in one process deploys nothing.
            paths = {getattr(route, "path", "") for route in app.routes}
            missing = [name for name in expected if f"/{name}/run" not in paths]
            if missing:
                msg = (
                    f"Pipeline(s) {missing} failed to load (see the log above): refusing to serve without them. "
                    "Check the models folder and that no other process holds the store."
                )
                raise RuntimeError(msg)
            yield

    app.router.lifespan_context = checked


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` right now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


@contextlib.contextmanager
def running_server(
    app: FastAPI, host: str = "127.0.0.1", port: int | None = None, timeout: float = 120.0
) -> Iterator[str]:
    """Serve ``app`` with uvicorn in a background thread; yields the base URL once the app has started
    (its lifespan, which deploys the wrappers, has run), and stops the server on exit.

    Usage::

        with running_server(create_app()) as url:
            httpx.post(f"{url}/query/run", json={"query": "..."})
    """
    import uvicorn

    port = port or free_port(host)
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, name="uvicorn", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive():
            msg = f"The server on {host}:{port} stopped while starting (see the log above)"
            raise RuntimeError(msg)
        if time.monotonic() > deadline:
            server.should_exit = True
            msg = f"The server on {host}:{port} did not start within {timeout:.0f} s"
            raise TimeoutError(msg)
        time.sleep(0.05)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)
