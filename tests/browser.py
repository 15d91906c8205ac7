"""A web page of another origin that attacks a server on this machine, opened in a real headless Chromium.

:func:`attack` serves :data:`ATTACK_PAGE` from a throw-away HTTP server on its own loopback port (another origin
than the target's) and opens it with ``tests/browser_page.cjs`` (puppeteer driving Debian's chromium). The page
sends what any site could make a visitor's browser send: a multipart upload with ``mode: "no-cors"`` (a "simple"
request: no preflight), a ``DELETE``, a query and a chat call, an MCP tool call, a deploy of Python code and an
undeploy, and reports, for each, whether the browser let the page through (``ok``) and what it could read.
Whether the server *acted* is for the test to check on the server (store count, uploads folder, marker file).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
NODE_MODULES = REPO / "scripts" / "renderer" / "node_modules"
DRIVER = Path(__file__).resolve().parent / "browser_page.cjs"
#: The text the attacking page uploads; a query for it must find nothing afterwards.
PLANTED = "plantedxyzzy"

ATTACK_PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>attack</title></head><body><script>
const T = %(target)s, MARKER = %(marker)s, results = {};
async function attempt(name, make) {
  try {
    const r = await make();
    let text = null;
    try { text = r.type === "opaque" ? null : (await r.text()).slice(0, 300); } catch (e) {}
    results[name] = {ok: true, type: r.type, status: r.status, text};
  } catch (e) { results[name] = {ok: false, error: String(e)}; }
}
function upload() {
  const form = new FormData();
  form.append("files", new Blob(["# Planted\\n\\n%(planted)s text a web page uploaded."], {type: "text/markdown"}),
              "planted.md");
  return form;
}
const json = (body) => JSON.stringify(body);
const code = "from pathlib import Path\\nPath(" + JSON.stringify(MARKER) + ").write_text('ran')\\n";
(async () => {
  await attempt("upload no-cors", () => fetch(T + "/indexing/run", {method: "POST", mode: "no-cors", body: upload()}));
  await attempt("upload cors", () => fetch(T + "/indexing/run", {method: "POST", body: upload()}));
  await attempt("v1/files no-cors", () => {
    const file = new FormData();
    file.append("file", new Blob(["# Planted\\n\\n%(planted)s again."], {type: "text/markdown"}), "planted2.md");
    file.append("purpose", "assistants");
    return fetch(T + "/v1/files", {method: "POST", mode: "no-cors", body: file});
  });
  await attempt("delete cors", () => fetch(T + "/sources?source=seed.md", {method: "DELETE"}));
  await attempt("delete no-cors", () => fetch(T + "/sources?source=seed.md", {method: "DELETE", mode: "no-cors"}));
  await attempt("query no-cors", () => fetch(T + "/query/run", {method: "POST", mode: "no-cors",
    headers: {"content-type": "text/plain"}, body: json({query: "seed"})}));
  await attempt("query cors", () => fetch(T + "/query/run", {method: "POST",
    headers: {"content-type": "application/json"}, body: json({query: "seed"})}));
  await attempt("chat no-cors", () => fetch(T + "/v1/chat/completions", {method: "POST", mode: "no-cors",
    headers: {"content-type": "text/plain"},
    body: json({model: "query", messages: [{role: "user", content: "seed"}]})}));
  await attempt("mcp no-cors", () => fetch(T + "/mcp", {method: "POST", mode: "no-cors",
    headers: {"content-type": "text/plain"},
    body: json({jsonrpc: "2.0", id: 1, method: "tools/call", params: {name: "query", arguments: {query: "seed"}}})}));
  await attempt("deploy no-cors", () => fetch(T + "/deploy_files", {method: "POST", mode: "no-cors",
    headers: {"content-type": "text/plain"}, body: json({name: "evil", files: {"pipeline_wrapper.py": code}})}));
  await attempt("deploy cors", () => fetch(T + "/deploy_files", {method: "POST",
    headers: {"content-type": "application/json"}, body: json({name: "evil", files: {"pipeline_wrapper.py": code}})}));
  await attempt("undeploy no-cors", () => fetch(T + "/undeploy/query", {method: "POST", mode: "no-cors"}));
  window.results = results;
  window.done = true;
})();
</script></body></html>
"""

#: A page that only queries (JSON, so with a CORS preflight) and reports what it could read.
QUERY_PAGE = """<!doctype html><html><head><meta charset="utf-8"></head><body><script>
(async () => {
  const results = {};
  try {
    const r = await fetch(%(target)s + "/query/run", {method: "POST", headers: {"content-type": "application/json"},
                          body: JSON.stringify({query: "seed"})});
    results.query = {ok: true, status: r.status, text: (await r.text()).slice(0, 300)};
  } catch (e) { results.query = {ok: false, error: String(e)}; }
  window.results = results; window.done = true;
})();
</script></body></html>
"""


def browser_missing() -> str | None:
    """Why the browser tests cannot run here (``None`` when they can)."""
    if shutil.which("chromium") is None:
        return "chromium is not installed (scripts/setup installs it with apt-get when run as root)"
    if shutil.which("node") is None or not (NODE_MODULES / "puppeteer").is_dir():
        return "node or scripts/renderer/node_modules/puppeteer is missing (scripts/setup runs npm ci)"
    return None


@contextmanager
def page_server(html: str, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """Serve ``html`` at ``/`` from a loopback port of its own (``port``, or a free one); yields the page's URL."""

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = html.encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer((host, port), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def open_page(url: str, timeout_s: float = 90.0, expression: str | None = None) -> Any:
    """Open ``url`` in headless Chromium and return what the page reported (``window.results``), or, given an
    ``expression``, what that JavaScript expression (a promise is awaited) evaluates to in the page."""
    done = subprocess.run(
        ["node", str(DRIVER), url, str(int(timeout_s * 1000)), *([expression] if expression else [])],
        capture_output=True,
        text=True,
        cwd=REPO,
        # The driver lives in tests/, puppeteer in the renderer's node_modules: tell node where to find it.
        env={**os.environ, "NODE_PATH": str(NODE_MODULES)},
        timeout=timeout_s + 60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def attack(target: str, marker: Path, host: str = "127.0.0.1") -> dict[str, Any]:
    """Run :data:`ATTACK_PAGE` against ``target`` from a page served on another loopback port of ``host``."""
    html = ATTACK_PAGE % {"target": json.dumps(target), "marker": json.dumps(str(marker)), "planted": PLANTED}
    with page_server(html, host) as url:
        return open_page(url)


def query_from(target: str, host: str, port: int = 0) -> dict[str, Any]:
    """Run :data:`QUERY_PAGE` against ``target`` from a page on ``host`` (another port): what could it read?"""
    with page_server(QUERY_PAGE % {"target": json.dumps(target)}, host, port) as url:
        return open_page(url)["query"]
