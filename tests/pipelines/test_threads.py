"""pipelines.threads: the BLAS thread limit the package's entry points set."""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = (
    "from adaptive_retrieval.pipelines.processes.threads import limit_blas_threads\n"
    "from threadpoolctl import threadpool_info\n"
    "print(limit_blas_threads(), sorted({i['num_threads'] for i in threadpool_info() if i['user_api'] == 'blas'}))"
)


def _run(env_value: str | None) -> subprocess.CompletedProcess:
    import os

    env = {k: v for k, v in os.environ.items() if k != "ADAPTIVE_BLAS_THREADS"}
    if env_value is not None:
        env["ADAPTIVE_BLAS_THREADS"] = env_value
    # A fresh process: the limit is process-wide and must not leak into the rest of the test session.
    return subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, env=env)


@pytest.mark.parametrize(("value", "expected"), [(None, "1 [1]"), ("2", "2 [2]")])
def test_limit_blas_threads_sets_every_loaded_blas(value: str | None, expected: str) -> None:
    done = _run(value)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected


def test_zero_leaves_blas_alone_and_bad_values_are_refused() -> None:
    done = _run("0")
    assert done.returncode == 0 and done.stdout.startswith("None "), done.stderr
    done = _run("many")
    assert done.returncode != 0 and "ADAPTIVE_BLAS_THREADS must be a whole number" in done.stderr
