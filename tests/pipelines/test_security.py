"""Serving securely, over real HTTP on loopback: the bearer token on REST, chat and MCP, the CORS allow-list,
5xx bodies without server paths, the policy's parsing, and telemetry off in the entry points."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, HTTPException

from adaptive_retrieval.pipelines.serving.security import GuardMiddleware, ServingPolicy, host_name, is_loopback
from adaptive_retrieval.pipelines.text_answer import NO_PASSAGE

REPO = Path(__file__).resolve().parents[2]
TOKEN = "s3cret-token-for-tests"
ALLOWED_ORIGIN = "http://localhost:5173"


@pytest.fixture(scope="module")
def guarded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``adaptive-retrieval serve``'s app over an empty store, with a token and one allowed browser origin."""
    from adaptive_retrieval.pipelines.serving.app import create_app, free_port, running_server

    folder = tmp_path_factory.mktemp("guarded")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTIVE_QDRANT_PATH", str(folder / "qdrant"))
        mp.setenv("ADAPTIVE_API_TOKEN", TOKEN)
        mp.setenv("ADAPTIVE_CORS_ORIGINS", ALLOWED_ORIGIN)
        mp.delenv("QDRANT_URL", raising=False)
        port = free_port()
        app = create_app(port=port)
        with running_server(app, port=port) as url, httpx.Client(base_url=url, timeout=120) as client:
            yield {"url": url, "client": client, "folder": folder}


CHAT = {"model": "query", "messages": [{"role": "user", "content": "What is a lambda?"}]}


def test_every_route_needs_the_token(guarded: dict[str, Any]) -> None:
    client = guarded["client"]
    calls = [
        ("post", "/query/run", {"json": {"query": "lambda"}}),
        ("post", "/v1/chat/completions", {"json": CHAT}),
        ("post", "/indexing/run", {"files": [("files", ("a.md", b"# A\n\ntext"))]}),
        ("get", "/status", {}),
        ("get", "/diagrams/query.mmd", {}),
        ("delete", "/sources", {"params": {"source": "a.md"}}),
        ("post", "/mcp", {"json": {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}}),
    ]
    for wrong in ({}, {"authorization": "Bearer nope"}, {"authorization": TOKEN}):
        for method, path, kwargs in calls:
            response = getattr(client, method)(path, headers=wrong, **kwargs)
            assert response.status_code == 401, f"{method} {path} {wrong}: {response.status_code}"
            assert response.headers["www-authenticate"] == "Bearer"
    assert not (guarded["folder"] / "uploads").exists(), "a refused upload must not be written"
    bearer = {"authorization": f"Bearer {TOKEN}"}
    assert client.post("/query/run", json={"query": "lambda"}, headers=bearer).status_code == 200
    chat = client.post("/v1/chat/completions", json=CHAT, headers=bearer)
    assert chat.status_code == 200 and chat.json()["choices"][0]["message"]["content"].endswith(NO_PASSAGE)
    assert client.get("/docs").status_code == 200, "the API docs stay readable without the token"
    schema = client.get("/openapi.json").json()
    assert schema["components"]["securitySchemes"]["bearer"]["scheme"] == "bearer"


def _mcp_tools(url: str, headers: dict[str, str] | None) -> list[str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def run() -> list[str]:
        async with (
            streamablehttp_client(f"{url}/mcp", headers=headers) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return [tool.name for tool in (await session.list_tools()).tools]

    return asyncio.run(run())


def test_mcp_client_needs_the_token(guarded: dict[str, Any]) -> None:
    assert _mcp_tools(guarded["url"], {"Authorization": f"Bearer {TOKEN}"}) == ["query"]
    with pytest.raises(BaseException) as refused:  # the MCP client raises an exception group around the 401
        _mcp_tools(guarded["url"], None)
    assert "401" in repr(refused.value) or "Unauthorized" in repr(refused.value), repr(refused.value)


def test_cors_allows_only_the_listed_origin(guarded: dict[str, Any]) -> None:
    client = guarded["client"]
    ask = {"access-control-request-method": "POST", "access-control-request-headers": "authorization,content-type"}
    allowed = client.options("/query/run", headers={"origin": ALLOWED_ORIGIN, **ask})
    assert allowed.status_code == 200 and allowed.headers["access-control-allow-origin"] == ALLOWED_ORIGIN
    refused = client.options("/query/run", headers={"origin": "http://evil.example", **ask})
    assert refused.headers.get("access-control-allow-origin") is None
    assert "*" not in allowed.headers.get("access-control-allow-origin", "")


def _inner_paths(app: FastAPI) -> set[str]:
    """Paths of the Hayhooks app mounted at ``/`` inside ``create_app``'s app."""
    return set(app.routes[-1].app.openapi()["paths"])


def test_dev_flag_brings_deploy_routes_back_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from adaptive_retrieval.pipelines.serving.app import create_app

    empty = tmp_path / "no-pipelines"
    empty.mkdir()
    monkeypatch.setenv("ADAPTIVE_QDRANT_PATH", str(tmp_path / "qdrant"))
    monkeypatch.delenv("ADAPTIVE_DEV_ALLOW_DEPLOY", raising=False)
    assert not {"/deploy_files", "/deploy-yaml", "/undeploy/{pipeline_name}"} & _inner_paths(create_app(empty))
    monkeypatch.setenv("ADAPTIVE_DEV_ALLOW_DEPLOY", "1")
    with caplog.at_level("WARNING", logger="adaptive_retrieval.pipelines.serving.app"):
        paths = _inner_paths(create_app(empty))
    assert {"/deploy_files", "/deploy-yaml"} <= paths
    assert any("run code" in r.getMessage() for r in caplog.records), caplog.text
    monkeypatch.delenv("ADAPTIVE_DEV_ALLOW_DEPLOY")
    create_app(empty)  # leave Hayhooks' process-wide settings read-only for the next app


def test_component_spans_go_to_hayhooks_traces_only_when_asked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from hayhooks.settings import settings

    from adaptive_retrieval.pipelines.serving.app import TRACE_SPANS_ENV, create_app

    empty = tmp_path / "no-pipelines"
    empty.mkdir()
    monkeypatch.setenv("ADAPTIVE_QDRANT_PATH", str(tmp_path / "qdrant"))
    monkeypatch.delenv(TRACE_SPANS_ENV, raising=False)
    before = settings.tracing_include_haystack_spans
    try:
        settings.tracing_include_haystack_spans = True  # Hayhooks' default
        create_app(empty)
        assert settings.tracing_include_haystack_spans is False  # a span copied per component run: off by default
        monkeypatch.setenv(TRACE_SPANS_ENV, "true")
        settings.tracing_include_haystack_spans = True  # what Hayhooks reads from that variable at import
        create_app(empty)
        assert settings.tracing_include_haystack_spans is True  # the user's own setting is kept
    finally:
        settings.tracing_include_haystack_spans = before


def test_server_errors_carry_no_paths() -> None:
    from adaptive_retrieval.pipelines.serving.app import free_port, running_server

    app = FastAPI()

    @app.get("/boom")
    def boom() -> None:
        raise HTTPException(
            status_code=500, detail=f"failed reading {REPO}/pipelines/serving/wrappers/query/pipeline_wrapper.py"
        )

    @app.get("/crash")
    def crash() -> None:
        raise FileNotFoundError(f"{REPO}/secret.yaml")

    @app.get("/fine")
    def fine() -> dict:
        raise HTTPException(status_code=400, detail="bad input")

    app.add_middleware(GuardMiddleware, policy=ServingPolicy())
    port = free_port()
    with running_server(app, port=port) as url:
        for path in ("/boom", "/crash"):
            response = httpx.get(f"{url}{path}")
            assert response.status_code == 500 and str(REPO) not in response.text and "secret" not in response.text
        assert httpx.get(f"{url}/fine").json() == {"detail": "bad input"}


def test_deliberate_server_errors_keep_their_reason() -> None:
    """A 507 or 503 raised on purpose (public_server_error) reaches the client with its reason and headers; a 503
    or 500 raised any other way is still replaced."""
    from adaptive_retrieval.pipelines.serving.app import free_port, running_server
    from adaptive_retrieval.pipelines.serving.security import PUBLIC_REASON_HEADER, public_server_error

    app = FastAPI()

    @app.get("/full")
    def full() -> None:
        raise public_server_error(507, "The server's disk is full (12 MB free, 50 MB needed)")

    @app.get("/busy")
    def busy() -> None:
        raise public_server_error(503, "The indexer is busy; try again later", headers={"Retry-After": "30"})

    @app.get("/accident")
    def accident() -> None:
        raise HTTPException(status_code=503, detail=f"cannot open {REPO}/qdrant")

    app.add_middleware(GuardMiddleware, policy=ServingPolicy())
    port = free_port()
    with running_server(app, port=port) as url:
        full_answer = httpx.get(f"{url}/full")
        assert full_answer.status_code == 507 and "disk is full (12 MB free" in full_answer.json()["detail"]
        assert PUBLIC_REASON_HEADER not in full_answer.headers
        busy_answer = httpx.get(f"{url}/busy")
        assert busy_answer.status_code == 503 and busy_answer.json()["detail"].startswith("The indexer is busy")
        assert busy_answer.headers["retry-after"] == "30"
        accident_answer = httpx.get(f"{url}/accident")
        assert accident_answer.status_code == 503 and str(REPO) not in accident_answer.text
    with pytest.raises(ValueError, match="5xx"):
        public_server_error(404, "not a server error")


def test_policy_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ADAPTIVE_API_TOKEN", "ADAPTIVE_CORS_ORIGINS", "ADAPTIVE_ALLOWED_HOSTS", "ADAPTIVE_DEV_ALLOW_DEPLOY"):
        monkeypatch.delenv(name, raising=False)
    local = ServingPolicy.from_env("127.0.0.1")
    assert local.token is None and local.cors_origins == () and not local.allow_deploy
    assert local.allowed_hosts == {"localhost", "127.0.0.1", "::1"}
    assert ServingPolicy.from_env("0.0.0.0").allowed_hosts is None  # behind a proxy: the proxy checks Host
    monkeypatch.setenv("ADAPTIVE_ALLOWED_HOSTS", "search.example.org, other.example")
    assert "search.example.org" in ServingPolicy.from_env("0.0.0.0").allowed_hosts
    monkeypatch.setenv("ADAPTIVE_CORS_ORIGINS", "*")
    with pytest.raises(ValueError, match="not '\\*'"):
        ServingPolicy.from_env("127.0.0.1")
    monkeypatch.setenv("ADAPTIVE_CORS_ORIGINS", "")
    monkeypatch.setenv("ADAPTIVE_API_TOKEN", "abc")
    policy = ServingPolicy.from_env("127.0.0.1")
    assert policy.token_matches("Bearer abc") and not policy.token_matches("Bearer abd")
    assert not policy.token_matches(None) and not policy.token_matches("abc")
    monkeypatch.delenv("ADAPTIVE_API_TOKEN")
    assert not policy.token_matches("Bearer None"), "a token that vanished refuses everything"
    assert [host_name(h) for h in ("127.0.0.1:1416", "[::1]:80", "localhost", "Evil.Example:1")] == [
        "127.0.0.1",
        "::1",
        "localhost",
        "evil.example",
    ]
    assert is_loopback("::1") and is_loopback("localhost") and not is_loopback("0.0.0.0")


def test_entry_points_keep_haystack_telemetry_off() -> None:
    code = (
        "import adaptive_retrieval.pipelines.cli.main, adaptive_retrieval.pipelines.serving.app\n"
        "from haystack.telemetry import _telemetry\nprint(_telemetry.telemetry)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "HAYSTACK_TELEMETRY_ENABLED"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, env=env, check=True)
    assert done.stdout.strip() == "None", done.stdout


def test_store_owner_file(tmp_path: Path) -> None:
    from adaptive_retrieval.pipelines.processes.ownership import (
        StoreOwnedError,
        claim_store,
        owner_file,
        release_store,
        store_owner,
    )

    store = tmp_path / "qdrant"
    assert store_owner(store) is None
    claim_store(store, "http://127.0.0.1:1")
    assert owner_file(store) == tmp_path / "qdrant.server.json"
    assert store_owner(store)["url"] == "http://127.0.0.1:1"
    release_store(store)
    assert not owner_file(store).exists()
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    owner_file(store).write_text(f'{{"pid": {gone.stdout.strip()}, "url": "http://127.0.0.1:2"}}')
    assert store_owner(store) is None, "the file of a process that is gone is stale"
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        # Wait for its exit without reaping it (WNOWAIT): it stays a zombie until exited.wait() below.
        os.waitid(os.P_PID, exited.pid, os.WEXITED | os.WNOWAIT)
        owner_file(store).write_text(f'{{"pid": {exited.pid}, "url": "http://127.0.0.1:5"}}')
        assert store_owner(store) is None, "a process that has exited holds no store, reaped or not"
    finally:
        exited.wait()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        owner_file(store).write_text(f'{{"pid": {other.pid}, "url": "http://127.0.0.1:3"}}')
        with pytest.raises(StoreOwnedError, match=f"process {other.pid} at http://127.0.0.1:3"):
            claim_store(store, "http://127.0.0.1:4")
    finally:
        other.kill()
        other.wait()


@pytest.mark.parametrize(
    ("url", "trusted"),
    [
        ("http://127.0.0.1:1416", True),
        ("http://127.8.9.10:1", True),
        ("http://[::1]:1416", True),
        ("https://localhost:1416", True),
        ("http://192.0.2.10:1416", False),
        ("http://example.org", False),
        ("http://user:pw@127.0.0.1:1416", False),
        ("http://127.0.0.1:notaport", False),
        ("file:///tmp/x", False),
        ("ftp://127.0.0.1", False),
        (None, False),
        (1416, False),
    ],
)
def test_only_loopback_urls_may_receive_the_token(url: object, trusted: bool) -> None:
    from adaptive_retrieval.pipelines.processes.owner_client import loopback_url

    assert loopback_url(url) is trusted
