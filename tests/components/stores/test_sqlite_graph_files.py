"""The embedded graph's file on disk: a read-only file or folder is said to be not writable (never "damaged")."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from adaptive_retrieval.components.stores.graph.sqlite_graph_store import (
    GraphNotWritableError,
    GraphStoreDamagedError,
    SQLiteGraphStore,
    release_all_connections,
)


@contextlib.contextmanager
def read_only(path: Path) -> Iterator[None]:
    """``path`` (a file or a folder) read-only for this process: a read-only bind mount as root (whom file modes do
    not stop), its mode otherwise."""
    if os.geteuid() == 0:
        mounted = subprocess.run(["mount", "--bind", str(path), str(path)], capture_output=True, check=False)
        if mounted.returncode != 0:
            pytest.skip(f"a read-only bind mount is needed as root: {mounted.stderr.decode().strip()}")
        try:
            subprocess.run(["mount", "-o", "remount,bind,ro", str(path)], check=True, capture_output=True)
            yield
        finally:
            subprocess.run(["umount", str(path)], check=False, capture_output=True)
        return
    mode = path.stat().st_mode
    path.chmod(0o555 if path.is_dir() else 0o444)
    try:
        yield
    finally:
        path.chmod(mode)


@pytest.fixture
def graph_file(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "index" / "graph.sqlite"
    assert SQLiteGraphStore(path=str(path)).chunk_count() == 0
    release_all_connections()
    for extra in ("-wal", "-shm"):
        Path(f"{path}{extra}").unlink(missing_ok=True)
    yield path
    release_all_connections()


@pytest.mark.parametrize("what", ["file", "folder"])
def test_a_read_only_graph_is_not_writable_rather_than_damaged(graph_file: Path, what: str) -> None:
    """Issue 41 #11: a read-only graph file (or folder) was reported "damaged … move it away and index again",
    which would throw a good graph away: it is only not writable, and the message says so."""
    with read_only(graph_file if what == "file" else graph_file.parent):
        with pytest.raises(GraphNotWritableError, match="cannot be written") as caught:
            SQLiteGraphStore(path=str(graph_file)).chunk_count()
        release_all_connections()
    message = str(caught.value)
    assert "not damaged" in message and "move it away" not in message
    assert not isinstance(caught.value, GraphStoreDamagedError)
    assert SQLiteGraphStore(path=str(graph_file)).chunk_count() == 0  # writable again: the same file opens


CLOSE_UNDER_A_READER = """
import sys, threading, time
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections

store = SQLiteGraphStore(path=sys.argv[1])
store.chunk_count()
ended = []

def read() -> None:
    try:
        while True:
            store.stats()
            store.quick_check()
    except Exception as err:
        ended.append(type(err).__name__)

readers = [threading.Thread(target=read) for _ in range(4)]
for thread in readers:
    thread.start()
time.sleep(0.3)
release_all_connections()
for thread in readers:
    thread.join(30)
print(",".join(sorted(set(ended))))
"""


def test_closing_the_graph_while_another_thread_reads_it_is_an_error_not_a_crash(graph_file: Path) -> None:
    """A CI run crashed (SIGSEGV) when a fixture closed every graph connection while the background calibration
    thread was inside a read: the connection is now closed between two statements, and the reader's next statement
    fails with an error it can report. In a subprocess, so that a crash fails this test rather than the run."""
    done = subprocess.run(
        [sys.executable, "-c", CLOSE_UNDER_A_READER, str(graph_file)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "ProgrammingError", done.stdout
