"""Refuse to open or write an embedded store when its disk is nearly full, before the disk turns into a crash.

Qdrant Edge keeps an index in memory-mapped files: a page it touches that the file system cannot back kills the
process with SIGBUS (exit 135, no message). On a full disk ``index``, ``stats`` and ``query`` all died that way:
opening writes too (Edge saves segment state on load, and on tmpfs the pages a load maps in are allocated even
to be read). So every open and every write batch first checks the free space with ``os.statvfs`` and, short of
a safety margin, raises :class:`InsufficientSpaceError`, one sentence naming the folder, the space and what to do.

===========================  ==============================  =======
setting                      environment variable            default
===========================  ==============================  =======
free space kept (MB)         ``ADAPTIVE_MIN_FREE_MB``        64
===========================  ==============================  =======

On tmpfs the margin comes on top of the index files' holes (sparse bytes a load may allocate). The SQLite graph
store fails with an error of its own on a full disk; it checks the same margin first, so both stores say the same.

Usage::

    require_space(Path("/data/qdrant/adaptive"), "write to the index", need=4 * 1024 * 1024)
"""

from __future__ import annotations

import contextlib
import contextvars
import os
from collections.abc import Iterator
from pathlib import Path

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.stores.store_errors import StoreError

MIN_FREE_ENV = "ADAPTIVE_MIN_FREE_MB"
DEFAULT_MIN_FREE_MB = 64.0
MB = 1024 * 1024
#: File systems whose pages are allocated when a memory map touches them, even to read (RAM-backed).
_ALLOCATE_ON_READ = {"tmpfs", "ramfs", "hugetlbfs"}


class InsufficientSpaceError(StoreError, ValueError):
    """The disk of a store has less free space than it needs plus the margin. A ``ValueError``, so the retrieval
    channels raise it rather than skip themselves (as for a damaged index): every channel would fail alike.

    ``free_mb`` and ``needed_mb`` let a server say it without naming its folders (:meth:`public_message`)."""

    def __init__(self, message: str, free_mb: float = 0.0, needed_mb: float = 0.0) -> None:
        super().__init__(message)
        self.free_mb, self.needed_mb = free_mb, needed_mb

    def public_message(self) -> str:
        """The error without server paths: for a REST answer."""
        return (
            f"The server's disk is full: {self.free_mb:.1f} MB free, {self.needed_mb:.1f} MB needed (margin "
            f"${MIN_FREE_ENV} included). Nothing was written; try again once space is freed on the server."
        )


#: The margin that undoing a refused write keeps instead (see :func:`undoing`): deleting what a batch wrote and
#: restoring a record take a few kilobytes of write-ahead log, and without them a refused write would leave a
#: half-written source behind.
UNDO_MARGIN_BYTES = 4 * MB
_UNDOING: contextvars.ContextVar[bool] = contextvars.ContextVar("adaptive_disk_undoing", default=False)


@contextlib.contextmanager
def undoing() -> Iterator[None]:
    """Within: the writes that undo a write refused for space may use the margin down to
    :data:`UNDO_MARGIN_BYTES`, so that "nothing was written" stays true (this thread or task only)."""
    token = _UNDOING.set(True)
    try:
        yield
    finally:
        _UNDOING.reset(token)


def margin_bytes() -> int:
    """The free space every open and write leaves (``$ADAPTIVE_MIN_FREE_MB``, default 64 MB; 0 turns it off;
    at most :data:`UNDO_MARGIN_BYTES` while :func:`undoing`)."""
    margin = int(settings.number(MIN_FREE_ENV) * MB)
    return min(margin, UNDO_MARGIN_BYTES) if _UNDOING.get() else margin


def _existing(path: Path) -> Path:
    """``path`` or its nearest existing parent (a store about to be created has no folder yet)."""
    path = path.expanduser().absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged writer may still use on the file system that holds ``path``."""
    stats = os.statvfs(_existing(path))
    return stats.f_bavail * stats.f_frsize


def file_system_type(path: Path) -> str:
    """The type of the file system mounted where ``path`` lives (``/proc/self/mounts``; ``""`` when unknown)."""
    target = str(_existing(path).resolve())
    best, kind = "", ""
    try:
        lines = Path("/proc/self/mounts").read_text(encoding="utf-8").splitlines()
    except OSError:
        return ""
    for line in lines:
        fields = line.split()
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, fields[2]
    return kind


def _sizes(folder: Path) -> tuple[int, int]:
    """``(occupied, holes)`` in bytes over the files under ``folder``: what they take on disk, and what they span
    without taking it yet (holes a memory map may fill)."""
    occupied = holes = 0
    for root, _, names in os.walk(folder):
        for name in names:
            try:
                stats = os.stat(os.path.join(root, name))
            except OSError:
                continue
            occupied += stats.st_blocks * 512
            holes += max(0, stats.st_size - stats.st_blocks * 512)
    return occupied, holes


def sparse_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` span but do not occupy yet."""
    return _sizes(folder)[1]


def occupied_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` take on disk (an optimisation may rewrite that much)."""
    return _sizes(folder)[0]


def open_need(folder: Path) -> int:
    """What opening the store in ``folder`` may claim besides the margin: its holes on a RAM-backed file system,
    nothing elsewhere (a disk maps holes in for reading without allocating them)."""
    if folder.is_dir() and file_system_type(folder) in _ALLOCATE_ON_READ:
        return sparse_bytes(folder)
    return 0


def require_space(folder: Path, action: str, need: int = 0, need_for: str = "this step") -> None:
    """Raise :class:`InsufficientSpaceError` unless the disk of ``folder`` has ``need`` bytes plus the margin free.

    :param action: what was about to happen, for the message ("open the index", "write to the graph").
    :param need_for: what ``need`` is for, for the message.
    """
    margin = margin_bytes()
    if margin == 0 and need == 0:
        return
    free = free_bytes(folder)
    if free >= need + margin:
        return
    detail = f"{need / MB:.1f} MB for {need_for} plus " if need else ""
    msg = (
        f"Not enough free disk space to {action} '{folder}': {free / MB:.1f} MB free, {detail}a margin of "
        f"{margin / MB:.0f} MB needed. Free space on that disk (or move the index elsewhere), then run the command "
        f"again; nothing was written. The margin is ${MIN_FREE_ENV}."
    )
    raise InsufficientSpaceError(msg, free_mb=free / MB, needed_mb=(need + margin) / MB)
