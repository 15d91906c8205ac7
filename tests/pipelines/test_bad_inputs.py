"""Every bad input gets a clear error: a 4xx with the reason over REST, a clear exception from the Python API, a
non-zero exit with ``error: ...`` from the CLI, and never a 500, a hang or an empty success.

Real parts: uvicorn on loopback serving the Hayhooks wrappers over a throw-away Qdrant folder, the YAML
pipelines, and the CLI's ``main`` (the code the console script runs).
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients

LONE_SURROGATE_JSON = '{"query": "what is \\ud800 a lambda"}'
LONG_NAME = "n" * 296 + ".md"
BROKEN_PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF"
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n" for i in range(9)
)


def _topic(name: str) -> str:
    from pydoc_data.topics import topics

    return topics[name]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """The REST app over a small indexed corpus.

    Hayhooks keeps deployed wrappers in a process-wide registry, and an app refuses to start when a name is taken
    (its routes would be missing): the registry is cleared before and after, as another module serves its own app.
    """
    from hayhooks.server.pipelines.registry import registry

    from adaptive_retrieval.pipelines.serving.app import create_app, running_server

    registry.clear()

    folder = tmp_path_factory.mktemp("bad-inputs")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTIVE_QDRANT_PATH", str(folder / "qdrant"))
        mp.setenv("ADAPTIVE_MAX_REQUEST_FILES", "5")
        mp.setenv("ADAPTIVE_MAX_FILE_CHARS", "200000")
        mp.delenv("QDRANT_URL", raising=False)
        mp.delenv("ADAPTIVE_UPLOAD_DIR", raising=False)
        with running_server(create_app()) as url, httpx.Client(base_url=url, timeout=120) as client:
            upload = client.post("/indexing/run", files=[("files", ("lambda.md", "# Lambda\n\n" + _topic("lambda")))])
            assert upload.status_code == 200, upload.text
            yield {"client": client, "folder": folder}
    registry.clear()
    release_all_clients()


def _chat(content: Any) -> dict[str, Any]:
    return {"json": {"model": "query", "messages": [{"role": "user", "content": content}]}}


def _raw(body: str) -> dict[str, Any]:
    return {"content": body, "headers": {"content-type": "application/json"}}


def _up(*files: tuple[str, Any]) -> dict[str, Any]:
    return {"files": [("files", f) for f in files]}


def _file(name: str, data: Any) -> dict[str, Any]:
    return {"files": {"file": (name, data)}, "data": {"purpose": "assistants"}}


Q, CHAT, UP, FILES = "/query/run", "/v1/chat/completions", "/indexing/run", "/v1/files"
SYSTEM_ONLY = {"json": {"model": "query", "messages": [{"role": "system", "content": "hi"}]}}
SURROGATE_CHAT = '{"model": "query", "messages": [{"role": "user", "content": "\\udc80"}]}'
MANY = [(f"f{i}.md", f"# {i}\n\ntext") for i in range(6)]
# (label, path, request kwargs, expected status, substring of the reason)
REST_CASES = [
    ("query: lone surrogate", Q, _raw(LONE_SURROGATE_JSON), 422, "unicode"),
    ("query: integer", Q, {"json": {"query": 123}}, 422, "string"),
    ("query: null", Q, {"json": {"query": None}}, 422, "string"),
    ("query: list", Q, {"json": {"query": ["lambda"]}}, 422, "string"),
    ("query: object", Q, {"json": {"query": {"text": "lambda"}}}, 422, "string"),
    ("query: boolean", Q, {"json": {"query": True}}, 422, "string"),
    ("query: empty", Q, {"json": {"query": ""}}, 400, "empty"),
    ("query: whitespace", Q, {"json": {"query": " \n\t "}}, 400, "empty"),
    ("query: 5000 chars", Q, {"json": {"query": "lambda " * 715}}, 422, "4000"),
    ("query: missing", Q, {"json": {}}, 422, "query"),
    ("query: not JSON", Q, _raw("lambda?"), 422, "json"),
    ("query: top_k 0", Q, {"json": {"query": "lambda", "top_k": 0}}, 422, "top_k"),
    ("query: top_k huge", Q, {"json": {"query": "lambda", "top_k": 10**9}}, 422, "top_k"),
    ("query: top_k text", Q, {"json": {"query": "lambda", "top_k": "many"}}, 422, "top_k"),
    ("chat: 1 MB content", CHAT, _chat("lambda " * 150_000), 400, "limit is 4000"),
    ("chat: lone surrogate", CHAT, _raw(SURROGATE_CHAT), 400, "unicode"),
    ("chat: no messages", CHAT, {"json": {"model": "query", "messages": []}}, 400, "no user message"),
    ("chat: integer content", CHAT, _chat(42), 400, "content is int"),
    ("chat: image-only parts", CHAT, _chat([{"type": "image_url", "image_url": {"url": "x"}}]), 400, "no text"),
    ("chat: only system", CHAT, SYSTEM_ONLY, 400, "no user message"),
    ("upload: no files", UP, {"data": {"force": "false"}}, 400, "no file"),
    ("upload: empty file", UP, _up(("empty.md", b"")), 400, "empty"),
    ("upload: non-UTF-8", UP, _up(("latin.txt", "café".encode("latin-1"))), 400, "utf-8"),
    ("upload: PDF without header", UP, _up(("fake.pdf", b"hello")), 400, "not a pdf"),
    ("upload: broken PDF", UP, _up(("broken.pdf", BROKEN_PDF)), 422, "no text"),
    ("upload: unsupported type", UP, _up(("tool.exe", b"MZ")), 400, "unsupported"),
    ("upload: no usable name", UP, _up(("...", b"text")), 400, "name"),
    ("upload: over chars limit", UP, _up(("big.md", "word " * 50_000)), 413, "ADAPTIVE_MAX_FILE_CHARS"),
    ("upload: too many files", UP, _up(*MANY), 413, "ADAPTIVE_MAX_REQUEST_FILES"),
    ("files: empty", FILES, _file("empty.md", b""), 400, "empty"),
    ("files: broken PDF", FILES, _file("broken2.pdf", BROKEN_PDF), 422, "no text"),
    ("files: unsupported type", FILES, _file("a.docx", b"PK"), 400, "unsupported"),
    ("files: over chars limit", FILES, _file("big2.md", "word " * 50_000), 413, "ADAPTIVE_MAX_FILE_CHARS"),
]


@pytest.mark.parametrize(("label", "path", "kwargs", "status", "reason"), REST_CASES, ids=[c[0] for c in REST_CASES])
def test_rest_bad_input_gets_a_clear_4xx(
    served: dict[str, Any], label: str, path: str, kwargs: dict[str, Any], status: int, reason: str
) -> None:
    response = served["client"].post(path, **kwargs)
    assert response.status_code == status, f"{label}: {response.status_code} {response.text[:500]}"
    assert reason.lower() in response.text.lower(), f"{label}: unclear reason {response.text[:500]}"


@pytest.mark.parametrize(
    ("path", "field"), [("/indexing/run", "files"), ("/v1/files", "file")], ids=["indexing-run", "v1-files"]
)
def test_rest_300_char_file_name_is_indexed_under_a_shorter_name(served: dict[str, Any], path: str, field: str) -> None:
    files = {field: (LONG_NAME.replace(".md", f"{field}.md"), "# Long name\n\n" + _topic("with"))}
    response = served["client"].post(path, files=files, data={"purpose": "assistants"})
    assert response.status_code == 200, response.text[:500]


def test_rest_queries_still_work_after_the_bad_inputs(served: dict[str, Any]) -> None:
    response = served["client"].post("/query/run", json={"query": "lambda expression"})
    assert response.status_code == 200 and response.json()["result"]["documents"]


# -- Python API -------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def query_pipeline(served: dict[str, Any]) -> Any:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    return load_pipeline("query", path=str(served["folder"] / "qdrant"))


QUERY_CASES = [
    (None, TypeError, "must be a string"),
    (123, TypeError, "must be a string"),
    (1.5, TypeError, "must be a string"),
    (["lambda"], TypeError, "must be a string"),
    ({"q": "lambda"}, TypeError, "must be a string"),
    (b"lambda", TypeError, "must be a string"),
    ("", ValueError, "empty"),
    ("   \n", ValueError, "empty"),
    ("x" * 4001, ValueError, "limit is 4000"),
    ("lambda \ud800", ValueError, "unicode"),
    ("\udfff", ValueError, "unicode"),
]


@pytest.mark.parametrize(("query", "error", "reason"), QUERY_CASES, ids=[repr(c[0])[:20] for c in QUERY_CASES])
def test_run_query_refuses_bad_queries(query_pipeline: Any, query: Any, error: type, reason: str) -> None:
    from adaptive_retrieval.pipelines.query_pipeline import run_query

    with pytest.raises(error) as raised:
        run_query(query_pipeline, query)
    assert reason.lower() in str(raised.value).lower()


@pytest.fixture(scope="module")
def indexing_pipeline(tmp_path_factory: pytest.TempPathFactory) -> Any:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    return load_pipeline("indexing", path=str(tmp_path_factory.mktemp("api") / "qdrant"))


@pytest.mark.parametrize(
    ("paths", "error", "reason"),
    [
        ("file.md", TypeError, "must be a list"),
        (b"file.md", TypeError, "must be a list"),
        (Path("file.md"), TypeError, "must be a list"),
        (["/no/such/folder"], FileNotFoundError, "does not exist"),
    ],
    ids=["str", "bytes", "Path", "missing"],
)
def test_index_paths_refuses_bad_paths(indexing_pipeline: Any, paths: Any, error: type, reason: str) -> None:
    from adaptive_retrieval.pipelines.indexer import index_paths

    start = time.monotonic()
    with pytest.raises(error, match=reason):
        index_paths(indexing_pipeline, paths)
    assert time.monotonic() - start < 5  # refused at once, never a walk of /


YAML_CASES = [
    ("alias bomb", ALIAS_BOMB + "components: *j\n", "aliases"),
    ("malformed", "components: [unclosed", "malformed"),
    ("a list", "- components\n- connections\n", "mapping"),
    ("components not a mapping", "components: 5\nconnections: []\n", "mapping"),
    ("python tag", "components: !!python/object/apply:os.system ['true']\n", "malformed"),
    (
        "unknown component type",
        "components:\n  x:\n    type: os.system\n    init_parameters: {}\nconnections: []\n",
        "could not build",
    ),
]


@pytest.mark.parametrize(("label", "text", "reason"), YAML_CASES, ids=[c[0] for c in YAML_CASES])
def test_yaml_loader_refuses_quickly(label: str, text: str, reason: str) -> None:
    from adaptive_retrieval.pipelines.yaml_io import PipelineLoadError, loads_pipeline

    start = time.monotonic()
    with pytest.raises(PipelineLoadError) as raised:
        loads_pipeline(text)
    assert time.monotonic() - start < 2, label
    assert reason.lower() in str(raised.value).lower(), str(raised.value)


@pytest.mark.parametrize("value", ["abc", "-1", "0"])
def test_limit_variables_must_be_positive_numbers(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    from adaptive_retrieval.pipelines.limits import Limits

    monkeypatch.setenv("ADAPTIVE_MAX_FILE_CHARS", value)
    with pytest.raises(ValueError, match="ADAPTIVE_MAX_FILE_CHARS"):
        Limits.from_env()


# -- CLI --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def bad_files(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("bad-files")
    (folder / "empty.md").write_bytes(b"")
    (folder / "latin.txt").write_bytes("café crème".encode("latin-1"))
    (folder / "broken.pdf").write_bytes(BROKEN_PDF)
    (folder / "only.exe").write_bytes(b"MZ")
    (folder / "notext").mkdir()
    return folder


CLI_CASES = [
    ("query: empty", ["query", ""], "empty"),
    ("query: whitespace", ["query", "   "], "empty"),
    ("query: too long", ["query", "--store", "{tmp}/q0", "x" * 4001], "limit is 4000"),
    ("query: store is a file", ["query", "--store", "{folder}/empty.md", "lambda"], "empty.md"),
    ("index: missing path", ["index", "--store", "{tmp}/s1", "{folder}/missing"], "does not exist"),
    ("index: no supported file", ["index", "--store", "{tmp}/s2", "{folder}/notext"], "no supported file"),
    ("index: empty file", ["index", "--store", "{tmp}/s3", "{folder}/empty.md"], "'empty.md' is empty"),
    ("index: non-UTF-8", ["index", "--store", "{tmp}/s4", "{folder}/latin.txt"], "not UTF-8 text"),
    ("index: broken PDF", ["index", "--store", "{tmp}/s5", "{folder}/broken.pdf"], "yielded no text"),
    ("stats: no index", ["stats", "--store", "{tmp}/nothing"], "no index at"),
]


@pytest.mark.parametrize(("label", "argv", "reason"), CLI_CASES, ids=[c[0] for c in CLI_CASES])
def test_cli_bad_input_exits_non_zero_with_a_reason(
    bad_files: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], label: str, argv: list[str], reason: str
) -> None:
    from adaptive_retrieval.pipelines.cli.main import main

    out = io.StringIO()
    code = main([a.format(folder=bad_files, tmp=tmp_path) for a in argv], out=out)
    err = capsys.readouterr().err
    release_all_clients()
    assert code == 1, f"{label}: exit {code}"
    assert reason.lower() in err.lower(), f"{label}: {err[-500:]}"
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv",
    [["query", "--top-k", "0", "x"], ["index", "--batch-files", "0", "."], ["frobnicate"], ["query"]],
    ids=["top-k 0", "batch-files 0", "unknown command", "query without text"],
)
def test_cli_usage_errors_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from adaptive_retrieval.pipelines.cli.main import main

    with pytest.raises(SystemExit) as raised:
        main(argv, out=io.StringIO())
    assert raised.value.code == 2
    assert "usage:" in capsys.readouterr().err


def test_server_refuses_to_start_when_a_pipeline_cannot_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing models folder used to give a server whose /status said "Up!" while /query/run was a 404."""
    from hayhooks.server.pipelines.registry import registry

    from adaptive_retrieval.pipelines.serving.app import create_app, running_server

    monkeypatch.setenv("ADAPTIVE_MODELS_DIR", str(tmp_path / "no-models"))
    monkeypatch.setenv("ADAPTIVE_QDRANT_PATH", str(tmp_path / "qdrant"))
    monkeypatch.delenv("QDRANT_URL", raising=False)
    registry.clear()
    try:
        # The pipelines load while the app is built (Hayhooks' fixed pipeline set): building it fails.
        with pytest.raises(Exception, match="Model folder"), running_server(create_app(), timeout=120):
            pass
    finally:
        registry.clear()
        release_all_clients()
