"""The command line and the server that owns a store, over real HTTP and real processes: an owner file is trusted
with the user's token only when it, its process and its URL are the user's own (issue 41 #3); a server that answers
200 with a body of another shape is an error, not a traceback (#10); `query ... | head -1` ends quietly (#10).

The "server" here is a small HTTP server of the test's own (``http.server`` on loopback, in a thread) that records
every request it receives: it stands for whatever process an owner file names, which is the point of the checks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest

TOKEN = "owner-trust-token"
NOBODY = 65534
CLI = str(Path(sys.executable).with_name("adaptive-retrieval"))
#: A query answer of the package's shape (serving.QueryResponse), for a server that answers like the real one.
ANSWER = {
    "result": {
        "query": "q",
        "documents": [{"id": "d1", "content": "The answer text.", "score": 0.5, "source": "a.md"}],
        "intent": "factual",
        "confidence": 0.9,
        "weights": {"dense": 1.0},
        "strategy": {"weights": {"dense": 1.0}, "top_k": 10, "fetch_k": 30, "mmr_lambda": 0.8, "rerank": False},
    }
}


class _Recorder(BaseHTTPRequestHandler):
    answers: ClassVar[dict[str, tuple[int, bytes]]] = {}
    seen: ClassVar[list[dict[str, Any]]] = []

    def _answer(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        self.rfile.read(length)
        type(self).seen.append({"method": self.command, "path": self.path, "headers": dict(self.headers)})
        status, body = type(self).answers.get(self.command, (200, json.dumps(ANSWER).encode()))
        self.send_response(status)
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


@pytest.fixture
def owner_server() -> Iterator[dict[str, Any]]:
    """A loopback HTTP server that records requests; ``answers`` sets a method's (status, body)."""
    _Recorder.seen, _Recorder.answers = [], {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}"
        yield {"url": url, "seen": _Recorder.seen, "answers": _Recorder.answers}
    finally:
        server.shutdown()
        server.server_close()


def _write_owner(store: Path, pid: int, url: str) -> Path:
    file = store.with_name(store.name + ".server.json")
    file.write_text(json.dumps({"pid": pid, "url": url, "store": str(store)}), encoding="utf-8")
    return file


def _cli(*args: str, cwd: Path, stdout: Any = subprocess.PIPE) -> subprocess.CompletedProcess:
    env = {**os.environ, "ADAPTIVE_API_TOKEN": TOKEN, "HAYSTACK_TELEMETRY_ENABLED": "False"}
    env.pop("ADAPTIVE_QDRANT_PATH", None)
    env.pop("QDRANT_URL", None)
    return subprocess.run([CLI, *args], cwd=cwd, env=env, stdout=stdout, stderr=subprocess.PIPE, text=True, timeout=300)


def _refused(done: subprocess.CompletedProcess, *reasons: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    assert "not trusted" in done.stderr and "Nothing was sent" in done.stderr, done.stderr
    for reason in reasons:
        assert reason in done.stderr, (reason, done.stderr)


@pytest.fixture
def foreign_process() -> Iterator[int]:
    """A live process of another user (root starts one as nobody; otherwise pid 1 when it is another user's)."""
    if os.getuid() == 0:
        process = subprocess.Popen(["sleep", "120"], user=NOBODY, group=NOBODY)
        try:
            yield process.pid
        finally:
            process.kill()
            process.wait()
    elif os.stat("/proc/1").st_uid != os.getuid():
        yield 1
    else:
        pytest.skip("no process of another user to point at")


def test_an_owner_file_of_another_user_gets_no_token(tmp_path: Path, owner_server: dict[str, Any]) -> None:
    """The issue's attack: another user's file names a live process and a loopback URL; `query` sent it the bearer
    token and printed its answer as the index's (exit 0). Now: refused, saying why, and nothing is sent."""
    if os.getuid() != 0:
        pytest.skip("making a file of another user needs root")
    store = tmp_path / "qdrant"
    file = _write_owner(store, os.getpid(), owner_server["url"])
    os.chown(file, NOBODY, NOBODY)
    for command in (["query", "--store", str(store), "what is MMR?"], ["delete", "--store", str(store), "a.md"]):
        _refused(_cli(*command, cwd=tmp_path), f"the file belongs to user id {NOBODY}")
    assert owner_server["seen"] == [], "the token went to a file of another user"


def test_an_owner_file_naming_another_users_process_gets_no_token(
    tmp_path: Path, owner_server: dict[str, Any], foreign_process: int
) -> None:
    store = tmp_path / "qdrant"
    _write_owner(store, foreign_process, owner_server["url"])
    _refused(_cli("query", "--store", str(store), "what is MMR?", cwd=tmp_path), f"its process {foreign_process} runs")
    assert owner_server["seen"] == []


@pytest.mark.parametrize("url", ["http://192.0.2.10:1416", "http://example.org:1416", "file:///etc/passwd"])
def test_an_owner_file_with_a_url_off_this_machine_gets_no_token(tmp_path: Path, url: Any) -> None:
    store = tmp_path / "qdrant"
    _write_owner(store, os.getpid(), url)
    _refused(_cli("query", "--store", str(store), "what is MMR?", cwd=tmp_path), "is not an http URL on a loopback")


def test_an_owner_file_that_is_a_symbolic_link_gets_no_token(tmp_path: Path, owner_server: dict[str, Any]) -> None:
    store = tmp_path / "qdrant"
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"pid": os.getpid(), "url": owner_server["url"]}), encoding="utf-8")
    store.with_name("qdrant.server.json").symlink_to(elsewhere)
    _refused(_cli("query", "--store", str(store), "what is MMR?", cwd=tmp_path), "is a symbolic link")
    assert owner_server["seen"] == []


def test_an_owner_file_of_ours_is_trusted_with_the_token(tmp_path: Path, owner_server: dict[str, Any]) -> None:
    """The control: this user's file, this user's live process, a loopback URL: asked, with the token."""
    store = tmp_path / "qdrant"
    _write_owner(store, os.getpid(), owner_server["url"])
    done = _cli("query", "--store", str(store), "what is MMR?", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "The answer text." in done.stdout
    assert [r["headers"].get("Authorization") for r in owner_server["seen"]] == [f"Bearer {TOKEN}"]


@pytest.mark.parametrize("body", [b'{"ok": true}', b'{"deleted": [{"source": "a.md"}]}', b"not json"])
def test_delete_when_the_owner_answers_200_with_another_body(
    tmp_path: Path, owner_server: dict[str, Any], body: bytes
) -> None:
    """Issue 41 #10: `delete` read the answer's "deleted" without a check (KeyError traceback)."""
    store = tmp_path / "qdrant"
    _write_owner(store, os.getpid(), owner_server["url"])
    owner_server["answers"]["DELETE"] = (200, body)
    done = _cli("delete", "--store", str(store), "a.md", cwd=tmp_path)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr and done.stderr.strip().splitlines()[-1].startswith("error: "), done.stderr
    assert owner_server["url"] in done.stderr


def test_query_into_a_closed_pipe_ends_quietly(tmp_path: Path, owner_server: dict[str, Any]) -> None:
    """Issue 41 #10: `adaptive-retrieval query ... | head -1` ended with a BrokenPipeError traceback. It ends as other
    command-line tools do: no traceback, status 141 (128 + SIGPIPE)."""
    store = tmp_path / "qdrant"
    _write_owner(store, os.getpid(), owner_server["url"])
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader (head) has gone before anything is written
    try:
        done = _cli("query", "--store", str(store), "what is MMR?", cwd=tmp_path, stdout=write_end)
    finally:
        os.close(write_end)
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 141, (done.returncode, done.stderr)
