"""Kill the indexer with SIGKILL at many moments, re-index, and compare every source with a clean run.

Builds a small Markdown corpus from ``../shared/data/hotpotqa100`` (or ``--corpus``), indexes it once into a
clean store (the reference), then for each trial starts ``adaptive-retrieval index`` into a fresh store and
kills it: either at a named fault point (``$ADAPTIVE_FAULT_AT``, see ``components/indexing/faults.py``: mid
upsert, between graph and vector writes, before the manifest is completed, mid delete...) or after a random
delay. Some trials also change or delete a file before the kill (so replacement and deletion are crashed
too). Each trial then re-indexes the same files without injection and compares ``stats --json`` per source
(chunks, summaries, graph_chunks, state) with the reference.

With ``--server`` trials also run the REST upload path: ``adaptive-retrieval serve`` is started, files are
uploaded to ``/indexing/run``, the server is SIGKILLed (at a fault point or a random moment), restarted, the
files uploaded again, and the uploads' sources compared.

Usage::

    python scripts/fault_test.py --kills 20 --files 12            # prints one line per kill and a summary
    python scripts/fault_test.py --kills 6 --server --json out.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("ADAPTIVE_FAULT_DATA", ROOT.parent / "shared" / "data" / "hotpotqa100" / "corpus.json"))
POINTS = (
    "index.after_pending:1",
    "writer.before_upsert:1",
    "writer.mid_upsert:1",
    "graph.after_write:2",
    "writer.before_delete:1",
    "graph.after_write:1",
    "index.after_pipeline:1",
    "index.before_complete:1",
    "index.before_complete:2",
)
#: Entity counts are not compared: the extractor weighs phrases by how many documents of the same batch hold
#: them, so they depend on which files a run indexed together (a re-index after a kill batches differently).
COMPARED = ("chunks", "summaries", "graph_chunks", "state", "source_hash")


def make_corpus(folder: Path, files: int, passages_per_file: int, seed: int) -> list[Path]:
    """``files`` Markdown files, each a few titled passages (several chunks, so summaries and graph exist)."""
    corpus = json.loads(DATA.read_text(encoding="utf-8"))
    titles = sorted(corpus)
    random.Random(seed).shuffle(titles)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(files):
        chosen = titles[i * passages_per_file : (i + 1) * passages_per_file]
        body = "\n\n".join(f"## {t}\n\n" + "".join(corpus[t]).strip() for t in chosen)
        path = folder / f"doc{i:02d}.md"
        path.write_text(f"# Collection {i}\n\n{body}\n", encoding="utf-8")
        paths.append(path)
    return paths


def cli(*args: str, env: dict[str, str] | None = None, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def stats(store: Path) -> dict[str, Any]:
    if not store.is_dir():  # killed before the store was created
        return {"sources": {}, "totals": {"orphan_graph_chunks": 0}}
    done = cli("stats", "--store", str(store), "--json")
    if not done.stdout.strip():
        msg = f"stats failed: {done.stderr[-2000:]}"
        raise RuntimeError(msg)
    return json.loads(done.stdout)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Stats rows keyed by file name (the stores live in different folders)."""
    return {Path(s).name: {k: row.get(k) for k in COMPARED} for s, row in report["sources"].items()}


def differences(expected: dict[str, Any], got: dict[str, Any]) -> list[str]:
    out = []
    for name in sorted(set(expected) | set(got)):
        if expected.get(name) != got.get(name):
            out.append(f"{name}: expected {expected.get(name)} got {got.get(name)}")
    return out


def run_killed(args: list[str], env: dict[str, str], delay: float | None) -> tuple[str, float]:
    """Run the CLI; kill it after ``delay`` s (random timing) unless a fault point kills it first."""
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", *args],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        proc.wait(timeout=delay if delay is not None else 600)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    proc.stderr.close()
    elapsed = time.monotonic() - start
    if proc.returncode == -signal.SIGKILL:
        return "killed", elapsed
    return f"exited {proc.returncode}", elapsed


def shorten(path: Path) -> None:
    """Cut a file to its first half (fewer chunks: re-indexing must delete the stale ones)."""
    text = path.read_text(encoding="utf-8")
    path.write_text(text[: len(text) // 2] + "\n", encoding="utf-8")


_CHANGED: dict[str, Any] = {}


def changed_reference(work: Path, corpus: list[Path]) -> dict[str, Any]:
    """Stats of a clean index of the corpus with its first file shortened (computed once)."""
    if not _CHANGED:
        folder = work / "changed" / "files"
        shutil.copytree(corpus[0].parent, folder)
        shorten(folder / corpus[0].name)
        done = cli("index", "--store", str(work / "changed" / "qdrant"), str(folder), "--batch-files", "6")
        assert done.returncode == 0, done.stderr[-2000:]
        _CHANGED.update(by_name(stats(work / "changed" / "qdrant")))
    return dict(_CHANGED)


def cli_trials(args: argparse.Namespace, work: Path, corpus: list[Path], reference: dict[str, Any]) -> list[dict]:
    rng = random.Random(args.seed)
    results = []
    for trial in range(args.kills):
        store = work / f"trial{trial}" / "qdrant"
        files_dir = work / f"trial{trial}" / "files"
        shutil.copytree(corpus[0].parent, files_dir)
        # Half of the trials crash a *re*-index: index cleanly, change one file and delete another, then crash.
        rewrite = trial % 2 == 1
        expected = dict(reference)
        if rewrite:
            done = cli("index", "--store", str(store), str(files_dir), "--batch-files", "6")
            assert done.returncode == 0, done.stderr[-2000:]
            shorten(files_dir / corpus[0].name)
        points = args.points or POINTS
        # Every third trial (unless --points) kills at a random moment instead of a named point.
        point = points[trial % len(points)] if args.points or trial % 3 != 2 else None
        # Random moments spread over a clean run's duration (start-up included), measured on this machine.
        delay = None if point else rng.uniform(0.3, 1.0) * args.clean_s
        env = {"ADAPTIVE_FAULT_AT": point} if point else {}
        outcome, elapsed = run_killed(
            ["index", "--store", str(store), str(files_dir), "--batch-files", "6", *(["--force"] if rewrite else [])],
            env,
            delay,
        )
        before = stats(store)
        incomplete = sum(1 for r in before["sources"].values() if r["state"] != "complete")
        redo = cli("index", "--store", str(store), str(files_dir), "--batch-files", "6")
        after = stats(store)
        if rewrite:
            expected = changed_reference(work, corpus)
        diffs = differences(expected, by_name(after))
        moment = point or f"random {delay:.1f}s"
        row = {
            "trial": trial,
            "moment": moment,
            "kind": "re-index --force of a changed corpus" if rewrite else "first index",
            "outcome": outcome,
            "elapsed_s": round(elapsed, 1),
            "incomplete_after_kill": incomplete,
            "redo_exit": redo.returncode,
            "sources_compared": len(expected),
            "differences": diffs,
            "orphan_graph_chunks": after["totals"]["orphan_graph_chunks"],
        }
        results.append(row)
        print(
            f"kill {trial + 1:>2}: {row['kind']:<38} at {moment:<26} {outcome:<9} after {elapsed:5.1f}s; "
            f"{incomplete} source(s) incomplete; after re-index {len(expected)} compared, {len(diffs)} differ, "
            f"{row['orphan_graph_chunks']} orphaned graph chunks",
            flush=True,
        )
        for d in diffs:
            print(f"    {d}", flush=True)
        shutil.rmtree(work / f"trial{trial}", ignore_errors=True)
    return results


def start_server(port: int, store: Path, base: Path, env: dict[str, str]) -> subprocess.Popen:
    """``adaptive-retrieval serve`` on ``port`` over ``store``, once ``/status`` answers."""
    import httpx

    proc = subprocess.Popen(
        [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", "serve", "--store", str(store), "--port", str(port)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT), "ADAPTIVE_UPLOAD_DIR": str(base / "uploads"), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/status", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    raise RuntimeError("server did not start")


def upload(port: int, corpus: list[Path], timeout: float) -> Any:
    """POST every corpus file to ``/indexing/run`` in one request."""
    import httpx

    files = [("files", (p.name, p.read_bytes(), "text/markdown")) for p in corpus]
    return httpx.post(f"http://127.0.0.1:{port}/indexing/run", files=files, timeout=timeout)


def server_trials(args: argparse.Namespace, work: Path, corpus: list[Path], reference: dict[str, Any]) -> list[dict]:
    """Kill ``adaptive-retrieval serve`` during an upload, restart, upload again, compare."""
    import httpx

    from adaptive_retrieval.pipelines.app import free_port

    rng = random.Random(args.seed + 1)
    results = []
    for trial in range(args.server_kills):
        base = work / f"server{trial}"
        store = base / "qdrant"
        point = POINTS[(trial * 2) % len(POINTS)] if trial % 2 == 0 else None
        port = free_port()

        proc = start_server(port, store, base, {"ADAPTIVE_FAULT_AT": point} if point else {})
        delay = rng.uniform(0.5, 8.0) if point is None else None
        t0 = time.monotonic()
        with contextlib.suppress(httpx.HTTPError):
            upload(port, corpus, timeout=delay if delay is not None else 600)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcome = "killed" if proc.returncode == -signal.SIGKILL else f"exited {proc.returncode}"
        elapsed = time.monotonic() - t0
        proc = start_server(port, store, base, {})
        try:
            redo = upload(port, corpus, timeout=600)
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=60)
        after = by_name(stats(store))
        diffs = differences(reference, after)
        moment = point or f"random {delay:.1f}s"
        results.append(
            {
                "trial": f"server{trial}",
                "moment": moment,
                "outcome": outcome,
                "redo_status": redo.status_code,
                "sources_compared": len(reference),
                "differences": diffs,
            }
        )
        print(
            f"server kill {trial + 1}: upload of {len(corpus)} files at {moment:<26} {outcome:<9} after "
            f"{elapsed:5.1f}s; re-upload HTTP {redo.status_code}; {len(reference)} compared, {len(diffs)} differ",
            flush=True,
        )
        for d in diffs:
            print(f"    {d}", flush=True)
        shutil.rmtree(base, ignore_errors=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="CLI kills (default 20)")
    parser.add_argument("--server", action="store_true", help="also kill the server during uploads")
    parser.add_argument("--server-kills", type=int, default=4)
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--passages", type=int, default=8, help="passages per file")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--points", nargs="+", default=None, help="only these fault points (no random moments)")
    parser.add_argument("--json", type=Path, default=None, help="write the trials as JSON here")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="fault_test_"))
    try:
        corpus = make_corpus(work / "corpus", args.files, args.passages, args.seed)
        t0 = time.monotonic()
        done = cli("index", "--store", str(work / "reference" / "qdrant"), str(work / "corpus"), "--batch-files", "6")
        assert done.returncode == 0, done.stderr[-2000:]
        args.clean_s = time.monotonic() - t0
        reference = by_name(stats(work / "reference" / "qdrant"))
        total = sum(r["chunks"] for r in reference.values())
        print(f"reference: {len(reference)} sources, {total} chunks (clean run, {args.clean_s:.1f} s)", flush=True)
        results = cli_trials(args, work, corpus, reference)
        if args.server:
            results += server_trials(args, work, corpus, reference)
        killed = sum(1 for r in results if r["outcome"] == "killed")
        differing = sum(len(r["differences"]) for r in results)
        compared = sum(r["sources_compared"] for r in results)
        print(
            f"summary: {len(results)} trials, {killed} killed by SIGKILL, {compared} source comparisons, "
            f"{differing} differ",
            flush=True,
        )
        if args.json:
            args.json.write_text(json.dumps(results, indent=2), encoding="utf-8")
        return 1 if differing else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
