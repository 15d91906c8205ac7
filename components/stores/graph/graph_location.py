"""Moving the graph an earlier version kept beside its index folder into that folder, safely, or saying why not.

Up to this version the embedded graph lived beside the Qdrant folder (``/x/a`` → ``/x/graph.sqlite``), so two
indexes side by side (``--store /x/a``, ``--store /x/b``) shared one graph file: each indexing run of one dropped
the other's graph records as orphans, and ``stats`` of the other then reported its sources ``partial``. Each index
now keeps its graph in its own folder (``/x/a/graph.sqlite``, :func:`~.locations.graph_file`). When that file is
missing and the old one exists:

- if the old file records the index it belongs to (graphs do since this version), that index's it is;
- if no other index folder lies beside it, the old file is this index's: it is moved in (after checking that no
  process has it open, its write-ahead log folded in first; a single rename, so a crash leaves it in one place or
  the other, never half-moved);
- if another index folder lies beside it and this folder is not an index yet, the old file is the other's, and
  this index starts a graph of its own;
- if several index folders lie beside it, this one included, nobody can tell whose records it holds (it may hold
  several indexes' records mixed): :class:`GraphLocationError` says so and what to do, and nothing is moved;
- if a process still has the old file open (an earlier version's server), it is used where it is, this time.

Usage::

    path = adopt_legacy_graph(Path("/x/a/graph.sqlite"))   # the file to open: /x/a/graph.sqlite once moved
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

from adaptive_retrieval.components.locations import GRAPH_FILE, legacy_graph_file
from adaptive_retrieval.components.stores.store_errors import StoreError

logger = logging.getLogger(__name__)

#: The files SQLite keeps beside a database in write-ahead-log mode.
_SIDE_FILES = ("-wal", "-shm")


class GraphLocationError(StoreError, ValueError):
    """The graph an earlier version kept beside several index folders cannot be given to one of them safely."""


def is_index_folder(folder: Path) -> bool:
    """Whether ``folder`` holds an embedded index: a Qdrant Edge shard (``<folder>/<collection>/edge_config.json``)
    or a qdrant-client local-mode folder of an earlier version (``meta.json`` and ``collection/``)."""
    try:
        if (folder / "meta.json").is_file() and (folder / "collection").is_dir():
            return True
        return folder.is_dir() and any((child / "edge_config.json").is_file() for child in folder.iterdir())
    except OSError:  # unreadable: not ours to judge
        return False


def index_folders(parent: Path) -> list[Path]:
    """The index folders directly inside ``parent``, sorted."""
    try:
        children = sorted(p for p in parent.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []
    return [child for child in children if is_index_folder(child)]


@contextlib.contextmanager
def _migration_lock(folder: Path) -> Iterator[None]:
    """One process at a time decides about the old graph for the index ``folder`` (an advisory lock on a file of
    its own there: SQLite's locks are POSIX record locks on the database, which closing any other descriptor of
    that file would drop)."""
    folder.mkdir(parents=True, exist_ok=True)
    with (folder / f".{GRAPH_FILE}.move.lock").open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _unused(legacy: Path) -> bool:
    """Whether no other connection has ``legacy`` open, its write-ahead log folded into it when so (an exclusive
    lock fails while any other process holds the database open, even idle)."""
    conn = sqlite3.connect(legacy, timeout=0, isolation_level=None)
    try:
        conn.execute("PRAGMA locking_mode=EXCLUSIVE")
        conn.execute("BEGIN EXCLUSIVE")
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        conn.close()


def _recorded_owner(legacy: Path) -> Path | None:
    """The index folder the old graph says it belongs to (a graph written since graphs record their index, see
    :meth:`~.graph_store.GraphStoreBase.claim`), or ``None``."""
    try:
        conn = sqlite3.connect(f"file:{legacy}?mode=ro", uri=True, timeout=1)
    except sqlite3.Error:
        return None
    try:
        row = conn.execute("SELECT value FROM meta WHERE key = 'owner_where'").fetchone()
    except sqlite3.Error:  # no meta table (not a graph, or damaged): the open will say so
        return None
    finally:
        conn.close()
    return Path(str(row[0])) if row and row[0] else None


def _ambiguous(legacy: Path, target: Path, owners: list[Path]) -> GraphLocationError:
    folders = ", ".join(str(o) for o in owners)
    return GraphLocationError(
        f"'{legacy}' is the graph an earlier version kept beside its index folders, and {legacy.parent} holds "
        f"several ({folders}): it may hold the graph records of any of them, or of several mixed, so it is given "
        f"to none. Each index now keeps its graph in its own folder ('{target}'). If only one of them was ever "
        f"indexed with this graph, move it into that index's folder (`mv {legacy} {owners[0] / GRAPH_FILE}`); "
        f"otherwise move it away (`mv {legacy} {legacy}.old`) and index each folder again: the sources a graph "
        "lacks are redone."
    )


def adopt_legacy_graph(target: Path, derived: bool = False) -> Path:
    """The graph file to open for the index whose own graph is ``target`` (missing): ``target`` itself, after
    moving the old graph beside the index folder into it when that graph is this index's (see the module
    docstring), or the old file where it is while another process holds it open.

    :param derived: ``target`` is the default location (no path or variable named it), so the old graph is the
        default one's too even when the index folder has no index in it yet (a Qdrant server's index).
    :raises GraphLocationError: when several index folders, this one included, could own the old graph.
    """
    legacy = legacy_graph_file(target)
    folder = target.parent
    if target.exists() or not legacy.is_file() or legacy == target:
        return target
    ours = is_index_folder(folder)
    if not ours and not derived:
        return target  # a path named for a new index: the old graph is not its
    with _migration_lock(folder):
        if target.exists():  # another process moved it meanwhile
            return target
        recorded = _recorded_owner(legacy)
        owners = index_folders(legacy.parent)
        others = [o for o in owners if o.resolve() != folder.resolve()]
        if recorded is not None and recorded.resolve() != folder.resolve():
            return target  # the graph says whose it is, and it is another index's
        if others and not ours:
            return target  # the old graph is the other index's: this one starts its own
        if others and recorded is None:
            raise _ambiguous(legacy, target, sorted({*owners, folder}))
        if not _unused(legacy):
            logger.warning(
                "The graph %s is open in another process: it is used where it is until it can be moved into %s",
                legacy,
                folder,
            )
            return legacy
        try:
            os.rename(legacy, target)
        except OSError as err:  # another file system (a mount point): use it where it is
            logger.warning("Could not move the graph %s into %s (%s): it is used where it is", legacy, folder, err)
            return legacy
        for suffix in _SIDE_FILES:
            # Folded in and unused: the log is empty and the shared-memory index is rebuilt on open.
            Path(f"{legacy}{suffix}").unlink(missing_ok=True)
        logger.warning("Moved the graph %s into the index folder: %s", legacy, target)
        return target
