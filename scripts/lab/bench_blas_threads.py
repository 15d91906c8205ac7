"""What BLAS's spinning threads cost an application that runs the query pipeline, and what the scoped limit saves.

    python scripts/lab/bench_blas_threads.py [--chunks 1000] [--queries 100] [--rounds 3] [--json OUT.json]

An application that loads the YAML and calls ``pipeline.run`` keeps numpy's BLAS as it found it: on a multi-core
machine OpenBLAS splits the components' small products over every core and its threads busy-wait after each. The
components limit BLAS to one thread only while they multiply (:mod:`adaptive_retrieval.components.blas_threads`).
Three modes, each in a process of its own (BLAS threads are per process), over the same index
(``scripts/lab/bench.py``'s synthetic corpus and cache), ``--rounds`` times in alternating order:

- ``unlimited``: ``ADAPTIVE_BLAS_THREADS=0``, BLAS left alone (what an application got before the scoped limit);
- ``scoped``: the default, what an application gets now;
- ``process``: :func:`~adaptive_retrieval.pipelines.processes.limit_blas_threads` at start, as the CLI and the
  server run (the limit: the scoped mode cannot do better).

Prints CPU and wall milliseconds per query (``time.process_time``: every thread of the process) for each mode, the
medians over rounds, and the ratios of ``scoped`` to ``unlimited`` and to ``process``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

MODES = ("unlimited", "scoped", "process")


def measure(mode: str, chunks: int, queries: int, root: Path) -> dict[str, float]:
    """One mode in this process: CPU and wall milliseconds per query after three warm-up queries."""
    from profile_server import build_index  # a sibling: the script's folder is first on sys.path

    from adaptive_retrieval.pipelines import run_query
    from adaptive_retrieval.pipelines.processes import limit_blas_threads

    if mode == "process":
        limit_blas_threads()
    pipeline, _store, asked = build_index(chunks, root, queries)
    for query in asked[:3]:
        run_query(pipeline, query)
    cpu, wall = time.process_time(), time.perf_counter()
    for query in asked:
        run_query(pipeline, query)
    return {
        "cpu_ms": 1000 * (time.process_time() - cpu) / len(asked),
        "wall_ms": 1000 * (time.perf_counter() - wall) / len(asked),
    }


def run_mode(mode: str, args: argparse.Namespace) -> dict[str, float]:
    env = {**os.environ, "ADAPTIVE_BLAS_THREADS": "0" if mode == "unlimited" else "1"}
    command = [sys.executable, __file__, "--mode", mode, "--chunks", str(args.chunks), "--queries", str(args.queries)]
    out = subprocess.run([*command, "--root", str(args.root)], env=env, capture_output=True, text=True, check=False)
    if out.returncode:
        raise SystemExit(f"{mode} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1000, help="synthetic passages in the index")
    parser.add_argument("--queries", type=int, default=100, help="timed queries per mode and round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three modes, in alternating order")
    parser.add_argument("--root", type=Path, default=Path(".adaptive"), help="where the benchmark index is cached")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # one measurement, in a child process
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(measure(args.mode, args.chunks, args.queries, args.root)))
        return
    runs: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    for n in range(args.rounds):
        for mode in MODES if n % 2 == 0 else MODES[::-1]:
            runs[mode].append(run_mode(mode, args))
            print(f"round {n + 1} {mode}: {runs[mode][-1]['cpu_ms']:.1f} ms CPU / query", flush=True)
    median = {
        mode: {k: statistics.median(r[k] for r in rs) for k in ("cpu_ms", "wall_ms")} for mode, rs in runs.items()
    }
    print(f"\n{args.chunks} chunks, {args.queries} queries, {args.rounds} rounds, {os.cpu_count()} CPUs")
    print("| mode | CPU ms/query | wall ms/query |\n|---|---|---|")
    for mode in MODES:
        print(f"| {mode} | {median[mode]['cpu_ms']:.1f} | {median[mode]['wall_ms']:.1f} |")
    ratios = {
        "scoped/unlimited": median["scoped"]["cpu_ms"] / median["unlimited"]["cpu_ms"],
        "scoped/process": median["scoped"]["cpu_ms"] / median["process"]["cpu_ms"],
    }
    print("CPU " + ", ".join(f"{k} = {v:.2f}" for k, v in ratios.items()))
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, "median": median, "ratios": ratios}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
