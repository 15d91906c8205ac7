"""The per-process bound on queries that run at once (``pipelines/serving/query_admission.py``), with real threads."""

from __future__ import annotations

import threading
import time

import pytest

from adaptive_retrieval.pipelines.serving.query_admission import CONCURRENCY_ENV, query_slot


def most_at_once(threads: int) -> int:
    """Run ``threads`` threads that each hold a query slot for a moment; the most that held one at the same time."""
    lock, running, peak = threading.Lock(), [0], [0]
    start = threading.Barrier(threads)

    def query() -> None:
        start.wait()
        with query_slot():
            with lock:
                running[0] += 1
                peak[0] = max(peak[0], running[0])
            time.sleep(0.05)
            with lock:
                running[0] -= 1

    workers = [threading.Thread(target=query) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert not any(worker.is_alive() for worker in workers)
    return peak[0]


@pytest.mark.parametrize(("configured", "expected"), [("1", 1), ("2", 2), ("3", 3)])
def test_at_most_the_configured_number_run_at_once(monkeypatch, configured, expected):
    monkeypatch.setenv(CONCURRENCY_ENV, configured)
    assert most_at_once(8) == expected


def test_the_default_is_two(monkeypatch):
    monkeypatch.delenv(CONCURRENCY_ENV, raising=False)
    assert most_at_once(6) == 2


def test_zero_lets_every_query_run_at_once(monkeypatch):
    monkeypatch.setenv(CONCURRENCY_ENV, "0")
    assert most_at_once(6) == 6


def test_a_slot_is_given_back_when_the_query_fails(monkeypatch):
    monkeypatch.setenv(CONCURRENCY_ENV, "1")
    with pytest.raises(RuntimeError), query_slot():
        raise RuntimeError("the pipeline failed")
    done = threading.Event()

    def next_query() -> None:
        with query_slot():
            done.set()

    threading.Thread(target=next_query, daemon=True).start()
    assert done.wait(timeout=5), "the failed query kept its slot"


def test_a_bad_value_is_a_clear_error(monkeypatch):
    monkeypatch.setenv(CONCURRENCY_ENV, "many")
    with pytest.raises(ValueError, match=CONCURRENCY_ENV), query_slot():
        pass
