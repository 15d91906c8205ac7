"""Where the REST server's CPU goes per query, against the same pipeline run in process (the peer).

    python scripts/lab/profile_server.py [--chunks 1000] [--queries 150] [--json OUT.json] [--no-profile]

Steps, all in one run so that the ratios compare like with like on a shared machine:

1. index ``--chunks`` synthetic passages (``scripts/lab/bench.py``'s corpus and cache: ``.adaptive/bench-N``);
2. **peer**: answer ``--queries`` synthetic queries with ``run_query`` in this process (CPU seconds of this
   process per query, ``time.process_time``), then release the store;
3. **server**: start ``adaptive-retrieval serve [--workers N]`` on loopback over that index, send the same
   queries one at a time (``POST /query/run``) and read the CPU seconds (``utime + stime`` of ``/proc/PID/stat``)
   of every server process before and after (``serve`` runs a supervisor, a store host and N workers: all are
   summed, :mod:`evaluation.server_metrics`): server CPU per request, per process role, and its ratio to the
   peer; with ``--baseline-python PY`` the same with another checkout's interpreter, ``--rounds N`` times each in
   alternating order (a shared machine drifts: one pair can be off by 20 % either way), and the median ratio;
4. **profile** (unless ``--no-profile``): the same server again, sampled by ``py-spy`` (``pip install py-spy``;
   250 samples/s of the thread that holds the GIL in every server process, so a thread waiting for the GIL is not
   counted; native code that releases the GIL (ONNX Runtime, Qdrant Edge searches) is not seen) or, without it,
   under cProfile in every thread of a one-process server (``--workers 1``; thread CPU time as the clock; it
   slows code that makes many small calls most). Each sampled stack
   goes to one stage (:func:`stage_of`): HTTP framework (uvicorn, starlette, FastAPI, Hayhooks, anyio), our
   request checks and guard, the pipeline (Haystack's copies of component inputs, its scheduling, each component
   by its outermost frame), the response (``QueryResponse``, pydantic, JSON), Hayhooks' access log (loguru); the
   shares are scaled to that run's measured CPU per request.

Linux only (``/proc``). The load average is printed: on a busy machine read the ratios, not the milliseconds.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib.util
import json
import os
import pstats
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[2]
from evaluation.server_metrics import server_processes, tree_cpu_seconds  # noqa: E402 (the lab is on the path)

HOST = "127.0.0.1"

#: Stages of the profile, tried in this order on each sampled stack (innermost frame first): the first rule with a
#: matching frame names the stage. A component's stage is its outermost frame under Haystack (the channel, not the
#: store it calls).
HTTP_MARKERS = (
    "/uvicorn/",
    "/starlette/",
    "/fastapi/",
    "/hayhooks/",
    "/anyio/",
    "/h11/",
    "asyncio/",
    "/httptools/",
    "/loguru/",
    "/logging/",
    "/concurrent/",
    "threading.py",
    "/selectors.py",
)
RESPONSE_MARKERS = (
    "pipelines/serving/wrapper_support.py",
    "/pydantic/",
    "/pydantic_core/",
    "/json/",
    "fastapi/encoders.py",
    "serialize_response",
    "render",
)
STARTUP_MARKERS = (
    "lifespan",
    "load_served_pipeline",
    "warm_up",
    "create_app",
    "_find_and_load",
    "deploy_pipeline",
    "create_pipeline_wrapper",
    "shutdown",
)


#: Where this package's components live (an editable or an installed copy).
COMPONENTS_DIR = str(Path(importlib.util.find_spec("adaptive_retrieval.components").origin).parent) + os.sep


#: py-spy samples per second.
RATE = 250
#: Leaf frames of a thread that waits (an idle event loop, an idle worker): not CPU, left out.
IDLE_LEAVES = ("Runner.run", "Condition.wait", "Queue.get", "Event.wait", "select", "poll", "_worker")


def stage_of(frames: list[tuple[str, str]]) -> str | None:
    """The stage of one sampled stack (``(function, file)`` pairs, outermost first); ``None`` for start-up,
    shut-down and idle stacks, and for samples without a Python frame."""
    host = any(f.startswith("process ") and "pipelines.serving.store_host_app" in f for f, _ in frames)
    frames = [(f, path) for f, path in frames if not (f.startswith("process ") and not path)]
    if not frames or frames[-1][0].rpartition(".")[2] in {f.rpartition(".")[2] for f in IDLE_LEAVES}:
        return None
    if any(m in f or m in path for f, path in frames for m in STARTUP_MARKERS):
        return None
    if host:
        # The store host of `serve --workers N` (py-spy --subprocesses names each process as an outer frame).
        if not any(f == "_Connection.handle" for f, _ in frames):
            return None  # its indexing app, idle here
        inner = [p for _, p in frames if p.startswith(COMPONENTS_DIR)]
        where = inner[-1][len(COMPONENTS_DIR) :].split(":")[0].removesuffix(".py") if inner else "request loop"
        return "store host: " + where
    if any("stores/documents/remote_document_store.py" in path for _, path in frames):
        return "pipeline: store calls to the store host (socket, unpickling)"
    if any(f == "_deepcopy_with_exceptions" for f, _ in frames):
        return "pipeline: Haystack copies of component inputs"
    for _, path in frames:
        if path.startswith(COMPONENTS_DIR):
            return "pipeline: " + path[len(COMPONENTS_DIR) :].split(":")[0].removesuffix(".py")
    if any("/haystack/" in path for _, path in frames):
        return "pipeline: Haystack engine (scheduling, tracing)"
    if any("query_pipeline.py" in path for _, path in frames):
        return "pipeline: run_query"
    for f, path in reversed(frames):  # outside the pipeline: the innermost frame that says what it is
        if "/loguru/" in path or "/logging/" in path:
            return "HTTP: access log (loguru)"
        if any(m in f or m in path for m in RESPONSE_MARKERS):
            return "response: QueryResponse, pydantic, JSON"
        if any(m in path for m in ("request_checks.py", "security.py", "validation.py")):
            return "request checks, guard, validation (ours)"
        if any(m in path for m in HTTP_MARKERS):
            return "HTTP: uvicorn, starlette, FastAPI, Hayhooks, anyio"
    return "other"


def parse_frame(frame: str) -> tuple[str, str]:
    """``func (file:line)`` as py-spy writes it → ``(func, file)``."""
    name, _, where = frame.rpartition(" (")
    return (name, where.rstrip(")")) if name else (frame, "")


def sampled_stages(raw: Path) -> dict[str, int]:
    """Samples per stage in a py-spy ``--format raw`` file (start-up and shut-down stacks left out)."""
    counts: dict[str, int] = defaultdict(int)
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        stage = stage_of([parse_frame(f) for f in stack.split(";")])
        if stage is not None:
            counts[stage] += int(count)
    return dict(counts)


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def process_roles(root: int) -> dict[int, str]:
    """Each process of the server below ``root`` named by its role: ``supervisor`` (or ``server``, one
    process), ``store-host``, ``worker``."""
    roles = {}
    for pid in server_processes(root):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if "store_host" in command:
            roles[pid] = "store-host"
        elif "pipelines.serving.worker_app" in command:
            roles[pid] = "worker"
        elif "pipelines.processes.workers" in command:
            roles[pid] = "supervisor"
        elif "py-spy" not in command:
            roles[pid] = "server"
    return roles


def cpu_by_role(before: dict[int, float], after: dict[int, float], roles: dict[int, str]) -> dict[str, float]:
    """CPU seconds each role spent between two :func:`tree_cpu_seconds` readings (a process that started in
    between counts from zero)."""
    spent: dict[str, float] = defaultdict(float)
    for pid, cpu in after.items():
        if pid in roles:
            spent[roles[pid]] += cpu - before.get(pid, 0.0)
    return dict(spent)


def build_index(chunks: int, root: Path, queries: int) -> tuple[Any, Path, list[str]]:
    """The benchmark index of ``chunks`` synthetic passages (cached by ``scripts/lab/bench.py``'s layout), its query
    pipeline (warm) and ``queries`` synthetic queries."""
    from bench import bench_root, synthetic_passages, synthetic_queries  # noqa: I001 (scripts/ on the path)
    from evaluation.data import EvalSet
    from evaluation.systems import AdaptiveSystem

    passages = synthetic_passages(chunks)
    system = AdaptiveSystem(bench_root(root, chunks))
    system.index(EvalSet(f"synthetic-{chunks}", passages, []))
    return system.pipeline, Path(system.store_path), synthetic_queries(passages, queries)


def peer_cpu(pipeline: Any, queries: list[str]) -> dict[str, float]:
    """CPU and wall milliseconds per query of ``run_query`` in this process (after three warm-up queries)."""
    from adaptive_retrieval.pipelines import run_query

    for query in queries[:3]:
        run_query(pipeline, query)
    cpu, wall = time.process_time(), time.perf_counter()
    for query in queries:
        run_query(pipeline, query)
    n = len(queries)
    return {"cpu_ms": 1000 * (time.process_time() - cpu) / n, "wall_ms": 1000 * (time.perf_counter() - wall) / n}


def wait_ready(url: str, server: subprocess.Popen, timeout: float = 300) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            msg = f"the server exited with status {server.returncode} while starting"
            raise RuntimeError(msg)
        try:
            if "query" in httpx.get(f"{url}/status", timeout=5).json().get("pipelines", []):
                return
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    msg = f"the server did not start within {timeout:.0f} s"
    raise TimeoutError(msg)


def py_spy() -> str | None:
    """The ``py-spy`` command beside this Python or on ``PATH`` (``None``: not installed)."""
    import shutil

    beside = Path(sys.executable).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def child_pid(pid: int, timeout: float = 60) -> int:
    """The first child process of ``pid`` (the server py-spy started)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for task in Path(f"/proc/{pid}/task").iterdir():
            children = (task / "children").read_text().split()
            if children:
                return int(children[0])
        time.sleep(0.1)
    msg = f"process {pid} started no child within {timeout:.0f} s"
    raise TimeoutError(msg)


def same_graph(store: Path) -> dict[str, str]:
    """The environment of a server over ``store``: this version's graph file named by ``$ADAPTIVE_GRAPH_PATH``, so that
    a baseline from before issue 41 (which looked for the graph beside the index folder, not in it) reads the same
    graph instead of an empty one of its own: without it, it did no graph work and its answers differed."""
    from adaptive_retrieval.components import graph_file

    return {**os.environ, "ADAPTIVE_GRAPH_PATH": str(graph_file(qdrant_path=store))}


def serve_and_query(
    store: Path,
    queries: list[str],
    workdir: Path,
    profiler: str | None,
    python: str = sys.executable,
    workers: int | None = None,
) -> dict[str, Any]:
    """Start a server over ``store`` (``serve --workers workers``, or serve's default; sampled by py-spy, or under
    cProfile, when ``profiler`` says so), send ``queries`` one at a time after a warm-up; returns the CPU of every
    server process (summed, and per role) and the client's wall milliseconds per request (and where the profile
    is)."""
    import httpx

    from adaptive_retrieval.pipelines.serving import free_port

    port = free_port(HOST)
    serve = ["serve", "--store", str(store), "--host", HOST, "--port", str(port)]
    serve += ["--workers", str(workers)] if workers else []
    command = [python, "-m", "adaptive_retrieval.pipelines.cli", *serve]
    profile = workdir / {None: "none", "py-spy": "server.pyspy.txt", "cprofile": "server.prof"}[profiler]
    if profiler == "py-spy":
        command = [py_spy(), "record", "--rate", str(RATE), "--gil", "--full-filenames", "--format", "raw"]
        command += ["--subprocesses"]  # the store host and the workers of `serve --workers N`
        command += ["-o", str(profile)]
        command += ["--", sys.executable, "-m", "adaptive_retrieval.pipelines.cli", *serve]
    elif profiler == "cprofile":
        command = [sys.executable, __file__, "--serve-profiled", str(profile), "--", *serve]
    label = profiler or ("plain" if python == sys.executable else "baseline")
    with (workdir / f"server-{label}.log").open("w") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=same_graph(store))
        server = child_pid(process.pid) if profiler == "py-spy" else process.pid
        try:
            url = f"http://{HOST}:{port}"
            wait_ready(url, process)
            with httpx.Client(base_url=url, timeout=120) as http:
                for query in queries[:3]:
                    http.post("/query/run", json={"query": query}).raise_for_status()
                if profiler == "cprofile":  # start and warm-up are not what the profile is for
                    os.kill(server, signal.SIGUSR1)
                    time.sleep(0.5)
                before, wall = tree_cpu_seconds(server), time.perf_counter()
                answers = []
                for query in queries:
                    response = http.post("/query/run", json={"query": query})
                    response.raise_for_status()
                    answers.append(answer_digest(response.json()["result"]))
                    if not answers[-1]["documents"]:
                        msg = f"no document for {query!r}"
                        raise RuntimeError(msg)
                after, wall = tree_cpu_seconds(server), time.perf_counter() - wall
                roles = process_roles(server)
        finally:
            os.kill(server, signal.SIGINT)
            try:
                process.wait(timeout=120)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
    n = len(queries)
    spent = cpu_by_role(before, after, roles)
    return {
        "cpu_ms": 1000 * sum(spent.values()) / n,
        "wall_ms": 1000 * wall / n,
        "cpu_ms_by_role": {role: round(1000 * cpu / n, 2) for role, cpu in sorted(spent.items())},
        "processes": len(roles),
        "workers": workers,
        "profile": str(profile) if profiler else None,
        "answers": answers,
    }


def answer_digest(result: dict[str, Any]) -> dict[str, Any]:
    """What must not change between two versions of the server: the documents (id, exact score), the intent, the
    weights and the gate's decision and quality (not the timings)."""
    gate = result.get("gate") or {}
    return {
        "documents": [[d["id"], d.get("score")] for d in result["documents"]],
        "intent": result.get("intent"),
        "weights": result.get("weights"),
        "decision": gate.get("decision"),
        "quality": gate.get("quality"),
    }


def serve_profiled(out: Path, argv: list[str]) -> int:
    """Run ``adaptive-retrieval`` with ``argv`` under one cProfile per thread (thread CPU time as the clock);
    the merged statistics go to ``out`` when the server stops."""
    # The command's function by its module: ``cli`` cannot export a name its own ``main`` module shadows.
    from adaptive_retrieval.pipelines.cli.main import main

    profiles: list[cProfile.Profile] = []
    lock = threading.Lock()

    def start(frame: Any, event: str, arg: Any) -> None:  # first profile event of a new thread
        sys.setprofile(None)
        profile = cProfile.Profile(time.thread_time)
        with lock:
            profiles.append(profile)
        profile.enable()

    def clear(signum: int, frame: Any) -> None:  # SIGUSR1: from now on (the server is warm)
        with lock:
            for profile in profiles:
                profile.clear()

    signal.signal(signal.SIGUSR1, clear)
    threading.setprofile(start)
    own = cProfile.Profile(time.thread_time)
    profiles.append(own)
    own.enable()
    try:
        return main(argv)
    finally:
        own.disable()
        threading.setprofile(None)
        with lock:
            pstats.Stats(*profiles).dump_stats(str(out))


def profiled_stages(profile: Path) -> dict[str, float]:
    """Self CPU seconds per stage of a cProfile file. A function in a file that names a stage counts for it; any
    other (C functions, the standard library) counts for its callers' stages, in proportion to the time each caller
    spent in it, followed up the callers until a stage is found."""
    stats = pstats.Stats(str(profile)).stats  # type: ignore[attr-defined]
    resolved: dict[tuple, dict[str, float]] = {}

    def stages_of(func: tuple, seen: frozenset) -> dict[str, float]:
        if func in resolved:
            return resolved[func]
        filename, _, name = func
        stage = None if filename.startswith("~") else stage_of([(name, filename)])
        if stage is not None and stage != "other":
            share = {stage: 1.0}
        else:
            callers = {c: e[3] for c, e in stats.get(func, (0, 0, 0, 0, {}))[4].items() if c not in seen}
            weight = sum(callers.values())
            share = defaultdict(float)
            for caller, t in callers.items():
                for k, v in stages_of(caller, seen | {func}).items():
                    share[k] += v * t / weight
            share = dict(share) or {stage or "other": 1.0}
        resolved[func] = share
        return share

    totals: dict[str, float] = defaultdict(float)
    for func, (_, _, tottime, _, _) in stats.items():
        for stage, fraction in stages_of(func, frozenset()).items():
            totals[stage] += tottime * fraction
    return dict(totals)


def stage_table(seconds: dict[str, float], cpu_ms: float) -> dict[str, float]:
    """Each stage's share of the profile (``seconds`` or samples per stage) as milliseconds of the measured
    ``cpu_ms`` per request, largest first. Shares, because on a busy machine a sampled thread that holds the GIL
    may wait for a core (its samples are wall time), and cProfile's clock slows what it measures."""
    total = sum(seconds.values()) or 1.0
    return {k: cpu_ms * v / total for k, v in sorted(seconds.items(), key=lambda kv: -kv[1])}


def roles_line(run: dict[str, Any]) -> str:
    """``worker 20.1 + store-host 5.2 + supervisor 0.0`` CPU ms/request of one server run."""
    return " + ".join(f"{role} {ms:.1f}" for role, ms in run["cpu_ms_by_role"].items())


def alternate_servers(store: Path, queries: list[str], workdir: Path, args: argparse.Namespace) -> dict[str, list]:
    """This server's runs and the baseline's (when asked), ``--rounds`` of each, the order swapped every round: a
    machine whose speed drifts during the run (a shared one does) weighs on both alike."""
    runs: dict[str, list] = {"server": [], "baseline_server": []}
    pythons = {"server": sys.executable, "baseline_server": args.baseline_python}
    for round_ in range(args.rounds if args.baseline_python else 1):
        order = ["server", "baseline_server"][:: -1 if round_ % 2 else 1]
        for key in (k for k in order if pythons[k]):
            runs[key].append(serve_and_query(store, queries, workdir, None, pythons[key], args.workers))
            print(f"round {round_ + 1}: {key} {runs[key][-1]['cpu_ms']:.1f} ms/request", flush=True)
    return runs


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run of median CPU per request (the lower middle one of an even number)."""
    return sorted(runs, key=lambda run: run["cpu_ms"])[(len(runs) - 1) // 2]


def print_summary(report: dict[str, Any], chunks: int, queries: int) -> None:
    """The table of the peer, this server and the baseline server (when measured)."""
    peer, server = report["peer"], report["server"]
    print(
        f"\n{chunks} chunks, {queries} queries, one client, {os.cpu_count()} CPUs, load average "
        f"{report['load_average_start']} -> {report['load_average_end']}\n"
        f"| run | CPU ms/query | wall ms/query | CPU by process role (ms/query) |\n|---|---|---|---|\n"
        f"| in-process run_query (peer) | {peer['cpu_ms']:.1f} | {peer['wall_ms']:.1f} | |\n"
        f"| server, POST /query/run ({server['processes']} processes) | {server['cpu_ms']:.1f} | "
        f"{server['wall_ms']:.1f} | {roles_line(server)} |"
    )
    if baseline := report.get("baseline_server"):
        print(
            f"| baseline server ({baseline['python']}, {baseline['processes']} processes) | "
            f"{baseline['cpu_ms']:.1f} | {baseline['wall_ms']:.1f} | {roles_line(baseline)} |"
        )
    print(f"server CPU / peer CPU = {report['cpu_ratio_server_to_peer']:.2f}")
    if baseline:
        ratios = report["round_ratios"]
        each = ", ".join(f"{r:.2f}" for r in ratios)
        print(f"this server / baseline server = {statistics.median(ratios):.2f} (CPU per request), median of rounds")
        print(f"  {each} (the table shows each server's median run)")
        same = sum(a == b for a, b in zip(server["answers"], baseline["answers"], strict=True))
        print(f"answers identical to the baseline server's: {same} of {len(server['answers'])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1000, help="synthetic passages in the index (default 1000)")
    parser.add_argument("--queries", type=int, default=150, help="timed queries per measurement (default 150)")
    parser.add_argument("--root", default=str(ROOT / ".adaptive"), help="where the benchmark indexes are cached")
    parser.add_argument("--no-profile", action="store_true", help="skip the profiled run")
    parser.add_argument(
        "--profiler", choices=("py-spy", "cprofile"), help="default: py-spy when installed, else cProfile"
    )
    parser.add_argument("--top", type=int, default=25, help="stages listed in the profile table")
    parser.add_argument(
        "--workers",
        type=int,
        help="serve --workers N (default: serve's own default, the cores available; 1 = one process)",
    )
    parser.add_argument("--json", help="write the report here")
    parser.add_argument(
        "--rounds", type=int, default=1, help="with --baseline-python: serve both this many times, alternating"
    )
    parser.add_argument(
        "--baseline-python",
        help="also serve with this interpreter (e.g. another checkout's .venv/bin/python: the code before a change) "
        "and report its CPU per request in the same run",
    )
    parser.add_argument("--serve-profiled", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.serve_profiled:
        return serve_profiled(Path(args.serve_profiled), [a for a in rest if a != "--"])
    from adaptive_retrieval.components.stores import release_all_clients
    from adaptive_retrieval.pipelines.processes import limit_blas_threads

    limit_blas_threads()  # as the server runs
    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_average_start": load_average()}
    pipeline, store, queries = build_index(args.chunks, Path(args.root), args.queries)
    report["peer"] = peer_cpu(pipeline, queries)
    del pipeline
    release_all_clients()
    workdir = Path(tempfile.mkdtemp(prefix="adaptive-profile-"))
    served = alternate_servers(store, queries, workdir, args)
    report["server"] = median_run(served["server"])
    report["cpu_ratio_server_to_peer"] = report["server"]["cpu_ms"] / report["peer"]["cpu_ms"]
    if args.baseline_python:
        report["baseline_server"] = {**median_run(served["baseline_server"]), "python": args.baseline_python}
        report["round_ratios"] = [
            a["cpu_ms"] / b["cpu_ms"] for a, b in zip(served["server"], served["baseline_server"], strict=True)
        ]
    profiler = None if args.no_profile else (args.profiler or ("py-spy" if py_spy() else "cprofile"))
    if profiler == "py-spy" and not py_spy():
        parser.error("--profiler py-spy: py-spy is not installed (pip install py-spy)")
    if profiler == "cprofile" and args.workers != 1:
        parser.error("cProfile sees one process: use --workers 1 with it, or py-spy (pip install py-spy)")
    if profiler:
        run = serve_and_query(store, queries, workdir, profiler, workers=args.workers)
        if profiler == "py-spy":  # samples of the thread holding the GIL, warm-up queries included
            stages = stage_table({k: float(v) for k, v in sampled_stages(Path(run["profile"])).items()}, run["cpu_ms"])
        else:
            stages = stage_table(profiled_stages(Path(run["profile"])), run["cpu_ms"])
        report["profiled_server"] = {**run, "profiler": profiler, "stages_ms": stages}
        print(f"\nserver CPU per request by stage ({profiler}; {run['cpu_ms']:.1f} ms/request in that run):")
        print("| stage | CPU ms/request | share |\n|---|---|---|")
        for stage, ms in list(stages.items())[: args.top]:
            print(f"| {stage} | {ms:.1f} | {ms / run['cpu_ms']:.0%} |")
    report["load_average_end"] = load_average()
    report["command"] = "python scripts/lab/profile_server.py " + " ".join(sys.argv[1:])
    print_summary(report, args.chunks, len(queries))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
