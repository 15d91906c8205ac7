"""A worker of ``adaptive-retrieval serve --workers N`` (see :mod:`~adaptive_retrieval.pipelines.processes.workers`):
the usual app with the query pipeline, its writes (uploads, deletes) forwarded to the store host's app over a private
Unix socket, ``/status`` naming the worker and the host's pipelines, and every response naming the worker.

Run by the supervisor, not by hand::

    python -m adaptive_retrieval.pipelines.serving.worker_app --fd 3 --runtime DIR --host 127.0.0.1 --port 1416
"""

from __future__ import annotations

import argparse
import logging
import os
import threading
import time
from pathlib import Path
from typing import Any

from adaptive_retrieval.components import settings
from adaptive_retrieval.pipelines.processes import garbage_collection
from adaptive_retrieval.pipelines.processes.owner_client import bearer_headers
from adaptive_retrieval.pipelines.processes.process_group import HTTP_SOCKET, die_with_parent, private_pipelines_dir
from adaptive_retrieval.pipelines.processes.torch_free import import_haystack_without_torch
from adaptive_retrieval.pipelines.processes.workers import (
    WORKER_COUNT_ENV,
    WORKER_HEADER,
    WORKER_INDEX_ENV,
    host_origin,
)

logger = logging.getLogger(__name__)

#: Routes that write: a worker forwards them to the store host. ``/files`` is Hayhooks' alias of ``/v1/files``: a
#: worker that served it itself answered "processed" and stored nothing (no indexing wrapper in a worker).
_FORWARDED_PATHS = frozenset({"/v1/files", "/files", "/sources"})
_FORWARDED_PREFIXES = ("/indexing/", "/v1/files/", "/files/")


#: Hop-by-hop headers (RFC 9110 7.6.1) and the framing of the body: a forwarded request or answer is framed anew on
#: its own connection. A chunked upload forwarded with its ``transfer-encoding`` beside a new length was refused by
#: the host as an invalid request (400).
_HOP_BY_HOP = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"te", b"trailer", b"upgrade"}
)


#: Headers a worker sets itself on a forwarded request (a client's own are dropped).
_FORWARDED_FOR = frozenset({b"x-forwarded-proto", b"x-forwarded-for"})


class ClientGoneError(Exception):
    """The client disconnected while its upload was being forwarded."""


class ForwardWrites:
    """ASGI middleware of a worker: uploads and deletes go to the store host's app (its private socket), with the
    request's method, path, query, headers and body unchanged; everything else is served here.

    The body is streamed through in the pieces it arrives in, never held whole (a 120 MB upload costs the worker a
    few pieces of 64 KB, not 120 MB), and so is the answer. A body of known length keeps its ``content-length``; a
    chunked one is sent on chunked.
    """

    def __init__(self, app: Any, http_socket: str, origin: str) -> None:
        import httpx

        from adaptive_retrieval.pipelines.serving.security import PUBLIC_REASON_HEADER

        self.app = app
        self.public_reason = PUBLIC_REASON_HEADER.encode()
        # A new connection per forwarded write (a Unix socket: microseconds). A kept-alive one could be closed by the
        # host's uvicorn (5 s idle) just as the next upload was sent on it: that upload failed with an empty
        # ReadError and a 503 (seen once in 12 uploads of a load test). Writes are rare; nothing is kept alive.
        self.client = httpx.AsyncClient(
            transport=httpx.AsyncHTTPTransport(uds=http_socket, limits=httpx.Limits(max_keepalive_connections=0)),
            base_url=origin,
            timeout=None,
        )

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or not forwarded(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        import httpx

        async def body() -> Any:
            while True:
                message = await receive()
                if message["type"] == "http.disconnect":
                    raise ClientGoneError
                if chunk := message.get("body", b""):
                    yield chunk
                if not message.get("more_body"):
                    return

        path = scope["path"]
        headers = [(k, v) for k, v in scope["headers"] if k.lower() not in _HOP_BY_HOP | _FORWARDED_FOR]
        # The scheme the client used (https behind a TLS proxy, as uvicorn resolved it here): the host's guard
        # compares a page's Origin with scheme://Host, and trusts these headers on its private socket only.
        headers.append((b"x-forwarded-proto", scope.get("scheme", "http").encode()))
        if client := scope.get("client"):
            headers.append((b"x-forwarded-for", str(client[0]).encode()))
        url = path + (f"?{scope['query_string'].decode('latin-1')}" if scope.get("query_string") else "")
        request = self.client.build_request(scope["method"], url, headers=headers, content=body())
        try:
            response = await self.client.send(request, stream=True)
        except ClientGoneError:
            logger.info("The client went away during a forwarded %s %s", scope["method"], path)
            return
        except httpx.HTTPError as err:
            logger.error("The store host did not answer a forwarded %s %s: %s", scope["method"], path, err)
            detail = b'{"detail":"The server\'s store process is restarting: try again in a moment"}'
            await _send(send, 503, detail, [(b"retry-after", b"5"), (self.public_reason, b"1")])
            return
        try:
            kept = [(k, v) for k, v in response.headers.raw if k.lower() not in _HOP_BY_HOP]
            if response.status_code >= 500:
                # The host's guard has already replaced any 5xx body that was not meant for the client: what comes
                # back is a deliberate reason (507 disk full, 503 indexer busy), which this worker's guard passes on.
                kept.append((self.public_reason, b"1"))
            await send({"type": "http.response.start", "status": response.status_code, "headers": kept})
            async for chunk in response.aiter_raw():
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            await response.aclose()


def forwarded(path: str) -> bool:
    """Whether a worker forwards a request for ``path`` to the store host: the routes that write (uploads, the
    OpenAI files API and its unversioned alias, deletes)."""
    return path in _FORWARDED_PATHS or path.startswith(_FORWARDED_PREFIXES)


async def _send(send: Any, status: int, body: bytes, headers: list[tuple[bytes, bytes]]) -> None:
    if not any(k.lower() == b"content-type" for k, _ in headers):
        headers = [*headers, (b"content-type", b"application/json")]
    headers = [*headers, (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class WorkerHeader:
    """ASGI middleware: every response names the worker that answered (``X-Adaptive-Worker: <n>``)."""

    def __init__(self, app: Any, index: int) -> None:
        self.app = app
        self.header = (WORKER_HEADER.lower().encode(), str(index).encode())

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def named(message: dict) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), self.header]}
            await send(message)

        await self.app(scope, receive, named)


def worker_app(runtime: Path, index: int, count: int, host: str, port: int, pipelines_dir: str | None) -> Any:
    """The app of worker ``index``: the query pipeline here, writes forwarded to the host, ``/status`` naming the
    worker and the host's pipelines."""
    import httpx
    from fastapi.routing import APIRoute
    from starlette.middleware import Middleware

    from adaptive_retrieval.pipelines.serving.app import PIPELINES_DIR, create_app
    from adaptive_retrieval.pipelines.serving.security import GuardMiddleware

    source = Path(pipelines_dir or PIPELINES_DIR).resolve()
    # Every wrapper but the indexing one, which runs in the store host.
    names = sorted(d.name for d in source.iterdir() if (d / "pipeline_wrapper.py").is_file() and d.name != "indexing")
    app = create_app(private_pipelines_dir(runtime, names, source), host=host, port=port)
    http_socket = str(runtime / HTTP_SOCKET)
    origin = host_origin(host, port)
    # The host's app has the same guard as every worker: its /status needs the token too when one is set.
    host_client = httpx.AsyncClient(
        transport=httpx.AsyncHTTPTransport(uds=http_socket), base_url=origin, timeout=5, headers=bearer_headers()
    )

    async def status() -> dict:
        pipelines = set(app.state.pipeline_registry.get_names())
        try:
            answer = await host_client.get("/status")
            pipelines |= set(answer.json().get("pipelines", []))
        except (httpx.HTTPError, ValueError) as err:
            logger.warning("The store host did not answer /status: %s", err)
        return {"status": "Up!", "pipelines": sorted(pipelines), "worker": index, "workers": count, "pid": os.getpid()}

    # Before the mounted Hayhooks app, whose own /status knows only this worker's pipelines.
    app.router.routes.insert(0, APIRoute("/status", status, methods=["GET"], summary="Pipelines and this worker"))
    # Writes are forwarded after the guard (token, Host, cross-site checks) has passed them, before anything else.
    guard = next(i for i, m in enumerate(app.user_middleware) if m.cls is GuardMiddleware)
    app.user_middleware.insert(guard + 1, Middleware(ForwardWrites, http_socket=http_socket, origin=origin))
    app.add_middleware(WorkerHeader, index=index)
    return app


def worker_main(argv: list[str] | None = None) -> int:
    """A worker process: serve the app on the listening socket the supervisor passed (``--fd``)."""
    parser = argparse.ArgumentParser(description="a worker of `adaptive-retrieval serve --workers N`")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--runtime", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pipelines-dir", default=None)
    args = parser.parse_args(argv)
    die_with_parent()
    index, count = settings.whole(WORKER_INDEX_ENV), settings.whole(WORKER_COUNT_ENV, minimum=1)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s worker-{index} %(levelname)s %(name)s: %(message)s")
    # Haystack logs "Running component ..." at INFO for every component of every query (15 lines a request, ~3 % of
    # the server's CPU): from there the worker's log keeps warnings, as the one-process server's log does.
    logging.getLogger("haystack.core.pipeline.pipeline").setLevel(logging.WARNING)

    import_haystack_without_torch()  # before anything imports Haystack (about 200 MB less per worker)
    import uvicorn

    from adaptive_retrieval.pipelines.serving.request_logs import access_log_on, quiet_request_logs

    quiet_request_logs()

    runtime = Path(args.runtime)
    app = worker_app(runtime, index, count, args.host, args.port, args.pipelines_dir)
    garbage_collection.for_serving()
    log_level = "info" if access_log_on() else "warning"  # info: uvicorn's access log, one line per request
    server = uvicorn.Server(uvicorn.Config(app, fd=args.fd, log_level=log_level, lifespan="on"))

    def mark_ready() -> None:
        while not server.started and not server.should_exit:
            time.sleep(0.05)
        (runtime / f"worker-{index}.ready").write_text(str(os.getpid()), encoding="utf-8")

    threading.Thread(target=mark_ready, daemon=True).start()
    server.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(worker_main())
