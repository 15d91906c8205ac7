"""scripts/lab/bench_handover.py: the shared and the copied handover, interleaved, on a small real index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_both_pipelines_answer_alike_and_the_figures_are_written(tmp_path: Path) -> None:
    out = tmp_path / "handover.json"
    args = ["--chunks", "40", "--queries", "4", "--root", str(tmp_path / "root"), "--json", str(out)]
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "lab" / "bench_handover.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "same documents and scores: 4 of 4" in run.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert report["same_answers"] == 4 and set(report["median_ms"]) == {"shared", "copied"}
