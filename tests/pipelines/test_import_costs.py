"""The embedded path never imports qdrant-client: its models take over a second to import, most of a one-shot CLI
query (scripts/lab/bench_cli.py). Loading the shipped query YAML on a local folder must leave it unimported."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PROBE = """
import sys
from adaptive_retrieval.pipelines.yaml_io import load_pipeline
load_pipeline("query", path=sys.argv[1])
print(sorted(m for m in ("qdrant_client",) if m in sys.modules))
"""


def test_loading_the_query_pipeline_on_a_local_folder_imports_no_qdrant_client(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(tmp_path / "qdrant")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().splitlines()[-1] == "[]", done.stdout
