"""A store never opens or writes short of free space: a clear ``InsufficientSpaceError`` instead of Qdrant Edge
dying of SIGBUS in its memory maps (exit 135, no message) on a full disk.

Real parts: Qdrant Edge and SQLite on a throw-away folder; the margin (``$ADAPTIVE_MIN_FREE_MB``) raised past
the free space stands for a full disk; as root, a real tmpfs filled to its last megabyte, with the store opened
in a subprocess (a SIGBUS there would kill the test run otherwise).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from haystack import Document

from adaptive_retrieval.components.stores.disk_space import (
    MIN_FREE_ENV,
    InsufficientSpaceError,
    file_system_type,
    free_bytes,
    require_space,
)
from adaptive_retrieval.components.stores.documents.edge_document_store import EdgeDocumentStore, release_all_clients
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections

FULL = str(10**9)  # a margin of a petabyte: every disk is "full"


def _docs(n: int, start: int = 0) -> list[Document]:
    return [
        Document(id=f"d{i}", content=f"text {i}", embedding=[1.0] + [0.0] * 7, meta={"level": 0})
        for i in range(start, start + n)
    ]


def test_require_space_names_the_folder_the_space_and_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(MIN_FREE_ENV, FULL)
    with pytest.raises(InsufficientSpaceError) as raised:
        require_space(tmp_path / "not" / "yet", "create the index", need=5 * 1024 * 1024, need_for="the batch")
    message = str(raised.value)
    assert str(tmp_path / "not" / "yet") in message and "MB free" in message and MIN_FREE_ENV in message
    assert "5.0 MB for the batch" in message and "\n" not in message
    monkeypatch.setenv(MIN_FREE_ENV, "0")
    require_space(tmp_path, "write")
    monkeypatch.setenv(MIN_FREE_ENV, "lots")
    with pytest.raises(ValueError, match=MIN_FREE_ENV):
        require_space(tmp_path, "write")
    assert free_bytes(tmp_path / "missing") > 0 and isinstance(file_system_type(tmp_path), str)


def test_a_full_disk_refuses_opening_and_writing_and_loses_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = str(tmp_path / "qdrant")
    store = EdgeDocumentStore(path=path, embedding_dim=8, use_sparse_embeddings=False)
    store.write_documents(_docs(5))
    monkeypatch.setenv(MIN_FREE_ENV, FULL)
    with pytest.raises(InsufficientSpaceError, match="write to the index"):
        store.write_documents(_docs(5, start=5))
    with pytest.raises(InsufficientSpaceError, match="delete from the index"):
        store.delete_documents(["d0"])
    release_all_clients()
    for create in (True, False):
        with pytest.raises(InsufficientSpaceError, match="open the index"):
            EdgeDocumentStore(path=path, embedding_dim=8, use_sparse_embeddings=False, create=create).count_documents()
    monkeypatch.delenv(MIN_FREE_ENV)
    assert EdgeDocumentStore(path=path, embedding_dim=8, use_sparse_embeddings=False).count_documents() == 5
    release_all_clients()


def test_the_graph_store_checks_the_same_margin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    graph = SQLiteGraphStore(path=str(tmp_path / "graph.sqlite"))
    graph.chunk_count()
    monkeypatch.setenv(MIN_FREE_ENV, FULL)
    with pytest.raises(InsufficientSpaceError, match="write to the graph store"):
        graph.clear()
    release_all_connections()
    with pytest.raises(InsufficientSpaceError, match="open the graph store"):
        SQLiteGraphStore(path=str(tmp_path / "graph.sqlite")).chunk_count()
    release_all_connections()


_OPEN = textwrap.dedent(
    """
    import sys
    from haystack import Document
    from adaptive_retrieval.components.stores import EdgeDocumentStore
    store = EdgeDocumentStore(path=sys.argv[1], embedding_dim=8, use_sparse_embeddings=False)
    if sys.argv[2] == "write":
        store.write_documents([Document(id=f"d{i}", content="x", embedding=[1.0] + [0.0] * 7) for i in range(50)])
    print(store.count_documents())
    """
)


def _run(store: Path, mode: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != MIN_FREE_ENV}
    return subprocess.run(
        [sys.executable, "-c", _OPEN, str(store), mode], capture_output=True, text=True, timeout=300, env=env
    )


def test_a_full_tmpfs_gives_an_error_not_sigbus(tmp_path: Path) -> None:
    disk = tmp_path / "disk"
    disk.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=320m", "tmpfs", str(disk)], check=False).returncode:
        pytest.skip("mount -t tmpfs failed here")
    try:
        store = disk / "qdrant"
        assert _run(store, "write").stdout.strip() == "50"
        stats = os.statvfs(disk)
        with (disk / "filler").open("wb") as handle:
            os.posix_fallocate(handle.fileno(), 0, stats.f_bavail * stats.f_frsize - (1 << 20))
        done = _run(store, "read")
        assert done.returncode == 1, (done.returncode, done.stderr[-1500:])  # 135 (SIGBUS) before the checks
        assert "InsufficientSpaceError: Not enough free disk space to open the index" in done.stderr
        (disk / "filler").unlink()
        assert _run(store, "read").stdout.strip() == "50"
    finally:
        subprocess.run(["umount", str(disk)], check=False)
