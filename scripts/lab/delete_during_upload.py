"""How long a delete waits while an upload indexes, against that upload's own duration, over a real server.

Starts ``adaptive-retrieval serve`` on loopback over a fresh folder, uploads two small files, then sends a
multi-file upload (``--files`` Python reference chapters, several batches) and, ``--after`` seconds into it,
``DELETE /sources`` for one of the small files; prints the delete's latency and status, the upload's duration and
their ratio. Then the same with a single pathological file (``--headings`` one-word headings, ~15 bytes each: the
50,000-heading Markdown file of issue 27, 764 KB) instead of the multi-file upload. ``--python`` runs the server
with another interpreter (e.g. an older checkout's virtual environment) to measure the code before a change.

Usage::

    python scripts/lab/delete_during_upload.py                       # this checkout
    python scripts/lab/delete_during_upload.py --python ../main/.venv/bin/python
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

HOST = "127.0.0.1"
ROOT = Path(__file__).resolve().parents[2]


def _topics(count: int) -> list[tuple[str, str]]:
    from pydoc_data.topics import topics

    names = sorted(t for t in topics if len(topics[t]) > 6000)[:count]
    return [(f"{name}.md", f"# {name}\n\n{topics[name]}") for name in names]


def _serve(python: str, store: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "ADAPTIVE_UPLOAD_DIR": str(store.parent / "uploads")}
    proc = subprocess.Popen(
        [python, "-m", "adaptive_retrieval.pipelines.cli", "serve", "--store", str(store), "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://{HOST}:{port}/status", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("the server did not start")


def _upload(url: str, files: list[tuple[str, str]], out: dict[str, Any]) -> None:
    start = time.monotonic()
    response = httpx.post(
        f"{url}/indexing/run", files=[("files", (n, t.encode(), "text/markdown")) for n, t in files], timeout=900
    )
    out.update(status=response.status_code, seconds=time.monotonic() - start, body=response.text[:300])


def measure(url: str, files: list[tuple[str, str]], victim: str, after: float) -> dict[str, Any]:
    """Upload ``files`` in one request and delete ``victim`` ``after`` seconds into it."""
    upload: dict[str, Any] = {}
    thread = threading.Thread(target=_upload, args=(url, files, upload))
    thread.start()
    time.sleep(after)
    start = time.monotonic()
    deleted = httpx.delete(f"{url}/sources", params={"source": victim}, timeout=900)
    delete_s = time.monotonic() - start
    thread.join()
    return {"delete_status": deleted.status_code, "delete_s": delete_s, "upload": upload}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--python", default=sys.executable, help="interpreter that runs the server")
    parser.add_argument("--files", type=int, default=32, help="files in the multi-file upload (default 32)")
    parser.add_argument("--headings", type=int, default=50_000, help="headings of the pathological file")
    parser.add_argument("--after", type=float, default=3.0, help="seconds into the upload the delete is sent")
    parser.add_argument("--port", type=int, default=18_431)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="delete_during_upload_") as work:
        store, url = Path(work) / "qdrant", f"http://{HOST}:{args.port}"
        server = _serve(args.python, store, args.port)
        try:
            small = [(f"small{i}.md", f"# Small {i}\n\nA short note number {i} about deletes.") for i in range(2)]
            first: dict[str, Any] = {}
            _upload(url, small, first)
            assert first["status"] == 200, first
            cases = [
                (f"{args.files} files", _topics(args.files), "small0.md"),
                (
                    f"1 file of {args.headings} headings",
                    [("headings.md", "".join(f"# h{i}\nw{i}\n" for i in range(args.headings)))],
                    "small1.md",
                ),
            ]
            for label, files, victim in cases:
                size = sum(len(t.encode()) for _, t in files)
                result = measure(url, files, victim, args.after)
                up = result["upload"]
                print(
                    f"upload of {label} ({size / 1024:.0f} KB): HTTP {up['status']} after {up['seconds']:.1f} s; "
                    f"DELETE sent {args.after:.0f} s in: HTTP {result['delete_status']} after "
                    f"{result['delete_s']:.1f} s ({result['delete_s'] / max(up['seconds'], 1e-9):.2f} of the upload)",
                    flush=True,
                )
                if up["status"] != 200:
                    print(f"    upload answer: {up['body']}", flush=True)
        finally:
            server.terminate()
            server.wait(60)
    return 0


if __name__ == "__main__":
    sys.exit(main())
