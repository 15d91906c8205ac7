"""The README's Python examples run as printed: the helpers over a temporary index (its example paths replaced by
temporary ones), the plain-Haystack YAML load over the same index, and the components in a user's own pipeline."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_PATH = "/data/idx/qdrant"


def python_blocks() -> list[str]:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", readme, re.DOTALL)


def run_block(code: str, cwd: Path, env: dict[str, str]) -> str:
    # Each example's last line is an expression a reader looks at: print it, so that the test sees it ran.
    lines = code.rstrip().splitlines()
    script = "\n".join([*lines[:-1], f"print(repr(({lines[-1].split('  #')[0].strip()})))"])
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, f"example failed:\n{textwrap.indent(code, '  ')}\n{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.slow
def test_readme_python_examples_run(tmp_path: Path) -> None:
    blocks = python_blocks()
    assert len(blocks) == 3, "the README has three Python examples: YAML, helpers, components"
    yaml_block, helpers_block, components_block = blocks
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "with.md").write_text(
        "# The with statement\n\nThe with statement wraps a block with methods defined by a context manager: "
        "__enter__ runs on entry and __exit__ on exit, even when the block raises.\n",
        encoding="utf-8",
    )
    (docs / "loops.md").write_text(
        "# Loops\n\nA break statement ends the nearest enclosing loop; its else clause is skipped.\n", encoding="utf-8"
    )
    index = tmp_path / "idx" / "qdrant"
    env = {**os.environ, "ADAPTIVE_QDRANT_PATH": str(index)}
    out = run_block(helpers_block.replace(EXAMPLE_PATH, str(index)), tmp_path, env)
    assert "'dense': 1" in out
    out = run_block(yaml_block, tmp_path, env)
    assert "The with statement" in out and ("'pass'" in out or "'insufficient'" in out)
    out = run_block(components_block, tmp_path, env)
    assert "Reciprocal rank fusion" in out and "'bm25': 1" in out
