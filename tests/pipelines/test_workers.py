"""`adaptive-retrieval serve --workers 2` for real: two worker processes and the store host over real HTTP. An upload
sent to one worker is searchable from both; a killed worker (or store host) is started again and nothing is lost."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from processes import stop

from adaptive_retrieval.pipelines.app import free_port

WORKER = "x-adaptive-worker"


def _wait_up(process: subprocess.Popen, url: str, log: Path, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"serve exited with {process.returncode}: {log.read_text()[-3000:]}")
        try:
            if "indexing" in httpx.get(f"{url}/status", timeout=5).json().get("pipelines", []):
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    pytest.fail("serve --workers 2 did not start")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("workers")
    port = free_port()
    env = {**os.environ, "XDG_DATA_HOME": str(folder / "xdg"), "ADAPTIVE_UPLOAD_DIR": str(folder / "uploads")}
    cli = str(Path(sys.executable).with_name("adaptive-retrieval"))
    command = [cli, "serve", "--workers", "2", "--store", str(folder / "qdrant"), "--port", str(port)]
    log = (folder / "serve.log").open("w")
    process = subprocess.Popen(command, cwd=folder, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_up(process, url, folder / "serve.log")
        yield {"url": url, "folder": folder, "process": process}
    finally:
        stop(process)
        log.close()
        print((folder / "serve.log").read_text()[-5000:])  # shown by pytest when a test failed


def _found_by(url: str, word: str, file_name: str, timeout: float = 60) -> dict[str, str]:
    """Query for ``word`` on fresh connections until both workers answered; ``{worker: the top source}``."""
    seen: dict[str, str] = {}
    deadline = time.monotonic() + timeout
    while len(seen) < 2 and time.monotonic() < deadline:
        with httpx.Client(timeout=120) as http:  # a new connection: the kernel may hand it to either worker
            response = http.post(f"{url}/query/run", json={"query": f"{word} procedure", "top_k": 3})
        assert response.status_code == 200, response.text
        names = [Path(d["source"]).name for d in response.json()["result"]["documents"]]
        seen[response.headers[WORKER]] = file_name if file_name in names else f"missing: {names}"
    return seen


def _upload(url: str, word: str) -> dict[str, Any]:
    text = f"# Bulletin {word}\n\nThe {word} procedure is described here, step by step.\n"
    response = httpx.post(f"{url}/indexing/run", files=[("files", (f"{word}.md", text))], timeout=300)
    assert response.status_code == 200, response.text
    return response.json()["result"]


def _worker_pid(url: str, index: str) -> int:
    for _ in range(200):
        with httpx.Client(timeout=30) as http:
            status = http.get(f"{url}/status").json()
        if str(status["worker"]) == index:
            return int(status["pid"])
    pytest.fail(f"worker {index} never answered /status")


def test_an_upload_through_one_worker_is_searchable_from_both(served: dict[str, Any]) -> None:
    url = served["url"]
    status = httpx.get(f"{url}/status", timeout=30).json()
    assert status["workers"] == 2 and sorted(status["pipelines"]) == ["diagrams", "indexing", "query"]
    result = _upload(url, "quetzal")
    assert result["chunks_written"] >= 1
    assert _found_by(url, "quetzal", "quetzal.md") == {"0": "quetzal.md", "1": "quetzal.md"}
    # The workers' log says what they do, not each component of each query (Haystack logs that at INFO).
    lines = (served["folder"] / "serve.log").read_text().splitlines()
    assert any(" worker-" in line for line in lines)
    assert not [line for line in lines if " worker-" in line and "Running component" in line]
    # The store host owns the index, as a single server does: the owner file names it, and it is not `serve`.
    owner = json.loads((served["folder"] / "qdrant.server.json").read_text())
    assert owner["url"] == url and owner["pid"] != served["process"].pid
    # Deletes go to the host too, and both workers stop finding the file.
    deleted = httpx.request("DELETE", f"{url}/sources", params={"source": "quetzal.md"}, timeout=120)
    assert deleted.status_code == 200, deleted.text
    after = _found_by(url, "quetzal", "quetzal.md")
    assert len(after) == 2 and all(v.startswith("missing") for v in after.values()), after


def test_a_killed_worker_or_store_host_is_restarted_and_loses_nothing(served: dict[str, Any]) -> None:
    url = served["url"]
    total = _upload(url, "axolotl")["documents_total"]
    old = _worker_pid(url, "0")
    os.kill(old, signal.SIGKILL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if _worker_pid(url, "0") != old:
                break
        except httpx.HTTPError:
            pass
        time.sleep(1)
    else:
        pytest.fail("the killed worker was not started again")
    assert _found_by(url, "axolotl", "axolotl.md") == {"0": "axolotl.md", "1": "axolotl.md"}
    # The store host killed in the middle of nothing: started again, the workers' searches wait for it.
    owner = served["folder"] / "qdrant.server.json"
    host = json.loads(owner.read_text())["pid"]
    os.kill(host, signal.SIGKILL)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # the new host claims the store once it serves
        time.sleep(1)
        if owner.is_file() and json.loads(owner.read_text())["pid"] != host:
            with httpx.Client(timeout=30) as http:
                if "indexing" in http.get(f"{url}/status").json()["pipelines"]:
                    break
    assert _found_by(url, "axolotl", "axolotl.md", timeout=300) == {"0": "axolotl.md", "1": "axolotl.md"}
    # Nothing lost, and the new host writes: the same file again is unchanged and the count is what it was.
    again = _upload(url, "axolotl")
    assert again["skipped"] == 1 and again["documents_total"] == total, again
    assert _upload(url, "narwhal")["chunks_written"] >= 1
