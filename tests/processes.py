"""Server subprocesses of the tests: stopped the way a user stops them (Ctrl-C), their output returned."""

from __future__ import annotations

import signal
import subprocess


def stop(process: subprocess.Popen) -> str:
    """SIGINT, then the output; killed when it has not exited 30 s later."""
    process.send_signal(signal.SIGINT)
    try:
        output, _ = process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        output, _ = process.communicate()
    return output
