"""Saving an upload's files so that a refusal can take them back: "Nothing was written" stays true.

Each file an upload replaces is kept (a hard link: no space) until the upload is indexed. When the disk refuses
the upload (its write, or its indexing), :func:`take_back` removes the files that were not indexed, or puts back
the file each replaced; the batch the disk refused has already been taken back from the index by ``index_paths``.

Usage::

    paths = save_uploads(uploads_folder, ["notes.md"], [b"# Notes ..."])   # OSError: nothing is left behind
    take_back(paths, [sha256_of_each], store)       # after a refusal: the names that were indexed anyway
    forget_backups(paths)                           # after success
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.indexing.manifest import read_manifests
from adaptive_retrieval.components.manifest_records import STATE_COMPLETE
from adaptive_retrieval.components.stores.disk_space import InsufficientSpaceError
from adaptive_retrieval.pipelines.serving.wrapper_support import write_upload


def backup_of(path: Path) -> Path:
    """Where the file an upload replaces is kept until the new one is indexed."""
    return path.with_name(f".{path.name}.previous")


def clear_stale_backups(folder: Path) -> None:
    """Drop the backups an upload a crash interrupted left (its run is over; the index is reconciled)."""
    for stale in folder.glob(".*.previous"):
        stale.unlink(missing_ok=True)


def save_uploads(folder: Path, names: list[str], contents: list[bytes]) -> list[Path]:
    """Write the checked uploads as ``folder/name``, keeping each file they replace.

    :raises OSError: when a file cannot be written (a full disk); what was written is removed and every replaced
        file put back first.
    """
    paths, written = [folder / name for name in names], []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path in paths:
            backup_of(path).unlink(missing_ok=True)
            if path.exists():
                os.link(path, backup_of(path))
        for path, content in zip(paths, contents, strict=True):
            written.append(write_upload(folder, path.name, content))
    except OSError:
        for path in paths:
            if backup_of(path).exists():
                os.replace(backup_of(path), path)
            elif path in written:
                path.unlink(missing_ok=True)
        raise
    return paths


def forget_backups(paths: list[Path]) -> None:
    """The upload is indexed: the files it replaced are not needed any more."""
    for path in paths:
        backup_of(path).unlink(missing_ok=True)


def take_back(paths: list[Path], hashes: list[str], store: Any) -> list[str]:
    """Undo an upload the disk refused: each file not indexed (its record is not its content, complete) is removed,
    or the file it replaced put back. Returns the names of the files indexed before the disk filled."""
    records = read_manifests(store, [str(p) for p in paths])
    indexed = []
    for path, digest in zip(paths, hashes, strict=True):
        record = records.get(str(path)) or {}
        if record.get("state") == STATE_COMPLETE and record.get("source_hash") == digest:
            indexed.append(path.name)
            backup_of(path).unlink(missing_ok=True)
        elif backup_of(path).exists():
            os.replace(backup_of(path), path)
        else:
            path.unlink(missing_ok=True)
    return indexed


def full_disk_message(error: InsufficientSpaceError, names: list[str], indexed: list[str]) -> str:
    """The 507's reason: nothing was written, or which files were indexed before the disk filled."""
    if not indexed:
        return error.public_message()
    others = [n for n in names if n not in indexed]
    return (
        f"The server's disk is full ({error.free_mb:.1f} MB free, {error.needed_mb:.1f} MB needed): "
        f"{', '.join(indexed)} were indexed before it filled; nothing was written for {', '.join(others)}. Upload "
        "those again once space is freed on the server."
    )
