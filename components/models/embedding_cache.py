"""Embeddings of fixed texts (the router's exemplar queries) kept on disk, so that a one-shot process does not
encode them again at every warm-up (~150 texts: 0.2-0.4 s of a CLI query that otherwise takes about a second).

The key is the model file's identity (its SHA-256 as the folder's manifest records it, else its size and time),
the precision, device and window of the encoder, and the texts themselves: a rebuilt model, other exemplars or
another precision never reuse an entry. Entries live in ``$XDG_CACHE_HOME/adaptive-retrieval/embeddings``
(``~/.cache/...``), or ``$ADAPTIVE_CACHE_DIR``; a cache that cannot be read or written only costs the encoding.

Usage::

    matrix = cached_encode(get_encoder("all-MiniLM-L6-v2"), exemplar_texts)
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.models.manifest import read_manifest
from adaptive_retrieval.components.models.paths import PRECISION_FILES, weights_file
from adaptive_retrieval.components.models.token_encoder import TokenEncoder

logger = logging.getLogger(__name__)

CACHE_DIR_ENV = "ADAPTIVE_CACHE_DIR"


def cache_dir() -> Path:
    """``$ADAPTIVE_CACHE_DIR``, else ``$XDG_CACHE_HOME/adaptive-retrieval/embeddings`` (``~/.cache/...``)."""
    if configured := settings.text(CACHE_DIR_ENV):
        return Path(configured).expanduser()
    base = settings.text("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base).expanduser() / "adaptive-retrieval" / "embeddings"


def model_identity(model_dir: Path, precision: str) -> str:
    """The checksum of the model file, and of its weights file where they are apart, as the folder's manifest records
    them (when the size still matches), else each file's path, size and modification time: what changes whenever a
    file does, without reading 60-90 MB."""
    path = model_dir / PRECISION_FILES.get(precision, "")
    if not path.is_file():  # a back end without a file of this name (the GPU precisions): the folder's
        return f"folder:{model_dir.resolve()}"
    try:
        manifest = read_manifest(model_dir)
    except ValueError:  # there, but unreadable: the files' own metadata
        manifest = None
    # The graph and, where they are stored apart, its weights.
    parts = [_file_identity(f, manifest) for f in (path, weights_file(path)) if f.is_file()]
    return "+".join(parts)


def _file_identity(path: Path, manifest: Any) -> str:
    stat = path.stat()
    try:
        record = manifest["files"][path.name]
        if record["bytes"] == stat.st_size:
            return f"sha256:{record['sha256']}"
    except (KeyError, TypeError):
        pass  # no manifest, or not for this file: the file's own metadata
    return f"file:{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}"


def _key(encoder: TokenEncoder, texts: Sequence[str]) -> str:
    session = getattr(encoder, "session", None)  # ONNX Runtime: where it runs (CPU, CUDA) changes the numbers a little
    runs_on = session.get_providers()[0] if session is not None else type(encoder).__name__
    parts = [model_identity(encoder.model_dir, encoder.precision), encoder.precision, runs_on]
    parts += [str(encoder.max_length), json.dumps(list(texts), ensure_ascii=False)]
    return hashlib.sha256("\n".join(parts).encode("utf-8")).hexdigest()


def cached_encode(encoder: TokenEncoder, texts: Sequence[str]) -> np.ndarray:
    """``encoder.encode(texts)`` (L2-normalised rows, read-only), mapped from the cache when the same model
    embedded the same texts before, else encoded and written there."""
    path = cache_dir() / f"{_key(encoder, texts)}.npy"
    try:
        # Mapped, not read: the pages are the file's, shared by every process that maps it (the gate's ~32 MB word
        # table is held once by `serve --workers N`, not once per worker), and only the rows used are read in.
        # Safe because an entry is only ever replaced whole (below), never rewritten in place.
        matrix = np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))
        if matrix.shape == (len(texts), encoder.dimension) and matrix.dtype == np.float32:
            return matrix
    except (OSError, ValueError):
        pass  # not cached yet (or unreadable): encode
    matrix = encoder.encode(texts)
    matrix.setflags(write=False)  # read-only as a mapped entry is, so a caller that writes fails on every path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_name(f".{path.stem}.{os.getpid()}.npy")
        np.save(partial, matrix, allow_pickle=False)
        partial.replace(path)  # whole or absent: a concurrent reader never sees half a file
    except OSError as err:
        logger.debug("Could not cache %d embeddings in %s: %s", len(texts), path.parent, err)
    return matrix
