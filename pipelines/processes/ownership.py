"""Which process owns a local store: a small ``<store>.server.json`` beside the store folder.

An embedded store belongs to one process. A server that serves it writes ``{"pid", "url", "store"}`` beside it
(``.adaptive/qdrant`` → ``.adaptive/qdrant.server.json``) and removes the file when it stops; the CLI reads the
file and sends its query to that server instead of opening the folder a second time. A file whose process is
gone is stale and ignored. A store on a server (``$QDRANT_URL``) has no owner: every process may open it.

The CLI sends the user's bearer token to the URL the file names, so a live owner file is trusted only when the
file is this user's (not a symbolic link), its process runs as this user and its URL is loopback HTTP; any other
live file is refused with :class:`UntrustedOwnerError`, which says which check failed (nothing is sent).

Usage::

    claim_store(".adaptive/qdrant", "http://127.0.0.1:1416")     # in the server
    owner = store_owner(".adaptive/qdrant")                       # in the CLI: None, or {"pid", "url", ...}
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
from pathlib import Path
from typing import Any

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.stores.store_errors import StoreError
from adaptive_retrieval.pipelines.processes.owner_client import loopback_url

logger = logging.getLogger(__name__)

SUFFIX = ".server.json"


class StoreOwnedError(StoreError, RuntimeError):
    """Another live process serves this store; the message names it."""


class UntrustedOwnerError(StoreError, RuntimeError):
    """A live ``<store>.server.json`` that this user cannot trust (another user's file or process, a URL that is not
    loopback, a symbolic link): nothing is sent to it; the message says which check failed and what to do."""


def local_store_path(path: str | None = None) -> Path | None:
    """The local store folder a command would open: ``path``, else ``$ADAPTIVE_QDRANT_PATH``, else the default;
    ``None`` when the store is a server (``$QDRANT_URL``) and no ``path`` is given."""
    from adaptive_retrieval.pipelines.store_config import QDRANT_URL_ENV, qdrant_folder

    if path is None and settings.is_set(QDRANT_URL_ENV):
        return None
    return qdrant_folder(path).resolve()


def owner_file(store_path: str | Path) -> Path:
    """``<store>.server.json`` beside the store folder."""
    path = Path(store_path).expanduser().resolve()
    return path.with_name(path.name + SUFFIX)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # alive, owned by another user
        pass
    return not _exited(pid)


def _exited(pid: int) -> bool:
    """Linux: whether ``pid`` has exited and only waits to be reaped (a zombie). It has closed its files and
    released its locks, but ``kill(pid, 0)`` still finds it. A SIGKILLed ``serve`` leaves its store host so, as long
    as the process that adopted it has not reaped it: without this check a restart at once was refused."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False  # not Linux, or gone since
    return stat.rsplit(")", 1)[-1].split()[:1] == ["Z"]


def _process_uid(pid: int) -> int | None:
    """The user id ``pid`` runs as: Linux's ``/proc/<pid>`` belongs to it; elsewhere ``None`` unless signalling it
    is refused (then it is another user's: ``-1``)."""
    try:
        return os.stat(f"/proc/{pid}").st_uid
    except OSError:
        pass
    try:
        os.kill(pid, 0)
    except PermissionError:
        return -1
    except OSError:
        return None
    return None


def _read_owner_file(file: Path) -> tuple[dict[str, Any], int] | None:
    """The file's JSON and its owner's uid, or ``None`` when there is no file.

    :raises UntrustedOwnerError: for a symbolic link (read without following it).
    :raises OSError, ValueError: when it cannot be read or parsed.
    """
    try:
        fd = os.open(file, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            msg = (
                f"{file} is a symbolic link, so anyone who could write it may have chosen where it points: it is not "
                "trusted. Nothing was sent to it; remove it if no server of yours serves this store"
            )
            raise UntrustedOwnerError(msg) from err
        raise
    with os.fdopen(fd, encoding="utf-8") as handle:
        uid = os.fstat(handle.fileno()).st_uid
        info = json.loads(handle.read())
    if not isinstance(info, dict):
        msg = f"{file} holds no JSON object"
        raise ValueError(msg)
    return info, uid


def _trust_problems(info: dict[str, Any], file_uid: int, pid: int) -> list[str]:
    """Why a live owner file cannot be trusted with this user's token (empty: it can)."""
    me = os.getuid()
    problems = []
    if file_uid != me:
        problems.append(f"the file belongs to user id {file_uid}, not to you ({me})")
    process_uid = _process_uid(pid)
    if process_uid is not None and process_uid != me:
        who = "another user" if process_uid < 0 else f"user id {process_uid}"
        problems.append(f"its process {pid} runs as {who}, not as you ({me})")
    url = info.get("url")
    if not loopback_url(url):
        problems.append(f"its URL {str(url)[:200]!r} is not an http URL on a loopback address")
    return problems


def store_owner(store_path: str | Path) -> dict[str, Any] | None:
    """The live server that owns ``store_path`` (``{"pid", "url", "store", "file"}``), or ``None``.

    :raises UntrustedOwnerError: when a live owner file fails a trust check (another user's file or process, a URL
        that is not loopback, a symbolic link); the message names each.
    """
    file = owner_file(store_path)
    try:
        found = _read_owner_file(file)
        if found is None:
            return None
        info, file_uid = found
        pid = int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError) as err:
        logger.warning("Ignoring unreadable %s: %s", file, err)
        return None
    if not _alive(pid):
        return None  # stale: its process is gone, nothing will be sent to it
    if problems := _trust_problems(info, file_uid, pid):
        msg = (
            f"{file} names process {pid} at {str(info.get('url'))[:200]} as this store's server, but it is not "
            f"trusted: {'; '.join(problems)}. Nothing was sent to it. If no server of yours serves this store, "
            "remove the file (and keep the store's folder private to you)"
        )
        raise UntrustedOwnerError(msg)
    return {**info, "file": str(file)}


def claim_store(store_path: str | Path, url: str | None) -> Path:
    """Record this process as the owner of ``store_path``, served at ``url``; removed again at exit.

    :raises StoreOwnedError: when another live process owns the store.
    """
    owner = store_owner(store_path)
    if owner is not None and int(owner["pid"]) != os.getpid():
        msg = (
            f"The store {Path(store_path).resolve()} is already served by process {owner['pid']} at "
            f"{owner.get('url') or '(unknown URL)'}: stop that server, or use another --store"
        )
        raise StoreOwnedError(msg)
    file = owner_file(store_path)
    file.parent.mkdir(parents=True, exist_ok=True)
    partial = file.with_name(f".{file.name}.{os.getpid()}.partial")
    info = {"pid": os.getpid(), "url": url, "store": str(Path(store_path).resolve())}
    partial.write_text(json.dumps(info), encoding="utf-8")
    partial.replace(file)
    atexit.register(release_store, store_path)
    return file


def release_store(store_path: str | Path) -> None:
    """Remove the owner file of ``store_path`` if this process wrote it."""
    file = owner_file(store_path)
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        if int(json.loads(file.read_text(encoding="utf-8"))["pid"]) == os.getpid():
            file.unlink()


#: The process that waits for this one to exit, then removes the owner file if it still names this process. It
#: reads a pipe whose only write end this process holds: the read returns once the process has ended, however it
#: ended (a signal, SIGKILL included).
_REMOVER = """
import json, os, sys
file, pid, fd = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
while os.read(fd, 1):
    pass
try:
    with open(file, encoding="utf-8") as handle:
        if json.load(handle).get("pid") == pid:
            os.unlink(file)
except (OSError, ValueError, AttributeError):
    pass
"""
#: Write ends held open for the life of this process (one per watched file).
_HELD: list[int] = []


def remove_when_gone(file: Path) -> None:
    """Have ``file`` (an owner file this process wrote) removed as soon as this process has exited, by a small
    process of its own (Python's standard library only, about 10 MB while it waits)."""
    import subprocess
    import sys

    read_end, write_end = os.pipe()  # neither end is inherited by this process's other children
    try:
        subprocess.Popen(
            [sys.executable, "-I", "-S", "-c", _REMOVER, str(file), str(os.getpid()), str(read_end)],
            pass_fds=(read_end,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C in the terminal reaches the server, not the process that cleans up
        )
    except OSError as err:
        os.close(write_end)
        logger.warning("Could not start the process that removes %s when this server exits: %s", file, err)
        return
    finally:
        os.close(read_end)
    _HELD.append(write_end)
