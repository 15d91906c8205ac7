"""Serving classes of ``bad_inputs.py`` (issue 41): chat content-part types, chunked bodies, Unicode forms of a query,
MCP request ids, origins and schemes, and owner files a user must not trust.

Each class is one function returning its cases; :func:`cases` joins them (``bad_inputs.py`` finds this module by
its name, ``bad_inputs_cases_*.py``).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
import unicodedata
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import httpx
from bad_inputs import Case, Context, Outcome, with_timeout
from bad_inputs_cases import CHAT, SOURCES, TRACEBACK, UP, Q, _chat_text, _docs, _has_docs, kept, rest, rest_outcome

from adaptive_retrieval.pipelines import NO_PASSAGE

# -- chat content parts ------------------------------------------------------------------------------------------

IMAGE = {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
AUDIO = {"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}
BAD_PARTS: dict[str, Any] = {
    "text null": [{"type": "text", "text": None}],
    "text int": [{"type": "text", "text": 123}],
    "text float": [{"type": "text", "text": 1.5}],
    "text true": [{"type": "text", "text": True}],
    "text list": [{"type": "text", "text": ["a"]}],
    "text object": [{"type": "text", "text": {"value": "a"}}],
    "text missing": [{"type": "text"}],
    "text empty": [{"type": "text", "text": ""}],
    "text spaces": [{"type": "text", "text": "   "}],
    "part a string": ["What is a lambda?"],
    "part a number": [42],
    "part null": [None],
    "part a list": [["text", "lambda"]],
    "part without type": [{"text": "What is a lambda?"}],
    "part type null": [{"type": None, "text": "lambda"}],
    "part type number": [{"type": 3, "text": "lambda"}],
    "no parts": [],
    "image only": [IMAGE],
    "audio only": [AUDIO],
    "image and audio": [IMAGE, AUDIO],
    "good text, then bad part": [{"type": "text", "text": "lambda"}, {"type": "text", "text": None}],
}
GOOD_PARTS: dict[str, Any] = {
    "text and image": [{"type": "text", "text": "What is a lambda?"}, IMAGE],
    "two text parts": [{"type": "text", "text": "What is"}, {"type": "text", "text": "a lambda?"}],
    "image then text": [IMAGE, {"type": "text", "text": "lambda expression"}],
}


def _chat(parts: Any, earlier: str | None = "What does the with statement do?") -> dict[str, Any]:
    history = [{"role": "user", "content": earlier}, {"role": "assistant", "content": "..."}] if earlier else []
    return {"json": {"model": "query", "messages": [*history, {"role": "user", "content": parts}]}}


def _answers_lambda(response: httpx.Response) -> bool:
    return _chat_text(response) and "lambda" in response.json()["choices"][0]["message"]["content"].lower()


def chat_part_cases() -> list[Case]:
    cases = [
        rest("POST", CHAT, "error", f"chat part: {k}", None, k == "text null", **_chat(v)) for k, v in BAD_PARTS.items()
    ]
    cases += [
        rest("POST", CHAT, "ok", f"chat part ok: {k}", _answers_lambda, k == "text and image", **_chat(v))
        for k, v in GOOD_PARTS.items()
    ]
    cases.append(rest("POST", "/chat/completions", "error", "chat part (unversioned): image only", **_chat([IMAGE])))
    return cases


# -- chunked bodies ------------------------------------------------------------------------------------------------

BOUNDARY = "bad-inputs-boundary"


def _pieces(data: bytes, size: int = 7) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start : start + size]


def _multipart(field: str, name: str, text: str, extra: dict[str, str] | None = None) -> bytes:
    parts = [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{field}"; filename="{name}"\r\n'
        f"Content-Type: text/markdown\r\n\r\n{text}\r\n"
    ]
    parts += [
        f'--{BOUNDARY}\r\nContent-Disposition: form-data; name="{k}"\r\n\r\n{v}\r\n' for k, v in (extra or {}).items()
    ]
    return ("".join(parts) + f"--{BOUNDARY}--\r\n").encode()


def chunked(method: str, path: str, expect: str, label: str, body: bytes, content_type: str, check: Any = None) -> Case:
    """A request whose body is sent chunked (an iterator: no content-length), in pieces of 7 bytes."""

    def call(ctx: Context) -> Outcome:
        try:
            response = ctx.client.request(method, path, content=_pieces(body), headers={"content-type": content_type})
        except httpx.TimeoutException as err:
            return Outcome("timeout", str(err))
        except httpx.TransportError as err:
            return Outcome("crash", f"connection: {err}")
        return rest_outcome(response, check)

    return Case("rest", label, expect, call)


def _note(word: str) -> str:
    return f"# {word}\n\nThe {word} arrived in pieces. {word} is planted by the bad-input script."


def _found(word: str) -> Callable[[httpx.Response], bool]:
    return kept(lambda r: any(word in (d["content"] or "") for d in _docs(r)))


def chunked_cases() -> list[Case]:
    form = f"multipart/form-data; boundary={BOUNDARY}"
    cases = []
    for i, (path, field, extra) in enumerate(
        ((UP, "files", None), ("/v1/files", "file", {"purpose": "assistants"}), ("/files", "file", {"purpose": "x"}))
    ):
        word = f"chunkedupload{i}"
        cases.append(
            chunked(
                "POST",
                path,
                "ok",
                f"chunked upload ok: {path}",
                _multipart(field, f"{word}.md", _note(word), extra),
                form,
            )
        )
        cases.append(
            rest("POST", Q, "ok", f"chunked upload kept: {path}", _found(word), json={"query": word, "top_k": 3})
        )
    cases += [
        chunked("POST", UP, "error", "chunked upload: empty file", _multipart("files", "e.md", ""), form),
        chunked("POST", UP, "error", "chunked upload: no file part", f"--{BOUNDARY}--\r\n".encode(), form),
        chunked("POST", UP, "error", "chunked upload: truncated", _multipart("files", "t.md", "text")[:-20], form),
        chunked("POST", UP, "error", "chunked upload: unsupported type", _multipart("files", "a.exe", "MZ"), form),
        chunked("POST", UP, "error", "chunked upload: empty body", b"", form),
        chunked(
            "POST",
            Q,
            "ok",
            "chunked query ok",
            json.dumps({"query": "lambda expression"}).encode(),
            "application/json",
            _has_docs,
        ),
        chunked("POST", Q, "error", "chunked query: empty query", b'{"query": ""}', "application/json"),
        chunked("POST", Q, "error", "chunked query: not JSON", b"{query", "application/json"),
        chunked("POST", Q, "error", "chunked query: unknown field", b'{"query": "x", "debug": 1}', "application/json"),
        chunked(
            "POST",
            CHAT,
            "ok",
            "chunked chat ok",
            json.dumps(_chat("What is a lambda?", None)["json"]).encode(),
            "application/json",
            _answers_lambda,
        ),
        chunked(
            "POST",
            CHAT,
            "error",
            "chunked chat: text null",
            json.dumps(_chat([{"type": "text", "text": None}])["json"]).encode(),
            "application/json",
        ),
    ]
    return cases


# -- Unicode forms of a query --------------------------------------------------------------------------------------

UNICODE_QUERIES = {
    "NFC": unicodedata.normalize("NFC", "lambda café expression"),
    "NFD": unicodedata.normalize("NFD", "lambda café expression"),
    "NFKD": unicodedata.normalize("NFKD", "lambda ﬁnally expression"),
    "fullwidth": "ｌａｍｂｄａ ｅｘｐｒｅｓｓｉｏｎ",
    "halfwidth katakana": "ﾗﾑﾀﾞ lambda",
    "ligature fi": "ﬁnally clause",
    "math bold": "𝐥𝐚𝐦𝐛𝐝𝐚 expression",
    "math italic": "𝑙𝑎𝑚𝑏𝑑𝑎 expression",
    "circled": "ⓛⓐⓜⓑⓓⓐ expression",
    "superscript": "lambda² expression",
    "roman numeral": "lambda Ⅳ expression",
    "combining marks": "la\u0301mbda\u0308 expression",
    "zero-width joiner inside": "lam\u200dbda expression",
    "zero-width non-joiner": "lam\u200cbda expression",
    "soft hyphen": "lam\u00adbda expression",
    "variation selector": "lambda\ufe0f expression",
    "emoji ZWJ sequence": "👩\u200d💻 lambda expression",
    "RTL mark": "\u200flambda expression",
    "LTR override": "\u202dlambda\u202c expression",
    "German sharp s": "Straße lambda",
    "Turkish dotless i": "ıf statement lambda",
    "Greek final sigma": "λόγος lambda",
    "Hangul jamo": "\u1105\u1161\u11b7 lambda",
    "CJK compatibility": "㍿ lambda",
    "Arabic presentation forms": "ﻻ lambda",
    "non-breaking spaces between": "lambda\u00a0expression\u202fanonymous",
    "ideographic space": "lambda\u3000expression",
    "private use": "\ue000 lambda",
    "noncharacter": "\ufdd0 lambda",
    "astral plane only": "𝄞 lambda",
}


def unicode_cases() -> list[Case]:
    cases = [
        rest("POST", Q, "ok", f"query form: {k}", _has_docs, k == "fullwidth", json={"query": v})
        for k, v in UNICODE_QUERIES.items()
    ]
    cases += [
        rest(
            "POST",
            CHAT,
            "ok",
            f"chat form: {k}",
            _chat_text,
            json={"model": "query", "messages": [{"role": "user", "content": UNICODE_QUERIES[k]}]},
        )
        for k in ("NFD", "fullwidth", "math bold", "emoji ZWJ sequence")
    ]
    return cases


# -- MCP request ids -----------------------------------------------------------------------------------------------


def mcp_id(label: str, expect: str, request_id: Any, raw_id: str | None = None) -> Case:
    """``tools/call`` with ``request_id`` (or ``raw_id`` as written) over raw JSON-RPC: an answer must carry the
    same id (a 202 with no answer to a request is a misleading success)."""
    arguments = {"query": "lambda expression", "top_k": 2}
    body = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "query", "arguments": arguments},
        }
    )
    if raw_id is not None:
        body = body.replace('"id": null', f'"id": {raw_id}', 1)

    def call(ctx: Context) -> Outcome:
        headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        try:
            response = ctx.client.post("/mcp", content=body, headers=headers)
        except httpx.TimeoutException as err:
            return Outcome("timeout", str(err))
        except httpx.HTTPError as err:
            return Outcome("crash", str(err))
        head = f"{response.status_code} {response.text[:200]}"
        if response.status_code >= 500 or TRACEBACK in response.text:
            return Outcome("crash", head)
        try:
            answer = response.json() if response.content else None
        except ValueError:
            answer = None
        if response.status_code >= 400:
            return (
                Outcome("error", head) if isinstance(answer, dict) and answer.get("error") else Outcome("unclear", head)
            )
        if not isinstance(answer, dict):
            return Outcome("ok", f"no JSON-RPC answer: {head}", False)  # a request taken for a notification
        if answer.get("error") or answer.get("result", {}).get("isError"):
            return Outcome("error", head)
        texts = " ".join(c.get("text", "") for c in answer.get("result", {}).get("content", []) if isinstance(c, dict))
        # The tool answers text a model reads: the verdict, then numbered passages (or that none matched).
        answered = "[1] " in texts or NO_PASSAGE in texts
        return Outcome("ok", head, answer.get("id") == json.loads(body)["id"] and answered)

    return Case("mcp", label, expect, call)


def mcp_id_cases() -> list[Case]:
    good = {
        "1": 1,
        "0": 0,
        "-1": -1,
        "2**53": 2**53,
        "'abc'": "abc",
        "''": "",
        "long string": "i" * 500,
        "unicode": "ид-λ",
    }
    bad = {"object": {}, "object with keys": {"a": 1}, "list": [1], "empty list": [], "true": True, "false": False}
    cases = [mcp_id(f"mcp id ok: {k}", "ok", v) for k, v in good.items()]
    cases += [mcp_id(f"mcp id: {k}", "error", v) for k, v in bad.items()]
    cases.append(mcp_id("mcp id: NaN", "error", None, raw_id="NaN"))
    return cases


# -- origins and schemes -------------------------------------------------------------------------------------------


def _own(ctx: Context) -> str:
    return httpx.URL(ctx.url).netloc.decode()


def origin(
    label: str, expect: str, method: str, path: str, headers: Callable[[Context], dict[str, str]], **kw: Any
) -> Case:
    """A request a browser page would send (its ``Origin``/``Sec-Fetch-Site``)."""

    def call(ctx: Context) -> Outcome:
        try:
            response = ctx.client.request(method, path, headers=headers(ctx), **kw)
        except httpx.TimeoutException as err:
            return Outcome("timeout", str(err))
        except httpx.HTTPError as err:
            return Outcome("crash", str(err))
        return rest_outcome(response, None)

    return Case("rest", label, expect, call)


def mcp_stream(label: str, expect: str, headers: Callable[[Context], dict[str, str]]) -> Case:
    """``GET /mcp`` (the event stream) with a page's headers: the status only, the stream is closed at once."""

    def call(ctx: Context) -> Outcome:
        try:
            with ctx.client.stream("GET", "/mcp", headers={"accept": "text/event-stream", **headers(ctx)}) as response:
                status = response.status_code
                text = response.read().decode(errors="replace")[:200] if status != 200 else ""
        except httpx.TimeoutException as err:
            return Outcome("timeout", str(err))
        except httpx.HTTPError as err:
            return Outcome("crash", str(err))
        if status >= 500:
            return Outcome("crash", f"{status} {text}")
        if status >= 400:
            return Outcome("error" if "detail" in text else "unclear", f"{status} {text}")
        return Outcome("ok", f"{status}: an open event stream")

    return Case("rest", label, expect, call)


def origin_cases() -> list[Case]:
    query = {"json": {"query": "lambda expression"}}
    same = {
        "same origin": lambda c: {"origin": f"http://{_own(c)}"},
        "same origin, upper case": lambda c: {"origin": f"HTTP://{_own(c).upper()}"},
        "same origin, trailing slash": lambda c: {"origin": f"http://{_own(c)}/"},
        "sec-fetch-site same-origin": lambda c: {"sec-fetch-site": "same-origin"},
        "sec-fetch-site none": lambda c: {"sec-fetch-site": "none"},
    }
    foreign = {
        "https, same host": lambda c: {"origin": f"https://{_own(c)}"},
        "ws scheme, same host": lambda c: {"origin": f"ws://{_own(c)}"},
        "localhost for 127.0.0.1": lambda c: {"origin": f"http://localhost:{httpx.URL(c.url).port}"},
        "other port": lambda c: {"origin": f"http://127.0.0.1:{(httpx.URL(c.url).port or 0) + 1}"},
        "null": lambda c: {"origin": "null"},
        "foreign site": lambda c: {"origin": "http://evil.example"},
        "foreign https": lambda c: {"origin": "https://evil.example"},
        "origin with a path": lambda c: {"origin": f"http://{_own(c)}/page"},
        "file scheme": lambda c: {"origin": "file://"},
        "sec-fetch-site cross-site": lambda c: {"sec-fetch-site": "cross-site"},
        "sec-fetch-site same-site": lambda c: {"sec-fetch-site": "same-site"},
    }
    cases = [origin(f"origin ok: {k}", "ok", "POST", Q, h, **query) for k, h in same.items()]
    cases += [origin(f"origin: {k}", "error", "POST", Q, h, **query) for k, h in foreign.items()]
    evil: Callable[[Context], dict[str, str]] = foreign["foreign site"]
    https_same: Callable[[Context], dict[str, str]] = foreign["https, same host"]
    word = "originleak"
    upload = [("files", (f"{word}.md", _note(word)))]
    cases += [
        origin("origin: upload from https same host", "error", "POST", UP, https_same, files=upload),
        origin("origin: upload from a foreign site", "error", "POST", UP, evil, files=upload),
        rest(
            "POST",
            Q,
            "ok",
            "origin: refused uploads stored nothing",
            lambda r: all(word not in (d["content"] or "") for d in _docs(r)),
            json={"query": word},
        ),
        origin("origin: delete from a foreign site", "error", "DELETE", SOURCES, evil, params={"source": "lambda.md"}),
        rest(
            "POST",
            Q,
            "ok",
            "origin: refused delete kept lambda.md",
            kept(lambda r: any((d["source"] or "").endswith("lambda.md") for d in _docs(r))),
            json={"query": "lambda expression anonymous function"},
        ),
        origin(
            "origin: chat from https same host", "error", "POST", CHAT, https_same, json=_chat("lambda", None)["json"]
        ),
        mcp_stream("origin: GET /mcp from a foreign site", "error", evil),
        mcp_stream("origin: GET /mcp from https same host", "error", https_same),
        mcp_stream("origin: GET /mcp cross-site fetch", "error", foreign["sec-fetch-site cross-site"]),
        origin(
            "origin: POST /mcp from a foreign site",
            "error",
            "POST",
            "/mcp",
            evil,
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        ),
    ]
    return cases


# -- owner files a user must not trust ---------------------------------------------------------------------------

TOKEN = "bad-inputs-owner-token"
NOBODY = 65534
STRATEGY = {"weights": {}, "top_k": 10, "fetch_k": 30, "mmr_lambda": 1.0, "rerank": False}
OWNER_ANSWER = {
    "result": {
        "query": "q",
        "documents": [],
        "intent": "factual",
        "confidence": 1.0,
        "weights": {},
        "strategy": STRATEGY,
    }
}


class _Recorder(BaseHTTPRequestHandler):
    """A loopback HTTP server that stands for whatever process an owner file names; it records every request."""

    seen: ClassVar[list[str]] = []

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("content-length") or 0))
        type(self).seen.append(f"{self.command} {self.path} {self.headers.get('authorization')}")
        body = json.dumps(OWNER_ANSWER).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._answer()

    def do_POST(self) -> None:
        self._answer()

    def do_DELETE(self) -> None:
        self._answer()

    def log_message(self, *args: Any) -> None:
        pass


def _recorder(ctx: Context) -> str:
    if "recorder" not in ctx.state:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        ctx.state["recorder"] = f"http://127.0.0.1:{server.server_address[1]}"
    return ctx.state["recorder"]


def _foreign_pid(ctx: Context) -> int | None:
    """A live process of another user: one started as nobody (root), else pid 1 when it is another user's."""
    if "foreign" not in ctx.state:
        if os.getuid() == 0:
            ctx.state["foreign"] = subprocess.Popen(["sleep", "3600"], user=NOBODY, group=NOBODY).pid
        else:
            ctx.state["foreign"] = 1 if os.stat("/proc/1").st_uid != os.getuid() else None
    return ctx.state["foreign"]


def owner(label: str, expect: str, write: Callable[[Context, Path], None], command: str = "query") -> Case:
    """The CLI (``query`` or ``delete``, with ``$ADAPTIVE_API_TOKEN`` set) on a store whose owner file ``write``
    makes. A refusal must send nothing: the recorder receiving the token is a misleading success whatever the exit."""

    def call(ctx: Context) -> Outcome:
        store = ctx.folder / "owners" / f"case{abs(hash(label))}" / "qdrant"
        store.parent.mkdir(parents=True, exist_ok=True)
        write(ctx, store)
        before = len(_Recorder.seen)
        argv = [ctx.cli, command, "--store", str(store), "lambda.md" if command == "delete" else "what is a lambda?"]
        env = {**os.environ, "ADAPTIVE_API_TOKEN": TOKEN}
        try:
            done = subprocess.run(
                argv, capture_output=True, text=True, timeout=ctx.timeout, env=env, cwd=ctx.folder, check=False
            )
        except subprocess.TimeoutExpired:
            return Outcome("timeout", f"no exit within {ctx.timeout:.0f} s")
        leaked = [s for s in _Recorder.seen[before:] if TOKEN in s]
        tail = (done.stderr or done.stdout)[-300:]
        if TRACEBACK in done.stderr:
            return Outcome("crash", tail)
        if leaked and expect == "error":
            return Outcome("ok", f"the token was sent: {leaked[0][:100]}", False)
        if done.returncode == 0:
            return Outcome("ok", done.stdout[-300:], expect == "ok" and bool(leaked))
        if done.returncode == 1 and "error:" in done.stderr:
            return Outcome("error", tail)
        return Outcome("crash", f"exit {done.returncode}: {tail}")

    def bounded(ctx: Context) -> Outcome:
        return with_timeout(lambda: call(ctx), ctx.timeout + 5)

    return Case("cli", label, expect, bounded)


def _file(
    pid: Callable[[Context], Any], url: Callable[[Context], Any], uid: int | None = None
) -> Callable[[Context, Path], None]:
    def write(ctx: Context, store: Path) -> None:
        file = store.with_name(store.name + ".server.json")
        file.write_text(json.dumps({"pid": pid(ctx), "url": url(ctx), "store": str(store)}), encoding="utf-8")
        if uid is not None and os.getuid() == 0:
            os.chown(file, uid, uid)

    return write


def _raw(text: str) -> Callable[[Context, Path], None]:
    def write(ctx: Context, store: Path) -> None:
        store.with_name(store.name + ".server.json").write_text(text, encoding="utf-8")

    return write


def _symlink(ctx: Context, store: Path) -> None:
    target = store.parent / "elsewhere.json"
    target.write_text(json.dumps({"pid": os.getpid(), "url": _recorder(ctx)}), encoding="utf-8")
    store.with_name(store.name + ".server.json").symlink_to(target)


def owner_cases() -> list[Case]:
    me: Callable[[Context], Any] = lambda ctx: os.getpid()  # noqa: E731 (the script's own live process)
    cases = [
        owner("owner file ok: ours, loopback", "ok", _file(me, _recorder)),
        owner("owner file: another user's file (query)", "error", _file(me, _recorder, uid=NOBODY)),
        owner("owner file: another user's file (delete)", "error", _file(me, _recorder, uid=NOBODY), "delete"),
        owner("owner file: another user's process", "error", _file(_foreign_pid, _recorder)),
        owner("owner file: another user's process (delete)", "error", _file(_foreign_pid, _recorder), "delete"),
        owner("owner file: a URL off this machine", "error", _file(me, lambda ctx: "http://192.0.2.10:1416")),
        owner("owner file: a host name URL", "error", _file(me, lambda ctx: "http://example.org:1416")),
        owner("owner file: a file URL", "error", _file(me, lambda ctx: "file:///etc/passwd")),
        owner(
            "owner file: URL with credentials", "error", _file(me, lambda ctx: _recorder(ctx).replace("://", "://u:p@"))
        ),
        owner("owner file: URL a number", "error", _file(me, lambda ctx: 1416)),
        owner("owner file: a symbolic link", "error", _symlink),
        owner("owner file: not JSON (no index there)", "error", _raw("{pid")),
        owner("owner file: a JSON list (no index there)", "error", _raw("[1, 2]")),
        owner("owner file: pid a word (no index there)", "error", _raw('{"pid": "me", "url": "http://127.0.0.1:1"}')),
    ]
    if os.getuid() != 0:  # without root no file of another user can be made: those inputs are not run
        cases = [c for c in cases if "another user's file" not in c.label]
    return cases


def cases() -> list[Case]:
    """Every serving case, in the order they run (after the base module's REST, MCP and CLI cases)."""
    return [
        *chat_part_cases(),
        *chunked_cases(),
        *unicode_cases(),
        *mcp_id_cases(),
        *origin_cases(),
        *owner_cases(),
    ]


if __name__ == "__main__":
    found = cases()
    print(f"{len(found)} serving cases")
