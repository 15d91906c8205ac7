"""One-shot CLI timings: ``query`` on a small index, ``index`` of one small file, and ``--help``, each the median
over fresh processes, with the bare ``from haystack import Pipeline`` import as the peer measured in the same run.

    python scripts/lab/bench_cli.py [--runs 5] [--cli PATH/TO/adaptive-retrieval] [--store DIR]

The corpus is six chapters of the Python language reference (CPython's ``pydoc_data``, no download), indexed once
into a temporary store before the timed runs; each timed ``index`` run writes one file into a fresh store. Runs of
the commands alternate (query, index, help, peer, query, ...), so a drift in the machine's load reaches them alike.
Wall seconds are a monotonic clock around each process, CPU seconds the children's user + system time.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

QUERY = "How does an augmented assignment statement evaluate its target?"
TOPICS = 6


def write_corpus(folder: Path) -> list[Path]:
    """The first ``TOPICS`` reference chapters as Markdown files."""
    from pydoc_data.topics import topics

    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name in sorted(topics)[:TOPICS]:
        path = folder / (re.sub(r"[^\w.-]", "_", name) + ".md")
        path.write_text(f"# {name}\n\n{topics[name]}", encoding="utf-8")
        paths.append(path)
    return paths


def timed(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``command`` (which must succeed)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"error: {' '.join(command)} exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per command (default 5)")
    default_cli = Path(sys.executable).with_name("adaptive-retrieval")
    parser.add_argument("--cli", default=str(default_cli), help="the adaptive-retrieval executable to time")
    parser.add_argument("--work", default=None, help="scratch folder (default: a temporary one, removed after)")
    args = parser.parse_args()
    cli = Path(args.cli)
    python = cli.with_name("python")
    work = Path(args.work or tempfile.mkdtemp(prefix="bench-cli-"))
    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False"}
    try:
        files = write_corpus(work / "corpus")
        store = work / "store"
        print(f"cli: {cli}\nindexing {len(files)} files into {store} (not timed)", flush=True)
        timed([str(cli), "index", "--store", str(store), str(work / "corpus")], env)
        one = files[0]
        commands = {
            "query": lambda i: [str(cli), "query", "--store", str(store), QUERY],
            "index 1 file": lambda i: [str(cli), "index", "--store", str(work / f"one-{i}"), str(one)],
            "--help": lambda i: [str(cli), "--help"],
            "peer: import haystack": lambda i: [str(python), "-c", "from haystack import Pipeline"],
        }
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for i in range(args.runs + 1):  # the first round warms the file cache and is not counted
            for name, command in commands.items():
                result = timed(command(i), env)
                if i:
                    times[name].append(result)
        peer = statistics.median(w for w, _ in times["peer: import haystack"])
        load = os.getloadavg()[0]
        print(f"\nmedian of {args.runs} fresh processes (load average {load:.2f} at the end; {os.cpu_count()} cores)")
        print(f"{'command':<24} {'wall s':>7} {'cpu s':>7} {'min-max wall':>14} {'wall / peer':>12}")
        for name, runs in times.items():
            walls = [w for w, _ in runs]
            wall, cpu = statistics.median(walls), statistics.median(c for _, c in runs)
            print(f"{name:<24} {wall:>7.2f} {cpu:>7.2f} {min(walls):>6.2f}-{max(walls):<6.2f} {wall / peer:>11.2f}x")
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
