"""Every documented configuration of ``adaptive-retrieval serve`` works together: real server processes, real HTTP, a
real MCP client, in bounded time (issue 41).

Four options, two values each: ``--workers`` 1 or 2 × ``$ADAPTIVE_API_TOKEN`` unset or set × the access settings
(none, or ``$ADAPTIVE_CORS_ORIGINS`` with an allowed origin and ``$ADAPTIVE_ALLOWED_HOSTS`` with an extra name) × the
store (the embedded index, or ``QDRANT_URL=:memory:``, qdrant-client's in-process mode). Each configuration that
serves answers a query, an upload (multipart, and chunked with no length), a delete (after which the deleted text is
not found), a chat call and an MCP tool call (the ``mcp`` package's client); it refuses a foreign origin (a write and
``GET /mcp``), a missing token when one is set, a foreign ``Host``; and no serving process maps libtorch (where torch
is installed). ``--workers 2`` with ``QDRANT_URL=:memory:`` is documented as unsupported (the in-process database
lives in one process): ``serve`` must refuse it at once, saying why.

Cost. The full factorial is 12 configurations that serve and 4 refusals. Measured on the 2-core development machine
while about twenty other processes ran (load average ~20, so every figure here is several times a quiet machine's):
the full factorial took 573 s, the covering array below 355 s in the same conditions (0.62×). A configuration that
serves costs its start (16-30 s for one worker, 41-68 s for two, there) and about 10 s of requests; the target for CI
is ~3 minutes on 2 quiet cores, which the full factorial (12 starts) would not meet. So by default the suite runs a
covering array: 6 serving configurations in which every pair of values of any two options occurs at least once
(checked by :func:`test_the_configurations_cover_every_pair`), plus the 2 refusals that cover the pairs of
``--workers 2`` with ``:memory:``. ``ADAPTIVE_TEST_MATRIX=full`` runs the full factorial. One index is built once and
copied for each embedded configuration.

The table of what each configuration answered is printed at the end of the module (``pytest -s``) and written to
``$ADAPTIVE_TEST_MATRIX_TABLE`` when that is set: one row per configuration, one column per operation, each cell the
HTTP status (or ``ok``/``refused``) it got.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from processes import stop

from adaptive_retrieval.pipelines.serving.app import free_port

TOKEN = "matrix-token"
ALLOWED_ORIGIN = "http://localhost:5173"
EXTRA_HOST = "search.example.test"
FOREIGN_ORIGIN = "http://evil.example"
#: Seconds a configuration may take to start on a busy 2-core machine.
START_S = 600
CLI = str(Path(sys.executable).with_name("adaptive-retrieval"))


@dataclass(frozen=True)
class Config:
    """One configuration of ``serve``."""

    workers: int
    token: bool
    access: bool  # custom CORS origins and allowed hosts
    memory: bool  # QDRANT_URL=:memory: instead of the embedded index

    @property
    def name(self) -> str:
        return (
            f"workers={self.workers} token={'set' if self.token else 'unset'} "
            f"access={'custom' if self.access else 'default'} store={':memory:' if self.memory else 'embedded'}"
        )

    @property
    def refused(self) -> bool:
        """Documented as unsupported: the in-process Qdrant lives in one process, so it serves one worker."""
        return self.workers > 1 and self.memory


FULL = [Config(*values) for values in itertools.product((1, 2), (False, True), (False, True), (False, True))]
#: Every pair of values of any two options, in 6 serving configurations; the 2 refusals cover workers=2 × :memory:.
COVERING = [
    Config(1, False, False, False),
    Config(1, True, True, False),
    Config(1, True, False, True),
    Config(1, False, True, True),
    Config(2, True, False, False),
    Config(2, False, True, False),
    Config(2, True, True, True),
    Config(2, False, False, True),
]
CONFIGS = FULL if os.environ.get("ADAPTIVE_TEST_MATRIX") == "full" else COVERING
OPERATIONS = ("start s", "query", "upload", "chunked", "chat", "mcp", "delete", "origin", "token", "host", "torch")


def test_the_configurations_cover_every_pair() -> None:
    """The covering array: every pair of values of any two of the four options occurs in some configuration."""
    options = ("workers", "token", "access", "memory")
    values = {"workers": (1, 2), "token": (False, True), "access": (False, True), "memory": (False, True)}
    for a, b in itertools.combinations(options, 2):
        for pair in itertools.product(values[a], values[b]):
            assert any((getattr(c, a), getattr(c, b)) == pair for c in COVERING), (a, b, pair)


@pytest.fixture(scope="module")
def table() -> Iterator[dict[str, dict[str, str]]]:
    rows: dict[str, dict[str, str]] = {}
    yield rows
    lines = ["| configuration | " + " | ".join(OPERATIONS) + " |", "|---" * (len(OPERATIONS) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(row.get(op, "—") for op in OPERATIONS) + " |" for name, row in rows.items()]
    text = "\n".join(lines)
    print("\n" + text)
    if target := os.environ.get("ADAPTIVE_TEST_MATRIX_TABLE"):
        Path(target).write_text(text + "\n", encoding="utf-8")


def _topic(name: str) -> str:
    from pydoc_data.topics import topics

    return topics[name]


@pytest.fixture(scope="module")
def built_index(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Path:
    """One embedded index (three Python reference pages), built once; each embedded configuration serves a copy."""
    from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    folder = tmp_path_factory.mktemp("matrix-index")
    docs = folder / "docs"
    docs.mkdir()
    for name in ("lambda", "with", "try"):
        (docs / f"{name}.md").write_text(f"# {name.title()}\n\n{_topic(name)}", encoding="utf-8")
    indexing = load_pipeline("indexing", path=str(folder / "index" / "qdrant"))
    for _, instance in indexing.walk():
        if hasattr(instance, "progress_bar"):
            instance.progress_bar = False
    assert index_paths(indexing, [docs])["indexed"] == 3
    del indexing
    release_all_clients()
    return folder / "index"


def _environment(config: Config, folder: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("ADAPTIVE_API_TOKEN", "ADAPTIVE_CORS", "ADAPTIVE_ALLOWED", "QDRANT_", "ADAPTIVE_QDRANT"))
    }
    env.update(XDG_DATA_HOME=str(folder / "xdg"), HAYSTACK_TELEMETRY_ENABLED="False")
    for name in ("ADAPTIVE_UPLOAD_DIR", "ADAPTIVE_GRAPH_PATH", "ADAPTIVE_ACCESS_LOG", "LOG", "HAYHOOKS_LOG_LEVEL"):
        env.pop(name, None)
    if config.token:
        env["ADAPTIVE_API_TOKEN"] = TOKEN
    if config.access:
        env.update(ADAPTIVE_CORS_ORIGINS=ALLOWED_ORIGIN, ADAPTIVE_ALLOWED_HOSTS=EXTRA_HOST)
    if config.memory:
        env["QDRANT_URL"] = ":memory:"
    return env


def _command(config: Config, folder: Path, port: int) -> list[str]:
    store = [] if config.memory else ["--store", str(folder / "index" / "qdrant")]
    return [CLI, "serve", "--workers", str(config.workers), "--port", str(port), *store]


def _multipart(name: str, text: str) -> Iterator[bytes]:
    """A multipart body sent in pieces (httpx sends an iterator chunked, with no content-length)."""
    yield f'--matrix-boundary\r\nContent-Disposition: form-data; name="files"; filename="{name}"\r\n\r\n'.encode()
    for word in text.split(" "):
        yield word.encode() + b" "
    yield b"\r\n--matrix-boundary--\r\n"


def _planted(word: str) -> str:
    return f"# {word}\n\nThe {word} procedure is planted here by the configuration matrix."


def _found(client: httpx.Client, word: str) -> bool:
    answer = client.post("/query/run", json={"query": f"{word} procedure", "top_k": 3})
    answer.raise_for_status()
    return any(word in (d["content"] or "") for d in answer.json()["result"]["documents"])


def _mcp_call(url: str, headers: dict[str, str]) -> str:
    """A `query` tool call with the `mcp` package's client: ``ok`` with documents in the answer, else what failed."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def run() -> str:
        async with (
            streamablehttp_client(f"{url}/mcp", headers=headers) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            result = await session.call_tool("query", {"query": "lambda expression", "top_k": 2})
            text = " ".join(getattr(c, "text", "") for c in result.content)
            if tools != ["query"] or result.isError or "\n[1] " not in text:
                return f"tools {tools}, error {result.isError}: {text[:200]}"
            return "ok"

    try:
        return asyncio.run(asyncio.wait_for(run(), timeout=120))
    except BaseException as err:  # the client wraps HTTP failures in exception groups
        return f"{type(err).__name__}: {err!r}"[:300]


def _serving_pids(process: subprocess.Popen, client: httpx.Client, config: Config, folder: Path) -> list[int]:
    if config.workers == 1:
        return [process.pid]
    pids: set[int] = set()
    for _ in range(40):
        with httpx.Client(base_url=str(client.base_url), headers=client.headers, timeout=60) as fresh:
            pids.add(int(fresh.get("/status").json()["pid"]))
        if len(pids) == config.workers:
            break
    owner = folder / "index" / "qdrant.server.json"
    return [*pids, json.loads(owner.read_text())["pid"]]


def _maps_torch(pid: int) -> bool:
    maps = Path(f"/proc/{pid}/maps")
    return maps.exists() and "libtorch" in maps.read_text(errors="replace")


def _exercise(config: Config, process: subprocess.Popen, url: str, folder: Path, row: dict[str, str]) -> None:
    """Every operation, each recorded in ``row`` (an HTTP status, ``ok`` or what went wrong)."""
    bearer = {"authorization": f"Bearer {TOKEN}"} if config.token else {}
    word, chunked_word = "wombatmatrix", "quokkachunked"
    with httpx.Client(base_url=url, headers=bearer, timeout=300) as client:
        if not config.memory:  # the shared index answers before anything is uploaded
            first = client.post("/query/run", json={"query": "lambda expression anonymous function", "top_k": 3})
            top = first.json()["result"]["documents"][0]["source"] if first.status_code == 200 else ""
            row["query"] = str(first.status_code) if top.endswith("lambda.md") else f"{first.status_code} top {top!r}"
        upload = client.post("/indexing/run", files=[("files", (f"{word}.md", _planted(word)))])
        row["upload"] = str(upload.status_code) if upload.status_code != 200 or _found(client, word) else "200 lost"
        headers = {"content-type": "multipart/form-data; boundary=matrix-boundary"}
        chunked = client.post(
            "/indexing/run", content=_multipart(f"{chunked_word}.md", _planted(chunked_word)), headers=headers
        )
        found = chunked.status_code == 200 and _found(client, chunked_word)
        row["chunked"] = str(chunked.status_code) if chunked.status_code != 200 or found else "200 lost"
        if config.memory:
            answer = client.post("/query/run", json={"query": f"{word} procedure", "top_k": 3})
            row["query"] = str(answer.status_code) if answer.status_code != 200 or _found(client, word) else "empty"
        chat = client.post(
            "/v1/chat/completions",
            json={"model": "query", "messages": [{"role": "user", "content": f"What is the {word} procedure?"}]},
        )
        content = chat.json()["choices"][0]["message"]["content"] if chat.status_code == 200 else ""
        row["chat"] = str(chat.status_code) if chat.status_code != 200 or word in content else "200 without it"
        row["mcp"] = _mcp_call(url, bearer)
        deleted = client.request("DELETE", "/sources", params={"source": f"{word}.md"})
        gone = deleted.status_code == 200 and not _found(client, word)
        row["delete"] = str(deleted.status_code) if deleted.status_code != 200 or gone else "200 still found"
        foreign = {"origin": FOREIGN_ORIGIN}
        write = client.post("/query/run", json={"query": "lambda"}, headers=foreign)
        with client.stream("GET", "/mcp", headers={**foreign, "accept": "text/event-stream"}) as stream:
            mcp_get = stream.status_code
        row["origin"] = f"{write.status_code}/{mcp_get}"
        if config.access:
            allowed = client.post("/query/run", json={"query": "lambda"}, headers={"origin": ALLOWED_ORIGIN})
            grant = allowed.headers.get("access-control-allow-origin") == ALLOWED_ORIGIN
            row["origin"] += f", allowed {allowed.status_code}" + ("" if grant else " without CORS grant")
        port = httpx.URL(url).port
        extra = client.get("/status", headers={"host": f"{EXTRA_HOST}:{port}"}).status_code
        other = client.get("/status", headers={"host": f"other.example:{port}"}).status_code
        row["host"] = f"{extra}/{other}"
        without = httpx.post(f"{url}/query/run", json={"query": "lambda"}, timeout=60).status_code
        row["token"] = str(without)
        if Path("/proc/self/maps").exists():
            loaded = [pid for pid in _serving_pids(process, client, config, folder) if _maps_torch(pid)]
            row["torch"] = f"loaded in {loaded}" if loaded else "no"


def _expected(config: Config) -> dict[str, str]:
    origin = "403/403" + (", allowed 200" if config.access else "")
    return {
        "query": "200",
        "upload": "200",
        "chunked": "200",
        "chat": "200",
        "mcp": "ok",
        "delete": "200",
        "origin": origin,
        "host": "200/421" if config.access else "421/421",
        "token": "401" if config.token else "200",
    }


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name.replace(" ", ",").replace("=", "-"))
def test_configuration(config: Config, built_index: Path, table: dict[str, dict[str, str]], tmp_path: Path) -> None:
    row = table.setdefault(config.name, {})
    env = _environment(config, tmp_path)
    port = free_port()
    if config.refused:
        done = subprocess.run(
            _command(config, tmp_path, port), env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120
        )
        row["start s"] = "refused" if done.returncode == 1 else f"exit {done.returncode}"
        assert done.returncode == 1, (done.stdout[-1000:], done.stderr[-2000:])
        assert "QDRANT_URL=:memory: is in one process only" in done.stderr and "Traceback" not in done.stderr
        return
    if not config.memory:
        shutil.copytree(built_index, tmp_path / "index")
    log = (tmp_path / "serve.log").open("w")
    start = time.monotonic()
    process = subprocess.Popen(
        _command(config, tmp_path, port), env=env, cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, text=True
    )
    url = f"http://127.0.0.1:{port}"
    bearer = {"authorization": f"Bearer {TOKEN}"} if config.token else {}
    try:
        while True:
            assert process.poll() is None, (tmp_path / "serve.log").read_text()[-3000:]
            assert time.monotonic() - start < START_S, f"not serving after {START_S} s"
            try:
                status = httpx.get(f"{url}/status", headers=bearer, timeout=5)
                if status.status_code == 200 and len(status.json().get("pipelines", [])) >= 3:
                    break
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.5)
        row["start s"] = f"{time.monotonic() - start:.0f}"
        _exercise(config, process, url, tmp_path, row)
    finally:
        stop(process)
        log.close()
    expected = _expected(config)
    wrong = {op: (row.get(op), want) for op, want in expected.items() if row.get(op) != want}
    if row.get("torch") not in (None, "no"):
        wrong["torch"] = (row["torch"], "no")
    assert not wrong, (wrong, (tmp_path / "serve.log").read_text()[-3000:])
