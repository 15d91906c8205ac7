"""A bounded queue for upload (indexing) requests, so that uploads can never take every worker of the server.

At most ``capacity`` uploads are admitted at once (running or waiting); one more is refused at once with
:class:`QueueFullError` (the REST layer answers 429 with ``Retry-After``). Admitted uploads run
``concurrency`` at a time; one that waits longer than its time budget gives up with :class:`TimeBudgetError`
(503 with ``Retry-After``). While running, :meth:`Ticket.check` is called between batches of files and stops
the work once the request's time budget is spent, so an upload that outlived its client does not index on for
minutes. Queries do not go through this queue: they keep the server's other workers.

Deletes (:meth:`UploadQueue.admit_delete`) share the indexer with uploads but never queue behind them: they do not
count against ``capacity`` (so a full upload queue never answers a delete with 429), they go before any waiting
upload, and a running upload hands the indexer over between two batches of files (:meth:`Ticket.check`), so a
delete waits for at most the batch in progress instead of the whole upload.

============================  ==================================  =======
setting                       environment variable                default
============================  ==================================  =======
uploads admitted at once      ``ADAPTIVE_UPLOAD_QUEUE``           4
time budget per upload (s)    ``ADAPTIVE_UPLOAD_TIMEOUT_S``       600
============================  ==================================  =======

Uploads index one at a time: the crash-safety reconciliation that starts each indexing run reads another
run's in-flight sources as unfinished, so the served indexer never runs two at once.

Usage::

    queue = UploadQueue.from_env()
    with queue.admit() as ticket:          # QueueFullError when full
        index_paths(pipeline, paths, check=ticket.check)   # TimeBudgetError once the budget is spent
    with queue.admit_delete():             # runs between two batches of a running upload
        delete_sources(...)
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.errors import BusyError


class QueueFullError(BusyError):
    """Too many uploads are admitted already; ``retry_after`` says when to try again (seconds)."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class TimeBudgetError(BusyError):
    """An upload waited or ran past its time budget; the work stopped between two batches of files."""

    def __init__(self, message: str, retry_after: int) -> None:
        super().__init__(message)
        self.retry_after = retry_after


@dataclass
class Ticket:
    """One admitted upload: its deadline, and the check to call between batches."""

    deadline: float
    budget_s: float
    done_files: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    queue: UploadQueue | None = None

    def check(self, batch: list[Any]) -> None:
        """Between two batches: let waiting deletes run, then raise :class:`TimeBudgetError` when the budget is
        spent (called before each batch of files)."""
        if self.queue is not None:
            self.queue.yield_to_deletes()
        if time.monotonic() > self.deadline:
            msg = (
                f"The upload's time budget of {self.budget_s:.0f} s ran out after {self.done_files} file(s); "
                "files already indexed are kept, send the upload again to index the rest "
                "(raise the budget with $ADAPTIVE_UPLOAD_TIMEOUT_S)"
            )
            raise TimeBudgetError(msg, retry_after=30)
        self.done_files += len(batch)


#: Deletes admitted at once (they are short; the bound only keeps a flood from holding every worker).
DELETE_CAPACITY = 16


class UploadQueue:
    """Admission (``capacity``) and concurrency (``concurrency``) bounds for uploads, deletes first; thread-safe."""

    def __init__(self, capacity: int = 4, concurrency: int = 1, budget_s: float = 600.0) -> None:
        if capacity < 1 or concurrency < 1 or budget_s <= 0:
            msg = "capacity and concurrency must be at least 1 and budget_s positive"
            raise ValueError(msg)
        self.capacity, self.concurrency, self.budget_s = capacity, concurrency, budget_s
        self._admitted = threading.BoundedSemaphore(capacity)
        self._deletes = threading.BoundedSemaphore(DELETE_CAPACITY)
        self._lock = threading.Lock()
        self._waiting = 0
        self._recent_s = 30.0  # last upload's duration, for Retry-After
        # The indexer slots: who holds one, deletes waiting (they go first) and uploads resuming after a delete
        # (they go before uploads that have not started).
        self._slots = threading.Condition()
        self._busy = self._deletes_waiting = self._resuming = 0

    @classmethod
    def from_env(cls) -> UploadQueue:
        """Bounds from ``$ADAPTIVE_UPLOAD_QUEUE`` and ``$ADAPTIVE_UPLOAD_TIMEOUT_S`` (one upload indexes at a time)."""
        return cls(
            capacity=settings.whole("ADAPTIVE_UPLOAD_QUEUE", minimum=1),
            concurrency=1,
            budget_s=settings.number("ADAPTIVE_UPLOAD_TIMEOUT_S", strict=True),
        )

    def retry_after(self) -> int:
        """Seconds a refused client should wait: about one upload's duration per upload ahead of it."""
        with self._lock:
            ahead = self._waiting + 1
        return max(1, min(600, round(self._recent_s * ahead / self.concurrency)))

    def _acquire(self, timeout: float | None, kind: str) -> bool:
        """Take an indexer slot within ``timeout`` s (``None``: no limit): a ``delete`` waits for slots only, a
        ``resume`` for slots and deletes, a new ``upload`` for slots, deletes and resuming uploads."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._slots:
            if kind == "delete":
                self._deletes_waiting += 1
            elif kind == "resume":
                self._resuming += 1
            try:
                while (
                    self._busy >= self.concurrency
                    or (kind != "delete" and self._deletes_waiting)
                    or (kind == "upload" and self._resuming)
                ):
                    remaining = None if deadline is None else deadline - time.monotonic()
                    if remaining is not None and remaining <= 0:
                        return False
                    self._slots.wait(remaining)
                self._busy += 1
                return True
            finally:
                if kind == "delete":
                    self._deletes_waiting -= 1
                elif kind == "resume":
                    self._resuming -= 1
                self._slots.notify_all()

    def _release(self) -> None:
        with self._slots:
            self._busy -= 1
            self._slots.notify_all()

    def yield_to_deletes(self) -> None:
        """Called by a running upload between two batches: when deletes wait, hand them the indexer and take it
        back after them (before any upload that has not started)."""
        with self._slots:
            if not self._deletes_waiting:
                return
        self._release()
        self._acquire(None, "resume")

    @contextlib.contextmanager
    def admit(self) -> Iterator[Ticket]:
        """Admit one upload and wait for a running slot.

        :raises QueueFullError: when ``capacity`` uploads are admitted already (nothing waits).
        :raises TimeBudgetError: when no running slot freed up within the budget.
        """
        if not self._admitted.acquire(blocking=False):
            msg = (
                f"{self.capacity} uploads are already queued or indexing; try again later "
                "(raise the bound with $ADAPTIVE_UPLOAD_QUEUE)"
            )
            raise QueueFullError(msg, retry_after=self.retry_after())
        start = time.monotonic()
        ticket = Ticket(deadline=start + self.budget_s, budget_s=self.budget_s, queue=self)
        try:
            with self._lock:
                self._waiting += 1
            try:
                got = self._acquire(self.budget_s, "upload")
            finally:
                with self._lock:
                    self._waiting -= 1
            if not got:
                msg = f"The upload waited {self.budget_s:.0f} s for the indexer without starting; try again later"
                raise TimeBudgetError(msg, retry_after=self.retry_after())
            began = time.monotonic()
            try:
                yield ticket
            finally:
                self._recent_s = max(1.0, time.monotonic() - began)
                self._release()
        finally:
            self._admitted.release()

    @contextlib.contextmanager
    def admit_delete(self) -> Iterator[None]:
        """Run one delete on the indexer: before waiting uploads, and between two batches of a running one.

        :raises QueueFullError: when :data:`DELETE_CAPACITY` deletes are waiting already.
        :raises TimeBudgetError: when the indexer did not free up within the budget.
        """
        if not self._deletes.acquire(blocking=False):
            msg = f"{DELETE_CAPACITY} deletes are already waiting; try again in a moment"
            raise QueueFullError(msg, retry_after=1)
        try:
            if not self._acquire(self.budget_s, "delete"):
                msg = f"The delete waited {self.budget_s:.0f} s for the indexer; try again later"
                raise TimeBudgetError(msg, retry_after=self.retry_after())
            try:
                yield
            finally:
                self._release()
        finally:
            self._deletes.release()
