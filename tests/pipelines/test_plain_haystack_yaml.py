"""The shipped YAML without this package's helpers: plain Haystack ``Pipeline.loads`` + ``run`` answers from the
index that ``$ADAPTIVE_QDRANT_PATH`` names and creates nothing in the working directory, and a plain
``hayhooks run`` server deploys ``yaml/query.yaml`` with ``hayhooks pipeline deploy-yaml`` and answers over HTTP.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from processes import stop

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import release_all_connections
from adaptive_retrieval.pipelines.yaml_io import YAML_DIR

pytestmark = pytest.mark.slow  # they index a real corpus and start servers

TOPICS = {"try.txt": "try", "with.txt": "with", "lambda.txt": "lambda", "import.txt": "import"}
QUESTION = "What happens to an exception raised in a finally clause?"

_PLAIN_RUN = r"""
import json, os, sys
from pathlib import Path
from haystack import Pipeline

text = Path(sys.argv[1]).read_text(encoding="utf-8")
pipeline = Pipeline.loads(text, allowed_modules=["adaptive_retrieval"])
result = pipeline.run({"query": sys.argv[2]})
documents = result["answer"]["documents"]  # the gate's final list, without vectors (LeanAnswer)
print(json.dumps({
    "sources": [d.meta["source"] for d in documents], "cwd": sorted(os.listdir(".")),
    "vectors": sum(d.embedding is not None or d.sparse_embedding is not None for d in documents),
    "decision": result["answer"]["decision"],
}))
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory, model_dir: Path) -> Iterator[dict[str, Path]]:
    """A small real index (Qdrant folder and graph file) built through the indexing YAML, then closed so that
    another process can open it (one process owns an embedded index)."""
    from pydoc_data.topics import topics

    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    root = tmp_path_factory.mktemp("index")
    corpus = root / "corpus"
    corpus.mkdir()
    for name, topic in TOPICS.items():
        (corpus / name).write_text(topics[topic], encoding="utf-8")
    folders = {"qdrant": root / "qdrant", "graph": root / "graph.sqlite"}
    indexing = load_pipeline("indexing", path=str(folders["qdrant"]), graph_path=str(folders["graph"]))
    assert index_paths(indexing, [corpus])["indexed"] == len(TOPICS)
    release_all_clients()
    release_all_connections()
    yield folders


def _env(index: dict[str, Path], **extra: str) -> dict[str, str]:
    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False", "PYTHONDONTWRITEBYTECODE": "1"}
    for name in ("QDRANT_URL", "NEO4J_URI", "ADAPTIVE_DEVICE", "ADAPTIVE_PRECISION", "HAYHOOKS_DURABLE_MODE"):
        env.pop(name, None)
    env.update(ADAPTIVE_QDRANT_PATH=str(index["qdrant"]), ADAPTIVE_GRAPH_PATH=str(index["graph"]), **extra)
    return env


def test_plain_pipeline_loads_and_runs_from_the_index_the_environment_names(
    index: dict[str, Path], tmp_path: Path
) -> None:
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    result = subprocess.run(
        [sys.executable, "-c", _PLAIN_RUN, str(YAML_DIR / "query.yaml"), QUESTION],
        cwd=cwd,
        env=_env(index),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    assert report["sources"] and Path(report["sources"][0]).name == "try.txt", report
    assert report["vectors"] == 0 and report["decision"] in ("pass", "insufficient"), report
    assert report["cwd"] == [] and list(cwd.iterdir()) == [], "nothing may be created in the working directory"


def test_plain_pipeline_raises_while_another_process_holds_the_index(index: dict[str, Path], tmp_path: Path) -> None:
    """Issue 41 #9: while a server (here: this process) owns the embedded index, every channel of a plain
    ``Pipeline.loads(...).run()`` fails to open it; the run returned ``[]`` / ``insufficient`` (each lock error only
    logged). It must raise, naming each channel's reason, as ``run_query`` does."""
    from adaptive_retrieval.components.stores import EdgeDocumentStore

    holder = EdgeDocumentStore(path=str(index["qdrant"]))
    assert holder.count_documents() > 0
    try:
        result = subprocess.run(
            [sys.executable, "-c", _PLAIN_RUN, str(YAML_DIR / "query.yaml"), QUESTION],
            cwd=tmp_path,
            env=_env(index),
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        holder.close()
        release_all_clients()
    assert result.returncode != 0, f"an empty answer while the index was held: {result.stdout[-500:]}"
    assert "NoChannelAnsweredError" in result.stderr and "Retrieval failed (" in result.stderr, result.stderr[-2000:]


def _wait_up(process: subprocess.Popen, url: str) -> None:
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and process.poll() is None:
        try:
            if httpx.get(f"{url}/status", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    pytest.fail(f"hayhooks run did not come up (exit code {process.poll()})")


def test_hayhooks_deploy_yaml_serves_the_query_pipeline(index: dict[str, Path], tmp_path: Path) -> None:
    """The development recipe: ``HAYHOOKS_CORS_ALLOW_ORIGINS='[]' hayhooks run`` + ``deploy-yaml``. It answers
    queries; the indexing YAML cannot be deployed (it declares no input: its entry takes paths on the server), so
    no request can index a server file; a web page on another origin cannot deploy code through the browser."""
    from browser import attack, browser_missing

    from adaptive_retrieval.pipelines.serving.app import free_port

    hayhooks = str(Path(sys.executable).with_name("hayhooks"))
    port = free_port()
    # What a user sets for a plain Hayhooks server: the index, the allow-list for this package's YAML types, and no
    # cross-origin CORS (Hayhooks' default lets every web page call its deploy routes).
    env = _env(index, HAYSTACK_DESERIALIZATION_ALLOWLIST="adaptive_retrieval.*", HAYHOOKS_PORT=str(port))
    env.update(HAYHOOKS_HOST="127.0.0.1", HAYHOOKS_CORS_ALLOW_ORIGINS="[]")
    (tmp_path / "pipelines").mkdir()  # Hayhooks' own folder convention, empty: nothing is deployed at start
    server = subprocess.Popen(
        [hayhooks, "run", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    secret = tmp_path / "private.md"
    secret.write_text("# Private\n\nThe vault code is zebrapassphrase.\n", encoding="utf-8")
    try:
        _wait_up(server, url)
        deployed = {}
        for name in ("query", "indexing"):
            yaml_copy = tmp_path / f"{name}.yaml"
            shutil.copy(YAML_DIR / f"{name}.yaml", yaml_copy)
            deployed[name] = subprocess.run(
                [hayhooks, "pipeline", "deploy-yaml", "--name", name, str(yaml_copy)],
                cwd=tmp_path,
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
        assert deployed["query"].returncode == 0, deployed["query"].stdout[-3000:] + deployed["query"].stderr[-3000:]
        assert deployed["indexing"].returncode != 0, "the indexing YAML must not be deployable"
        response = httpx.post(f"{url}/query/run", json={"query": QUESTION}, timeout=120)
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        documents = result["answer"]["documents"]
        assert documents and Path(documents[0]["meta"]["source"]).name == "try.txt", result
        assert result["router"]["intent"], result["router"]
        # A lean answer: no document vector, no query vector (they made a 10-document answer ~110 KB).
        assert all(d["embedding"] is None and d["sparse_embedding"] is None for d in documents)
        assert result["answer"]["query_embedding"] is None
        assert "embedding" not in result.get("query_embedder", {})
        assert "gate" not in result or "documents" not in result["gate"]
        per_document = (len(response.content) - 4_000) / len(documents)
        assert per_document < 2_000, f"{len(response.content)} bytes for {len(documents)} documents"
        # A path on the server as input: there is no such route, and nothing was indexed.
        sources = httpx.post(f"{url}/indexing/run", json={"sources": [str(secret)]}, timeout=60)
        assert sources.status_code in (404, 405), sources.text
        leaked = httpx.post(f"{url}/query/run", json={"query": "zebrapassphrase vault code"}, timeout=120)
        assert all(
            "zebrapassphrase" not in (d.get("content") or "") for d in leaked.json()["result"]["answer"]["documents"]
        )
        if browser_missing() is None:
            marker = tmp_path / "pwned"
            results = attack(url, marker)
            assert not marker.exists(), results
            assert not results["deploy cors"]["ok"], results
    finally:
        output = stop(server)
    assert "Traceback" not in output, output[-3000:]
