"""Load test of the REST app on loopback: N concurrent clients for M seconds, then the same load while files are
uploaded for indexing; reports throughput, latency percentiles and errors, and checks that no document is lost.

python scripts/load_test.py [--clients 8] [--seconds 20] [--uploads 6] [--topics 40] [--workdir DIR]

Steps: index ``--topics`` Python reference chapters (pydoc_data, shipped with CPython) into a fresh Qdrant folder;
start ``adaptive-retrieval serve`` on 127.0.0.1 in a subprocess (its own process, as in production); phase 1:
queries only; phase 2: queries while ``--uploads`` new files are posted to ``/indexing/run`` one after another;
each uploaded file is then found by a query for its unique word; the server is stopped and the store reopened:
every document id from before is still there, the count grew by exactly the chunks the uploads reported, and
every id is retrievable. Exit status 1 on any error or lost document. Bounded: at most 64 clients, 600 s per
phase, ``--max-requests`` per phase; loopback only.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

HOST = "127.0.0.1"
# Questions about the Python reference (the indexed corpus), mixing the router's intents.
QUERIES = [
    "What happens to an exception raised inside a finally clause?",
    "How does the with statement call __enter__ and __exit__?",
    "lambda expression syntax",
    "Compare for loops and while loops",
    "What does the global statement do?",
    "import system relative imports",
    "What does Section 'The try statement' say about except groups?",
    "Which operations do mapping types support?",
    "break and continue inside nested loops",
    "How are names resolved in nested scopes?",
    "What are the main themes of the execution model?",
    "raise from exception chaining",
    "Summarize the rules for sequence types",
    "What is the difference between is and ==?",
    "assert statement -O flag",
    "How does yield work in generator functions?",
]
UNIQUE_WORDS = ["quetzal", "axolotl", "narwhal", "pangolin", "okapi", "tardigrade", "capybara", "kakapo"]


@dataclass
class Phase:
    """Latencies (seconds) and failures of one phase."""

    name: str
    latencies: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0
    server_cpu_s: float | None = None  # CPU seconds the server process spent in the phase (Linux /proc)

    def report(self, clients: int) -> str:
        done = len(self.latencies)
        if not done:
            return f"{self.name}: no request completed; errors={len(self.errors)}"
        ms = sorted(x * 1000 for x in self.latencies)
        p50 = statistics.median(ms)
        p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
        p99 = ms[min(len(ms) - 1, round(0.99 * (len(ms) - 1)))]
        line = (
            f"{self.name}: clients={clients} seconds={self.seconds:.1f} requests={done} "
            f"throughput={done / self.seconds:.1f} req/s p50={p50:.0f} ms p95={p95:.0f} ms p99={p99:.0f} ms "
            f"max={ms[-1]:.0f} ms errors={len(self.errors)}"
        )
        if self.server_cpu_s is not None:
            cpu_ms = 1000 * self.server_cpu_s / done
            cores = os.cpu_count() or 1
            # Little's law: with `clients` requests always in flight on a CPU-bound server, the mean latency
            # cannot fall below clients x CPU per request / cores, however the server schedules them.
            line += (
                f"\n  server CPU: {cpu_ms:.0f} ms per request, {self.server_cpu_s / self.seconds:.2f} of {cores} "
                f"cores busy; mean latency floor for {clients} clients on {cores} cores = "
                f"{clients * cpu_ms / cores:.0f} ms (mean here {statistics.fmean(ms):.0f} ms)"
            )
        return line


def run_clients(url: str, clients: int, seconds: float, max_requests: int, phase: Phase) -> None:
    """``clients`` threads, each posting queries back to back until the time or request budget is spent."""
    deadline = time.monotonic() + seconds
    lock = threading.Lock()
    budget = [max_requests]

    def client(index: int) -> None:
        with httpx.Client(base_url=url, timeout=120) as http:
            i = index
            while time.monotonic() < deadline:
                with lock:
                    if budget[0] <= 0:
                        return
                    budget[0] -= 1
                query = QUERIES[i % len(QUERIES)]
                i += 1
                start = time.perf_counter()
                try:
                    response = http.post("/query/run", json={"query": query})
                    ok = response.status_code == 200 and "documents" in response.json()["result"]
                    error = None if ok else f"{response.status_code}: {response.text[:200]}"
                except (httpx.HTTPError, ValueError, KeyError) as err:
                    error = repr(err)
                elapsed = time.perf_counter() - start
                with lock:
                    if error:
                        phase.errors.append(error)
                    else:
                        phase.latencies.append(elapsed)

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    phase.seconds = time.monotonic() - start


def process_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of a process so far (Linux ``/proc``; None elsewhere)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def measured(server: subprocess.Popen, phase: Phase, work) -> None:
    """Run ``work()`` and record the server's CPU seconds during it in ``phase``."""
    before = process_cpu_seconds(server.pid)
    work()
    after = process_cpu_seconds(server.pid)
    if before is not None and after is not None:
        phase.server_cpu_s = after - before


def snapshot(store_path: Path) -> set[str]:
    """Every document id in the store (opened in this process, so only while the server is stopped)."""
    from adaptive_retrieval.components.stores.edge_document_store import release_all_clients
    from adaptive_retrieval.pipelines.store_config import make_store

    try:
        # Chunks and summaries (level >= 0); the sources' manifest records (level -1) are not documents.
        nodes = {"field": "meta.level", "operator": ">=", "value": 0}
        return {d.id for d in make_store(path=str(store_path)).filter_documents(nodes)}
    finally:
        release_all_clients()


def wait_ready(url: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            msg = f"the server exited with status {process.returncode} while starting"
            raise RuntimeError(msg)
        try:
            status = httpx.get(f"{url}/status", timeout=5).json()
            if {"query", "indexing"} <= set(status.get("pipelines", [])):
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    msg = f"the server did not start within {timeout:.0f} s"
    raise TimeoutError(msg)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (1-64, default 8)")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per phase (1-600, default 20)")
    parser.add_argument("--max-requests", type=int, default=100_000, help="request cap per phase")
    parser.add_argument("--uploads", type=int, default=6, help=f"files uploaded in phase 2 (0-{len(UNIQUE_WORDS)})")
    parser.add_argument("--topics", type=int, default=40, help="reference chapters indexed first (default 40)")
    parser.add_argument("--workdir", default=None, help="scratch folder (default: a new temporary folder)")
    parser.add_argument("--port", type=int, default=0, help="loopback port (default: a free one)")
    parser.add_argument(
        "--big-upload-chars",
        type=int,
        default=0,
        help="phase 2 uploads ONE file of about this many characters (e.g. the server's $ADAPTIVE_MAX_FILE_CHARS) "
        "instead of --uploads small ones",
    )
    args = parser.parse_args()
    if not 1 <= args.clients <= 64 or not 1 <= args.seconds <= 600 or not 0 <= args.uploads <= len(UNIQUE_WORDS):
        parser.error("--clients must be 1-64, --seconds 1-600, --uploads 0-8")

    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    from adaptive_retrieval.pipelines.app import free_port
    from adaptive_retrieval.pipelines.indexing_pipeline import index_paths
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline
    from evaluation.corpus import write_pydoc_topics

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="adaptive-load-")).resolve()
    store_path = workdir / "qdrant"
    if store_path.exists():
        shutil.rmtree(store_path)
    corpus = write_pydoc_topics(workdir / "corpus")[: args.topics]
    print(f"workdir {workdir}: indexing {len(corpus)} reference chapters", flush=True)
    indexing = load_pipeline("indexing", path=str(store_path))
    counts = index_paths(indexing, corpus)
    del indexing
    ids_before = snapshot(store_path)
    print(f"indexed {counts['chunks_written']} chunks; {len(ids_before)} documents before the load", flush=True)

    port = args.port or free_port(HOST)
    url = f"http://{HOST}:{port}"
    cli = [sys.executable, "-m", "adaptive_retrieval.pipelines.cli"]
    command = [*cli, "serve", "--store", str(store_path), "--host", HOST]
    log = (workdir / "server.log").open("w")
    server = subprocess.Popen([*command, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT)
    uploads: list[dict] = []
    failures: list[str] = []
    try:
        wait_ready(url, server, timeout=300)
        with httpx.Client(base_url=url, timeout=120) as http:
            for query in QUERIES:  # warm-up, not measured
                http.post("/query/run", json={"query": query}).raise_for_status()

            phase1 = Phase("queries only")
            measured(server, phase1, lambda: run_clients(url, args.clients, args.seconds, args.max_requests, phase1))
            print(phase1.report(args.clients), flush=True)

            what = f"1 upload of {args.big_upload_chars} chars" if args.big_upload_chars else f"{args.uploads} uploads"
            if args.big_upload_chars:
                args.uploads = 1
            phase2 = Phase(f"queries while indexing {what}")
            from pydoc_data.topics import topics

            spare = sorted(set(topics) - {p.stem for p in corpus})

            def body(i: int, word: str) -> str:
                text = f"# Bulletin {word}\n\nThe {word} procedure is described here.\n\n" + topics[spare[i]]
                if not args.big_upload_chars:
                    return text
                chapters = [f"\n\n## {name}\n\n" + topics[name] for name in spare]
                while len(text) < args.big_upload_chars:
                    text += chapters[len(text) % len(chapters)]
                return text[: args.big_upload_chars]

            def upload_all() -> None:
                for i, word in enumerate(UNIQUE_WORDS[: args.uploads]):
                    text = body(i, word)
                    response = http.post("/indexing/run", files=[("files", (f"bulletin-{word}.md", text))])
                    if response.status_code != 200:
                        failures.append(f"upload {word}: {response.status_code} {response.text[:200]}")
                        continue
                    uploads.append({"word": word, **response.json()["result"]})

            uploader = threading.Thread(target=upload_all)
            uploader.start()
            upload_start = time.monotonic()
            run_clients(url, args.clients, args.seconds, args.max_requests, phase2)
            uploader.join()
            print(f"uploads took {time.monotonic() - upload_start:.1f} s", flush=True)
            print(phase2.report(args.clients), flush=True)

            for item in uploads:
                top = http.post("/query/run", json={"query": f"{item['word']} procedure", "top_k": 5}).json()
                names = [Path(d["source"]).name for d in top["result"]["documents"]]
                if f"bulletin-{item['word']}.md" not in names:
                    failures.append(f"query for '{item['word']}' did not return its file: {names}")
    finally:
        server.send_signal(signal.SIGINT)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()

    ids_after = snapshot(store_path)
    written = sum(u["chunks_written"] for u in uploads)
    deleted = sum(u["chunks_deleted"] for u in uploads)
    lost = ids_before - ids_after
    from adaptive_retrieval.components.stores.edge_document_store import release_all_clients
    from adaptive_retrieval.pipelines.store_config import make_store

    retrievable = len(make_store(path=str(store_path)).get_documents_by_id(sorted(ids_after)))
    release_all_clients()
    print(
        f"documents: before={len(ids_before)} uploaded_chunks={written} deleted={deleted} "
        f"expected_after={len(ids_before) + written - deleted} after={len(ids_after)} lost={len(lost)} "
        f"retrievable_by_id={retrievable}/{len(ids_after)} uploads_found_by_query="
        f"{len(uploads) - sum('did not return' in f for f in failures)}/{args.uploads}"
    )
    if len(uploads) != args.uploads:
        failures.append(f"only {len(uploads)} of {args.uploads} uploads succeeded")
    if lost or len(ids_after) != len(ids_before) + written - deleted or retrievable != len(ids_after):
        failures.append("documents were lost or are not retrievable")
    errors = len(phase1.errors) + len(phase2.errors)
    for message in (phase1.errors + phase2.errors)[:5] + failures:
        print(f"FAIL {message}")
    print("OK" if not errors and not failures else "FAILED")
    return 0 if not errors and not failures else 1


if __name__ == "__main__":
    sys.exit(main())
