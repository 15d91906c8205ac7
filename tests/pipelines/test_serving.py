"""The REST app over real HTTP: uvicorn on loopback serving the Hayhooks wrappers over a throw-away Qdrant folder.

Also checks that ``hayhooks run --pipelines-dir`` itself discovers and serves the wrappers (subprocess), that
malformed requests get a 4xx with a clear message and leave the index intact, and that indexing while
querying loses no document.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from processes import stop

from adaptive_retrieval.components.gating.verdict import VERDICTS
from adaptive_retrieval.components.retrieval.channels import pipeline_channels
from adaptive_retrieval.components.routing.profiles import INTENTS
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients

REPO = Path(__file__).resolve().parents[2]
WRAPPERS = REPO / "pipelines" / "serving" / "wrappers"  # the folder of Hayhooks wrappers, and nothing else
CORPUS = {"try.txt": "try", "with.txt": "with", "lambda.md": "lambda", "import.txt": "import"}


def _topic(name: str) -> str:
    from pydoc_data.topics import topics

    return topics[name]


def _store(path: Path) -> Any:
    from adaptive_retrieval.pipelines.store_config import make_store

    return make_store(path=str(path))


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The app of ``adaptive-retrieval serve`` on a free loopback port, with a small corpus uploaded over HTTP."""
    from adaptive_retrieval.pipelines.serving.app import create_app, free_port, running_server

    folder = tmp_path_factory.mktemp("served")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTIVE_QDRANT_PATH", str(folder / "qdrant"))
        mp.setenv("ADAPTIVE_GATE_CALIBRATION_QUERIES", "10")  # the background calibration after uploads, kept short
        for name in ("QDRANT_URL", "ADAPTIVE_UPLOAD_DIR", "ADAPTIVE_API_TOKEN", "ADAPTIVE_CORS_ORIGINS"):
            mp.delenv(name, raising=False)
        port = free_port()
        app = create_app(port=port)
        with running_server(app, port=port) as url, httpx.Client(base_url=url, timeout=120) as client:
            files = [("files", (name, _topic(topic))) for name, topic in CORPUS.items()]
            upload = client.post("/indexing/run", files=files)
            assert upload.status_code == 200, upload.text
            yield {"url": url, "client": client, "folder": folder, "app": app, "upload": upload.json()["result"]}
    release_all_clients()


def _count(served: dict[str, Any]) -> int:
    return _store(served["folder"] / "qdrant").count_documents()


def _query(client: httpx.Client, query: str, **extra: Any) -> dict[str, Any]:
    response = client.post("/query/run", json={"query": query, **extra})
    assert response.status_code == 200, response.text
    return response.json()["result"]


def test_status_lists_the_wrappers(served: dict[str, Any]) -> None:
    status = served["client"].get("/status").json()
    assert {"query", "indexing", "diagrams"} <= set(status["pipelines"])


def test_upload_indexes_into_the_shared_store(served: dict[str, Any]) -> None:
    result = served["upload"]
    assert result["files"] == result["indexed"] == len(CORPUS)
    assert result["chunks_written"] > len(CORPUS)
    # The query wrapper reads the store the indexing wrapper wrote: one client per folder per process.
    assert result["documents_total"] == _count(served) >= result["chunks_written"]
    uploads = served["folder"] / "uploads"
    assert sorted(Path(s).name for s in result["sources"]) == sorted(CORPUS)
    assert all(Path(s).parent == uploads for s in result["sources"])


def test_query_returns_documents_with_diagnostics(served: dict[str, Any]) -> None:
    result = _query(served["client"], "What happens to an exception raised in a finally clause?", top_k=3)
    assert 1 <= len(result["documents"]) <= 3
    assert Path(result["documents"][0]["source"]).name == "try.txt"
    assert result["intent"] in INTENTS
    assert 0.0 < result["confidence"] <= 1.0
    assert set(result["weights"]) <= set(pipeline_channels())
    assert sum(result["weights"].values()) == pytest.approx(1.0, abs=1e-6)
    assert {"top_k", "fetch_k", "mmr_lambda"} <= set(result["strategy"])
    assert result["timings_ms"]["total"] > 0
    assert {"router", "joiner"} <= set(result["timings_ms"])
    for doc in result["documents"]:
        assert doc["provenance"], "every fused document says which channel found it"
        assert set(doc["provenance"]) <= set(result["weights"])
        assert "embedding" not in doc["meta"]
        # Lean: what the document's top level says, the index's bookkeeping and the server's paths are not repeated.
        assert not {"source", "section", "channels", "source_hash", "file_path", "doc_id"} & set(doc["meta"])
    assert "gate" in result  # null until the pipeline has a quality gate; then its decision
    # The gate's verdict in words, as fields of the answer (the CLI prints the reason above the passages).
    assert result["verdict"] in VERDICTS and result["verdict"] == result["gate"]["verdict"]
    assert result["reason"].startswith(("Found in your documents", "Not found in your documents", "Uncertain"))


def test_the_gate_calibrates_itself_in_the_background_after_an_upload(served: dict[str, Any]) -> None:
    """The upload answered at once; the gate's calibration follows in a background thread of the server, from
    the index's own pseudo-queries, and the next query is judged with it."""
    path = served["folder"] / "qdrant" / "gate_calibration.json"
    deadline = time.monotonic() + 900  # a loaded 2-core machine: minutes, not seconds
    while not path.exists() and time.monotonic() < deadline:
        _query(served["client"], "What does the with statement do?")  # queries go on while it samples
        time.sleep(2)
    assert path.exists(), "no calibration was written after the upload"
    saved = json.loads(path.read_text())
    assert 0 < len(saved["samples"]["rows"]) <= 10 and saved["samples"]["sources"]
    result = _query(served["client"], "What does the with statement do?")
    assert result["gate"]["calibration"] == "index" and "no gate calibration yet" not in result["reason"]


def test_reupload_skips_unchanged_and_replaces_changed(served: dict[str, Any]) -> None:
    client = served["client"]
    first = client.post("/indexing/run", files=[("files", ("notes.md", "# Notes\n\nquokka " * 40))]).json()["result"]
    before = _count(served)
    again = client.post("/indexing/run", files=[("files", ("notes.md", "# Notes\n\nquokka " * 40))]).json()["result"]
    assert (again["skipped"], again["chunks_written"], again["documents_total"]) == (1, 0, before)
    changed = client.post("/indexing/run", files=[("files", ("notes.md", "# Notes\n\nplatypus only."))])
    changed = changed.json()["result"]
    assert changed["indexed"] == 1 and changed["chunks_deleted"] >= first["chunks_written"] - 1
    assert changed["documents_total"] == before - first["chunks_written"] + changed["chunks_written"]
    top = _query(client, "platypus", top_k=1)["documents"][0]
    assert Path(top["source"]).name == "notes.md" and "platypus" in top["content"]


BAD_REQUESTS = [
    ("missing query", "post", "/query/run", {"json": {}}, 422, "query"),
    ("query not a string", "post", "/query/run", {"json": {"query": 5}}, 422, "valid string"),
    ("empty query", "post", "/query/run", {"json": {"query": "   "}}, 400, "empty"),
    ("top_k zero", "post", "/query/run", {"json": {"query": "x", "top_k": 0}}, 422, "greater than or equal"),
    ("query too long", "post", "/query/run", {"json": {"query": "x" * 5000}}, 422, "at most"),
    (
        "invalid JSON",
        "post",
        "/query/run",
        {"content": b"{not json", "headers": {"content-type": "application/json"}},
        422,
        "JSON",
    ),
    ("no file", "post", "/indexing/run", {}, 400, "No file uploaded"),
    ("unsupported type", "post", "/indexing/run", {"files": [("files", ("x.exe", b"MZ"))]}, 400, "unsupported"),
    ("empty file", "post", "/indexing/run", {"files": [("files", ("e.md", b""))]}, 400, "empty"),
    # Latin-1, not UTF-8 (bytes that start with FF FE are UTF-16 text with a byte-order mark, and read as such).
    (
        "not UTF-8",
        "post",
        "/indexing/run",
        {"files": [("files", ("b.txt", "\xe9t\xe9 bad".encode("latin-1")))]},
        400,
        "UTF-8",
    ),
    ("fake PDF", "post", "/indexing/run", {"files": [("files", ("f.pdf", b"hello"))]}, 400, "not a PDF"),
    ("no filename", "post", "/indexing/run", {"files": [("files", ("..", b"text"))]}, 400, "name"),
    (
        "chat without user text",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "query", "messages": [{"role": "system", "content": "hi"}]}},
        400,
        "user message",
    ),
    (
        "chat unknown model",
        "post",
        "/v1/chat/completions",
        {"json": {"model": "nope", "messages": [{"role": "user", "content": "hi"}]}},
        404,
        "not found",
    ),
    ("unknown diagram", "get", "/diagrams/nope.mmd", {}, 404, "No pipeline"),
    ("diagram suffix", "get", "/diagrams/query.gif", {}, 404, ".svg"),
    ("diagram detail", "post", "/diagrams/run", {"json": {"detail": "fancy"}}, 422, "overview"),
    ("diagram detail GET", "get", "/diagrams/query.mmd", {"params": {"detail": "fancy"}}, 400, "overview"),
    ("diagram svg of both", "post", "/diagrams/run", {"json": {"format": "svg"}}, 400, "one pipeline"),
]


def test_malformed_requests_get_a_clear_4xx_and_keep_the_index(served: dict[str, Any]) -> None:
    client = served["client"]
    before = _count(served)
    for label, method, path, kwargs, status, message in BAD_REQUESTS:
        response = getattr(client, method)(path, **kwargs)
        assert response.status_code == status, f"{label}: {response.status_code} {response.text}"
        assert message.lower() in response.text.lower(), f"{label}: unclear message {response.text}"
    assert _count(served) == before
    assert _query(served["client"], "lambda expression")["documents"]


def test_chat_completion_returns_retrieved_context(served: dict[str, Any]) -> None:
    body = {"model": "query", "messages": [{"role": "user", "content": "How do lambda expressions work?"}]}
    response = served["client"].post("/v1/chat/completions", json=body)
    assert response.status_code == 200, response.text
    message = response.json()["choices"][0]["message"]
    assert message["role"] == "assistant"
    # A sentence first (the verdict), then the context: each passage with its source and why it was chosen.
    verdict, _, context = message["content"].partition("\n\n")
    assert verdict.startswith(("Found in your documents", "Not found in your documents", "Uncertain")), verdict
    assert context.startswith("[1] lambda — lambda.md (found by "), context[:200]


def test_openai_file_upload_indexes_the_file(served: dict[str, Any]) -> None:
    text = "# The while loop\n\n" + _topic("while")
    response = served["client"].post("/v1/files", files={"file": ("while.md", text)}, data={"purpose": "assistants"})
    assert response.status_code == 200, response.text
    assert response.json()["filename"] == "while.md"
    top = _query(served["client"], "while loop with an else clause", top_k=3)["documents"]
    assert any(Path(d["source"]).name == "while.md" for d in top)


def test_diagram_routes_name_every_component(served: dict[str, Any]) -> None:
    from adaptive_retrieval.pipelines.diagrams.mermaid import diagram_counts

    client = served["client"]
    registry = served["app"].state.pipeline_registry
    for name in ("query", "indexing"):
        text = client.get(f"/diagrams/{name}.mmd").text
        components = list(registry.get(name).pipeline.graph.nodes)
        assert components and all(f'{c}["{c}' in text for c in components), text
    page = client.get("/diagrams")
    assert page.status_code == 200 and page.text.count('<pre class="mermaid">') == 2
    assert '<script src="/diagrams/mermaid.min.js">' in page.text
    script = client.get("/diagrams/mermaid.min.js")
    assert script.status_code == 200 and len(script.content) > 100_000
    served_texts = client.post("/diagrams/run", json={}).json()
    assert served_texts["query"] == client.get("/diagrams/query.mmd").text
    sockets = client.get("/diagrams/query.mmd", params={"detail": "sockets"}).text
    assert diagram_counts(sockets)["edges"] > diagram_counts(served_texts["query"])["edges"] > 10
    svg = client.get("/diagrams/query.svg")
    assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml", svg.text[:300]
    assert svg.text.lstrip().startswith("<svg") and ">joiner<" in svg.text


def test_diagram_page_renders_in_headless_chromium(served: dict[str, Any]) -> None:
    chromium = shutil.which("chromium")
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/setup installs it)")
    # --virtual-time-budget lets mermaid.js finish rendering before the DOM is dumped.
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=15000", "--dump-dom"]
    done = subprocess.run(
        [chromium, *flags, f"{served['url']}/diagrams"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    dom = done.stdout
    assert dom.count("<svg") >= 2, done.stderr[-2000:]
    registry = served["app"].state.pipeline_registry
    for name in ("query", "indexing"):
        for component in registry.get(name).pipeline.graph.nodes:
            assert f">{component}<" in dom, f"{component} missing from the rendered page"


def test_mcp_tool_runs_the_query(served: dict[str, Any]) -> None:
    pytest.importorskip("mcp", reason="hayhooks[mcp] is not installed")
    from hayhooks.server.utils.mcp_utils import list_pipelines_as_tools, run_pipeline_as_tool

    registry = served["app"].state.pipeline_registry
    tools = {tool.name: tool for tool in asyncio.run(list_pipelines_as_tools(registry))}
    assert "query" in tools and "indexing" not in tools and "diagrams" not in tools
    assert "query" in tools["query"].inputSchema["properties"]
    content = asyncio.run(run_pipeline_as_tool(registry, "query", {"query": "import a module", "top_k": 2}))
    # What a model reads: the verdict in one sentence, then each passage with its source and why it was chosen.
    text = content[0].text
    assert text.startswith(("Found in your documents", "Not found in your documents", "Uncertain")), text[:200]
    assert "\n[1] " in text and "\n[2] " in text and "\n[3] " not in text and "found by " in text


BULLETINS = [("quetzal", "global"), ("axolotl", "nonlocal"), ("narwhal", "pass")]


def test_indexing_while_querying_loses_no_document(served: dict[str, Any]) -> None:
    client = served["client"]
    store = _store(served["folder"] / "qdrant")
    # Chunks and summaries (level >= 0), not the sources' manifest records (level -1).
    nodes = {"field": "meta.level", "operator": ">=", "value": 0}
    ids_before = {d.id for d in store.filter_documents(nodes)}
    stop = threading.Event()
    outcomes: list[int | str] = []

    def query_loop() -> None:
        with httpx.Client(base_url=served["url"], timeout=120) as own:
            while not stop.is_set():
                try:
                    outcomes.append(own.post("/query/run", json={"query": "context manager exit"}).status_code)
                except httpx.HTTPError as err:
                    outcomes.append(repr(err))

    threads = [threading.Thread(target=query_loop) for _ in range(4)]
    for thread in threads:
        thread.start()
    written = 0
    try:
        for i, (word, topic) in enumerate(BULLETINS):
            text = f"# Bulletin {i}\n\nThe {word} procedure.\n\n" + _topic(topic)
            result = client.post("/indexing/run", files=[("files", (f"bulletin{i}.md", text))]).json()["result"]
            assert result["chunks_deleted"] == 0
            written += result["chunks_written"]
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert outcomes and all(o == 200 for o in outcomes), [o for o in outcomes if o != 200][:5]
    ids_after = {d.id for d in store.filter_documents(nodes)}
    assert ids_before <= ids_after
    assert len(ids_after) == len(ids_before) + written
    assert len(store.get_documents_by_id(sorted(ids_after))) == len(ids_after)
    for i, (word, _) in enumerate(BULLETINS):
        top = _query(client, f"{word} procedure", top_k=3)["documents"]
        assert any(Path(d["source"]).name == f"bulletin{i}.md" for d in top), [d["source"] for d in top]


def _start_hayhooks(folder: Path, tmp_path: Path, **env_extra: str) -> tuple[subprocess.Popen, str]:
    from adaptive_retrieval.pipelines.serving.app import free_port

    port = free_port()
    env = {**os.environ, "ADAPTIVE_QDRANT_PATH": str(tmp_path / "qdrant"), "HAYSTACK_TELEMETRY_ENABLED": "False"}
    for name in ("QDRANT_URL", "PYTHONDONTWRITEBYTECODE", "HAYHOOKS_DURABLE_MODE", "ADAPTIVE_API_TOKEN"):
        env.pop(name, None)
    # The documented plain Hayhooks recipe: no cross-origin CORS (the wrappers refuse Hayhooks' default, '*').
    env["HAYHOOKS_CORS_ALLOW_ORIGINS"] = "[]"
    env.update(env_extra)
    hayhooks = Path(sys.executable).with_name("hayhooks")
    command = [str(hayhooks), "run", "--pipelines-dir", str(folder), "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    return process, f"http://127.0.0.1:{port}"


def _wait_status(process: subprocess.Popen, url: str, wanted: int) -> dict[str, Any]:
    deadline = time.monotonic() + 180
    status: dict[str, Any] = {}
    while time.monotonic() < deadline and process.poll() is None:
        try:
            status = httpx.get(f"{url}/status", timeout=5).json()
            if len(status.get("pipelines", [])) >= wanted:
                break
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return status


def test_hayhooks_run_discovers_the_wrappers(tmp_path: Path) -> None:
    """``HAYHOOKS_DURABLE_MODE=true hayhooks run --pipelines-dir`` on a copy of ``pipelines/`` with bytecode and
    stray modules in it: the wrappers are served, the deploy routes are not."""
    folder = tmp_path / "pipelines"
    shutil.copytree(WRAPPERS, folder, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "serving.cpython-311.pyc").write_bytes(b"\x00junk")
    (folder / "query" / "__pycache__").mkdir()
    (folder / "query" / "__pycache__" / "pipeline_wrapper.cpython-311.pyc").write_bytes(b"\x00junk")
    process, url = _start_hayhooks(folder, tmp_path, HAYHOOKS_DURABLE_MODE="true")
    try:
        status = _wait_status(process, url, 3)
        assert sorted(status.get("pipelines", [])) == ["diagrams", "indexing", "query"], status
        response = httpx.post(f"{url}/query/run", json={"query": "anything"}, timeout=60)
        assert response.status_code == 200, response.text
        assert response.json()["result"]["documents"] == []
        assert (tmp_path / "qdrant").is_dir(), "the wrappers must use $ADAPTIVE_QDRANT_PATH"
        files = {"pipeline_wrapper.py": "import os\nos.system('touch /tmp/pwned')\n"}
        deploy = httpx.post(f"{url}/deploy_files", json={"name": "x", "files": files}, timeout=30)
        undeploy = httpx.post(f"{url}/undeploy/query", timeout=30)
        assert (deploy.status_code, undeploy.status_code) == (404, 404)
        assert (folder / "query" / "pipeline_wrapper.py").is_file()
    finally:
        stop(process)


def test_plain_hayhooks_run_serves_the_diagrams(tmp_path: Path) -> None:
    """``hayhooks run`` on a folder holding only the diagrams wrapper: mermaid text, an offline HTML page and a
    server-rendered SVG over ``POST /diagrams/run``."""
    from adaptive_retrieval.pipelines.diagrams.drawing import mermaid_texts

    folder = tmp_path / "pipelines"
    shutil.copytree(WRAPPERS / "diagrams", folder / "diagrams", ignore=shutil.ignore_patterns("__pycache__"))
    process, url = _start_hayhooks(folder, tmp_path, HAYHOOKS_DURABLE_MODE="true")
    try:
        assert _wait_status(process, url, 1).get("pipelines") == ["diagrams"]
        run = f"{url}/diagrams/run"
        texts = httpx.post(run, json={}, timeout=120).json()
        assert texts == mermaid_texts() and all(t.startswith("flowchart TD") for t in texts.values())
        sockets = httpx.post(run, json={"pipeline": "query", "detail": "sockets"}, timeout=120).json()
        assert sockets == mermaid_texts(["query"], detail="sockets")
        page = httpx.post(run, json={"format": "html"}, timeout=120)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.text.count('<pre class="mermaid">') == 2 and "mermaid.initialize" in page.text
        assert "<script src=" not in page.text, "the page works offline: mermaid.js is inlined"
        if shutil.which("chromium"):
            svg = httpx.post(run, json={"pipeline": "query", "format": "svg"}, timeout=180)
            assert svg.status_code == 200 and svg.headers["content-type"] == "image/svg+xml", svg.text[:500]
            assert all(f">{c}<" in svg.text for c in ("loop", "router", "joiner", "gate"))
            assert "retry" in svg.text and "retrievers → joiner" in svg.text
        both = httpx.post(run, json={"format": "svg"}, timeout=60)
        assert both.status_code == 400 and "one pipeline" in both.json()["detail"]
        assert httpx.post(run, json={"detail": "fancy"}, timeout=60).status_code == 422
    finally:
        stop(process)


def test_plain_hayhooks_run_with_deploy_routes_refuses_to_start(tmp_path: Path) -> None:
    """Without ``HAYHOOKS_DURABLE_MODE`` Hayhooks keeps its deploy routes: the server does not start, and says what
    to set. (It used to start with the diagrams wrapper and ``/deploy_files`` open.)"""
    process, url = _start_hayhooks(WRAPPERS, tmp_path)
    try:
        output, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        output = stop(process)
    assert process.returncode not in (0, None), output[-3000:]
    assert "refuses to serve its pipelines" in output and "HAYHOOKS_DURABLE_MODE=true" in output, output[-3000:]
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/status", timeout=5)


# --- serving securely (issue 15): read-only app, browser safety, MCP and CLI beside REST ----------------------


def test_deploy_routes_are_absent_and_no_uploaded_code_runs(served: dict[str, Any], tmp_path: Path) -> None:
    client = served["client"]
    marker = tmp_path / "pwned"
    code = f"from pathlib import Path\nPath({str(marker)!r}).write_text('ran')\n"
    attempts = [
        client.post("/deploy_files", json={"name": "evil", "files": {"pipeline_wrapper.py": code}}),
        client.post("/deploy-yaml", json={"name": "evil", "source_code": "components: {}\nconnections: []\n"}),
        client.post("/undeploy/query"),
        client.delete("/undeploy/query"),
    ]
    assert all(r.status_code in (404, 405) for r in attempts), [(r.status_code, r.text) for r in attempts]
    assert not marker.exists()
    assert (WRAPPERS / "query" / "pipeline_wrapper.py").is_file()
    assert sorted(client.get("/status").json()["pipelines"]) == ["diagrams", "indexing", "query"]
    assert _query(client, "lambda expression")["documents"]


def test_cross_origin_requests_get_no_cors_grant(served: dict[str, Any]) -> None:
    client = served["client"]
    preflight = client.options(
        "/indexing/run", headers={"origin": "http://evil.example", "access-control-request-method": "POST"}
    )
    assert "access-control-allow-origin" not in preflight.headers, preflight.headers
    simple = client.post("/query/run", json={"query": "lambda"}, headers={"origin": "http://evil.example"})
    assert "access-control-allow-origin" not in simple.headers


def test_foreign_host_is_refused(served: dict[str, Any]) -> None:
    client = served["client"]
    port = httpx.URL(served["url"]).port
    refused = client.post("/query/run", json={"query": "lambda"}, headers={"host": f"rebind.evil.example:{port}"})
    assert refused.status_code == 421 and "Host" in refused.json()["detail"]
    assert client.get("/mcp", headers={"host": "rebind.evil.example"}).status_code == 421
    for host in (f"localhost:{port}", f"127.0.0.1:{port}"):
        assert client.get("/status", headers={"host": host}).status_code == 200


def test_docs_are_served_without_a_cdn(served: dict[str, Any]) -> None:
    client = served["client"]
    for page in ("/docs", "/redoc"):
        html = client.get(page)
        assert html.status_code == 200 and "/docs/assets/" in html.text
        assert "http://" not in html.text and "https://" not in html.text, html.text
    script = client.get("/docs/assets/swagger-ui-bundle.js")
    assert script.status_code == 200 and len(script.content) > 500_000
    assert "/query/run" in client.get("/openapi.json").json()["paths"]
    assert client.get("/draw/query", follow_redirects=False).headers["location"] == "/diagrams/query.svg"


def _mcp_session(url: str, call: Any, headers: dict[str, str] | None = None) -> Any:
    """Run ``await call(session)`` in a real MCP client session on ``url/mcp`` (streamable HTTP)."""
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def run() -> Any:
        async with (
            streamablehttp_client(f"{url}/mcp", headers=headers) as (read, write, _),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await call(session)

    return asyncio.run(run())


def test_mcp_client_gets_the_rest_documents_in_the_same_process(served: dict[str, Any]) -> None:
    query = "How do I import a module from a package?"

    async def calls(session: Any) -> tuple[Any, Any, Any]:
        tools = await session.list_tools()
        found = await session.call_tool("query", {"query": query, "top_k": 3})
        refused = await session.call_tool("indexing", {})
        empty = await session.call_tool("query", {"query": "   "})
        return tools, found, refused, empty

    tools, found, refused, empty = _mcp_session(served["url"], calls)
    assert empty.isError and "empty" in empty.content[0].text
    assert [tool.name for tool in tools.tools] == ["query"]
    assert not found.isError
    via_mcp = found.content[0].text
    via_rest = _query(served["client"], query, top_k=3)
    assert via_mcp.startswith(via_rest["reason"]), via_mcp[:300]
    heads = [line for line in via_mcp.splitlines() if line.startswith("[")]
    where = [
        f"[{i}] {d['section'] or d['title']} — {Path(d['source']).name}" for i, d in enumerate(via_rest["documents"], 1)
    ]
    assert [h.split(" (found by")[0] for h in heads] == where, heads
    assert refused.isError and "Unknown tool" in refused.content[0].text


def test_answers_carry_no_vectors_unless_asked(served: dict[str, Any]) -> None:
    question = "What happens to an exception raised in a finally clause?"
    client = served["client"]
    lean = client.post("/query/run", json={"query": question, "top_k": 10})
    full = client.post("/query/run", json={"query": question, "top_k": 10, "include_embeddings": True})
    assert lean.status_code == full.status_code == 200, lean.text
    lean_result, full_result = lean.json()["result"], full.json()["result"]
    # No null vectors either: the fields are absent unless asked for.
    assert "query_embedding" not in lean_result
    assert all("embedding" not in d and "sparse_embedding" not in d for d in lean_result["documents"])
    assert [d["id"] for d in full_result["documents"]] == [d["id"] for d in lean_result["documents"]]
    assert len(full_result["query_embedding"]) == 384
    assert all(len(d["embedding"]) == 384 for d in full_result["documents"])  # retrieval fetches the dense one
    # A lean answer is the passages and diagnostics: well under 2 KB a document beside the text itself.
    text = sum(len((d["content"] or "").encode()) for d in lean_result["documents"])
    assert len(lean.content) - text < 1_500 * len(lean_result["documents"]) + 3_000, len(lean.content)

    async def calls(session: Any) -> tuple[Any, Any]:
        tools = await session.list_tools()
        asked = await session.call_tool("query", {"query": question, "top_k": 2, "include_embeddings": True})
        return tools, asked

    tools, asked = _mcp_session(served["url"], calls)
    assert "include_embeddings" in tools.tools[0].inputSchema["properties"]
    assert len(json.loads(asked.content[0].text)["documents"][0]["embedding"]) == 384
    from hayhooks.server.utils.mcp_utils import run_pipeline_as_tool

    registry = served["app"].state.pipeline_registry
    by_default = asyncio.run(run_pipeline_as_tool(registry, "query", {"query": question, "top_k": 2}))
    assert by_default[0].text.startswith(lean_result["reason"][:20]) and "embedding" not in by_default[0].text
    chat = client.post(
        "/v1/chat/completions", json={"model": "query", "messages": [{"role": "user", "content": question}]}
    )
    assert chat.status_code == 200 and "[1]" in chat.json()["choices"][0]["message"]["content"]


def _cli(*args: str, env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, **(env_extra or {})}
    env.pop("QDRANT_URL", None)
    command = [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=REPO, env=env, check=False)


def test_cli_commands_during_serving_go_through_the_server(served: dict[str, Any], tmp_path: Path) -> None:
    store = str(served["folder"] / "qdrant")
    query = "What happens to an exception raised in a finally clause?"
    done = _cli("query", "--store", store, "--json", "--top-k", "3", query)
    assert done.returncode == 0, done.stderr
    assert served["url"] in done.stderr
    via_cli = json.loads(done.stdout)
    via_rest = _query(served["client"], query, top_k=3)
    assert via_cli["documents"] and [d["id"] for d in via_cli["documents"]] == [d["id"] for d in via_rest["documents"]]

    note = tmp_path / "note.md"
    note.write_text("# Note\n\nA note about wombats.")
    refused = _cli("index", "--store", store, str(note))
    assert refused.returncode == 1 and served["url"] in refused.stderr and "stop that server" in refused.stderr


def test_delete_source_removes_file_chunks_summaries_and_graph(served: dict[str, Any]) -> None:
    from adaptive_retrieval.pipelines.store_config import make_graph_store

    client = served["client"]
    store = _store(served["folder"] / "qdrant")
    graph = make_graph_store(qdrant_path=str(served["folder"] / "qdrant"))
    graph_before, count_before = graph.chunk_count(), store.count_documents()
    for name, topic in (("doomed.md", "assert"), ("doomed2.md", "del")):
        text = f"# {name}\n\nThe zebu rule.\n\n" + _topic(topic)
        upload = client.post("/indexing/run", files=[("files", (name, text))]).json()["result"]
        assert upload["chunks_written"] > 0
    source = str(served["folder"] / "uploads" / "doomed.md")
    stored = store.filter_documents(filters={"field": "meta.source", "operator": "==", "value": source})
    docs = [d for d in stored if d.meta.get("level", 0) >= 0]  # not the source's manifest record (level -1)
    assert docs and graph.chunk_count() > graph_before

    deleted = client.delete("/sources", params={"source": "doomed.md"})
    assert deleted.status_code == 200, deleted.text
    [item] = deleted.json()["deleted"]
    assert item["documents_removed"] == len(docs) and item["graph_chunks_removed"] > 0 and item["file_removed"]
    assert not (served["folder"] / "uploads" / "doomed.md").exists()
    assert store.filter_documents(filters={"field": "meta.source", "operator": "==", "value": source}) == []
    doc_ids = sorted({d.meta["doc_id"] for d in docs})
    assert store.filter_documents(filters={"field": "meta.doc_id", "operator": "in", "value": doc_ids}) == []

    by_cli = _cli("delete", "--store", str(served["folder"] / "qdrant"), "doomed2.md")
    assert by_cli.returncode == 0 and "uploaded file removed" in by_cli.stdout, by_cli.stderr
    assert (store.count_documents(), graph.chunk_count()) == (count_before, graph_before)
    missing = client.delete("/sources", params={"source": "doomed.md"})
    assert missing.status_code == 404 and "doomed.md" in missing.json()["detail"]
    assert str(served["folder"]) not in missing.text


def test_plain_hayhooks_run_refuses_a_token_it_cannot_enforce(tmp_path: Path) -> None:
    process, _ = _start_hayhooks(WRAPPERS, tmp_path, HAYHOOKS_DURABLE_MODE="true", ADAPTIVE_API_TOKEN="t")
    try:
        output, _ = process.communicate(timeout=180)
    except subprocess.TimeoutExpired:
        output = stop(process)
    assert process.returncode != 0, output[-3000:]
    assert "cannot require it" in output and "adaptive-retrieval serve" in output, output[-3000:]


# -- issue 41: the seams of the served app (real HTTP, the app `adaptive-retrieval serve` runs) ----------------------

BAD_CHAT_PARTS: list[tuple[str, Any]] = [
    ("text null", [{"type": "text", "text": None}]),
    ("text a number", [{"type": "text", "text": 123}]),
    ("text a list", [{"type": "text", "text": ["a"]}]),
    ("text missing", [{"type": "text"}]),
    ("part a string", ["What is a lambda?"]),
    ("part without a type", [{"text": "What is a lambda?"}]),
    ("only an image", [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]),
]


def _chat_with_parts(parts: Any, earlier: str | None = None) -> dict[str, Any]:
    messages = [{"role": "user", "content": earlier}, {"role": "assistant", "content": "..."}] if earlier else []
    return {"model": "query", "messages": [*messages, {"role": "user", "content": parts}]}


def test_chat_content_parts_of_the_wrong_type_get_a_4xx(served: dict[str, Any]) -> None:
    """Issue 41 #10: a text part whose text is null, a number or a list answered 500 (a TypeError joining them)."""
    for label, parts in BAD_CHAT_PARTS:
        response = served["client"].post("/v1/chat/completions", json=_chat_with_parts(parts))
        assert response.status_code == 400, f"{label}: {response.status_code} {response.text[:300]}"
        assert "content part" in response.text.lower() or "no text question" in response.text, (label, response.text)


def test_an_image_only_last_message_is_not_answered_with_an_older_question(served: dict[str, Any]) -> None:
    """Issue 41 #11: the last user message held only an image, and the answer was retrieved for the question before
    it, as if that were what was asked. Now: 400, saying there is no text question (and which parts there were)."""
    image = [{"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    response = served["client"].post("/v1/chat/completions", json=_chat_with_parts(image, earlier="What is a lambda?"))
    assert response.status_code == 400, response.text[:300]
    assert "no text question (only image_url parts)" in response.json()["detail"]
    text = [{"type": "text", "text": "What is a lambda?"}, *image]
    answered = served["client"].post("/v1/chat/completions", json=_chat_with_parts(text, earlier="try statement"))
    assert answered.status_code == 200 and "lambda" in answered.json()["choices"][0]["message"]["content"].lower()


def test_a_page_of_the_same_host_but_another_scheme_is_another_origin(served: dict[str, Any]) -> None:
    """Issue 41 #11: the same-origin check compared host and port only, so a page at https://127.0.0.1:PORT could
    write to http://127.0.0.1:PORT. An origin is scheme, host and port."""
    client, url = served["client"], served["url"]
    host = httpx.URL(url).netloc.decode()
    upload = [("files", ("scheme.md", "# Scheme\n\nThe schemewombat lives here."))]
    refused = client.post("/indexing/run", files=upload, headers={"origin": f"https://{host}"})
    assert refused.status_code == 403, refused.text[:300]
    assert "Cross-site request refused" in refused.json()["detail"]
    own = client.post("/query/run", json={"query": "lambda"}, headers={"origin": f"http://{host}"})
    assert own.status_code == 200, own.text[:300]


def test_a_foreign_page_cannot_open_the_mcp_stream(served: dict[str, Any]) -> None:
    """Issue 41 #11: a cross-origin `GET /mcp` got 200 and an open event stream. MCP asks servers to check Origin on
    every request: refused (403), whatever the method."""
    headers = {"origin": "http://evil.example", "accept": "text/event-stream"}
    with httpx.Client(base_url=served["url"], timeout=httpx.Timeout(10, read=5)) as client:
        with client.stream("GET", "/mcp", headers=headers) as response:
            status = response.status_code
        assert status == 403, status
        assert client.delete("/mcp", headers={"origin": "http://evil.example"}).status_code == 403
        site = client.get("/mcp", headers={"sec-fetch-site": "cross-site", "accept": "text/event-stream"})
        assert site.status_code == 403


@pytest.mark.parametrize("request_id", [{}, {"a": 1}, [1], True])
def test_an_mcp_request_id_must_be_a_string_a_number_or_null(served: dict[str, Any], request_id: Any) -> None:
    """Issue 41 #11: `"id": {}` was taken for a notification (202 Accepted, no answer). JSON-RPC 2.0 allows a string,
    a number or null: anything else is an invalid request (-32600)."""
    body = {"jsonrpc": "2.0", "id": request_id, "method": "tools/list"}
    headers = {"accept": "application/json, text/event-stream"}
    response = served["client"].post("/mcp", json=body, headers=headers)
    assert response.status_code == 400, (response.status_code, response.text[:300])
    error = response.json()["error"]
    assert error["code"] == -32600 and "id must be" in error["message"], error


def test_a_422_echoes_a_bounded_part_of_the_input(served: dict[str, Any]) -> None:
    """Issue 41 #11: a 422 echoed a 5 MB input back whole. The echo is cut, and says how long the input was."""
    huge = "x" * 5_000_000
    response = served["client"].post("/query/run", json={"query": huge})
    assert response.status_code == 422
    assert len(response.content) < 5_000, len(response.content)
    assert "(5000000 characters)" in response.text
    unknown = served["client"].post("/query/run", json={"query": "lambda", huge: 1})
    assert unknown.status_code == 422 and len(unknown.content) < 5_000, len(unknown.content)


def test_filters_are_refused_not_dropped(served: dict[str, Any]) -> None:
    """Issue 41 #11 (the `serve` half; plain `hayhooks run` below): metadata filters are not implemented; a request
    that sends them gets 422, never an unfiltered answer."""
    response = served["client"].post("/query/run", json={"query": "lambda", "filters": {"field": "meta.x"}})
    assert response.status_code == 422 and "filters are not supported" in response.text, response.text[:300]
    assert served["client"].post("/query/run", json={"query": "lambda", "filters": None}).status_code == 200


def test_plain_hayhooks_run_agrees_with_serve_and_leaves_no_owner_file(tmp_path: Path) -> None:
    """Issue 41 #10/#11 under plain `HAYHOOKS_DURABLE_MODE=true hayhooks run`: chat content parts of the wrong type
    and an image-only last message get a 4xx (not 500, not an older question's answer), `filters` gets 422 (it was
    dropped without a word), and SIGTERM leaves no `<store>.server.json` behind (uvicorn ends the process with the
    signal it caught, so no `atexit` ran)."""
    import signal

    process, url = _start_hayhooks(WRAPPERS, tmp_path, HAYHOOKS_DURABLE_MODE="true")
    owner = tmp_path / "qdrant.server.json"
    try:
        status = _wait_status(process, url, 3)
        assert sorted(status.get("pipelines", [])) == ["diagrams", "indexing", "query"], status
        assert json.loads(owner.read_text())["pid"] == process.pid
        with httpx.Client(base_url=url, timeout=120) as client:
            for label, parts in BAD_CHAT_PARTS:
                response = client.post("/v1/chat/completions", json=_chat_with_parts(parts, earlier="lambda"))
                assert response.status_code == 400, f"{label}: {response.status_code} {response.text[:300]}"
            filtered = client.post("/query/run", json={"query": "lambda", "filters": {"field": "meta.source"}})
            assert filtered.status_code == 422 and "filters are not supported" in filtered.text, filtered.text[:300]
            assert client.post("/query/run", json={"query": "lambda"}).status_code == 200
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
        deadline = time.monotonic() + 20
        while owner.exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not owner.exists(), "plain hayhooks run left its owner file after SIGTERM"
    finally:
        if process.poll() is None:
            stop(process)
