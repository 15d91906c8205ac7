"""scripts/lab/bench_blas_threads.py: the three BLAS modes, each in its own process, on a small real index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_every_mode_answers_and_the_ratios_are_written(tmp_path: Path) -> None:
    out = tmp_path / "blas.json"
    args = ["--chunks", "20", "--queries", "2", "--rounds", "1", "--root", str(tmp_path / "root"), "--json", str(out)]
    run = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "lab" / "bench_blas_threads.py"), *args],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "| scoped |" in run.stdout and "scoped/unlimited = " in run.stdout
    report = json.loads(out.read_text(encoding="utf-8"))
    assert set(report["median"]) == {"unlimited", "scoped", "process"}
    assert all(m["cpu_ms"] > 0 for m in report["median"].values())
