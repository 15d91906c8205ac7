"""The ``adaptive-retrieval`` command line: index with a progress bar, query with diagnostics, clear errors."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from adaptive_retrieval.components.gating.signals import SIGNALS
from adaptive_retrieval.components.gating.verdict import NO_CALIBRATION, VERDICTS
from adaptive_retrieval.components.routing.profiles import INTENTS
from adaptive_retrieval.pipelines.cli.main import main

TOPICS = {"try.txt": "try", "with.txt": "with", "lambda.txt": "lambda"}


@pytest.fixture
def docs(tmp_path: Path) -> Path:
    from pydoc_data.topics import topics

    folder = tmp_path / "docs"
    folder.mkdir()
    for name, topic in TOPICS.items():
        (folder / name).write_text(topics[topic], encoding="utf-8")
    (folder / "ignored.bin").write_bytes(b"\x00\x01")
    return folder


def test_index_then_query_with_diagnostics(
    docs: Path, store_path: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ADAPTIVE_QDRANT_PATH", raising=False)
    assert main(["index", str(docs), "--store", store_path, "--batch-files", "1", "--no-calibrate"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("3 files: 3 indexed, 0 unchanged;") and "quality gate" not in out
    assert "indexing files" in err and "3/3" in err  # the progress bar, on stderr
    assert "with.txt" in err and "dense embedding" not in err  # it names the file; the embedders' bars are off

    assert main(["query", "--store", store_path, "--top-k", "2", "How", "does", "a", "finally", "clause", "work?"]) == 0
    out = capsys.readouterr().out
    # The verdict in words comes first; the gate's line says which model judged; passages in rank order.
    assert out.splitlines()[0].startswith(("Found in your documents", "Not found in your documents", "Uncertain"))
    assert NO_CALIBRATION in out.splitlines()[0]
    for line in ("intent: ", "strategy: top_k=", "weights: dense=", "gate: ", "timings (ms): "):
        assert line in out, out
    assert "the built-in prior (no calibration)" in out and '"signals"' not in out  # no raw JSON
    assert "try.txt" in out and re.search(r"^ 1\. ", out, re.M) and not re.search(r"^ 3\. ", out, re.M)
    assert "fused score" in out and "the fallback profile" not in out
    # A plain search (an upper-case keyword list) takes the fallback profile, and the strategy line says why.
    assert main(["query", "--store", store_path, "LAMBDA EXPRESSIONS AND CLOSURES"]) == 0
    assert "(the fallback profile: plain search (upper case))" in capsys.readouterr().out

    assert main(["query", "--store", store_path, "--json", "lambda expressions"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["intent"] in INTENTS and result["documents"]
    assert Path(result["documents"][0]["source"]).name == "lambda.txt"
    assert result["documents"][0]["provenance"] and result["timings_ms"]["total"] > 0
    assert result["gate"]["calibration"] == "prior"
    assert result["verdict"] == result["gate"]["verdict"] in VERDICTS and result["reason"] == result["gate"]["reason"]

    # Scripts: a question about something no file mentions is "not found", and says what is missing.
    assert main(["query", "--store", store_path, "--fail-if-not-found", "How does Fortran 77 treat lambda?"]) == 3
    out = capsys.readouterr().out
    assert out.startswith("Not found in your documents: no passage mentions 'Fortran 77'")
    status = main(["query", "--store", store_path, "--json", "--fail-if-not-found", "lambda expressions"])
    assert status == (0 if json.loads(capsys.readouterr().out)["verdict"] == "found" else 3)

    # Indexing keeps the gate's calibration current: the sources it has not seen get pseudo-queries.
    assert main(["index", str(docs), "--store", store_path]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 files: 0 indexed, 3 unchanged; 0 chunks written")
    assert "quality gate calibrated on" in out and "gate_calibration.json" in out
    assert main(["query", "--store", store_path, "--json", "lambda expressions"]) == 0
    assert json.loads(capsys.readouterr().out)["gate"]["calibration"] == "index"
    assert main(["index", str(docs), "--store", store_path]) == 0
    assert "quality gate" not in capsys.readouterr().out  # nothing changed: nothing to do

    # `calibrate` re-runs it all.
    assert main(["calibrate", "--store", store_path, "--queries", "6"]) == 0
    out = capsys.readouterr().out
    assert "6 pseudo-queries" in out and "AUROC" in out and "gate_calibration.json" in out
    saved = json.loads((Path(store_path) / "gate_calibration.json").read_text())
    assert set(saved["weights"]) <= set(SIGNALS) and len(saved["samples"]["rows"]) == 6


def test_errors_are_clear_and_without_traceback(
    tmp_path: Path, store_path: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["index", str(tmp_path / "nowhere"), "--store", store_path]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "does not exist" in err and "Traceback" not in err

    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "x.bin").write_bytes(b"\x00")
    assert main(["index", str(tmp_path / "empty"), "--store", store_path]) == 1
    assert "No supported file" in capsys.readouterr().err

    assert main(["query", "--store", store_path, "   "]) == 1
    assert "query is empty" in capsys.readouterr().err

    assert main(["calibrate", "--store", store_path]) == 1  # nothing was indexed: the query side creates no index
    err = capsys.readouterr().err
    assert "No index" in err and f"adaptive-retrieval index --store {store_path}" in err

    for argv in (
        ["query", "--top-k", "0", "x"],
        ["draw", "--format", "gif"],
        ["index"],
        ["frobnicate"],
        ["calibrate", "--queries", "1"],
        ["calibrate", "--queries", "0"],  # not "the default" (the option defaults to None)
    ):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2, argv
        assert "usage: adaptive-retrieval" in capsys.readouterr().err


def test_calibrate_help_states_the_library_default(capsys: pytest.CaptureFixture[str]) -> None:
    # --queries defaults to None so that --help imports nothing heavy; its help text repeats the library's default.
    from adaptive_retrieval.pipelines.gate_calibration import DEFAULT_QUERIES

    with pytest.raises(SystemExit):
        main(["calibrate", "--help"])
    assert f"(default {DEFAULT_QUERIES})" in " ".join(capsys.readouterr().out.split())


def test_draw_writes_mermaid_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["draw", "--out", str(tmp_path), "--format", "mmd", "--pipeline", "query"]) == 0
    written = capsys.readouterr().out.split()
    assert written == [str(tmp_path / "query.mmd")]
    assert (tmp_path / "query.mmd").read_text(encoding="utf-8").startswith("flowchart TD")


def test_console_script_is_installed(tmp_path: Path) -> None:
    command = shutil.which("adaptive-retrieval", path=str(Path(sys.executable).parent))
    assert command, "pip install -e . declares the adaptive-retrieval entry point"
    done = subprocess.run([command, "--help"], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0 and all(c in done.stdout for c in ("index", "query", "serve", "draw"))
    done = subprocess.run(
        [command, "index", str(tmp_path / "missing"), "--store", str(tmp_path / "q")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1 and "error:" in done.stderr and "Traceback" not in done.stderr


def test_a_failing_component_is_one_error_line_naming_its_cause() -> None:
    """Haystack's PipelineRuntimeError (four lines around the cause) becomes one line: the cause and the component."""
    from haystack import Pipeline, component
    from haystack.core.errors import PipelineRuntimeError

    from adaptive_retrieval.pipelines.cli.format import error_line

    @component
    class FullDisk:
        @component.output_types(done=bool)
        def run(self, text: str) -> dict:
            raise OSError(28, "No space left on device")

    pipeline = Pipeline()
    pipeline.add_component("writer", FullDisk())
    with pytest.raises(PipelineRuntimeError) as caught:
        pipeline.run({"writer": {"text": "x"}})
    line = error_line(caught.value)
    assert line == "OSError: [Errno 28] No space left on device (in the pipeline component 'writer')"
    assert error_line(ValueError("plain\nmessage")) == "plain message"
