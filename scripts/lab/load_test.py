"""Load test of the REST app on loopback: N concurrent clients for M seconds, then the same load while files are
uploaded for indexing; reports throughput, latency percentiles and errors, and checks that no document is lost.

python scripts/lab/load_test.py [--clients 8] [--seconds 20] [--uploads 6] [--topics 40] [--workdir DIR]
                            [--workers 1,2] [--query-concurrency 0,2] [--rounds 1] [--json OUT]
                            [--baseline-python OTHER_CHECKOUT/.venv/bin/python]

Steps: index ``--topics`` Python reference chapters (pydoc_data, shipped with CPython) into a fresh Qdrant folder;
start ``adaptive-retrieval serve`` on 127.0.0.1 in a subprocess (its own process, as in production); phase 1:
queries only; phase 2: queries while ``--uploads`` new files are posted to ``/indexing/run`` one after another;
each uploaded file is then found by a query for its unique word; the server is stopped and the store reopened:
every document id from before is still there, the count grew by exactly the chunks the uploads reported, and
every id is retrievable. Exit status 1 on any error or lost document. Bounded: at most 64 clients, 600 s per
phase, ``--max-requests`` per phase; loopback only.

``--workers 1,2`` starts ``serve --workers N`` for each count in turn (``--rounds`` times, alternating, so a busy
machine slows both alike) on the same index and prints the ratios of the last count to the first. Server CPU is
summed over every process of the server (store host and workers); each upload must be found by a query from every
worker as soon as its answer has come back (the bound README "Scale out" states). ``--json OUT`` writes every
figure: req_s, p50_ms, p95_ms, errors, CPU per request, the Little's-law floor, RSS and PSS per process, the load
average. ``--query-concurrency 0,2`` runs each worker count with each bound on the queries a process runs at once
(``$ADAPTIVE_QUERY_CONCURRENCY``; 0: none) in turn. ``--baseline-python`` runs every configuration a second time
under another checkout's interpreter, right after this one's, on the same index: before/after figures of one run.
"""

from __future__ import annotations

import argparse
import json
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

from adaptive_retrieval.pipelines.serving import CONCURRENCY_ENV
from evaluation.server_metrics import memory_mb, summary, tree_cpu_seconds

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
    client_cpu_s: float | None = None  # CPU seconds this load generator spent in the phase, on the same cores
    by_worker: dict[str, int] = field(default_factory=dict)  # answers per worker (X-Adaptive-Worker)

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
        if len(self.by_worker) > 1 or "-" not in self.by_worker:
            line += " answers by worker: " + ", ".join(f"{w}: {n}" for w, n in sorted(self.by_worker.items()))
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
        if self.client_cpu_s is not None:
            line += f"; load generator {self.client_cpu_s / self.seconds:.2f} cores"
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
                        worker = response.headers.get("x-adaptive-worker", "-")
                        phase.by_worker[worker] = phase.by_worker.get(worker, 0) + 1

    start = time.monotonic()
    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    phase.seconds = time.monotonic() - start


def measured(server: subprocess.Popen, phase: Phase, work) -> None:
    """Run ``work()`` and record the CPU seconds of every server process, and of this load generator, during it in
    ``phase``."""
    before = tree_cpu_seconds(server.pid)
    client_before = time.process_time()
    work()
    phase.client_cpu_s = time.process_time() - client_before
    after = tree_cpu_seconds(server.pid)
    if after:
        phase.server_cpu_s = sum(cpu - before.get(pid, 0.0) for pid, cpu in after.items())


def snapshot(store_path: Path) -> set[str]:
    """Every document id in the store (opened in this process, so only while the server is stopped)."""
    from adaptive_retrieval.components.stores import release_all_clients
    from adaptive_retrieval.pipelines import make_store

    try:
        # Chunks and summaries (level >= 0); the sources' manifest records (level -1) are not documents.
        nodes = {"field": "meta.level", "operator": ">=", "value": 0}
        return {d.id for d in make_store(path=str(store_path)).filter_documents(nodes)}
    finally:
        release_all_clients()


def wait_ready(url: str, process: subprocess.Popen, timeout: float, workers: int = 1) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            msg = f"the server exited with status {process.returncode} while starting"
            raise RuntimeError(msg)
        try:
            status = httpx.get(f"{url}/status", timeout=5).json()
            if {"query", "indexing"} <= set(status.get("pipelines", [])) and status.get("workers", 1) == workers:
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    msg = f"the server did not start within {timeout:.0f} s"
    raise TimeoutError(msg)


def check_everywhere(url: str, word: str, file_name: str, workers: int, timeout: float = 60.0) -> dict:
    """Right after an upload's answer: query for ``word`` on new connections until every worker has answered;
    each answer must hold the file (the bound: visible as soon as the upload has returned)."""
    answered: dict[str, bool] = {}
    start = time.monotonic()
    while len(answered) < workers and time.monotonic() - start < timeout:
        with httpx.Client(base_url=url, timeout=120) as fresh:  # a new connection may go to any worker
            response = fresh.post("/query/run", json={"query": f"{word} procedure", "top_k": 5})
        if response.status_code != 200:
            continue
        names = [Path(d["source"]).name for d in response.json()["result"]["documents"]]
        worker = response.headers.get("x-adaptive-worker", "0")
        answered[worker] = answered.get(worker, True) and file_name in names
    return {
        "workers_reached": len(answered),
        "found_by_all": len(answered) == workers and all(answered.values()),
        "seconds": round(time.monotonic() - start, 2),
    }


def run_server(
    args: argparse.Namespace,
    workers: int,
    store_path: Path,
    workdir: Path,
    tag: str,
    concurrency: int | None = None,
    python: str | None = None,
    run_index: int = 0,
) -> dict:
    """Start ``serve --workers N`` on the index (with ``$ADAPTIVE_QUERY_CONCURRENCY`` = ``concurrency`` when given,
    under the interpreter ``python``: another checkout's, for a before/after run), run phase 1 (queries) and phase
    2 (queries while uploading), stop it, and check that no document was lost; returns the figures and the
    failures."""
    from adaptive_retrieval.pipelines.serving import free_port

    ids_before = snapshot(store_path)
    port = args.port or free_port(HOST)
    url = f"http://{HOST}:{port}"
    cli = [python or sys.executable, "-m", "adaptive_retrieval.pipelines.cli"]
    command = [*cli, "serve", "--store", str(store_path), "--host", HOST, "--workers", str(workers)]
    log = (workdir / f"server-{tag}.log").open("w")
    env = dict(os.environ, **({CONCURRENCY_ENV: str(concurrency)} if concurrency is not None else {}))
    server = subprocess.Popen([*command, "--port", str(port)], stdout=log, stderr=subprocess.STDOUT, env=env)
    uploads: list[dict] = []
    failures: list[str] = []
    label = (f"{workers}" if concurrency is None else f"{workers} c{concurrency}") + (" baseline" if python else "")
    report: dict = {"workers": workers, "config": label, "load_average_start": os.getloadavg()}
    several = args.rounds > 1 or len(args.workers) * len(args.query_concurrency) > 1 or args.baseline_python
    words = [f"{w}{tag}" if several else w for w in UNIQUE_WORDS[: args.uploads]]
    try:
        wait_ready(url, server, timeout=600, workers=workers)
        with httpx.Client(base_url=url, timeout=120) as http:
            for query in QUERIES:  # warm-up, not measured
                http.post("/query/run", json={"query": query}).raise_for_status()

            phase1 = Phase(f"[{label} worker(s)] queries only")
            measured(server, phase1, lambda: run_clients(url, args.clients, args.seconds, args.max_requests, phase1))
            print(phase1.report(args.clients), flush=True)
            report["queries_only"] = summary(phase1, args.clients)

            what = f"1 upload of {args.big_upload_chars} chars" if args.big_upload_chars else f"{len(words)} uploads"
            phase2 = Phase(f"[{label} worker(s)] queries while indexing {what}")
            visibility: list[dict] = []
            from pydoc_data.topics import topics

            spare = sorted(set(topics) - set(args.corpus_names))

            def body(i: int, word: str) -> str:
                # Each run uploads other chapters than the runs before it: two uploads of one chapter differ by one
                # word, and which of such twins ranks first is a ranking question, not the visibility and loss that
                # this test checks (--topics 40 leaves 39 spare chapters: 9 runs of 4 uploads, then they repeat).
                chapter = spare[(run_index * len(words) + i) % len(spare)]
                text = f"# Bulletin {word}\n\nThe {word} procedure is described here.\n\n" + topics[chapter]
                if not args.big_upload_chars:
                    return text
                chapters = [f"\n\n## {name}\n\n" + topics[name] for name in spare]
                while len(text) < args.big_upload_chars:
                    text += chapters[len(text) % len(chapters)]
                return text[: args.big_upload_chars]

            def upload_all() -> None:
                for i, word in enumerate(words[:1] if args.big_upload_chars else words):
                    name = f"bulletin-{word}.md"
                    response = http.post("/indexing/run", files=[("files", (name, body(i, word)))])
                    if response.status_code != 200:
                        failures.append(f"upload {word}: {response.status_code} {response.text[:200]}")
                        continue
                    uploads.append({"word": word, **response.json()["result"]})
                    seen = check_everywhere(url, word, name, workers)
                    visibility.append({"word": word, **seen})
                    if not seen["found_by_all"]:
                        failures.append(f"upload {word} was not found by every worker right after its answer: {seen}")

            uploader = threading.Thread(target=upload_all)
            uploader.start()
            upload_start = time.monotonic()
            measured(server, phase2, lambda: run_clients(url, args.clients, args.seconds, args.max_requests, phase2))
            uploader.join()
            print(f"uploads took {time.monotonic() - upload_start:.1f} s", flush=True)
            print(phase2.report(args.clients), flush=True)
            report["with_uploads"] = summary(phase2, args.clients)
            report["upload_visibility"] = visibility
            report["memory"] = memory_mb(server.pid)
            print(f"memory (MB): {report['memory']}", flush=True)

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
    report["load_average_end"] = os.getloadavg()
    failures += check_documents(store_path, ids_before, uploads, len(words) if not args.big_upload_chars else 1)
    report["errors"] = [*phase1.errors[:5], *phase2.errors[:5]]
    report["failures"] = failures
    return report


def check_documents(store_path: Path, ids_before: set[str], uploads: list[dict], expected: int) -> list[str]:
    """No document lost: every id from before is there, the count grew by what the uploads reported, every id is
    retrievable (the store opened here, the server stopped)."""
    from adaptive_retrieval.components.stores import release_all_clients
    from adaptive_retrieval.pipelines import make_store

    ids_after = snapshot(store_path)
    written = sum(u["chunks_written"] for u in uploads)
    deleted = sum(u["chunks_deleted"] for u in uploads)
    lost = ids_before - ids_after
    retrievable = len(make_store(path=str(store_path)).get_documents_by_id(sorted(ids_after)))
    release_all_clients()
    print(
        f"documents: before={len(ids_before)} uploaded_chunks={written} deleted={deleted} "
        f"expected_after={len(ids_before) + written - deleted} after={len(ids_after)} lost={len(lost)} "
        f"retrievable_by_id={retrievable}/{len(ids_after)}",
        flush=True,
    )
    failures = []
    if len(uploads) != expected:
        failures.append(f"only {len(uploads)} of {expected} uploads succeeded")
    if lost or len(ids_after) != len(ids_before) + written - deleted or retrievable != len(ids_after):
        failures.append("documents were lost or are not retrievable")
    return failures


def compare(runs: list[dict]) -> dict:
    """Per configuration (worker count, and query concurrency when given): the median req/s and p95 over its rounds,
    and the ratios of each to the first."""
    table: dict[str, dict] = {}
    for run in runs:
        row = table.setdefault(
            run["config"], {"req_s": [], "p95_ms": [], "p95_over_floor": [], "server_cpu_ms_per_request": []}
        )
        for key in row:
            row[key].append(run["queries_only"].get(key))
    base = statistics.median(table[runs[0]["config"]]["req_s"])
    result = {}
    for workers, row in table.items():
        req_s = statistics.median(row["req_s"])
        result[workers] = {
            "req_s": req_s,
            "p95_ms": statistics.median(row["p95_ms"]),
            "p95_over_floor": round(statistics.median(v for v in row["p95_over_floor"] if v is not None), 2),
            "server_cpu_ms_per_request": round(
                statistics.median(v for v in row["server_cpu_ms_per_request"] if v is not None), 1
            ),
            "speedup": round(req_s / base, 2) if base else None,
        }
    return result


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (1-64, default 8)")
    parser.add_argument("--seconds", type=float, default=20.0, help="seconds per phase (1-600, default 20)")
    parser.add_argument("--max-requests", type=int, default=100_000, help="request cap per phase")
    parser.add_argument("--uploads", type=int, default=6, help=f"files uploaded in phase 2 (0-{len(UNIQUE_WORDS)})")
    parser.add_argument("--topics", type=int, default=40, help="reference chapters indexed first (default 40)")
    parser.add_argument("--workdir", default=None, help="scratch folder (default: a new temporary folder)")
    parser.add_argument("--port", type=int, default=0, help="loopback port (default: a free one)")
    parser.add_argument("--workers", default="1", help="serve --workers N; a list (1,2) runs each in turn")
    parser.add_argument("--rounds", type=int, default=1, help="times each worker count runs, alternating (1-10)")
    parser.add_argument("--json", default=None, help="write every figure to this JSON file")
    parser.add_argument(
        "--query-concurrency",
        default=None,
        help=f"${CONCURRENCY_ENV} of the server (queries each process runs at once; 0: no bound); a list (0,1) runs "
        "each worker count with each value in turn (default: the server's default)",
    )
    parser.add_argument(
        "--baseline-python",
        default=None,
        help="also run every configuration under this interpreter (another checkout's venv, e.g. the version "
        "before a change), alternating with this one, on the same index",
    )
    parser.add_argument(
        "--big-upload-chars",
        type=int,
        default=0,
        help="phase 2 uploads ONE file of about this many characters (e.g. the server's $ADAPTIVE_MAX_FILE_CHARS) "
        "instead of --uploads small ones",
    )
    args = parser.parse_args()
    try:
        args.workers = [int(w) for w in args.workers.split(",")]
    except ValueError:
        parser.error("--workers takes a count or a list of counts, e.g. 2 or 1,2")
    if not 1 <= args.clients <= 64 or not 1 <= args.seconds <= 600 or not 0 <= args.uploads <= len(UNIQUE_WORDS):
        parser.error("--clients must be 1-64, --seconds 1-600, --uploads 0-8")
    if not all(1 <= w <= 16 for w in args.workers) or not 1 <= args.rounds <= 10:
        parser.error("--workers must be 1-16 each, --rounds 1-10")
    try:
        args.query_concurrency = (
            [None] if args.query_concurrency is None else [int(c) for c in args.query_concurrency.split(",")]
        )
    except ValueError:
        parser.error("--query-concurrency takes a count or a list of counts, e.g. 1 or 0,1")
    return args


def main() -> int:
    args = parse_args()
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
    from adaptive_retrieval.pipelines import index_paths, load_pipeline
    from evaluation.corpus import write_pydoc_topics

    workdir = Path(args.workdir or tempfile.mkdtemp(prefix="adaptive-load-")).resolve()
    store_path = workdir / "qdrant"
    if store_path.exists():
        shutil.rmtree(store_path)
    corpus = write_pydoc_topics(workdir / "corpus")[: args.topics]
    args.corpus_names = [p.stem for p in corpus]
    print(f"workdir {workdir}: indexing {len(corpus)} reference chapters", flush=True)
    indexing = load_pipeline("indexing", path=str(store_path))
    counts = index_paths(indexing, corpus)
    del indexing
    from adaptive_retrieval.components.stores import release_all_clients

    release_all_clients()
    print(f"indexed {counts['chunks_written']} chunks", flush=True)

    runs = []
    for round_index in range(args.rounds):
        for workers in args.workers:
            for concurrency in args.query_concurrency:
                for python in [None, args.baseline_python] if args.baseline_python else [None]:
                    tag = f"r{round_index}w{workers}" + ("" if concurrency is None else f"c{concurrency}")
                    tag += "b" if python else ""
                    runs.append(run_server(args, workers, store_path, workdir, tag, concurrency, python, len(runs)))
    report = {
        "machine": {"cores": len(os.sched_getaffinity(0)), "load_average_end": os.getloadavg()},
        "chunks": counts["chunks_written"],
        "runs": runs,
        "by_workers": compare(runs),
    }
    for workers, row in report["by_workers"].items():
        print(
            f"{workers} worker(s), queries only: {row['req_s']:.1f} req/s ({row['speedup']}x the first), p95 "
            f"{row['p95_ms']:.0f} ms = {row['p95_over_floor']}x the Little floor, server CPU "
            f"{row['server_cpu_ms_per_request']} ms/request",
            flush=True,
        )
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(f"wrote {args.json}")
    errors = sum(r["queries_only"]["errors"] + r["with_uploads"]["errors"] for r in runs if "with_uploads" in r)
    failures = [f for r in runs for f in r["failures"]]
    for message in [e for r in runs for e in r["errors"]][:5] + failures:
        print(f"FAIL {message}")
    ok = not errors and not failures and all("with_uploads" in r for r in runs)
    print("OK" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
