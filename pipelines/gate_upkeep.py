"""Keeping the quality gate's calibration current as the index changes: incremental, bounded, in the background.

The gate judges with the index's own calibration (``gate_calibration.json``, see
:mod:`adaptive_retrieval.pipelines.gate_calibration`) and with the shipped prior until there is one. Indexing calls
:func:`update_calibration` (the CLI's ``index`` and the demo once their files are in; the server's upload handler
through :class:`CalibrationKeeper`, in a background thread):

1. The calibration file keeps its *samples*: each pseudo-query's signals (present, sources excluded, and for a
   named one its absent-attribute variant) with the sources it was drawn from and their content hashes.
2. An update compares those sources with the index's manifest: samples of a source that changed or was deleted
   are dropped; sources the samples have not seen get new pseudo-queries, drawn with them as subjects (the rest of
   the index still supplies the other documents an absent attribute or an exclusion needs). Their number is
   proportional to the share of the index that is new (:data:`TARGET_SAMPLES` for the whole index), at least
   :data:`MIN_NEW`, at most :data:`PER_CHUNK` per new chunk and ``budget`` per update, so one upload costs a
   bounded number of queries.
3. The gate's model is fitted again on every kept sample (numpy, milliseconds) and written atomically
   (:func:`~adaptive_retrieval.components.gating.calibration.save_calibration`: a temporary file, fsync, rename):
   a crash leaves the previous calibration, which the next update continues from.

Samples drawn before a later upload are not re-run: their competitors changed a little. ``adaptive-retrieval
calibrate`` re-runs everything (``full=True``).

Usage::

    result = update_calibration(query_pipeline)            # after indexing; returns what it did
    keeper = CalibrationKeeper(lambda: load_pipeline("query"))
    keeper.request()                                       # after each upload: runs in a background thread
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from haystack import Pipeline

from adaptive_retrieval.components.gating.calibration import (
    load_calibration,
    save_calibration,
    store_calibration_file,
)
from adaptive_retrieval.components.indexing.manifest import read_manifests
from adaptive_retrieval.pipelines.gate_calibration import (
    CHUNKS,
    fit_samples,
    run_samples,
    sample_version,
)

logger = logging.getLogger(__name__)

#: Pseudo-queries the samples of a whole index add up to (a new part of the index gets its share of them).
TARGET_SAMPLES = 200
#: Fewest pseudo-queries an update draws for new sources (a small upload still counts).
MIN_NEW = 20
#: Most pseudo-queries one update runs (each costs about two and a half queries).
DEFAULT_BUDGET = 200
#: Most pseudo-queries per new chunk (a small index is done sooner).
PER_CHUNK = 3


@dataclass(frozen=True)
class UpkeepResult:
    """What one update did."""

    path: Path | None
    added: int
    dropped: int
    samples: int
    new_sources: int
    seconds: float
    written: bool
    reason: str = ""
    #: the calibration written (the gate's model, its report and the samples), when ``written``
    model: dict[str, Any] | None = None


def _gate_and_store(pipeline: Pipeline) -> tuple[Any, Any]:
    gate = pipeline.get_component("gate")
    store = gate.document_store
    if store is None:
        store = next(
            (c.document_store for _, c in pipeline.walk() if getattr(c, "document_store", None) is not None), None
        )
    return gate, store


def _sources(store: Any, chunks: list[Any]) -> dict[str, str]:
    """``{source: content hash}`` of the index: the manifest's complete records, else (an index written without
    the manifest, e.g. an evaluation's) each chunk's ``doc_id`` with no hash."""
    records = read_manifests(store)
    done = {s: str(r.get("source_hash") or "") for s, r in records.items() if r.get("state") == "complete"}
    if done:
        return done
    return {str(c.meta["doc_id"]): "" for c in chunks if c.meta.get("doc_id")}


def _source_of(chunk: Any, by_manifest: bool) -> str | None:
    value = chunk.meta.get("source") if by_manifest else chunk.meta.get("doc_id")
    return str(value) if value is not None else None


def _previous_calibration(target: Path) -> dict[str, Any]:
    """The calibration file as it is (``{}`` when there is none). The gate refuses a damaged file (loudly, on every
    query): it is set aside as ``*.damaged`` and drawn again."""
    if not target.exists():
        return {}
    try:
        return load_calibration(target)
    except ValueError:
        aside = target.with_name(target.name + ".damaged")
        os.replace(target, aside)
        logger.warning("Gate calibration %s was damaged (kept as %s): drawing it again", target, aside.name)
        return {}


def update_calibration(
    pipeline: Pipeline,
    budget: int = DEFAULT_BUDGET,
    full: bool = False,
    path: str | Path | None = None,
    seed: int = 0,
    progress: Callable[[int, int], None] | None = None,
) -> UpkeepResult:
    """Bring the index's gate calibration up to date with its sources (see the module docstring).

    :param pipeline: the query pipeline over the index (its gate's loop is turned off while sampling).
    :param budget: most pseudo-queries to run in this update.
    :param full: draw every sample again (``adaptive-retrieval calibrate``): ``budget`` pseudo-queries over the
        whole index.
    :param path: the calibration file (default: the store's, :func:`store_calibration_file`).
    :param seed: sampling seed (an update's own seed is derived from it and the samples it already holds).
    :param progress: ``progress(done, total)`` in pseudo-queries.
    :returns: what was done; ``written`` is false when nothing changed or the index is too small to draw from.
    """
    start = time.perf_counter()
    gate, store = _gate_and_store(pipeline)
    target = Path(path) if path is not None else store_calibration_file(store)
    if target is None:
        return UpkeepResult(None, 0, 0, 0, 0, 0.0, False, "the index has no local folder to keep a calibration in")
    chunks = store.filter_documents(CHUNKS)
    sources = _sources(store, chunks)
    by_manifest = any(sources.values())
    old = {} if full else _previous_calibration(target)
    samples = old.get("samples") or {}
    rows = list(samples.get("rows") or []) if samples.get("version") == sample_version() else []
    seen: dict[str, str] = dict(samples.get("sources") or {}) if rows else {}
    gone = {s for s, h in seen.items() if sources.get(s) != h}
    kept = [r for r in rows if not gone.intersection(r["sources"])]
    new = sorted(s for s in sources if s not in seen or s in gone)
    dropped = len(rows) - len(kept)
    if not new and not dropped:
        return UpkeepResult(target, 0, 0, len(kept), 0, time.perf_counter() - start, False, "up to date")
    subject_chunks = [c for c in chunks if _source_of(c, by_manifest) in set(new)]
    share = len(subject_chunks) / max(len(chunks), 1)
    # A small index needs fewer: past a few per chunk, pseudo-queries repeat the same sentences.
    proportional = max(MIN_NEW, math.ceil(TARGET_SAMPLES * share))
    wanted = budget if full else min(budget, proportional, PER_CHUNK * len(subject_chunks))
    added: list[dict[str, Any]] = []
    documents = {c.meta.get("doc_id") for c in chunks if c.meta.get("doc_id") and (c.content or "").strip()}
    if len(documents) < 2:
        reason = f"the index has {len(documents)} document(s) with text; pseudo-queries need at least 2"
        logger.info("Gate calibration: %s", reason)
        return UpkeepResult(target, 0, dropped, len(kept), len(new), time.perf_counter() - start, False, reason)
    if subject_chunks and wanted > 0:
        subjects = {str(c.meta["doc_id"]) for c in subject_chunks if c.meta.get("doc_id")}
        logger.info(
            "Gate calibration: %d pseudo-queries from %d new or changed source(s) of %d", wanted, len(new), len(sources)
        )
        added = run_samples(pipeline, chunks, wanted, seed=seed + len(kept), subjects=subjects, progress=progress)
        source_of_doc = {str(c.meta.get("doc_id")): _source_of(c, by_manifest) for c in chunks}
        for row in added:
            row["sources"] = sorted({source_of_doc.get(d) or d for d in row["doc_ids"]})
    rows = kept + added
    if not rows:
        target.unlink(missing_ok=True)
        return UpkeepResult(target, 0, dropped, 0, len(new), time.perf_counter() - start, True, "no samples left")
    model = fit_samples(rows, gate.prior)
    model["samples"] = {
        "version": sample_version(),
        "sources": {s: sources[s] for s in sorted({s for r in rows for s in r["sources"]}) if s in sources},
        "rows": rows,
    }
    model["report"]["updated"] = {"added": len(added), "dropped": dropped, "new_sources": len(new)}
    save_calibration(target, model)
    seconds = time.perf_counter() - start
    logger.info(
        "Gate calibration: %d samples (%d new, %d dropped) written to %s in %.1f s",
        len(rows),
        len(added),
        dropped,
        target,
        seconds,
    )
    return UpkeepResult(target, len(added), dropped, len(rows), len(new), seconds, True, model=model)


def _lower_priority() -> None:
    """Give this thread the lowest CPU priority (Linux schedules threads one by one): queries come first."""
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    except (AttributeError, OSError):  # not Linux, or not allowed: the work still runs, at normal priority
        logger.debug("Gate calibration: could not lower the thread's priority")


class CalibrationKeeper:
    """Runs :func:`update_calibration` in a background thread after indexing, one update at a time.

    ``request()`` returns at once; requests that arrive while an update runs are folded into one more update
    after it. The thread runs at the lowest CPU priority and never holds a lock a query needs (the store is
    read through the same shared, thread-safe shard), so queries go on while it samples.

    :param pipeline: a function that returns the query pipeline over the index (called once, in the thread, on
        the first request: a server that never indexes never loads a second pipeline).
    :param budget: most pseudo-queries per update.
    """

    def __init__(self, pipeline: Callable[[], Pipeline], budget: int = DEFAULT_BUDGET) -> None:
        self._factory = pipeline
        self._pipeline: Pipeline | None = None
        self.budget = budget
        self._lock = threading.Lock()
        self._wanted = False
        self._thread: threading.Thread | None = None
        self.last: UpkeepResult | None = None
        self.error: BaseException | None = None

    def request(self) -> None:
        """Ask for an update (after indexing); starts the background thread unless one is running."""
        with self._lock:
            self._wanted = True
            if self._thread is not None and self._thread.is_alive():
                return
            self._thread = threading.Thread(target=self._work, name="gate-calibration", daemon=True)
            self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the updates asked so far (tests, shutdown); ``True`` when none is running any more."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        return thread is None or not thread.is_alive()

    def _work(self) -> None:
        _lower_priority()
        while True:
            with self._lock:
                if not self._wanted:
                    return
                self._wanted = False
            try:
                if self._pipeline is None:
                    self._pipeline = self._factory()
                self.last = update_calibration(self._pipeline, self.budget)
                self.error = None
            except Exception as err:  # a failed update leaves the previous calibration; the next upload retries
                self.error = err
                logger.exception("Gate calibration update failed; the gate keeps its previous calibration")
