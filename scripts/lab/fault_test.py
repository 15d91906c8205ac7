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
files uploaded again, and the uploads' sources compared. ``--workers N`` serves with ``serve --workers N``: the
uploads run in the store host (a fault point kills it), and the SIGKILL of ``serve`` takes the host and every worker.

With ``--damage`` each of :data:`DAMAGES` is done to a copy of the reference index (segments folder deleted, nodes
deleted behind the manifests' back, flipped vector bytes, a damaged payload page, a zero-byte / garbage graph
file, a dropped graph table); ``stats``, ``stats --verify`` and ``query`` must each exit 1 with a one-line
``error:`` (or ``problem:`` lines) and no traceback, then the repair the message names must bring the index back
to the reference. With ``--disk-full`` (root only: it mounts a tmpfs) the reference is indexed onto a 384 MB
tmpfs that is then filled to its last megabyte: ``index``, ``stats`` and ``query`` must exit 1 with the free-space
error instead of dying of SIGBUS (exit 135), and once space is freed the index must equal the reference.

Usage::

    python scripts/lab/fault_test.py --kills 20 --files 12            # prints one line per kill and a summary
    python scripts/lab/fault_test.py --kills 6 --server --json out.json
    python scripts/lab/fault_test.py --kills 0 --server --server-kills 20 --workers 2   # the server path with workers
    python scripts/lab/fault_test.py --kills 0 --damage --disk-full   # the damaged-index and full-disk cases only
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

ROOT = Path(__file__).resolve().parents[2]
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


def start_server(port: int, store: Path, base: Path, env: dict[str, str], workers: int = 1) -> subprocess.Popen:
    """``adaptive-retrieval serve --workers N`` on ``port`` over ``store``, once ``/status`` answers (with workers:
    once every worker serves; the uploads run in the store host, which a fault point kills, and the SIGKILL of
    ``serve`` takes the host and the workers with it)."""
    import httpx

    from adaptive_retrieval.pipelines.processes import store_owner

    # A SIGKILLed `serve` takes its store host with it, but not in the same instant: the host holds the store until
    # it has exited, and a server started before that is refused ("served by process ..."), as it should be.
    deadline = time.monotonic() + 30
    while store_owner(store) is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    command = ["serve", "--store", str(store), "--port", str(port), "--workers", str(workers)]
    log = base / "serve.log"
    base.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as output:
        proc = subprocess.Popen(
            [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", *command],
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT), "ADAPTIVE_UPLOAD_DIR": str(base / "uploads"), **env},
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 180 * workers
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/status", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.5)
    proc.kill()
    proc.wait()
    tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-5:]
    raise RuntimeError(f"server did not start (exit {proc.returncode}): " + " | ".join(tail))


def upload(port: int, corpus: list[Path], timeout: float) -> Any:
    """POST every corpus file to ``/indexing/run`` in one request."""
    import httpx

    files = [("files", (p.name, p.read_bytes(), "text/markdown")) for p in corpus]
    return httpx.post(f"http://127.0.0.1:{port}/indexing/run", files=files, timeout=timeout)


def server_trials(args: argparse.Namespace, work: Path, corpus: list[Path], reference: dict[str, Any]) -> list[dict]:
    """Kill ``adaptive-retrieval serve`` during an upload, restart, upload again, compare."""
    import httpx

    from adaptive_retrieval.pipelines.serving import free_port

    rng = random.Random(args.seed + 1)
    results = []
    for trial in range(args.server_kills):
        base = work / f"server{trial}"
        store = base / "qdrant"
        point = POINTS[(trial * 2) % len(POINTS)] if trial % 2 == 0 else None
        port = free_port()

        proc = start_server(port, store, base, {"ADAPTIVE_FAULT_AT": point} if point else {}, args.workers)
        delay = rng.uniform(0.5, 8.0) if point is None else None
        t0 = time.monotonic()
        with contextlib.suppress(httpx.HTTPError):
            upload(port, corpus, timeout=delay if delay is not None else 600)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        outcome = "killed" if proc.returncode == -signal.SIGKILL else f"exited {proc.returncode}"
        elapsed = time.monotonic() - t0
        proc = start_server(port, store, base, {}, args.workers)
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


# -- damaged index ----------------------------------------------------------------------------------------------


def _segments(index: Path) -> list[Path]:
    return sorted((index / "qdrant" / "adaptive" / "segments").iterdir())


def _flip_vectors(index: Path) -> None:
    """XOR the high byte (sign and exponent) of one float in ten of the stored dense vectors (the first MB of each
    vector file, little-endian float32)."""
    for path in sorted(index.glob("qdrant/adaptive/segments/*/vector_storage-text-dense/vectors/chunk_*.mmap")):
        with path.open("r+b") as handle:
            data = bytearray(handle.read(1 << 20))
            for i in range(3, len(data), 40):
                data[i] ^= 0xFF
            handle.seek(0)
            handle.write(data)


def _damage_payload(index: Path) -> None:
    for segment in _segments(index):
        with (segment / "payload_storage" / "page_0.dat").open("r+b") as handle:
            handle.write(random.Random(3).randbytes(8192))


def _delete_nodes(index: Path) -> None:
    """Delete three chunks straight in the store, as a lost segment would: the manifests still count them."""
    from adaptive_retrieval.components.stores import EdgeDocumentStore, release_all_clients

    store = EdgeDocumentStore(path=str(index / "qdrant"))
    chunks = store.filter_documents({"field": "meta.level", "operator": "==", "value": 0})
    store.delete_documents([d.id for d in chunks[:3]])
    release_all_clients()


def _graph_file(index: Path) -> Path:
    """The graph file of the index in ``index/qdrant`` (in the index folder itself)."""
    from adaptive_retrieval.components import graph_file

    return graph_file(qdrant_path=index / "qdrant")


def _graph(index: Path, data: bytes) -> None:
    graph = _graph_file(index)
    for extra in ("-wal", "-shm"):
        Path(f"{graph}{extra}").unlink(missing_ok=True)
    graph.write_bytes(data)


def _drop_graph_table(index: Path) -> None:
    import sqlite3

    with contextlib.closing(sqlite3.connect(_graph_file(index))) as conn:
        conn.execute("DROP TABLE mentions")
        conn.commit()


def _move_graph_away(index: Path) -> None:
    graph = _graph_file(index)
    graph.rename(graph.with_name(f"{graph.name}.damaged"))


#: name -> (damage done to an index folder holding qdrant/ (and in it, graph.sqlite), the repair the error message
#: names).
#: ``stats``, ``stats --verify`` and ``query`` must all exit 1, except ``stats`` where :data:`SEEN_BY_VERIFY_ONLY`.
DAMAGES: dict[str, tuple[Any, list[str]]] = {
    "segments folder deleted": (lambda i: shutil.rmtree(i / "qdrant" / "adaptive" / "segments"), ["index"]),
    "3 chunks deleted behind the manifests": (_delete_nodes, ["index"]),
    "vector bytes flipped": (_flip_vectors, ["index", "--force"]),
    "payload page damaged": (_damage_payload, ["new folder"]),
    "zero-byte graph.sqlite": (lambda i: _graph(i, b""), ["move graph", "index"]),
    "garbage graph.sqlite": (lambda i: _graph(i, random.Random(1).randbytes(100_000)), ["move graph", "index"]),
    "graph table dropped": (_drop_graph_table, ["move graph", "index"]),
}


#: Damage plain ``stats`` (counts, no vector reads) cannot see: it exits 0, ``stats --verify`` and ``query`` 1.
SEEN_BY_VERIFY_ONLY = {"vector bytes flipped"}


def _outcome(done: subprocess.CompletedProcess) -> str:
    """``exit N: <the error or first problem line>`` of a CLI run (a crash by a signal reads as such); for an error
    inside a pipeline component, Haystack's ``Error:`` line after the component's name."""
    lines = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.startswith(("error:", "problem:", "Error:"))]
    if done.returncode < 0:
        return f"killed by signal {-done.returncode}"
    if "Traceback" in done.stderr:
        return f"exit {done.returncode}: TRACEBACK"
    if lines and lines[0].startswith("error: The following component failed") and len(lines) > 1:
        lines = [f"error: (in a component) {lines[1].removeprefix('Error: ')}"]
    return f"exit {done.returncode}: " + (lines[0][:200] if lines else "(no error line)")


def _repair(index: Path, repair: list[str], files: Path) -> Path:
    """Run the repair a damage's message names; returns the store to compare (a new one for 'new folder')."""
    store = index / "qdrant"
    if repair == ["new folder"]:
        store = index / "rebuilt" / "qdrant"
        repair = ["index"]
    if repair[0] == "move graph":
        _move_graph_away(index)
        repair = repair[1:]
    done = cli(*repair, "--store", str(store), str(files), "--batch-files", "6")
    assert done.returncode == 0, done.stderr[-2000:]
    return store


def damage_trials(work: Path, corpus: list[Path], reference: dict[str, Any]) -> list[dict]:
    """Each of :data:`DAMAGES` on a copy of the reference index: loud failures, then the named repair."""
    results = []
    for name, (damage, repair) in DAMAGES.items():
        index = work / "damaged"
        shutil.rmtree(index, ignore_errors=True)
        shutil.copytree(work / "reference", index)
        damage(index)
        runs = {
            "stats": cli("stats", "--store", str(index / "qdrant")),
            "stats --verify": cli("stats", "--verify", "--store", str(index / "qdrant")),
            "query": cli("query", "--store", str(index / "qdrant"), "what is the first collection about?"),
        }
        expected = {k: 0 if (k == "stats" and name in SEEN_BY_VERIFY_ONLY) else 1 for k in runs}
        loud = all(r.returncode == expected[k] and "Traceback" not in r.stderr for k, r in runs.items())
        store = _repair(index, repair, corpus[0].parent)
        verified = cli("stats", "--verify", "--store", str(store))
        diffs = differences(reference, by_name(stats(store)))
        results.append(
            {
                "trial": f"damage: {name}",
                "outcome": {k: _outcome(r) for k, r in runs.items()},
                "loud": loud,
                "repair": " ".join(repair),
                "verify_after": verified.returncode,
                "sources_compared": len(reference),
                "differences": diffs + ([] if loud else [f"{name}: not a clean exit 1 everywhere"]),
            }
        )
        print(f"damage: {name}; repair: {' '.join(repair)}", flush=True)
        for command, done in runs.items():
            print(f"    {command:<15} {_outcome(done)}", flush=True)
        print(
            f"    after the repair: stats --verify exit {verified.returncode}; {len(reference)} compared, "
            f"{len(diffs)} differ",
            flush=True,
        )
        shutil.rmtree(index, ignore_errors=True)
    return results


# -- full disk ----------------------------------------------------------------------------------------------------


def _fill(folder: Path, leave: int) -> Path:
    """A file taking all of ``folder``'s free space but ``leave`` bytes."""
    stats_ = os.statvfs(folder)
    filler = folder / "filler"
    with filler.open("wb") as handle:
        os.posix_fallocate(handle.fileno(), 0, stats_.f_bavail * stats_.f_frsize - leave)
    return filler


def disk_full_trial(work: Path, corpus: list[Path], reference: dict[str, Any]) -> list[dict]:
    """Index onto a small tmpfs, fill it, run index/stats/query, free it, compare (root only; skipped otherwise)."""
    disk = work / "tmpfs"
    disk.mkdir()
    if os.geteuid() != 0:
        print("disk full: skipped (mounting a tmpfs needs root)", flush=True)
        return []
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=384m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        print(f"disk full: skipped (mount failed: {mounted.stderr.decode().strip()})", flush=True)
        return []
    try:
        store = disk / "qdrant"
        files = corpus[0].parent
        done = cli("index", "--store", str(store), str(files), "--batch-files", "6")
        assert done.returncode == 0, done.stderr[-2000:]
        filler = _fill(disk, leave=1 << 20)
        changed = work / "changed-file" / corpus[1].name
        changed.parent.mkdir(exist_ok=True)
        changed.write_text(corpus[1].read_text(encoding="utf-8") + "\n\nOne more paragraph.\n", encoding="utf-8")
        runs = {
            "index": cli("index", "--store", str(store), str(changed)),
            "stats": cli("stats", "--store", str(store)),
            "query": cli("query", "--store", str(store), "what is the first collection about?"),
        }
        filler.unlink()
        verified = cli("stats", "--verify", "--store", str(store))
        diffs = differences(reference, by_name(stats(store)))
        loud = all(r.returncode == 1 and "free disk space" in r.stderr for r in runs.values())
        print("disk full: a 384 MB tmpfs filled to its last MB", flush=True)
        for command, run in runs.items():
            print(f"    {command:<15} {_outcome(run)}", flush=True)
        print(
            f"    space freed: stats --verify exit {verified.returncode}; {len(reference)} compared, "
            f"{len(diffs)} differ",
            flush=True,
        )
        failed = [] if loud else ["disk full: not a clean free-space error everywhere"]
        results = [
            {
                "trial": "disk full",
                "outcome": {k: _outcome(r) for k, r in runs.items()},
                "loud": loud,
                "verify_after": verified.returncode,
                "sources_compared": len(reference),
                "differences": diffs + failed,
            }
        ]
        return [*results, _filling_during_a_run(disk, files, reference)]
    finally:
        subprocess.run(["umount", str(disk)], check=False)


def _filling_during_a_run(disk: Path, files: Path, reference: dict[str, Any]) -> dict[str, Any]:
    """An index run whose disk fills while it runs: once its progress bar shows 2 files done, the tmpfs is filled
    to 1 MB under the margin, so the next batch is refused (with room left for the writes in flight); the next
    run, space back, must finish it like a clean run."""
    import re
    import threading

    from adaptive_retrieval.components.stores import margin_bytes

    store = disk / "second" / "qdrant"
    command = [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", "index", "--store", str(store)]
    proc = subprocess.Popen(
        [*command, str(files), "--batch-files", "2"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    err: list[str] = []
    reader = threading.Thread(target=lambda: err.extend(iter(lambda: proc.stderr.read(1), "")), daemon=True)
    reader.start()
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and proc.poll() is None:
        done_files = [int(n) for n in re.findall(r"\b(\d+)/\d+ \[", "".join(err))]
        if done_files and max(done_files) >= 2:
            break
        time.sleep(0.1)
    filler = _fill(disk, leave=margin_bytes() - (1 << 20))
    out = proc.stdout.read()
    proc.wait(timeout=600)
    reader.join(60)
    filler.unlink()
    cut = subprocess.CompletedProcess(proc.args, proc.returncode, out, "".join(err))
    partial = stats(store) if store.is_dir() else {"sources": {}}
    done = sum(1 for r in partial["sources"].values() if r["state"] == "complete")
    redo = cli("index", "--store", str(store), str(files), "--batch-files", "2")
    diffs = differences(reference, by_name(stats(store)))
    loud = cut.returncode == 1 and "free disk space" in cut.stderr and "Traceback" not in cut.stderr
    print(
        f"disk filling during a run (filled after 2 files): {_outcome(cut)}; {done} of {len(reference)} sources "
        f"complete; the next run exit {redo.returncode}; {len(reference)} compared, {len(diffs)} differ",
        flush=True,
    )
    return {
        "trial": "disk filling during a run",
        "outcome": {"index": _outcome(cut), "complete_before_redo": done, "redo": redo.returncode},
        "loud": loud,
        "sources_compared": len(reference),
        "differences": diffs + ([] if loud else ["disk filling during a run: not a clean free-space error"]),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kills", type=int, default=20, help="CLI kills (default 20)")
    parser.add_argument("--server", action="store_true", help="also kill the server during uploads")
    parser.add_argument("--server-kills", type=int, default=4)
    parser.add_argument("--workers", type=int, default=1, help="serve --workers N in the server trials (default 1)")
    parser.add_argument("--files", type=int, default=12)
    parser.add_argument("--passages", type=int, default=8, help="passages per file")
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--points", nargs="+", default=None, help="only these fault points (no random moments)")
    parser.add_argument("--json", type=Path, default=None, help="write the trials as JSON here")
    parser.add_argument("--damage", action="store_true", help="also damage copies of the index (see DAMAGES)")
    parser.add_argument("--disk-full", action="store_true", help="also fill the disk under an index (root: tmpfs)")
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
        if args.damage:
            results += damage_trials(work, corpus, reference)
        if args.disk_full:
            results += disk_full_trial(work, corpus, reference)
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
