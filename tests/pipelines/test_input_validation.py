"""One set of input rules (``pipelines/validation.py``) on every entry point: the NaN family (``NaN``,
``Infinity``, ``1e400``, booleans and strings for counts), unknown fields, control-character and whitespace-only
queries, out-of-range ``top_k``, chat with a model that cannot chat, over-long source names — a 4xx with the
reason over REST (uvicorn on loopback), an MCP error (a real MCP client, and raw JSON-RPC for the literals a JSON
encoder would not send), a usage error from the CLI, ``ValueError``/``TypeError`` from Python.
"""

from __future__ import annotations

import asyncio
import io
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from haystack import Document

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.pipelines.validation import (
    MAX_QUERY_CHARS,
    check_fields,
    check_port,
    check_query,
    check_source_name,
    check_top_k,
)

CONTROL_ONLY = ["", " ", "\t\n", "\u00a0", "\u2003\u2009", "\u200b", "\ufeff", "\x00", "\x00\x01\x02", "\x7f", "\u2028"]


@pytest.mark.parametrize("text", CONTROL_ONLY, ids=[repr(t) for t in CONTROL_ONLY])
def test_queries_without_text_are_refused(text: str) -> None:
    with pytest.raises(ValueError, match="empty"):
        check_query(text)


@pytest.mark.parametrize("text", ["lambda", " λ ", "笔记", "🐍", "?", "a\x00b", "x" * MAX_QUERY_CHARS])
def test_queries_with_text_pass(text: str) -> None:
    assert check_query(text) == text


@pytest.mark.parametrize(
    ("value", "error"),
    [
        (float("nan"), TypeError),
        (float("inf"), TypeError),
        (float("-inf"), TypeError),
        (True, TypeError),
        (False, TypeError),
        ("5", TypeError),
        (5.0, TypeError),
        ([5], TypeError),
        (0, ValueError),
        (-3, ValueError),
        (201, ValueError),
        (2**63, ValueError),
    ],
    ids=repr,
)
def test_top_k_must_be_a_whole_number_in_range(value: Any, error: type) -> None:
    with pytest.raises(error, match="top_k"):
        check_top_k(value)


def test_the_other_checks() -> None:
    assert check_top_k(None) is None and check_top_k(1) == 1 and check_top_k(200) == 200
    with pytest.raises(ValueError, match=r"Unknown field\(s\) \['filters'\]"):
        check_fields({"query": "x", "filters": {}}, ["query", "top_k"])
    assert check_port("1416") == 1416
    for port in (0, 65536, -1, 99999):
        with pytest.raises(ValueError, match="1 to 65535"):
            check_port(port)
    for name in ("", "a\x00b", "x" * 5000):
        with pytest.raises(ValueError):
            check_source_name(name)
    with pytest.raises(TypeError, match="must be a string"):
        check_query(3)


def _result(n: int = 5) -> Any:
    from adaptive_retrieval.components.strategy import Strategy
    from adaptive_retrieval.pipelines.query_result import QueryResult

    documents = [Document(content=f"passage {i}", meta={"source": "s.md"}) for i in range(n)]
    strategy = Strategy(weights={"dense": 1.0})
    return QueryResult("q", documents, "factual", 0.9, {"dense": 1.0}, strategy)


@pytest.mark.parametrize("top_k", [-3, 0, True, 1.5, float("nan"), "2"], ids=repr)
def test_query_response_refuses_a_bad_top_k(top_k: Any) -> None:
    """``from_result(r, top_k=-3)`` used to return all but the last three documents."""
    from adaptive_retrieval.pipelines.serving.wrapper_support import QueryResponse

    with pytest.raises((TypeError, ValueError), match="top_k"):
        QueryResponse.from_result(_result(), top_k=top_k)
    assert len(QueryResponse.from_result(_result(), top_k=2).documents) == 2
    assert len(QueryResponse.from_result(_result(), top_k=None).documents) == 5


@pytest.mark.parametrize(
    "argv",
    [
        ["query", "--top-k", "0", "x"],
        ["query", "--top-k", "201", "x"],
        ["query", "--top-k", "NaN", "x"],
        ["query", "--top-k", "1e400", "x"],
        ["serve", "--port", "99999"],
        ["serve", "--port", "0"],
        ["serve", "--port", "-1"],
        ["delete", "m" * 5000],
        ["delete", ""],
    ],
    ids=lambda a: " ".join(x[:12] for x in a),
)
def test_cli_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    """``serve --port 99999`` used to print 'serving on ...:99999' and listen elsewhere."""
    from adaptive_retrieval.pipelines.cli.main import main

    with pytest.raises(SystemExit) as raised:
        main(argv, out=io.StringIO())
    assert raised.value.code == 2
    err = capsys.readouterr().err
    assert "usage:" in err and "Traceback" not in err, err


@pytest.mark.parametrize("text", ["\x01\x02", "\u200b", "   "], ids=repr)
def test_cli_refuses_a_query_without_text(text: str, tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from adaptive_retrieval.pipelines.cli.main import main

    assert main(["query", "--store", str(tmp_path / "none"), text], out=io.StringIO()) == 1
    assert "error: The query is empty" in capsys.readouterr().err


# -- over HTTP and MCP ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from hayhooks.server.pipelines.registry import registry

    from adaptive_retrieval.pipelines.serving.app import create_app, running_server

    registry.clear()
    folder = tmp_path_factory.mktemp("validation")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTIVE_QDRANT_PATH", str(folder / "qdrant"))
        for name in ("QDRANT_URL", "ADAPTIVE_UPLOAD_DIR", "ADAPTIVE_API_TOKEN", "ADAPTIVE_CORS_ORIGINS"):
            mp.delenv(name, raising=False)
        with running_server(create_app()) as url, httpx.Client(base_url=url, timeout=300) as client:
            upload = client.post("/indexing/run", files=[("files", ("n.md", "# N\n\nThe narwhal note, " * 20))])
            assert upload.status_code == 200, upload.text
            yield {"client": client, "url": url}
    registry.clear()
    release_all_clients()


def _raw(body: str) -> dict[str, Any]:
    return {"content": body, "headers": {"content-type": "application/json"}}


REST = [
    ("top_k NaN", "/query/run", _raw('{"query": "narwhal", "top_k": NaN}'), 422, "top_k"),
    ("top_k Infinity", "/query/run", _raw('{"query": "narwhal", "top_k": Infinity}'), 422, "top_k"),
    ("top_k 1e400", "/query/run", _raw('{"query": "narwhal", "top_k": 1e400}'), 422, "top_k"),
    ("top_k true", "/query/run", {"json": {"query": "narwhal", "top_k": True}}, 422, "top_k"),
    ("top_k '5'", "/query/run", {"json": {"query": "narwhal", "top_k": "5"}}, 422, "top_k"),
    ("top_k 5.0", "/query/run", {"json": {"query": "narwhal", "top_k": 5.0}}, 422, "top_k"),
    ("top_k -3", "/query/run", {"json": {"query": "narwhal", "top_k": -3}}, 422, "top_k"),
    ("unknown filters", "/query/run", {"json": {"query": "narwhal", "filters": {}}}, 422, "filters"),
    ("unknown top-k", "/query/run", {"json": {"query": "narwhal", "top-k": 3}}, 422, "top-k"),
    ("controls only", "/query/run", {"json": {"query": "\x00\x01"}}, 400, "empty"),
    ("zero-width only", "/query/run", {"json": {"query": "\u200b"}}, 400, "empty"),
    ("deep JSON", "/query/run", _raw('{"query": ' + "[" * 100_000 + "]" * 100_000 + "}"), 400, "deep"),
    ("chat model indexing", "/v1/chat/completions", {"json": {"model": "indexing", "messages": []}}, 400, "query"),
    (
        "chat controls",
        "/v1/chat/completions",
        {"json": {"model": "query", "messages": [{"role": "user", "content": "\x01"}]}},
        400,
        "empty",
    ),
    ("responses model query", "/v1/responses", {"json": {"model": "query", "input": "hi"}}, 400, "does not answer"),
]


@pytest.mark.parametrize(("label", "path", "kwargs", "status", "reason"), REST, ids=[c[0] for c in REST])
def test_rest_refuses_with_the_reason(
    served: dict[str, Any], label: str, path: str, kwargs: dict[str, Any], status: int, reason: str
) -> None:
    response = served["client"].post(path, **kwargs)
    assert response.status_code == status, f"{label}: {response.status_code} {response.text[:400]}"
    assert reason.lower() in response.text.lower(), f"{label}: {response.text[:400]}"


def test_a_good_query_still_answers(served: dict[str, Any]) -> None:
    response = served["client"].post("/query/run", json={"query": "narwhal", "top_k": 1})
    assert response.status_code == 200 and len(response.json()["result"]["documents"]) == 1


def test_an_upload_read_in_part_says_so(served: dict[str, Any]) -> None:
    """A file whose parser kept less of its text than it holds is indexed, and the upload's answer lists it."""
    from broken_files import pdf_with_a_lost_page

    response = served["client"].post("/indexing/run", files=[("files", ("paper.pdf", pdf_with_a_lost_page()))])
    assert response.status_code == 200, response.text
    partial = response.json()["result"]["partial"]
    assert len(partial) == 1 and partial[0]["source"].endswith("paper.pdf"), partial
    assert "kept 2 of 3 pages" in partial[0]["reason"]


def test_a_fullwidth_query_meets_the_indexed_words(served: dict[str, Any]) -> None:
    """Issue 41 #11: the indexed text is NFKC-folded; the fullwidth query must be too, or BM25 finds nothing."""
    response = served["client"].post("/query/run", json={"query": "ｎａｒｗｈａｌ", "top_k": 1})
    assert response.status_code == 200, response.text
    top = response.json()["result"]["documents"][0]
    assert "sparse" in top["provenance"], top["provenance"]


def _mcp_call(url: str, arguments: dict[str, Any]) -> tuple[bool, str]:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamablehttp_client

    async def run() -> tuple[bool, str]:
        async with streamablehttp_client(f"{url}/mcp") as (read, write, _), ClientSession(read, write) as session:
            await session.initialize()
            result = await session.call_tool("query", arguments)
            return result.isError, " ".join(getattr(c, "text", "") for c in result.content)

    return asyncio.run(run())


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "narwhal", "top_k": True},
        {"query": "narwhal", "top_k": "5"},
        {"query": "narwhal", "top_k": 0},
        {"query": "narwhal", "filters": {"a": 1}},
        {"query": "\x00"},
        {},
    ],
    ids=repr,
)
def test_mcp_client_gets_an_error(served: dict[str, Any], arguments: dict[str, Any]) -> None:
    is_error, text = _mcp_call(served["url"], arguments)
    assert is_error and text, text
    assert '"documents"' not in text


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_mcp_non_finite_top_k_is_an_error(served: dict[str, Any], literal: str) -> None:
    """``top_k: NaN`` over MCP used to return every document."""
    body = (
        '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "query", '
        f'"arguments": {{"query": "narwhal", "top_k": {literal}}}}}}}'
    )
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    answer = served["client"].post("/mcp", content=body, headers=headers)
    assert answer.status_code < 500, answer.text
    payload = answer.json()
    assert "error" in payload or payload["result"]["isError"], payload
    assert "documents" not in answer.text
