"""A real headless Chromium page on another loopback origin attacks each documented way to serve: nothing it
sends may write, delete, run code or read answers (``tests/browser.py``).

- ``adaptive-retrieval serve`` (subprocess): every write the page sends is refused with 403 (the server log says
  so), nothing is indexed, deleted or deployed; a page of an origin listed in ``$ADAPTIVE_CORS_ORIGINS`` can query
  and read the answer, and so can the server's own ``/docs`` page.
- ``HAYHOOKS_DURABLE_MODE=true HAYHOOKS_CORS_ALLOW_ORIGINS='[]' hayhooks run
  --pipelines-dir pipelines/serving/wrappers``: the same
  (the wrappers check ``Origin`` and ``Host`` themselves: Hayhooks hands them the request headers).
- ``hayhooks run --pipelines-dir pipelines/serving/wrappers`` with no settings refuses to start
  (``test_plain_hayhooks_safety.py``).
- The development recipe (``hayhooks run`` + ``deploy-yaml``) is in ``tests/pipelines/test_plain_haystack_yaml.py``.

Skipped with the reason when chromium, node or ``node_modules/puppeteer`` is missing (``scripts/setup``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from browser import PLANTED, attack, browser_missing, open_page, query_from
from processes import stop

REPO = Path(__file__).resolve().parents[2]
WRAPPERS = REPO / "pipelines" / "serving" / "wrappers"  # the folder of Hayhooks wrappers, and nothing else
SEED = "# Seed\n\nThe seed document about quokkas and their seedling gardens.\n"
WRITES = ("upload no-cors", "upload cors", "v1/files no-cors", "query no-cors", "chat no-cors", "mcp no-cors")

pytestmark = pytest.mark.skipif(bool(browser_missing()), reason=browser_missing() or "")


def _free_port() -> int:
    from adaptive_retrieval.pipelines.serving.app import free_port

    return free_port()


def _env(folder: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAYHOOKS_", "ADAPTIVE_", "QDRANT_URL"))}
    return {**env, "ADAPTIVE_QDRANT_PATH": str(folder / "qdrant"), "HAYSTACK_TELEMETRY_ENABLED": "False", **extra}


def _wait_up(process: subprocess.Popen, url: str, pipelines: int = 3) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if len(httpx.get(f"{url}/status", timeout=5).json().get("pipelines", [])) >= pipelines:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    output = stop(process) if process.poll() is None else process.communicate()[0]
    pytest.fail(f"the server did not come up (exit {process.poll()}): {output[-3000:]}")


def _start(command: list[str], folder: Path, env: dict[str, str]) -> tuple[subprocess.Popen, str]:
    port = _free_port()
    process = subprocess.Popen(
        [*command, "--host", "127.0.0.1", "--port", str(port)],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    _wait_up(process, url)
    return process, url


def _seed(url: str) -> int:
    upload = httpx.post(f"{url}/indexing/run", files=[("files", ("seed.md", SEED))], timeout=300)
    assert upload.status_code == 200, upload.text
    return upload.json()["result"]["documents_total"]


def _unchanged(url: str, folder: Path, total: int, marker: Path) -> None:
    """Nothing the page sent had an effect: same documents, no planted text, no new upload, no code ran."""
    again = httpx.post(f"{url}/indexing/run", files=[("files", ("seed.md", SEED))], timeout=300)
    assert again.status_code == 200 and again.json()["result"]["skipped"] == 1, again.text
    assert again.json()["result"]["documents_total"] == total, "the page changed the index"
    found = httpx.post(f"{url}/query/run", json={"query": PLANTED}, timeout=120).json()["result"]["documents"]
    assert all(PLANTED not in (d["content"] or "") for d in found), found
    assert sorted(p.name for p in (folder / "uploads").iterdir()) == ["seed.md"]
    assert not marker.exists(), "code sent by the page ran"
    status = httpx.get(f"{url}/status", timeout=30).json()
    assert sorted(status["pipelines"]) == ["diagrams", "indexing", "query"], status


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``adaptive-retrieval serve`` with one allowed browser origin (``http://localhost:<allowed>``)."""
    folder = tmp_path_factory.mktemp("serve-browser")
    allowed = _free_port()
    env = _env(folder, ADAPTIVE_CORS_ORIGINS=f"http://localhost:{allowed}")
    cli = str(Path(sys.executable).with_name("adaptive-retrieval"))
    process, url = _start([cli, "serve", "--store", str(folder / "qdrant")], folder, env)
    try:
        yield {"url": url, "folder": folder, "total": _seed(url), "allowed": allowed, "process": process}
    finally:
        stop(process)


def test_a_foreign_page_cannot_write_to_serve(serve: dict[str, Any], tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    results = attack(serve["url"], marker)
    # What the browser let the page see: a preflighted call was refused by CORS, a simple one is opaque.
    assert not results["query cors"]["ok"] and not results["deploy cors"]["ok"], results
    assert not results["delete cors"]["ok"] and not results["delete no-cors"]["ok"], results
    assert results["upload cors"].get("status") in (None, 0, 403), results["upload cors"]
    _unchanged(serve["url"], serve["folder"], serve["total"], marker)


def test_the_refusals_are_the_servers(serve: dict[str, Any], tmp_path: Path) -> None:
    """The writes reached the server and it refused them itself (403 with the reason), not only the browser."""
    from browser import page_server

    seen = []
    with page_server("<!doctype html><title>x</title>") as page:
        origin = page.rstrip("/")
        for path in ("/indexing/run", "/query/run", "/mcp", "/v1/chat/completions"):
            response = httpx.post(
                serve["url"] + path, headers={"origin": origin, "content-type": "text/plain"}, content="{}"
            )
            seen.append((path, response.status_code, response.json()["detail"]))
    assert all(status == 403 and "Cross-site request refused" in detail for _, status, detail in seen), seen
    assert all(origin in detail for _, _, detail in seen), seen


def test_an_allowed_origin_and_the_servers_own_page_can_query(serve: dict[str, Any]) -> None:
    allowed = query_from(serve["url"], "localhost", serve["allowed"])
    assert allowed["ok"] and allowed["status"] == 200 and "documents" in allowed["text"], allowed
    own = open_page(
        serve["url"] + "/docs",
        expression='fetch("/query/run", {method: "POST", headers: {"content-type": "application/json"}, '
        'body: JSON.stringify({query: "quokkas"})}).then(r => r.status)',
    )
    assert own == 200, own


def test_a_page_on_another_port_of_localhost_cannot_read_either(serve: dict[str, Any]) -> None:
    refused = query_from(serve["url"], "127.0.0.1")
    assert not refused["ok"], refused


@pytest.fixture(scope="module")
def plain_hayhooks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The documented plain Hayhooks recipe: durable mode, no cross-origin CORS."""
    folder = tmp_path_factory.mktemp("plain-browser")
    env = _env(folder, HAYHOOKS_DURABLE_MODE="true", HAYHOOKS_CORS_ALLOW_ORIGINS="[]")
    hayhooks = str(Path(sys.executable).with_name("hayhooks"))
    process, url = _start([hayhooks, "run", "--pipelines-dir", str(WRAPPERS)], folder, env)
    try:
        yield {"url": url, "folder": folder, "total": _seed(url)}
    finally:
        stop(process)


def test_a_foreign_page_cannot_write_to_plain_hayhooks(plain_hayhooks: dict[str, Any], tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    results = attack(plain_hayhooks["url"], marker)
    assert not results["query cors"]["ok"] and not results["deploy cors"]["ok"], results
    _unchanged(plain_hayhooks["url"], plain_hayhooks["folder"], plain_hayhooks["total"], marker)
    # The wrappers refuse what the browser sent (Hayhooks hands them the request headers).
    origin = {"origin": "http://127.0.0.1:9", "sec-fetch-site": "same-site"}
    upload = httpx.post(
        plain_hayhooks["url"] + "/indexing/run", headers=origin, files=[("files", ("x.md", "# X\n\nx"))]
    )
    assert upload.status_code == 403 and "HAYHOOKS_CORS_ALLOW_ORIGINS" in upload.json()["detail"], upload.text
    # DNS rebinding: a page at http://evil.example:<port> resolved to 127.0.0.1 is "same-origin"; its Host is not.
    rebound = httpx.post(plain_hayhooks["url"] + "/query/run", headers={"host": "evil.example"}, json={"query": "x"})
    assert rebound.status_code == 421 and "Unknown Host" in rebound.json()["detail"], rebound.text
    files = httpx.post(plain_hayhooks["url"] + "/v1/files", files={"file": ("y.md", "# Y\n\ny")}, data={"purpose": "x"})
    assert files.status_code == 403 and "adaptive-retrieval serve" in files.json()["detail"], files.text
    print(json.dumps(results, indent=1))
