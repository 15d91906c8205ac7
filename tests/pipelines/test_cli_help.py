"""The command line imports lazily: ``--help`` of the command and of every subcommand loads none of the heavy
libraries (Haystack, torch, ONNX Runtime, numpy, Hayhooks …), so it answers in a fraction of a second (measured
~0.2-0.3 s on this project's shared 2 cores; 15 s when the CLI imported its pipelines eagerly). Checked by what is
imported, in a fresh interpreter, rather than by a wall time that a busy machine would make flaky."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "haystack",
    "torch",
    "transformers",
    "onnxruntime",
    "numpy",
    "scipy",
    "hayhooks",
    "fastapi",
    "httpx",
    "pypdf",
    "qdrant_client",
    "qdrant_edge",
)

PROBE = """
import contextlib, io, json, sys
from adaptive_retrieval.pipelines.cli.main import main
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.stdin.read())))
print(json.dumps({"code": code, "help": out.getvalue(), "heavy": heavy}))
"""


@pytest.mark.parametrize("command", ["", "index", "query", "delete", "stats", "calibrate", "serve", "draw"])
def test_help_imports_nothing_heavy(command: str) -> None:
    argv = [command, "--help"] if command else ["--help"]
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        input=json.dumps(HEAVY),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0 and "usage: adaptive-retrieval" in result["help"]
    assert result["heavy"] == [], f"`adaptive-retrieval {' '.join(argv)}` imports {result['heavy']}"


def test_version_prints_the_installed_distribution_version() -> None:
    from importlib.metadata import version

    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--version"],
        input=json.dumps(HEAVY),
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["code"] == 0
    assert result["help"].strip() == f"adaptive-retrieval {version('adaptive-retrieval')}"
    assert result["heavy"] == []
