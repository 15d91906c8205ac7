"""The inputs of ``bad_inputs.py``: REST, MCP, CLI and Python cases, each with what should happen.

A case that expects ``ok`` may carry a check of the answer (a wrong answer counts as a misleading success); the
upload cases plant a unique word in each file so that a later query shows whether every file was kept.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from bad_inputs import Case, Context, Outcome, with_timeout

from adaptive_retrieval.pipelines import NO_PASSAGE

Q, CHAT, UP, FILES, SOURCES = "/query/run", "/v1/chat/completions", "/indexing/run", "/v1/files", "/sources"
LIMIT = 4000


# -- REST --------------------------------------------------------------------------------------------------------


def _reason(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return ""
    detail = body.get("detail") if isinstance(body, dict) else None
    return json.dumps(detail, ensure_ascii=False)[:300] if detail else ""


TRACEBACK = "Traceback (most recent call last)"


def rest_outcome(response: httpx.Response, check: Callable[[httpx.Response], bool] | None) -> Outcome:
    """Classify one HTTP answer (``check`` judges a 2xx; an indexed page may quote a traceback, an error may not)."""
    head = f"{response.status_code} {response.text[:200]}"
    if response.status_code >= 500 or (response.status_code >= 400 and TRACEBACK in response.text):
        return Outcome("crash", head)
    if response.status_code >= 400:
        return Outcome("error", head) if _reason(response) else Outcome("unclear", head)
    passed = check(response) if check else True
    if not passed and getattr(check, "keeps_data", False):
        return Outcome("lost", head)
    return Outcome("ok", head, passed)


def kept(check: Callable[[httpx.Response], bool]) -> Callable[[httpx.Response], bool]:
    """Mark ``check`` as one that indexed text is still found: its failure counts as ``lost``."""
    check.keeps_data = True  # type: ignore[attr-defined]
    return check


def rest(method: str, path: str, expect: str, label: str, check: Any = None, quick: bool = False, **kw: Any) -> Case:
    def call(ctx: Context) -> Outcome:
        for attempt in (1, 2):
            try:
                response = ctx.client.request(method, path, **kw)
                break
            except httpx.TimeoutException as err:
                return Outcome("timeout", str(err))
            except httpx.TransportError as err:
                # The server closes a connection after an unhandled error: the next request on it fails once.
                # A second failure on a fresh connection is a crash.
                if attempt == 2:
                    return Outcome("crash", f"connection: {err}")
        return rest_outcome(response, check)

    return Case("rest", label, expect, call, quick)


def _docs(response: httpx.Response) -> list[dict[str, Any]]:
    return response.json()["result"]["documents"]


def _has_docs(response: httpx.Response) -> bool:
    return bool(_docs(response))


def _at_most(n: int) -> Callable[[httpx.Response], bool]:
    return lambda r: 0 < len(_docs(r)) <= n


def _top_is(name: str) -> Callable[[httpx.Response], bool]:
    return lambda r: bool(_docs(r)) and Path(_docs(r)[0]["source"] or "").name == name


def _raw(body: str, content_type: str = "application/json") -> dict[str, Any]:
    return {"content": body.encode("utf-8", "surrogatepass"), "headers": {"content-type": content_type}}


GOOD_QUERIES = [
    "lambda expression",
    "What does the with statement do?",
    "try except finally",
    "  lambda  ",
    "LAMBDA",
    "λ lambda 函数 匿名函数",
    "лямбда выражение lambda",
    "🐍 lambda",
    "lambda\texpression",
    "lambda\nexpression",
    "Wie funktioniert die with-Anweisung?",
    "ラムダ式 lambda",
    "تعبير lambda",
    "lambda " * 571,
    "x" * LIMIT,
    "a",
    "?",
    "lambda; DROP TABLE documents; --",
    "<script>alert(1)</script> lambda",
    "../../etc/passwd",
    "%00 lambda",
    "lambda\u0301 accent",
    "\u202elambda",
]
BAD_QUERY_TEXTS = {
    "empty": "",
    "space": " ",
    "tab+newline": "\t\n",
    "CRLF": "\r\n\r\n",
    "no-break space": "\u00a0",
    "em+thin space": "\u2003\u2009",
    "zero-width space": "\u200b",
    "BOM": "\ufeff",
    "NUL": "\x00",
    "C0 controls": "\x00\x01\x02\x03",
    "DEL": "\x7f",
    "NEL": "\u0085",
    "ESC only": "\x1b",
    "mixed controls": "\x00 \t \u200b \x1f",
    "line separator": "\u2028",
    "4001 chars": "x" * (LIMIT + 1),
    "20000 chars": "lambda " * 2858,
    "1M chars": "y" * 1_000_000,
}
BAD_QUERY_VALUES = {
    "int": 123,
    "float": 1.5,
    "true": True,
    "false": False,
    "null": None,
    "empty list": [],
    "list": ["lambda"],
    "empty object": {},
    "object": {"text": "lambda"},
}
GOOD_TOP_K = {"1": 1, "5": 5, "200": 200, "null": None}
BAD_TOP_K: dict[str, Any] = {
    "0": 0,
    "-1": -1,
    "-3": -3,
    "201": 201,
    "1e9": 10**9,
    "1e30": 10**30,
    "2**63": 2**63,
    "NaN": float("nan"),
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
    "true": True,
    "false": False,
    "'5'": "5",
    "'five'": "five",
    "5.0": 5.0,
    "5.5": 5.5,
    "-0.0": -0.0,
    "list": [5],
    "object": {"n": 5},
}
UNKNOWN_FIELDS = {
    "filters": {"filters": {"field": "meta.source", "operator": "==", "value": "x"}},
    "top-k": {"top-k": 3},
    "topk": {"topk": 3},
    "Query": {"Query": "lambda"},
    "debug": {"debug": True},
    "empty key": {"": 1},
}


def _json_text(value: Any) -> str:
    return json.dumps(value, allow_nan=True, ensure_ascii=False)


def query_cases() -> list[Case]:
    cases = [
        rest("POST", Q, "ok", f"query ok: {q[:30]!r}", _has_docs, i < 3, json={"query": q})
        for i, q in enumerate(GOOD_QUERIES)
    ]
    cases.append(
        rest(
            "POST",
            Q,
            "ok",
            "query ok: top hit lambda.md",
            _top_is("lambda.md"),
            True,
            json={"query": "lambda expression anonymous function"},
        )
    )
    cases += [
        rest("POST", Q, "error", f"query: {k}", None, k in ("empty", "NUL", "4001 chars"), json={"query": v})
        for k, v in BAD_QUERY_TEXTS.items()
    ]
    cases.append(rest("POST", Q, "error", "query: lone surrogate", None, True, **_raw('{"query": "\\ud800 lambda"}')))
    cases += [
        rest("POST", Q, "error", f"query type: {k}", None, k == "int", json={"query": v})
        for k, v in BAD_QUERY_VALUES.items()
    ]
    cases += [
        rest("POST", Q, "ok", f"top_k ok: {k}", _at_most(v or 200), k == "5", json={"query": "lambda", "top_k": v})
        for k, v in GOOD_TOP_K.items()
    ]
    quick_k = ("0", "-3", "NaN", "Infinity", "true", "'5'")
    cases += [
        rest("POST", Q, "error", f"top_k: {k}", None, k in quick_k, **_raw(_json_text({"query": "lambda", "top_k": v})))
        for k, v in BAD_TOP_K.items()
    ]
    cases.append(rest("POST", Q, "error", "top_k: 1e400", None, True, **_raw('{"query": "lambda", "top_k": 1e400}')))
    cases += [
        rest("POST", Q, "error", f"unknown field: {k}", None, k == "filters", json={"query": "lambda", **v})
        for k, v in UNKNOWN_FIELDS.items()
    ]
    bodies = {
        "not JSON": ("lambda?", "application/json"),
        "JSON list": ("[]", "application/json"),
        "JSON string": ('"lambda"', "application/json"),
        "JSON null": ("null", "application/json"),
        "JSON number": ("1", "application/json"),
        "empty body": ("", "application/json"),
        "truncated": ('{"query": "lam', "application/json"),
        "deep nesting": ('{"query": ' + "[" * 100_000 + "]" * 100_000 + "}", "application/json"),
        "text/plain JSON": ('{"query": "lambda"}', "text/plain"),
        "form-encoded": ("query=lambda", "application/x-www-form-urlencoded"),
        "duplicate keys": ('{"query": "lambda", "query": ""}', "application/json"),
    }
    cases += [
        rest("POST", Q, "error", f"body: {k}", None, k in ("deep nesting", "text/plain JSON"), **_raw(b, t))
        for k, (b, t) in bodies.items()
    ]
    return cases


def _chat(model: Any, content: Any = "What is a lambda?", **extra: Any) -> dict[str, Any]:
    return {"json": {"model": model, "messages": [{"role": "user", "content": content}], **extra}}


def _chat_text(response: httpx.Response) -> bool:
    """A chat answer: the verdict, then numbered passages (or that none matched)."""
    content = response.json()["choices"][0]["message"]["content"]
    return "[1] " in content or NO_PASSAGE in content


def chat_cases() -> list[Case]:
    parts = [{"type": "text", "text": "What is a lambda?"}]
    cases = [
        rest("POST", CHAT, "ok", "chat ok: text", _chat_text, True, **_chat("query")),
        rest("POST", CHAT, "ok", "chat ok: parts", _chat_text, False, **_chat("query", parts)),
        rest(
            "POST",
            CHAT,
            "ok",
            "chat ok: OpenAI extras",
            _chat_text,
            False,
            **_chat("query", temperature=0.2, max_tokens=50, user="u1"),
        ),
        rest("POST", "/chat/completions", "ok", "chat ok: unversioned path", _chat_text, False, **_chat("query")),
    ]
    bad = {
        "model indexing": _chat("indexing"),
        "model diagrams": _chat("diagrams"),
        "model unknown": _chat("gpt-4o"),
        "model empty": _chat(""),
        "model null": _chat(None),
        "content empty": _chat("query", ""),
        "content whitespace": _chat("query", " \n "),
        "content controls": _chat("query", "\x00\x01"),
        "content 4001 chars": _chat("query", "x" * (LIMIT + 1)),
        "content int": _chat("query", 42),
        "content null": _chat("query", None),
        "no messages": {"json": {"model": "query", "messages": []}},
        "messages not a list": {"json": {"model": "query", "messages": "hi"}},
        "only assistant": {"json": {"model": "query", "messages": [{"role": "assistant", "content": "hi"}]}},
        "no model": {"json": {"messages": [{"role": "user", "content": "hi"}]}},
        "lone surrogate": _raw('{"model": "query", "messages": [{"role": "user", "content": "\\udc80"}]}'),
        "not JSON": _raw("hello"),
    }
    quick = ("model indexing", "content controls")
    cases += [rest("POST", CHAT, "error", f"chat: {k}", None, k in quick, **v) for k, v in bad.items()]
    return cases


# -- uploads, deletes, other routes ------------------------------------------------------------------------------


def _file(word: str) -> str:
    return f"# Notes\n\nThe {word} lives here. {word} is a rare word planted by the bad-input script.\n"


#: (name, planted word): every name must stay a distinct file.
UNICODE_NAMES = [
    ("über.md", "quokkaumlaut"),
    ("äber.md", "wombatumlaut"),
    ("заметки.md", "capybarakyr"),
    ("笔记.md", "pangolincjk"),
    ("ノート.md", "axolotlkana"),
    ("📝 notes.md", "okapiemoji"),
    ("a b.md", "narwhalspace"),
    ("a?b.md", "tapirquestion"),
    ("a*b.md", "dugongstar"),
    ("é" * 200 + ".md", "ocelotlong"),
    ("中" * 120 + ".md", "marmotcjklong"),
    ("dir/inner.md", "lemurslash"),
]


def _found(word: str) -> Callable[[httpx.Response], bool]:
    return lambda r: bool(_docs(r)) and word in (_docs(r)[0]["content"] or "")


def _gone(word: str) -> Callable[[httpx.Response], bool]:
    return lambda r: all(word not in (d["content"] or "") for d in _docs(r))


def _replaced(name: str) -> Callable[[httpx.Response], bool]:
    def check(response: httpx.Response) -> bool:
        replaced = response.json().get("result", {}).get("replaced") or []
        return any(isinstance(r, dict) and r.get("name") == name for r in replaced)

    return check


def upload_cases() -> list[Case]:
    cases = [
        rest("POST", UP, "ok", f"upload ok: {n[:24]}", None, i < 2, files=[("files", (n, _file(w)))])
        for i, (n, w) in enumerate(UNICODE_NAMES)
    ]
    cases += [
        rest("POST", Q, "ok", f"upload kept: {n[:24]}", kept(_found(w)), i < 2, json={"query": w, "top_k": 1})
        for i, (n, w) in enumerate(UNICODE_NAMES)
    ]
    nfd = unicodedata.normalize("NFD", "über.md")
    cases += [
        rest(
            "POST",
            UP,
            "ok",
            "upload ok: re-upload says what it replaced",
            _replaced("über.md"),
            True,
            files=[("files", ("über.md", _file("quokkaumlaut") + "\nA second version.\n"))],
        ),
        rest(
            "POST",
            UP,
            "error",
            "upload: same name twice",
            None,
            True,
            files=[("files", ("twice.md", _file("slothtwice"))), ("files", ("twice.md", _file("slothtwice2")))],
        ),
        rest(
            "POST",
            UP,
            "error",
            "upload: NFC and NFD of one name",
            None,
            False,
            files=[("files", ("über.md", _file("x1"))), ("files", (nfd, _file("x2")))],
        ),
        rest("POST", Q, "ok", "upload: clash stored nothing", _gone("slothtwice"), True, json={"query": "slothtwice"}),
    ]
    bad = {
        "empty file": [("files", ("empty.md", b""))],
        "non-UTF-8": [("files", ("latin.txt", "café".encode("latin-1")))],
        "fake PDF": [("files", ("fake.pdf", b"hello"))],
        "unsupported type": [("files", ("tool.exe", b"MZ"))],
        "name '...'": [("files", ("...", b"text"))],
        "name '.md'": [("files", (".md", b"# x\n\ntext"))],
        "name empty": [("files", ("", b"# x\n\ntext"))],
        "nine files": [("files", (f"f{i}.md", f"# {i}\n\ntext")) for i in range(9)],
    }
    cases += [rest("POST", UP, "error", f"upload: {k}", None, k == "empty file", files=v) for k, v in bad.items()]
    cases.append(rest("POST", UP, "error", "upload: no files", None, False, data={"force": "false"}))
    cases += [
        rest(
            "POST",
            FILES,
            "ok",
            "v1/files ok",
            None,
            False,
            files={"file": ("filesapi.md", _file("gerbilfiles"))},
            data={"purpose": "assistants"},
        ),
        rest(
            "POST",
            FILES,
            "error",
            "v1/files: empty",
            None,
            False,
            files={"file": ("e.md", b"")},
            data={"purpose": "assistants"},
        ),
        rest(
            "POST",
            FILES,
            "error",
            "v1/files: unsupported",
            None,
            False,
            files={"file": ("a.docx", b"PK")},
            data={"purpose": "assistants"},
        ),
    ]
    return cases


def delete_cases() -> list[Case]:
    cases = [
        rest("DELETE", SOURCES, "ok", "delete ok: über.md by its name", None, True, params={"source": "über.md"}),
        rest(
            "POST",
            Q,
            "ok",
            "delete: über.md's text is gone",
            _gone("quokkaumlaut"),
            True,
            json={"query": "quokkaumlaut"},
        ),
        rest(
            "POST",
            Q,
            "ok",
            "delete: äber.md is still there",
            kept(_found("wombatumlaut")),
            True,
            json={"query": "wombatumlaut", "top_k": 1},
        ),
        rest("DELETE", SOURCES, "ok", "delete ok: заметки.md", None, False, params={"source": "заметки.md"}),
    ]
    bad = {
        "unknown": "nothing-here.md",
        "300 chars": "n" * 300 + ".md",
        "5000 chars": "m" * 5000,
        "300-char path": "/tmp/" + "p" * 300 + "/x.md",
        "empty": "",
        "NUL": "a\x00b.md",
        "traversal": "../../etc/passwd",
        "server file": "/etc/passwd",
        "already deleted": "über.md",
    }
    cases += [
        rest("DELETE", SOURCES, "error", f"delete: {k}", None, k in ("300 chars", "NUL"), params={"source": v})
        for k, v in bad.items()
    ]
    cases.append(rest("DELETE", SOURCES, "error", "delete: no source", None, False))
    return cases


def route_cases() -> list[Case]:
    return [
        rest("GET", "/diagrams/nope.svg", "error", "diagrams: unknown pipeline"),
        rest("GET", "/diagrams/query.svg", "error", "diagrams: bad detail", params={"detail": "x" * 300}),
        rest("GET", "/diagrams/query.png", "error", "diagrams: bad format"),
        rest("GET", "/diagrams/query.mmd", "ok", "diagrams ok: mmd", lambda r: r.text.startswith("flowchart")),
        rest(
            "POST",
            "/deploy_files",
            "error",
            "deploy_files route",
            None,
            True,
            json={"name": "x", "files": {"pipeline_wrapper.py": "import os"}},
        ),
        rest("POST", "/undeploy/query", "error", "undeploy route", None, True),
        rest("POST", "/nope/run", "error", "unknown pipeline route"),
    ]


# -- MCP ---------------------------------------------------------------------------------------------------------


def _mcp_result(result: Any) -> Outcome:
    text = " ".join(getattr(c, "text", "") for c in result.content)
    if result.isError:
        return Outcome("crash" if TRACEBACK in text else "error", text[:300])
    # The tool answers text a model reads: the verdict, then numbered passages (or that none matched).
    return Outcome("ok", text[:300], "[1] " in text or NO_PASSAGE in text)


def mcp(label: str, expect: str, arguments: Any, tool: str = "query", quick: bool = False) -> Case:
    def call(ctx: Context) -> Outcome:
        from mcp import ClientSession
        from mcp.client.streamable_http import streamablehttp_client
        from mcp.shared.exceptions import McpError

        async def run() -> Outcome:
            async with (
                streamablehttp_client(f"{ctx.url}/mcp") as (read, write, _),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                try:
                    return _mcp_result(await session.call_tool(tool, arguments))
                except McpError as err:
                    return Outcome("error", str(err))

        def blocking() -> Outcome:
            try:
                return asyncio.run(run())
            except BaseException as err:  # the client wraps HTTP failures (a 5xx) in exception groups
                return Outcome("crash", f"{type(err).__name__}: {err!r}"[:300])

        return with_timeout(blocking, ctx.timeout)

    return Case("mcp", label, expect, call, quick)


def mcp_raw(label: str, body: str, quick: bool = False) -> Case:
    """A JSON-RPC tool call sent as text (non-finite numbers, which a JSON encoder would not send)."""

    def call(ctx: Context) -> Outcome:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        try:
            response = ctx.client.post("/mcp", content=body, headers=headers)
        except httpx.HTTPError as err:
            return Outcome("timeout" if isinstance(err, httpx.TimeoutException) else "crash", str(err))
        if response.status_code >= 500 or TRACEBACK in response.text:
            return Outcome("crash", f"{response.status_code} {response.text[:200]}")
        if response.status_code >= 400:
            return Outcome("error", f"{response.status_code} {response.text[:200]}")
        answer = response.json()
        if "error" in answer or answer.get("result", {}).get("isError"):
            return Outcome("error", response.text[:300])
        return Outcome("ok", response.text[:300])

    return Case("mcp", label, "error", call, quick)


def mcp_cases() -> list[Case]:
    cases = [mcp(f"mcp ok: {q[:24]!r}", "ok", {"query": q}, quick=i == 0) for i, q in enumerate(GOOD_QUERIES[:6])]
    cases += [mcp(f"mcp ok: top_k {k}", "ok", {"query": "lambda", "top_k": v}) for k, v in GOOD_TOP_K.items()]
    bad_q = ("empty", "space", "NUL", "C0 controls", "zero-width space", "4001 chars")
    cases += [mcp(f"mcp query: {k}", "error", {"query": BAD_QUERY_TEXTS[k]}, quick=k == "NUL") for k in bad_q]
    cases += [mcp(f"mcp query type: {k}", "error", {"query": v}) for k, v in BAD_QUERY_VALUES.items()]
    bad_k = ("0", "-1", "-3", "201", "true", "'5'", "5.5", "list")
    cases += [
        mcp(f"mcp top_k: {k}", "error", {"query": "lambda", "top_k": BAD_TOP_K[k]}, quick=k == "true") for k in bad_k
    ]
    cases += [
        mcp("mcp: unknown argument filters", "error", {"query": "lambda", "filters": {"a": 1}}, quick=True),
        mcp("mcp: missing query", "error", {}),
        mcp("mcp: tool indexing", "error", {"files": []}, tool="indexing"),
        mcp("mcp: tool diagrams", "error", {}, tool="diagrams"),
        mcp("mcp: tool deploy_pipeline", "error", {"name": "x", "files": {}}, tool="deploy_pipeline"),
        mcp("mcp: tool undeploy_pipeline", "error", {"name": "query"}, tool="undeploy_pipeline"),
        mcp("mcp: tool empty name", "error", {}, tool=""),
    ]
    call = '{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "query", "arguments": %s}}'
    for label, value in (("NaN", "NaN"), ("Infinity", "Infinity"), ("-Infinity", "-Infinity"), ("1e400", "1e400")):
        cases.append(mcp_raw(f"mcp raw top_k: {label}", call % f'{{"query": "lambda", "top_k": {value}}}', True))
    cases.append(mcp_raw("mcp raw query: NaN", call % '{"query": NaN}'))
    return cases


# -- CLI ---------------------------------------------------------------------------------------------------------


def _cli_outcome(code: int, stderr: str, stdout: str) -> Outcome:
    tail = (stderr or stdout)[-300:]
    if TRACEBACK in stderr:
        return Outcome("crash", tail)
    if code == 0:
        return Outcome("ok", stdout[-300:])
    if code in (1, 2) and ("error:" in stderr or "usage:" in stderr):
        return Outcome("error", tail)
    return Outcome("crash", f"exit {code}: {tail}")


def cli(label: str, expect: str, *argv: str, check: Callable[[str], bool] | None = None, quick: bool = False) -> Case:
    def call(ctx: Context) -> Outcome:
        args = [a.format(tmp=ctx.folder, store=ctx.store) for a in argv]
        try:
            done = subprocess.run(
                [ctx.cli, *args], capture_output=True, text=True, timeout=ctx.timeout, cwd=ctx.folder, check=False
            )
        except subprocess.TimeoutExpired:
            return Outcome("timeout", f"no exit within {ctx.timeout:.0f} s")
        outcome = _cli_outcome(done.returncode, done.stderr, done.stdout)
        if outcome.kind == "ok" and check is not None:
            outcome.passed = check(done.stdout)
        return outcome

    return Case("cli", label, expect, call, quick)


def serve(label: str, *argv: str) -> Case:
    """``serve`` with a bad option must exit with a usage error; a server that starts is a misleading success."""

    def call(ctx: Context) -> Outcome:
        store = str(ctx.folder / f"serve-{abs(hash(label))}")
        process = subprocess.Popen(
            [ctx.cli, "serve", "--store", store, *argv],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ctx.folder,
        )
        try:
            stdout, stderr = process.communicate(timeout=25)
        except subprocess.TimeoutExpired:
            process.kill()
            stdout, stderr = process.communicate()
            return Outcome("ok", f"still serving after 25 s: {stdout[-200:]}")
        return _cli_outcome(process.returncode, stderr, stdout)

    return Case("cli", label, "error", call)


def cli_cases() -> list[Case]:
    cases = [
        cli(
            "cli ok: query",
            "ok",
            "query",
            "--store",
            "{store}",
            "lambda expression",
            check=lambda out: "lambda.md" in out,
            quick=True,
        ),
        cli("cli ok: query --top-k 1", "ok", "query", "--store", "{store}", "--top-k", "1", "with statement"),
        cli("cli: query empty", "error", "query", "--store", "{store}", ""),
        cli("cli: query whitespace", "error", "query", "--store", "{store}", "   "),
        cli("cli: query controls", "error", "query", "--store", "{store}", "\x01\x02\x03", quick=True),
        cli("cli: query zero-width", "error", "query", "--store", "{store}", "\u200b"),
        cli("cli: query 4001 chars", "error", "query", "--store", "{store}", "x" * (LIMIT + 1)),
        cli("cli: query --top-k 0", "error", "query", "--store", "{store}", "--top-k", "0", "lambda"),
        cli("cli: query --top-k -1", "error", "query", "--store", "{store}", "--top-k", "-1", "lambda"),
        cli("cli: query --top-k abc", "error", "query", "--store", "{store}", "--top-k", "abc", "lambda"),
        cli("cli: query --top-k 201", "error", "query", "--store", "{store}", "--top-k", "201", "lambda"),
        cli("cli: query --top-k 1e400", "error", "query", "--store", "{store}", "--top-k", "1e400", "lambda"),
        cli("cli: query --top-k NaN", "error", "query", "--store", "{store}", "--top-k", "NaN", "lambda"),
        cli("cli: delete unknown", "error", "delete", "--store", "{store}", "nothing-here.md"),
        cli("cli: delete 300 chars", "error", "delete", "--store", "{store}", "n" * 300 + ".md", quick=True),
        cli("cli: delete empty", "error", "delete", "--store", "{store}", ""),
        cli("cli: delete NUL-free long path", "error", "delete", "--store", "{store}", "/tmp/" + "q" * 300 + "/x.md"),
        cli("cli ok: delete äber.md", "ok", "delete", "--store", "{store}", "äber.md"),
        cli("cli: index missing path", "error", "index", "--store", "{tmp}/other", "{tmp}/missing"),
        cli("cli: stats missing store", "error", "stats", "--store", "{tmp}/none"),
        cli("cli: draw unknown pipeline", "error", "draw", "--pipeline", "nope"),
        cli("cli: unknown command", "error", "frobnicate"),
        cli("cli: serve --port abc", "error", "serve", "--port", "abc"),
        serve("cli: serve --port 99999", "--port", "99999"),
        serve("cli: serve --port -1", "--port", "-1"),
        serve("cli: serve --port 0", "--port", "0"),
        serve("cli: serve --port 65536", "--port", "65536"),
    ]
    return cases


# -- Python ------------------------------------------------------------------------------------------------------

PYTHON_ERRORS = (ValueError, TypeError, LookupError)


def py(label: str, expect: str, function: Callable[[Context], Any], check: Any = None, quick: bool = False) -> Case:
    def call(ctx: Context) -> Outcome:
        def run() -> Outcome:
            try:
                value = function(ctx)
            except PYTHON_ERRORS as err:
                return Outcome("error", f"{type(err).__name__}: {err}")
            except Exception as err:
                return Outcome("crash", f"{type(err).__name__}: {err}")
            return Outcome("ok", repr(value)[:200], check(value) if check else True)

        return with_timeout(run, ctx.timeout)

    return Case("python", label, expect, call, quick)


def _run_query(value: Any) -> Callable[[Context], Any]:
    from adaptive_retrieval.pipelines import run_query

    return lambda ctx: run_query(ctx.pipeline, value)


def _from_result(top_k: Any) -> Callable[[Context], Any]:
    from adaptive_retrieval.pipelines.serving import QueryResponse

    return lambda ctx: QueryResponse.from_result(ctx.result, top_k=top_k)


def _distinct(*names: str) -> Callable[[Context], Any]:
    from adaptive_retrieval.pipelines.serving import safe_filename

    return lambda ctx: [safe_filename(n) for n in names]


def _loads(text: str) -> Callable[[Context], Any]:
    from adaptive_retrieval.pipelines import loads_pipeline

    return lambda ctx: loads_pipeline(text)


def python_cases() -> list[Case]:
    cases = [
        py(f"run_query ok: {q[:24]!r}", "ok", _run_query(q), lambda r: bool(r.documents), i == 0)
        for i, q in enumerate(GOOD_QUERIES[:10])
    ]
    cases += [
        py(f"run_query: {k}", "error", _run_query(v), quick=k in ("NUL", "C0 controls"))
        for k, v in BAD_QUERY_TEXTS.items()
        if k != "1M chars"
    ]
    cases += [py("run_query: lone surrogate", "error", _run_query("\ud800"))]
    cases += [py(f"run_query type: {k}", "error", _run_query(v)) for k, v in BAD_QUERY_VALUES.items()]
    cases += [py("run_query type: bytes", "error", _run_query(b"lambda"))]
    cases += [
        py(f"from_result ok: top_k {k}", "ok", _from_result(v), lambda r: len(r.documents) > 0)
        for k, v in GOOD_TOP_K.items()
    ]
    cases += [py(f"from_result: top_k {k}", "error", _from_result(v), quick=k == "-3") for k, v in BAD_TOP_K.items()]
    unique = [
        ("über.md", "äber.md"),
        ("заметки.md", "записки.md"),
        ("笔记.md", "日记.md"),
        ("a?b.md", "a*b.md"),
        ("é" * 200 + "1.md", "é" * 200 + "2.md"),
        ("ノート.md", "ノード.md"),
    ]
    cases += [
        py(
            f"safe_filename distinct: {a[:12]} / {b[:12]}",
            "ok",
            _distinct(a, b),
            lambda names: len(set(names)) == len(names) and all(len(n.encode()) <= 255 for n in names),
            quick=i == 0,
        )
        for i, (a, b) in enumerate(unique)
    ]
    cases += [
        py("safe_filename: '...'", "error", _distinct("...")),
        py("safe_filename: exe", "error", _distinct("a.exe")),
    ]
    yamls = {
        "malformed": "components: [unclosed",
        "a list": "- a\n- b\n",
        "python tag": "components: !!python/object/apply:os.system ['true']\n",
        "unknown type": "components:\n  x:\n    type: os.system\n    init_parameters: {}\nconnections: []\n",
    }
    cases += [py(f"loads_pipeline: {k}", "error", _loads(v)) for k, v in yamls.items()]
    return cases


def all_cases() -> list[Case]:
    """Every case, Python first (they run before the server starts), then REST, MCP and CLI."""
    return [
        *python_cases(),
        *query_cases(),
        *chat_cases(),
        *upload_cases(),
        *delete_cases(),
        *route_cases(),
        *mcp_cases(),
        *cli_cases(),
    ]


if __name__ == "__main__":
    start = time.monotonic()
    cases = all_cases()
    print(f"{len(cases)} cases ({sum(c.quick for c in cases)} quick) in {time.monotonic() - start:.1f} s")
