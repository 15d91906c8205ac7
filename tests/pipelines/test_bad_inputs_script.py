"""The fast subset of ``scripts/lab/bad_inputs.py`` (``--quick``): a real server over a small index, REST, MCP (a real
MCP client), CLI (subprocesses) and Python; every answer must be a clean error or a correct result."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FAILURES = ("5xx or traceback", "misleading success", "lost", "hang", "wrongly refused", "unclear error")


def test_quick_bad_inputs_get_clean_errors(tmp_path: Path) -> None:
    out = tmp_path / "bad_inputs.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "lab" / "bad_inputs.py"), "--quick", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    failed = [r for r in report.get("records", []) if r["class"] in FAILURES]
    assert done.returncode == 0, (failed, done.stdout[-2000:], done.stderr[-3000:])
    assert report["cases"] >= 50 and set(report["interfaces"]) == {"rest", "mcp", "cli", "python"}, report
    assert not failed and report["classes"]["clean error"] > report["classes"]["correct result"] > 0, report
