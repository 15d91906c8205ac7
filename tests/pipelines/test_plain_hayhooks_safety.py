"""Plain ``hayhooks run --pipelines-dir pipelines/serving/wrappers`` starts safe or not at all (real subprocesses,
no patching).

Hayhooks catches ``Exception`` around each wrapper's ``setup()`` and starts without that wrapper; the wrappers stop
an unsafe server with :class:`~adaptive_retrieval.pipelines.serving.security.UnsafeServerError` (a ``SystemExit``),
which it does not catch: uvicorn reports "Application startup failed" (exit 3), or, in durable mode, the app is never
built (exit 1). Either way the message on stderr says what to set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[2]
WRAPPERS = REPO / "pipelines" / "serving" / "wrappers"  # the folder of Hayhooks wrappers, and nothing else


def _run(folder: Path, tmp_path: Path, **settings: str) -> tuple[int, str, str]:
    """``hayhooks run`` on ``folder`` with only ``settings``; returns (exit status, stderr, the URL it had)."""
    from adaptive_retrieval.pipelines.serving.app import free_port

    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAYHOOKS_", "ADAPTIVE_", "QDRANT_URL"))}
    env.update(ADAPTIVE_QDRANT_PATH=str(tmp_path / "qdrant"), HAYSTACK_TELEMETRY_ENABLED="False", **settings)
    hayhooks = str(Path(sys.executable).with_name("hayhooks"))
    done = subprocess.run(
        [hayhooks, "run", "--pipelines-dir", str(folder), "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr, f"http://127.0.0.1:{port}"


def _diagrams_only(tmp_path: Path) -> Path:
    folder = tmp_path / "pipelines"
    shutil.copytree(WRAPPERS / "diagrams", folder / "diagrams", ignore=shutil.ignore_patterns("__pycache__"))
    return folder


@pytest.mark.parametrize("folder", ["all", "diagrams only"])
def test_no_settings_refuses_to_start_and_says_what_to_set(tmp_path: Path, folder: str) -> None:
    """The README's `hayhooks run --pipelines-dir pipelines/serving/wrappers` with nothing set: it used to start with
    /deploy_files open (the diagrams wrapper loaded)."""
    code, stderr, url = _run(WRAPPERS if folder == "all" else _diagrams_only(tmp_path), tmp_path)
    assert code == 3, stderr[-3000:]  # uvicorn: "Application startup failed. Exiting."
    assert "Application startup failed" in stderr, stderr[-3000:]
    for setting in ("HAYHOOKS_DURABLE_MODE=true", "HAYHOOKS_CORS_ALLOW_ORIGINS='[]'", "adaptive-retrieval serve"):
        assert setting in stderr, (setting, stderr[-3000:])
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/status", timeout=5)


def test_durable_mode_with_hayhooks_default_cors_refuses_to_start(tmp_path: Path) -> None:
    """Durable mode alone still lets every web page call the routes and read the answers (CORS '*')."""
    code, stderr, _ = _run(_diagrams_only(tmp_path), tmp_path, HAYHOOKS_DURABLE_MODE="true")
    assert code == 1, stderr[-3000:]
    message = _message(stderr)
    assert "HAYHOOKS_CORS_ALLOW_ORIGINS='[]'" in message and "/deploy_files" not in message, message


def test_the_development_flag_keeps_the_deploy_routes_but_not_open_cors(tmp_path: Path) -> None:
    code, stderr, _ = _run(_diagrams_only(tmp_path), tmp_path, ADAPTIVE_DEV_ALLOW_DEPLOY="1")
    assert code == 3, stderr[-3000:]
    message = _message(stderr)
    assert "HAYHOOKS_CORS_ALLOW_ORIGINS" in message and "DURABLE_MODE=true" not in message, message


def _message(stderr: str) -> str:
    return [line for line in stderr.splitlines() if "refuses to serve" in line][-1]


def test_unsafe_server_error_is_not_an_exception() -> None:
    """The mechanism: Hayhooks' `except Exception` around setup() must not swallow it."""
    from adaptive_retrieval.pipelines.serving.security import UnsafeServerError

    assert issubclass(UnsafeServerError, BaseException) and not issubclass(UnsafeServerError, Exception)
