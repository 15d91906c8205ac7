"""``adaptive-retrieval serve --workers N``: N serving processes over one index, and the store host that owns it.

A query is mostly Python, so one process uses about one core. With ``--workers N`` the command starts:

- one **store host** (:mod:`adaptive_retrieval.pipelines.processes.store_host`): opens the embedded index (its only
  owner, as before), runs the searches the workers send it, and runs every write: uploads and deletes;
- **N workers**, each the usual app (REST, OpenAI-compatible chat, MCP) on one shared listening socket (the kernel
  hands each new connection to a worker that accepts). A worker's query pipeline holds a
  :class:`~adaptive_retrieval.components.stores.documents.remote_document_store.RemoteDocumentStore` (the host's index
  over a private Unix socket) and opens the graph file read-only; uploads and deletes are forwarded to the host.

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
import time
from pathlib import Path
from typing import Any, TextIO

from adaptive_retrieval.components import settings
from adaptive_retrieval.pipelines.processes.owner_client import bearer_headers
from adaptive_retrieval.pipelines.processes.process_group import (
    HTTP_SOCKET,
    PARENT_ENV,
    STORE_SOCKET,
)

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
#: The modules the supervisor runs (``python -m``) as the store host and as each worker. They build the served app,
#: so they live in ``serving/``, the room above this one: named here, never imported.
HOST_MODULE = "adaptive_retrieval.pipelines.serving.store_host_app"
WORKER_MODULE = "adaptive_retrieval.pipelines.serving.worker_app"


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
        from adaptive_retrieval.components.locations import QDRANT_URL_ENV
        from adaptive_retrieval.components.locations import STORE_SOCKET_ENV as SOCKET_ENV

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

        command = [sys.executable, "-m", HOST_MODULE, *self._common()]
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
        command = [sys.executable, "-m", WORKER_MODULE, "--fd", str(fd), *self._common()]
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


if __name__ == "__main__":
    sys.exit(supervisor_main(sys.argv[2:] if sys.argv[1:2] == ["supervise"] else sys.argv[1:]))
