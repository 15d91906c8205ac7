"""The console entry point pauses cyclic garbage collection while a command sets up (see garbage_collection)."""

from __future__ import annotations

import gc
import subprocess
import sys
from pathlib import Path

import pytest

from adaptive_retrieval.pipelines.cli.main import main
from adaptive_retrieval.pipelines.processes import garbage_collection


@pytest.fixture
def restore_collector():
    enabled = gc.isenabled()
    yield
    gc.unfreeze()  # the test process keeps collecting everything it froze
    if enabled:
        gc.enable()


def test_pause_then_resume_freezes_and_turns_collection_back_on(restore_collector) -> None:
    gc.enable()
    garbage_collection.pause()
    assert not gc.isenabled()
    garbage_collection.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() > 0
    garbage_collection.resume()  # a second resume changes nothing
    assert gc.isenabled()


def test_resume_without_pause_does_nothing(restore_collector) -> None:
    gc.unfreeze()
    gc.enable()
    garbage_collection.resume()
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_pause_leaves_a_disabled_collector_alone(restore_collector) -> None:
    gc.disable()
    garbage_collection.pause()
    garbage_collection.resume()  # the caller turned it off, not pause(): it stays off
    assert not gc.isenabled()


def test_main_called_from_python_keeps_collecting(restore_collector, capsys) -> None:
    gc.unfreeze()
    gc.enable()
    assert main(["models", "list"]) in (0, 1)
    assert gc.isenabled()
    assert gc.get_freeze_count() == 0


def test_paused_commands_resume_when_their_work_is_unbounded(
    restore_collector, tmp_path: Path, store_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """As under the console entry point: ``index`` collects again once its pipeline is loaded, ``stats`` (short)
    finishes paused, and a command that does not manage collection itself (``models list``) resumes at once."""
    (tmp_path / "note.txt").write_text("A finally clause runs when the try block exits.", encoding="utf-8")
    gc.enable()
    garbage_collection.pause()
    assert main(["stats", "--store", store_path]) in (0, 1)
    assert not gc.isenabled()
    assert main(["index", str(tmp_path / "note.txt"), "--store", store_path]) == 0
    assert gc.isenabled() and gc.get_freeze_count() > 0
    gc.unfreeze()
    garbage_collection.pause()
    assert main(["models", "list"]) in (0, 1)
    assert gc.isenabled()
    capsys.readouterr()


def test_the_console_script_is_the_pausing_entry_point() -> None:
    from importlib.metadata import entry_points

    (script,) = [e for e in entry_points(group="console_scripts") if e.name == "adaptive-retrieval"]
    assert script.value == "adaptive_retrieval.pipelines.cli.main:run"
    done = subprocess.run(
        [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", "--help"], capture_output=True, text=True
    )
    assert done.returncode == 0 and "adaptive-retrieval" in done.stdout


def test_a_serving_process_freezes_its_start_up_and_collects_young_objects_less_often(restore_collector) -> None:
    threshold = gc.get_threshold()
    try:
        garbage_collection.for_serving()
        assert gc.get_freeze_count() > 0
        assert gc.get_threshold() == garbage_collection.SERVING_THRESHOLD
        assert gc.isenabled()  # cycles are still collected, less often
    finally:
        gc.set_threshold(*threshold)
