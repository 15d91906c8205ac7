"""``adaptive-retrieval serve --workers N``: N serving processes over one index, and the store host that owns it.

A query is mostly Python, so one process uses about one core. With ``--workers N`` the command starts:

- one **store host** (:mod:`adaptive_retrieval.pipelines.processes.store_host`): opens the embedded index (its only
  owner, as before), runs the searches the workers send it, and runs every write: uploads and deletes;
- **N workers**, each the usual app (REST, OpenAI-compatible chat, MCP) on one shared listening socket (the kernel
  hands each new connection to a worker that accepts). A worker's query pipeline holds a
  :class:`~adaptive_retrieval.components.stores.remote_document_store.RemoteDocumentStore` (the host's index over a
  private Unix socket) and opens the graph file read-only; uploads and deletes are forwarded to the host.

Writes are made once, by the host, and a worker's next search runs on the host's shard: an upload is searchable from
every worker as soon as its answer has come back (the bound the README states). With ``$QDRANT_URL`` the workers
search the Qdrant server directly and the host is only the indexer. A worker that dies is started again; so is the
host (the workers' store calls wait for it, ``$ADAPTIVE_STORE_HOST_WAIT_S``). Every response carries the header
``X-Adaptive-Worker`` (which worker answered), and ``GET /status`` names it too.

Usage::

    adaptive-retrieval serve --workers 2 --store .adaptive/qdrant
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from adaptive_retrieval.components import settings
from adaptive_retrieval.pipelines.processes import garbage_collection
from adaptive_retrieval.pipelines.processes.owner_client import bearer_headers
from adaptive_retrieval.pipelines.processes.process_group import (
    HTTP_SOCKET,
    PARENT_ENV,
    STORE_SOCKET,
    die_with_parent,
    private_pipelines_dir,
)
from adaptive_retrieval.pipelines.processes.torch_free import import_haystack_without_torch

logger = logging.getLogger(__name__)

#: The default worker count is the cores this process may use, at most this many.
MAX_DEFAULT_WORKERS = 4
#: Environment variables a worker reads: its number, and the count.
WORKER_INDEX_ENV, WORKER_COUNT_ENV = "ADAPTIVE_WORKER_INDEX", "ADAPTIVE_WORKER_COUNT"
#: Response header naming the worker that answered.
WORKER_HEADER = "X-Adaptive-Worker"
#: ONNX Runtime threads per session (components/models); a worker's default is its share of the cores.
ORT_THREADS_ENV = "ADAPTIVE_ORT_THREADS"
#: Seconds the host and each worker may take to start (models load here).
START_TIMEOUT_S = 600.0
#: Routes that write: a worker forwards them to the store host. ``/files`` is Hayhooks' alias of ``/v1/files``: a
#: worker that served it itself answered "processed" and stored nothing (no indexing wrapper in a worker).
_FORWARDED_PATHS = frozenset({"/v1/files", "/files", "/sources"})
_FORWARDED_PREFIXES = ("/indexing/", "/v1/files/", "/files/")


def host_origin(host: str, port: int) -> str:
    """The public origin (``http://host:port``, a wildcard bind as loopback): the Host header of a request the
    supervisor or a worker sends the host over its socket, which the host's guard checks like any other."""
    host = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def default_cores() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_workers() -> int:
    """The cores this process may run on, at most :data:`MAX_DEFAULT_WORKERS`."""
    return max(1, min(default_cores(), MAX_DEFAULT_WORKERS))


# -- in a worker ----------------------------------------------------------------------------------------------------


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

    from adaptive_retrieval.pipelines.serving.app import access_log_on, quiet_request_logs

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


# -- the supervisor -------------------------------------------------------------------------------------------------


RUNTIME_PREFIX = "adaptive-serve-"


def remove_stale_runtimes(base: Path) -> None:
    """Remove this user's private folders of earlier ``serve --workers`` runs whose supervisor is gone (a SIGKILLed
    ``serve`` cannot remove its own)."""
    import shutil

    for folder in base.glob(RUNTIME_PREFIX + "*"):
        try:
            if folder.stat().st_uid != os.getuid():
                continue
            pid = int((folder / "supervisor.pid").read_text(encoding="utf-8"))
            os.kill(pid, 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
        except (OSError, ValueError):  # another user's, being created, or alive
            continue


class WorkersError(RuntimeError):
    """The host or a worker could not start, or kept dying; the message says which and where its log is."""


class Supervisor:
    """Starts the store host and ``count`` workers on one listening socket, restarts any that dies, stops them all
    on SIGTERM/SIGINT."""

    def __init__(self, count: int, host: str, port: int, pipelines_dir: str | None = None) -> None:
        self.count, self.host, self.port, self.pipelines_dir = count, host, port, pipelines_dir
        base = settings.text("XDG_RUNTIME_DIR")
        private = base if base and os.access(base, os.W_OK) else None
        remove_stale_runtimes(Path(private or tempfile.gettempdir()))
        self.runtime = Path(tempfile.mkdtemp(prefix=RUNTIME_PREFIX, dir=private))  # mode 0700
        (self.runtime / "supervisor.pid").write_text(str(os.getpid()), encoding="utf-8")
        self.listener = socket.create_server((host, port), backlog=2048, reuse_port=False)
        self.listener.set_inheritable(True)
        self.host_process: subprocess.Popen | None = None
        self.workers: dict[int, subprocess.Popen] = {}
        self.deaths: list[float] = []
        self.stopping = False

    def _env(self, index: int | None = None) -> dict[str, str]:
        # Names only: the supervisor stays a small process (no Haystack, no models).
        from adaptive_retrieval.components.stores.locations import QDRANT_URL_ENV
        from adaptive_retrieval.components.stores.locations import STORE_SOCKET_ENV as SOCKET_ENV

        env = {**os.environ, PARENT_ENV: str(os.getpid()), WORKER_COUNT_ENV: str(self.count)}
        env.pop(SOCKET_ENV, None)
        if index is not None:
            env[WORKER_INDEX_ENV] = str(index)
            # N workers share the cores: each ONNX session gets its share of threads unless the user chose.
            env.setdefault(ORT_THREADS_ENV, str(max(1, default_cores() // self.count)))
            if not settings.text(QDRANT_URL_ENV):
                env[SOCKET_ENV] = str(self.runtime / STORE_SOCKET)
        return env

    def _common(self) -> list[str]:
        extra = ["--pipelines-dir", self.pipelines_dir] if self.pipelines_dir else []
        return ["--runtime", str(self.runtime), "--host", self.host, "--port", str(self.port), *extra]

    def start_host(self) -> None:
        """Start the store host and wait until its app answers on its socket."""
        import httpx

        command = [sys.executable, "-m", "adaptive_retrieval.pipelines.processes.workers", "host", *self._common()]
        self.host_process = subprocess.Popen(command, env=self._env())
        transport = httpx.HTTPTransport(uds=str(self.runtime / HTTP_SOCKET))
        # The host's guard requires the token like any server's: without it every poll was a 401 and a
        # `serve --workers N` with $ADAPTIVE_API_TOKEN never started.
        origin = host_origin(self.host, self.port)
        client = httpx.Client(transport=transport, base_url=origin, timeout=5, headers=bearer_headers())
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline and not self.stopping:
            if self.host_process.poll() is not None:
                msg = f"The store host exited with status {self.host_process.returncode} while starting (see above)"
                raise WorkersError(msg)
            try:
                answer = client.get("/status")
            except httpx.HTTPError:
                answer = None
            if answer is not None and answer.status_code in (401, 403, 421):
                # Refused by the host's guard: waiting would not change that. Say why now, not in 600 s.
                msg = f"The store host refused the supervisor's /status ({answer.status_code}: {answer.text[:300]})"
                raise WorkersError(msg)
            try:
                if answer is not None and "indexing" in answer.json().get("pipelines", []):
                    return
            except ValueError:
                pass
            time.sleep(0.2)
        if self.stopping:
            return
        raise WorkersError(f"The store host did not start within {START_TIMEOUT_S:.0f} s")

    def start_worker(self, index: int) -> subprocess.Popen:
        """Start worker ``index`` on the shared listening socket."""
        (self.runtime / f"worker-{index}.ready").unlink(missing_ok=True)
        fd = self.listener.fileno()
        command = [
            sys.executable,
            "-m",
            "adaptive_retrieval.pipelines.processes.workers",
            "--fd",
            str(fd),
            *self._common(),
        ]
        process = subprocess.Popen(command, env=self._env(index), pass_fds=(fd,))
        self.workers[index] = process
        return process

    def wait_workers(self) -> None:
        """Wait until every worker serves (each writes its ready file once its app has started)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.stopping and not all((self.runtime / f"worker-{i}.ready").exists() for i in self.workers):
            for i, process in self.workers.items():
                if process.poll() is not None:
                    raise WorkersError(f"Worker {i} exited with status {process.returncode} while starting")
            if time.monotonic() > deadline:
                raise WorkersError(f"The workers did not start within {START_TIMEOUT_S:.0f} s")
            time.sleep(0.2)

    def _died(self, what: str, code: int | None) -> None:
        now = time.monotonic()
        self.deaths = [t for t in self.deaths if now - t < 60] + [now]
        logger.error("%s exited with status %s: starting it again", what, code)
        if len(self.deaths) > 3 * (self.count + 1):
            raise WorkersError("The server's processes keep dying (more than one restart each per minute): stopping")

    def watch(self) -> None:
        """Restart whatever dies until asked to stop."""
        while not self.stopping:
            time.sleep(0.5)
            if self.stopping:
                return
            if self.host_process is not None and self.host_process.poll() is not None:
                self._died("The store host", self.host_process.returncode)
                self.start_host()
            for index, process in list(self.workers.items()):
                if process.poll() is not None and not self.stopping:
                    self._died(f"Worker {index}", process.returncode)
                    self.start_worker(index)

    def stop(self) -> None:
        """Stop the workers, then the host (which flushes the index and removes its owner file)."""
        self.stopping = True
        for process in self.workers.values():
            if process.poll() is None:
                process.terminate()
        for process in self.workers.values():
            _wait(process)
        if self.host_process is not None and self.host_process.poll() is None:
            self.host_process.terminate()
            _wait(self.host_process)
        self.listener.close()
        for path in sorted(self.runtime.rglob("*"), reverse=True):
            path.unlink() if not path.is_dir() or path.is_symlink() else path.rmdir()
        self.runtime.rmdir()


def _wait(process: subprocess.Popen, timeout: float = 60.0) -> None:
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def serve_workers(count: int, host: str, port: int, pipelines_dir: str | None, out: TextIO) -> int:
    """Run ``count`` workers and the store host until SIGTERM/SIGINT (see the module docstring).

    The command line has imported the whole package by now: this process becomes a lean supervisor (``exec``, same
    pid, ~20 MB instead of ~300 MB) that imports nothing but this module.
    """
    out.flush()
    extra = ["--pipelines-dir", pipelines_dir] if pipelines_dir else []
    command = ["--count", str(count), "--host", host, "--port", str(port), *extra]
    os.execv(sys.executable, [sys.executable, "-m", __name__, "supervise", *command])
    return 0  # not reached


def supervise(count: int, host: str, port: int, pipelines_dir: str | None, out: TextIO) -> int:
    """The supervisor's loop: start the host, then the workers; restart what dies; stop all on SIGTERM/SIGINT."""
    supervisor = Supervisor(count, host, port, pipelines_dir)

    def stop(signum: int, _frame: Any) -> None:
        supervisor.stopping = True

    previous = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        supervisor.start_host()
        for index in range(count):
            supervisor.start_worker(index)
        supervisor.wait_workers()
        print(
            f"serving on http://{host}:{port} with {count} workers (docs at /docs, MCP at /mcp, diagrams at /diagrams)",
            file=out,
        )
        out.flush()
        supervisor.watch()
    finally:
        supervisor.stop()
        for s, handler in previous.items():
            signal.signal(s, handler)
    return 0


def supervisor_main(argv: list[str]) -> int:
    """``python -m adaptive_retrieval.pipelines.processes.workers supervise ...`` (what :func:`serve_workers` execs)."""
    parser = argparse.ArgumentParser(description="supervisor of `adaptive-retrieval serve --workers N`")
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pipelines-dir", default=None)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s serve %(levelname)s %(name)s: %(message)s")
    try:
        return supervise(args.count, args.host, args.port, args.pipelines_dir, sys.stdout)
    except (WorkersError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def host_main(argv: list[str]) -> int:
    """The store host (:func:`adaptive_retrieval.pipelines.processes.store_host.main`), started with Haystack
    imported without torch (:mod:`~adaptive_retrieval.pipelines.processes.torch_free`): the host module imports
    Haystack at its top."""
    import_haystack_without_torch()
    from adaptive_retrieval.pipelines.processes.store_host import main

    return main(argv)


if __name__ == "__main__":
    command = sys.argv[1:2]
    if command == ["supervise"]:
        sys.exit(supervisor_main(sys.argv[2:]))
    sys.exit(host_main(sys.argv[2:]) if command == ["host"] else worker_main())
