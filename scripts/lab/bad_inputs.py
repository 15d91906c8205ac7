"""Throw a corpus of bad (and some good) inputs at every interface of a real server and classify every answer.

Builds a small temporary index, runs the Python cases against it, then starts ``adaptive-retrieval serve`` on
loopback over the same index (a subprocess, as a user would) and sends the REST cases (httpx), the MCP cases (the
``mcp`` package's client, plus raw JSON-RPC for the non-finite numbers a JSON encoder would not send) and the CLI
cases (the console script, one subprocess each). Each answer is classified:

==================  ===================================================================================
class               meaning
==================  ===================================================================================
clean error         refused with a reason: a 4xx with ``detail``, an MCP error, ``error:``/usage and exit
                    1/2, or a ValueError/TypeError/LookupError in Python
correct result      a good input that got the right answer
5xx or traceback    a 5xx, a traceback (in a body or on stderr), an unexpected exception type, a crash
misleading success  a bad input that was accepted, or a good one whose answer is wrong
lost                indexed or uploaded text that a later check no longer finds (a file lost)
hang                no answer within ``--timeout`` seconds
wrongly refused     a good input that was refused
unclear error       a 4xx without a reason
==================  ===================================================================================

The cases are in ``bad_inputs_cases.py`` and in every ``bad_inputs_cases_*.py`` beside it (each module's
``cases()`` returns its list: a new class of inputs is a new module, no shared list to edit), run in that order
after the Python cases. Exit status 1 when any of the last six classes is non-zero.

Usage::

    python scripts/lab/bad_inputs.py                     # every case (~430; about 10 minutes on 2 busy cores)
    python scripts/lab/bad_inputs.py --quick --json out.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")

import httpx

CLASSES = (
    "clean error",
    "correct result",
    "5xx or traceback",
    "misleading success",
    "lost",
    "hang",
    "wrongly refused",
    "unclear error",
)
FAILURES = CLASSES[2:]
INTERFACES = ("rest", "mcp", "cli", "python")
logger = logging.getLogger("bad_inputs")


@dataclass
class Outcome:
    """What one call did: ``kind`` is ``ok``, ``error``, ``unclear``, ``crash``, ``timeout`` or ``lost`` (a check
    that indexed text is still found failed)."""

    kind: str
    detail: str = ""
    passed: bool = True


@dataclass
class Case:
    """One input: the interface, a label, whether it should be refused (``error``) or answered (``ok``)."""

    interface: str
    label: str
    expect: str
    call: Callable[[Any], Outcome]
    quick: bool = False


@dataclass
class Context:
    """What the cases share: the server URL and client, folders, the console script, the Python pipeline."""

    folder: Path
    timeout: float
    url: str = ""
    client: httpx.Client | None = None
    pipeline: Any = None
    result: Any = None
    state: dict[str, Any] = field(default_factory=dict)

    @property
    def cli(self) -> str:
        return str(Path(sys.executable).with_name("adaptive-retrieval"))

    @property
    def store(self) -> Path:
        return self.folder / "qdrant"


def classify(expect: str, outcome: Outcome) -> str:
    """The class of ``outcome`` for a case that expects ``expect`` (see the module docstring)."""
    if outcome.kind == "timeout":
        return "hang"
    if outcome.kind == "lost":
        return "lost"
    if outcome.kind == "crash":
        return "5xx or traceback"
    if outcome.kind == "unclear":
        return "unclear error"
    if expect == "error":
        return "clean error" if outcome.kind == "error" else "misleading success"
    if outcome.kind == "error":
        return "wrongly refused"
    return "correct result" if outcome.passed else "misleading success"


def with_timeout(function: Callable[[], Outcome], timeout: float) -> Outcome:
    """``function()`` in a daemon thread; ``timeout`` when it does not return in time (the thread is left)."""
    box: list[Outcome] = []
    thread = threading.Thread(target=lambda: box.append(function()), daemon=True)
    thread.start()
    thread.join(timeout)
    if not box:
        return Outcome("timeout", f"no answer within {timeout:.0f} s")
    return box[0]


# -- the environment: an index, then a server over it -----------------------------------------------------------


def _topic(name: str) -> str:
    from pydoc_data.topics import topics

    return topics[name]


CORPUS = {"lambda.md": "lambda", "with.md": "with", "try.txt": "try"}


def build_index(ctx: Context) -> None:
    """Index three Python reference pages into ``ctx.store`` and load the query pipeline over it."""
    from adaptive_retrieval.pipelines import index_paths, load_pipeline, run_query

    corpus = ctx.folder / "corpus"
    corpus.mkdir()
    for name, topic in CORPUS.items():
        (corpus / name).write_text(f"# {topic.title()}\n\n{_topic(topic)}", encoding="utf-8")
    indexing = load_pipeline("indexing", path=str(ctx.store))
    for _, instance in indexing.walk():
        if hasattr(instance, "progress_bar"):
            instance.progress_bar = False
    counts = index_paths(indexing, [corpus])
    logger.info("indexed %d files (%d chunks) into %s", counts["indexed"], counts["chunks_written"], ctx.store)
    ctx.pipeline = load_pipeline("query", path=str(ctx.store))
    ctx.result = run_query(ctx.pipeline, "lambda expression")


def release(ctx: Context) -> None:
    """Close the in-process store so that the server can own it."""
    from adaptive_retrieval.components.stores import release_all_clients

    ctx.pipeline = None
    release_all_clients()


def start_server(ctx: Context) -> subprocess.Popen:
    """``adaptive-retrieval serve`` over ``ctx.store`` on a free loopback port; waits until it answers."""
    from adaptive_retrieval.pipelines.serving import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ADAPTIVE_API_TOKEN", "QDRANT_URL"))}
    env["ADAPTIVE_MAX_REQUEST_FILES"] = "8"
    log = (ctx.folder / "server.log").open("w")
    process = subprocess.Popen(
        [ctx.cli, "serve", "--store", str(ctx.store), "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
        cwd=ctx.folder,
    )
    ctx.url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            msg = f"the server exited with {process.returncode}: {(ctx.folder / 'server.log').read_text()[-2000:]}"
            raise RuntimeError(msg)
        try:
            if len(httpx.get(f"{ctx.url}/status", timeout=5).json().get("pipelines", [])) >= 3:
                break
        except (httpx.HTTPError, ValueError):
            pass
        time.sleep(0.5)
    ctx.client = httpx.Client(base_url=ctx.url, timeout=ctx.timeout)
    return process


def stop_server(process: subprocess.Popen) -> None:
    """Stop the server the way a user does (SIGINT), killing it after 30 s."""
    import signal

    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


# -- running and reporting ---------------------------------------------------------------------------------------


def case_modules() -> list[str]:
    """The modules that hold cases: ``bad_inputs_cases`` first, then every ``bad_inputs_cases_*`` in name order."""
    here = Path(__file__).resolve().parent
    return ["bad_inputs_cases", *sorted(p.stem for p in here.glob("bad_inputs_cases_*.py"))]


def collect_cases() -> list[Case]:
    """Every case of every case module (:func:`case_modules`): ``all_cases()`` of the first, ``cases()`` of the
    others."""
    import importlib

    cases: list[Case] = []
    for name in case_modules():
        module = importlib.import_module(name)
        cases += module.all_cases() if name == "bad_inputs_cases" else module.cases()
    return cases


def run_cases(ctx: Context, cases: list[Case]) -> list[dict[str, Any]]:
    """Run ``cases`` in order; one record per case with its class."""
    records = []
    for case in cases:
        start = time.monotonic()
        try:
            outcome = case.call(ctx)
        except Exception as err:  # the harness itself failed on this case: count it, never hide it
            outcome = Outcome("crash", f"harness: {type(err).__name__}: {err}")
        verdict = classify(case.expect, outcome)
        records.append(
            {
                "interface": case.interface,
                "label": case.label,
                "expect": case.expect,
                "class": verdict,
                "detail": outcome.detail[:300],
                "seconds": round(time.monotonic() - start, 2),
            }
        )
        if verdict in FAILURES:
            logger.warning("%s | %s: %s (%s)", case.interface, case.label, verdict, outcome.detail[:200])
    return records


def summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts per class, and per interface and class."""
    totals = Counter(r["class"] for r in records)
    per_interface = {i: Counter(r["class"] for r in records if r["interface"] == i) for i in INTERFACES}
    return {
        "cases": len(records),
        "classes": {c: totals.get(c, 0) for c in CLASSES},
        "interfaces": {i: {c: n for c, n in counts.items()} for i, counts in per_interface.items() if counts},
    }


def print_summary(report: dict[str, Any]) -> None:
    width = max(len(c) for c in CLASSES)
    print(f"{report['cases']} inputs")
    header = f"{'class':<{width}}  {'total':>5}  " + "  ".join(f"{i:>6}" for i in INTERFACES)
    print(header)
    for name in CLASSES:
        row = "  ".join(f"{report['interfaces'].get(i, {}).get(name, 0):>6}" for i in INTERFACES)
        print(f"{name:<{width}}  {report['classes'][name]:>5}  {row}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a fast subset (the test suite runs it)")
    parser.add_argument("--json", metavar="OUT", help="write every case and the counts as JSON")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds before an answer counts as a hang")
    parser.add_argument("--only", nargs="+", choices=INTERFACES, default=list(INTERFACES))
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder (its path is printed)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

    folder = Path(tempfile.mkdtemp(prefix="bad-inputs-"))
    os.environ["XDG_DATA_HOME"] = str(folder / "xdg")  # nothing lands in the user's data folder
    ctx = Context(folder=folder, timeout=args.timeout)
    cases = [c for c in collect_cases() if c.interface in args.only and (c.quick or not args.quick)]
    records: list[dict[str, Any]] = []
    try:
        build_index(ctx)
        records += run_cases(ctx, [c for c in cases if c.interface == "python"])
        release(ctx)
        server = start_server(ctx)
        try:
            records += run_cases(ctx, [c for c in cases if c.interface != "python"])
        finally:
            stop_server(server)
    finally:
        if args.keep:
            print(f"kept {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)
    report = summary(records)
    print_summary(report)
    if args.json:
        Path(args.json).write_text(json.dumps({**report, "records": records}, indent=2, ensure_ascii=False))
    return 1 if any(report["classes"][c] for c in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
