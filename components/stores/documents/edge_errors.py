"""The embedded store's errors, and the mapping of Qdrant Edge's failures to them: each says what to run or where
to look, never a bare engine message."""

from __future__ import annotations

from pathlib import Path

from adaptive_retrieval.components.stores.store_errors import StoreError


class StoreLockedError(StoreError, RuntimeError):
    """The index folder is open in another process (one process owns an embedded index)."""


class StoreFormatError(StoreError, ValueError):
    """The index folder holds data this store cannot open (an old format, another dimension, a damaged shard): a
    configuration error, so channels raise it instead of skipping themselves."""


class StoreDamagedError(StoreFormatError):
    """The index folder is damaged (a lost segment, unreadable pages, impossible vectors): queries would answer
    wrong, so every read raises this instead, with what to run."""


class IndexNotFoundError(StoreError, ValueError):
    """A store opened for reading only (``create=False``, the query side) names a folder that holds no index: a
    configuration error (wrong folder or variable, or nothing indexed yet), never an empty result."""


def open_error(folder: Path, err: Exception, existed: bool) -> StoreError:
    """A clear error for a shard that cannot be opened."""
    text = str(err)
    if "WouldBlock" in text:
        return StoreLockedError(
            f"The index '{folder}' is open in another process (one process owns an embedded index). Stop that "
            f"process, or send your queries to it (e.g. the REST server of `adaptive-retrieval serve`)."
        )
    if "Permission denied" in text or "Read-only" in text or "PermissionDenied" in text:
        return StoreFormatError(f"The index '{folder}' cannot be written (permission denied): {text}")
    if existed and ("incompatible" in text.lower() or "mismatch" in text.lower() or "dimension" in text.lower()):
        return StoreFormatError(
            f"The index '{folder}' was built with another configuration (vector size, distance or sparse vectors) "
            f"than this store's: {text}. Use the settings it was built with, or re-index into a new folder."
        )
    if existed:
        return StoreFormatError(
            f"Could not open the index '{folder}', which looks damaged: {text}. Nothing in it was changed: restore "
            "a copy of the folder, or index your files again into a new folder."
        )
    return StoreFormatError(f"Could not create the index '{folder}': {text}")


def read_failure(shard_folder: Path, err: Exception) -> StoreDamagedError:
    """Edge failing to read its own files (a damaged page), said with what to do."""
    return StoreDamagedError(
        f"Reading the index '{shard_folder}' failed, it looks damaged: {err}. Restore a copy of the folder, or "
        f"index your files again into a new folder (`adaptive-retrieval index --store NEW FILES...`)."
    )


def ledger_damage(shard_folder: Path, folder: Path, problem: str) -> StoreDamagedError:
    """The manifest records count more nodes than the index holds."""
    return StoreDamagedError(
        f"The index '{shard_folder}' is damaged: {problem}. Index your files again "
        f"(`adaptive-retrieval index --store {folder} FILES...` redoes the sources whose data is "
        f"missing); `adaptive-retrieval stats --verify --store {folder}` lists them."
    )


def settings_mismatch(
    key: str, opened: tuple[int, str, bool, bool], wanted: tuple[int, str, bool, bool]
) -> StoreFormatError:
    """A store configured otherwise than the shard already open in this process (dimension, similarity, sparse)."""
    return StoreFormatError(
        f"The index '{key}' stores {opened[0]}-d vectors ({opened[1]}; sparse vectors "
        f"{'on' if opened[2] else 'off'}) but this store is configured for {wanted[0]}-d ({wanted[1]}; sparse "
        f"vectors {'on' if wanted[2] else 'off'}): use the settings it was built with."
    )


def vector_damage(shard_folder: Path, folder: Path, problem: str) -> StoreDamagedError:
    """A search returned impossible vectors (flipped bytes)."""
    return StoreDamagedError(
        f"The index '{shard_folder}' is damaged: {problem}. Run `adaptive-retrieval stats --verify "
        f"--store {folder}` to list the sources to index again (or index everything into a new folder)."
    )
