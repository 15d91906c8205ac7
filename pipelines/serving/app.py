"""The served app: Hayhooks' app for the wrappers, read-only, behind a guard, with MCP in the same process.

``create_app`` builds Hayhooks' app with the pipeline set fixed at start-up (no ``/deploy_files``,
``/deploy-yaml``, ``/undeploy``), and wraps it with: MCP at ``/mcp`` (the ``query`` tool only, on the same
pipelines and store), ``DELETE /sources``, Swagger UI at ``/docs`` served from a package (offline), and
:class:`~adaptive_retrieval.pipelines.serving.security.GuardMiddleware` (optional bearer token, Host check, CORS
allow-list, no cross-site writes, no server paths in 5xx bodies) and
:class:`~adaptive_retrieval.pipelines.serving.request_checks.RequestChecks` (no unknown JSON fields, no chat with a
model that cannot chat). ``GET /diagrams`` is an HTML page rendering both pipelines with mermaid.js served from the
local ``node_modules``; ``GET /diagrams/{name}.mmd`` is the mermaid text and ``GET /diagrams/{name}.svg`` an SVG
rendered on the server by mermaid-cli (kept in memory); ``?detail=sockets`` draws every connection instead of the
overview. ``adaptive-retrieval serve`` runs this app.

Usage::

    from adaptive_retrieval.pipelines.serving.app import create_app
    import uvicorn

    uvicorn.run(create_app(host="127.0.0.1", port=1416), host="127.0.0.1", port=1416)
"""

from __future__ import annotations

import contextlib
import logging
import math
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, FastAPI, HTTPException, Query, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import (
    FileResponse,
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)

from adaptive_retrieval.components import settings as app_settings
from adaptive_retrieval.pipelines.diagrams.drawing import (
    DETAILS,
    PIPELINE_NAMES,
    RendererNotInstalledError,
    html_page,
    mermaid_js,
    mermaid_texts,
    rendered_svg,
)
from adaptive_retrieval.pipelines.serving.request_logs import access_log_on

logger = logging.getLogger(__name__)

#: Hayhooks' own setting: copy every component run's span into the buffer of ``/traces`` (off here unless set).
TRACE_SPANS_ENV = "HAYHOOKS_TRACING_INCLUDE_HAYSTACK_SPANS"
#: The folder of Hayhooks wrappers served by default: it holds only them (Hayhooks serves every folder in it).
PIPELINES_DIR = Path(__file__).resolve().parent / "wrappers"


def _text(name: str, detail: str) -> str:
    if name not in PIPELINE_NAMES:
        raise HTTPException(status_code=404, detail=f"No pipeline '{name}': choose from {list(PIPELINE_NAMES)}")
    if detail not in DETAILS:
        raise HTTPException(status_code=400, detail=f"detail must be one of {list(DETAILS)}, got '{detail}'")
    return mermaid_texts([name], detail=detail)[name]  # type: ignore[arg-type]


def diagram_router() -> APIRouter:
    """GET routes for the pipeline diagrams (HTML page, mermaid.js, ``.mmd`` text, ``.svg``)."""
    router = APIRouter(prefix="/diagrams", tags=["diagrams"])

    @router.get("", response_class=HTMLResponse, summary="HTML page rendering both pipelines offline")
    def page(detail: str = "overview") -> HTMLResponse:
        texts = {name: _text(name, detail) for name in PIPELINE_NAMES}
        return HTMLResponse(html_page(texts, script_src="/diagrams/mermaid.min.js"))

    @router.get("/mermaid.min.js", summary="The locally installed mermaid.js")
    def script() -> FileResponse:
        try:
            return FileResponse(mermaid_js(), media_type="text/javascript")
        except RendererNotInstalledError as err:
            raise HTTPException(status_code=503, detail=str(err)) from err

    @router.get("/{filename}", summary="Mermaid text (name.mmd) or rendered SVG (name.svg) of one pipeline")
    def diagram(filename: str, detail: str = "overview") -> Response:
        name, _, suffix = filename.rpartition(".")
        if suffix not in ("mmd", "svg"):
            raise HTTPException(status_code=404, detail=f"Ask for <name>.mmd or <name>.svg, not '{filename}'")
        text = _text(name, detail)
        if suffix == "mmd":
            return PlainTextResponse(text)
        try:
            return Response(rendered_svg(text), media_type="image/svg+xml")
        except RendererNotInstalledError as err:
            raise HTTPException(status_code=503, detail=str(err)) from err

    return router


def docs_router(openapi_url: str = "/openapi.json", title: str = "Adaptive retrieval") -> APIRouter:
    """``/docs`` (Swagger UI) and ``/redoc`` with their scripts served from the ``fastapi-offline`` package instead
    of a CDN, so the API docs work offline; ``/docs/assets/{name}`` serves those files."""
    import fastapi_offline
    from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html

    static = Path(fastapi_offline.__file__).resolve().parent / "static"
    assets = {p.name: p for p in static.iterdir() if p.is_file()}
    router = APIRouter(include_in_schema=False)

    @router.get("/docs")
    def swagger() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{title} - Swagger UI",
            swagger_js_url="/docs/assets/swagger-ui-bundle.js",
            swagger_css_url="/docs/assets/swagger-ui.css",
            swagger_favicon_url="/docs/assets/favicon.png",
        )

    @router.get("/redoc")
    def redoc() -> HTMLResponse:
        return get_redoc_html(
            openapi_url=openapi_url,
            title=f"{title} - ReDoc",
            redoc_js_url="/docs/assets/redoc.standalone.js",
            redoc_favicon_url="/docs/assets/favicon.png",
            with_google_fonts=False,
        )

    @router.get("/docs/assets/{name}")
    def asset(name: str) -> FileResponse:
        if name not in assets:
            raise HTTPException(status_code=404, detail=f"No docs asset '{name}'")
        return FileResponse(assets[name])

    @router.get("/draw/{name}")
    def draw(name: str) -> RedirectResponse:
        # Hayhooks' own /draw renders through mermaid.ink (a web service): send it to the offline diagrams.
        if name not in PIPELINE_NAMES:
            raise HTTPException(status_code=404, detail=f"No pipeline '{name}': choose from {list(PIPELINE_NAMES)}")
        return RedirectResponse(f"/diagrams/{name}.svg")

    return router


def sources_router() -> APIRouter:
    """``DELETE /sources?source=NAME`` (repeatable): delete indexed sources with the indexing wrapper."""
    from adaptive_retrieval.pipelines.sources import SourceNotFoundError

    router = APIRouter(tags=["sources"])

    @router.delete("/sources", summary="Delete sources: their chunks, summaries, graph records and uploaded file")
    def delete(request: Request, source: Annotated[list[str], Query(min_length=1, max_length=1000)]) -> dict:
        wrapper = request.app.state.pipeline_registry.get("indexing")
        if wrapper is None:
            raise HTTPException(status_code=503, detail="The indexing pipeline is not deployed")
        try:
            return {"deleted": wrapper.delete_sources(source)}
        except SourceNotFoundError as err:
            raise HTTPException(status_code=404, detail=str(err)) from err
        except (ValueError, TypeError) as err:  # a name that cannot name a source (validation.check_source_name)
            raise HTTPException(status_code=400, detail=str(err)) from err

    return router


def _document_bearer_auth(app: FastAPI) -> None:
    """Declare the bearer token in ``app``'s OpenAPI schema, so that ``/docs`` has an "Authorize" button (FastAPI's
    documented way to extend the schema: replace ``app.openapi``)."""
    generate = app.openapi

    def openapi() -> dict:
        schema = generate()
        schema.setdefault("components", {}).setdefault("securitySchemes", {})["bearer"] = {
            "type": "http",
            "scheme": "bearer",
            "description": "The value of $ADAPTIVE_API_TOKEN",
        }
        schema["security"] = [{"bearer": []}]
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def create_app(pipelines_dir: str | Path | None = None, host: str = "127.0.0.1", port: int = 1416) -> FastAPI:
    """The served app: Hayhooks' app for the wrappers under ``pipelines_dir`` (default: this package's folder)
    with the pipeline set fixed at start-up (no deploy/undeploy routes), plus ``/diagrams``, ``DELETE /sources``,
    MCP at ``/mcp`` (same process, same pipelines and store) and offline ``/docs``, behind
    :class:`~adaptive_retrieval.pipelines.serving.security.GuardMiddleware` (token, Host check, CORS allow-list, no
    paths in 5xx bodies).

    ``host`` and ``port`` are where it will be served: the Host check follows ``host`` and the store's owner
    file records the URL. The policy comes from the environment (:meth:`ServingPolicy.from_env`).
    """
    from fastapi.middleware.cors import CORSMiddleware
    from hayhooks.server.app import create_app as create_hayhooks_app
    from hayhooks.settings import settings
    from pydantic import SecretStr

    from adaptive_retrieval.pipelines.processes.ownership import local_store_path, release_store
    from adaptive_retrieval.pipelines.serving.mcp_app import McpEndpoint
    from adaptive_retrieval.pipelines.serving.request_checks import RequestChecks
    from adaptive_retrieval.pipelines.serving.security import GuardMiddleware, ServingPolicy, is_loopback, mark_guarded

    policy = ServingPolicy.from_env(host)
    settings.pipelines_dir = str(Path(pipelines_dir or PIPELINES_DIR).resolve())
    settings.host, settings.port = host, port
    # CORS is the outer app's (one layer for REST and MCP, from the allow-list); Hayhooks' own allows every origin.
    settings.cors_allow_origins = []
    # Hayhooks' durable mode is its fixed pipeline set: loaded once at start-up, no deploy/undeploy routes.
    settings.durable_mode = not policy.allow_deploy
    # uvicorn's per-request log (through Hayhooks' loguru) only when asked for: see access_log_on.
    logging.getLogger("uvicorn.access").disabled = not access_log_on()
    # Hayhooks copies every Haystack span (one per component run, its tags JSON-encoded) into the buffer of its
    # /traces routes: ~6 % of a served query's CPU (scripts/lab/README.md, "Where the server's CPU goes"). Off unless
    # asked for; every answer carries its per-component timings_ms anyway.
    if not app_settings.is_set(TRACE_SPANS_ENV):
        settings.tracing_include_haystack_spans = False
    if policy.allow_deploy:
        logger.warning(
            "$ADAPTIVE_DEV_ALLOW_DEPLOY is set: /deploy_files, /deploy-yaml and /undeploy are served, and anyone "
            "who can reach this server can run code as this user. Development only."
        )
    if not is_loopback(host) and policy.token is None:
        logger.warning("Serving on %s without $ADAPTIVE_API_TOKEN: anyone who can reach it can query and upload", host)
    mark_guarded()
    inner = create_hayhooks_app()
    inner.include_router(diagram_router())
    inner.include_router(sources_router())
    inner.add_exception_handler(RequestValidationError, validation_error_response)
    if policy.token is not None:
        _document_bearer_auth(inner)
        # Hayhooks' /traces routes check their own bearer token: make it the same one.
        settings.tracing_token = SecretStr(policy.token.resolve_value() or "")
    mcp = McpEndpoint(inner.state.pipeline_registry)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # A mounted app's lifespan does not run by itself: Hayhooks' (which deploys in development mode) and
        # the MCP session manager's run here.
        async with inner.router.lifespan_context(inner), mcp.run():
            try:
                yield
            finally:
                if (store := local_store_path()) is not None:
                    release_store(store)

    app = FastAPI(title="Adaptive retrieval", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.pipeline_registry = inner.state.pipeline_registry
    app.state.policy = policy
    app.include_router(docs_router())
    app.add_route("/mcp", mcp, include_in_schema=False)
    app.mount("/", inner)
    app.add_middleware(RequestChecks, registry=inner.state.pipeline_registry)
    app.add_middleware(GuardMiddleware, policy=policy)
    if policy.cors_origins:  # outermost: a preflight carries no token
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(policy.cors_origins),
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["authorization", "content-type", "mcp-protocol-version", "mcp-session-id"],
        )
    return app


#: What a 422 echoes of the input at most: characters of a string, items of a list or object, levels of nesting. A
#: 5 MB query came back whole in its 422 (the client has its input; the echo only shows which value was meant).
ECHO_CHARS, ECHO_ITEMS, ECHO_DEPTH = 200, 20, 4


def _encodable(value: Any, depth: int = 0) -> Any:
    """``value`` with every string made UTF-8-encodable (a lone surrogate becomes ``\\ud800``), every non-finite
    float written as text (JSON has no ``NaN``: echoing ``top_k: NaN`` back failed with a 500), and each string, list
    and object cut to :data:`ECHO_CHARS` / :data:`ECHO_ITEMS` with a note of how much there was."""
    if isinstance(value, str):
        text = value if len(value) <= ECHO_CHARS else f"{value[:ECHO_CHARS]}… ({len(value)} characters)"
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, (dict, list, tuple)) and depth >= ECHO_DEPTH:
        return f"({type(value).__name__} of {len(value)} items, nested too deeply to echo)"
    if isinstance(value, dict):
        items = {_encodable(k, depth + 1): _encodable(v, depth + 1) for k, v in list(value.items())[:ECHO_ITEMS]}
        if len(value) > ECHO_ITEMS:
            items["…"] = f"{len(value) - ECHO_ITEMS} more items"
        return items
    if isinstance(value, (list, tuple)):
        kept = [_encodable(v, depth + 1) for v in list(value)[:ECHO_ITEMS]]
        return kept + ([f"… {len(value) - ECHO_ITEMS} more items"] if len(value) > ECHO_ITEMS else [])
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

        port = free_port()
        with running_server(create_app(port=port), port=port) as url:
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
