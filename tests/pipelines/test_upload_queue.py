"""Uploads cannot starve deletes: a delete is never refused because uploads fill the queue, goes before waiting
uploads, and runs between two batches of a running upload instead of after all of them."""

from __future__ import annotations

import threading
import time

import pytest

from adaptive_retrieval.pipelines.serving.upload_queue import UploadQueue


def test_a_delete_runs_between_two_batches_of_a_running_upload() -> None:
    queue = UploadQueue(capacity=2, concurrency=1, budget_s=30)
    events: list[str] = []
    running = threading.Event()

    def upload() -> None:
        with queue.admit() as ticket:
            for batch in range(4):
                ticket.check([batch])
                events.append(f"batch {batch}")
                running.set()
                time.sleep(0.2)

    def delete() -> None:
        with queue.admit_delete():
            events.append("delete")

    uploader = threading.Thread(target=upload)
    uploader.start()
    running.wait(5)
    deleter = threading.Thread(target=delete)
    deleter.start()
    deleter.join(10)
    uploader.join(10)
    assert events[0] == "batch 0" and "delete" in events[1:3], events
    assert events.count("delete") == 1 and len(events) == 5


def test_a_full_upload_queue_does_not_refuse_deletes_and_deletes_go_first() -> None:
    queue = UploadQueue(capacity=2, concurrency=1, budget_s=30)
    order: list[str] = []
    release = threading.Event()
    holding = threading.Event()

    def hold() -> None:
        with queue.admit():
            holding.set()
            release.wait(10)

    def upload(name: str) -> None:
        with queue.admit():
            order.append(name)

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(5)
    waiting = threading.Thread(target=upload, args=("upload",))
    waiting.start()
    time.sleep(0.1)  # the second upload waits for the slot: the queue (capacity 2) is full

    def delete() -> None:
        with queue.admit_delete():
            order.append("delete")

    deleter = threading.Thread(target=delete)
    deleter.start()
    time.sleep(0.1)
    release.set()
    for thread in (holder, waiting, deleter):
        thread.join(10)
    assert order == ["delete", "upload"]


@pytest.mark.parametrize("concurrency", [1, 2])
def test_slots_are_all_given_back(concurrency: int) -> None:
    queue = UploadQueue(capacity=4, concurrency=concurrency, budget_s=1)
    for _ in range(3):
        with queue.admit() as ticket:
            ticket.check(["a"])
        with queue.admit_delete():
            pass
    assert queue._busy == 0 and queue._deletes_waiting == 0 and queue._resuming == 0
