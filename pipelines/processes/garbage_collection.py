"""Python's cyclic garbage collector around one command-line run, the largest cost of a one-shot query after imports.

Starting the CLI imports Haystack, fastembed, ONNX Runtime and numpy: about a million objects, nearly all kept
until the process ends. While they are created, every few hundred allocations the collector walks the young
objects and now and then all of them; at exit, interpreter finalisation walks them all again. On a one-shot
``adaptive-retrieval query`` over a small index (2 cores, idle) these collections were 0.5–0.6 s of 1.6–1.9 s of
wall time, and there is no cycle among those objects worth finding (``scripts/lab/bench_cli.py`` measures it).

So the console entry point pauses collection while the command sets up (imports, pipeline load, warm-up). A
command that then does unbounded work (indexing many files, calibrating, serving, building models) calls
:func:`resume`, which moves everything that exists by then into the collector's permanent generation
(:func:`gc.freeze`: still freed by reference counting, never walked again) and turns collection back on; short
commands (``query``, ``stats``, ``delete``) finish paused. :func:`before_exit` freezes again, so finalisation
does not walk the whole heap once more. Calling :func:`~adaptive_retrieval.pipelines.cli.main.main` from Python
(tests, scripts) pauses nothing: :func:`resume` only undoes a pause that :func:`pause` made.

A serving process (``serve``, each worker and the store host of ``serve --workers N``) calls :func:`for_serving`
once its app is built: the start-up objects are frozen, and the young generation is collected every
:data:`SERVING_THRESHOLD` allocations instead of Python's 700. A query allocates tens of thousands of short-lived
objects (documents, their meta, floats), nearly all freed by reference counting; the default threshold walked them
dozens of times per query for no cycle to free (0.94× the CPU of 150 queries in process, start-up included).
"""

from __future__ import annotations

import gc

#: Whether :func:`pause` turned collection off (and :func:`resume` has not turned it back on).
_paused = False


def pause() -> None:
    """Turn cyclic collection off for a command's set-up, if it is on."""
    global _paused
    if gc.isenabled():
        gc.disable()
        _paused = True


def resume() -> None:
    """End a :func:`pause`: freeze the objects made so far and turn collection back on (no-op without a pause)."""
    global _paused
    if _paused:
        gc.freeze()
        gc.enable()
        _paused = False


#: ``gc.set_threshold`` of a serving process: the young generation every 50,000 net allocations (about one query's),
#: the older ones as Python does it. At most that many objects wait for a collection: a few MB.
SERVING_THRESHOLD = (50_000, 10, 10)


def for_serving() -> None:
    """Freeze what a serving process built at start-up and collect young objects every
    :data:`SERVING_THRESHOLD` allocations (only for a process that serves: the setting is process-wide)."""
    gc.freeze()
    gc.set_threshold(*SERVING_THRESHOLD)


def before_exit() -> None:
    """Freeze every object before the interpreter finalises, so that finalisation does not walk them again.

    Only for a process that is about to exit (the console entry point): frozen objects are never collected.
    """
    gc.freeze()
