"""What the processes of ``serve --workers N`` share: the names of the store host's sockets in the private folder,
the variable that names the supervisor, dying with it, and the folder of wrappers a process serves. The
supervisor and workers (:mod:`.workers`) and the store host (:mod:`.store_host`) import it; it imports neither.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
from pathlib import Path

from adaptive_retrieval.components import settings

#: The store host's sockets in the private folder: store calls, and its app (uploads and deletes).
STORE_SOCKET, HTTP_SOCKET = "store.sock", "http.sock"
#: The supervisor's pid, set for the processes it starts.
PARENT_ENV = "ADAPTIVE_SUPERVISOR_PID"


def die_with_parent() -> None:
    """Linux: have the kernel kill this process when the supervisor that started it dies (even by SIGKILL), so no
    worker or host outlives ``serve``; exit at once when the supervisor is already gone."""
    parent = settings.text(PARENT_ENV)
    if sys.platform.startswith("linux"):
        pr_set_pdeathsig = 1
        ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if parent and os.getppid() != int(parent):
        os._exit(1)


def private_pipelines_dir(runtime: Path, names: list[str], source: Path) -> Path:
    """A folder under ``runtime`` holding links to the wrappers ``names`` of ``source`` (Hayhooks deploys every
    wrapper folder of the folder it is given)."""
    folder = runtime / ("pipelines-" + "-".join(names))
    folder.mkdir(mode=0o700, exist_ok=True)
    for name in names:
        link, target = folder / name, source / name
        if link.is_symlink() and os.readlink(link) == str(target):
            continue
        # Every worker of one `serve` makes the same links at once, and a link left by an earlier install may point
        # elsewhere: make ours beside the folder (Hayhooks deploys whatever the folder holds) and rename it over, so
        # the last rename wins and no worker fails on a link another one made (two workers' FileExistsError).
        temporary = runtime / f".link-{name}-{os.getpid()}-{threading.get_ident()}"
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(target, target_is_directory=True)
        os.replace(temporary, link)
    return folder
