"""The files an indexing run reads: which, in which batches, their hashes and bytes as the pipeline gets them, the
disk space a batch may take, and what an extractor could not read of them."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from haystack.dataclasses import ByteStream

from adaptive_retrieval.components.indexing.manifest import (
    read_manifests,
)
from adaptive_retrieval.components.indexing.structure.blocks import Coverage, text_units
from adaptive_retrieval.components.manifest_records import STATE_COMPLETE
from adaptive_retrieval.components.stores.disk_space import require_space
from adaptive_retrieval.pipelines.file_checks import content_problem
from adaptive_retrieval.pipelines.file_types import SUPPORTED_SUFFIXES
from adaptive_retrieval.pipelines.file_walk import find_files
from adaptive_retrieval.pipelines.indexing_pipeline import EXTRACTORS
from adaptive_retrieval.pipelines.text_encodings import as_utf8, decode_text

logger = logging.getLogger(__name__)


#: At most this many bytes of files (on disk) per pipeline run, besides at most ``batch_files`` files: a large
#: file (a PDF paper, a long manual) runs alone, so the per-file progress moves as each one finishes, while small
#: files still share a run. Sharing matters beyond the ~0.1 s each run costs (manifests, verification, the
#: community check): the entity extractor's phrase statistics are per batch, so small files keep the batches they
#: had (16 files of the demo corpus are ~100 KB).
BATCH_BYTES = 256 * 1024


def collect_files(paths: Iterable[str | Path], follow_symlinks: bool = False) -> list[Path]:
    """Supported files under ``paths`` (files or folders, recursive), sorted, as absolute paths; links met inside a
    folder are not followed unless ``follow_symlinks`` (:func:`~adaptive_retrieval.pipelines.file_walk.find_files`
    also says which were skipped)."""
    return find_files(paths, follow_symlinks).files


def file_hash(path: Path) -> str:
    """SHA-256 of the file's bytes, read in blocks (a changed file is re-indexed, an unchanged one skipped)."""
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def source_stream(path: Path, data: bytes) -> ByteStream:
    """The bytes of ``path`` as read, for the pipeline: the converters parse exactly the bytes that were hashed
    (a file edited while it is indexed can no longer be indexed as one version and recorded as another). Text
    with a byte-order mark (UTF-16, UTF-32) goes on as UTF-8."""
    mime_type = SUPPORTED_SUFFIXES[path.suffix.lower()]
    text = mime_type != "application/pdf"
    return ByteStream(
        data=as_utf8(data) if text else data,
        meta={"file_path": str(path), **({"encoding": "utf-8"} if text else {})},
        mime_type=mime_type,
    )


def indexed_hashes(store: Any, sources: list[str]) -> dict[str, str]:
    """``{source: source_hash}`` of the given sources whose manifest record says ``complete``."""
    records = read_manifests(store, sources)
    return {s: str(r.get("source_hash", "")) for s, r in records.items() if r.get("state") == STATE_COMPLETE}


def extraction_problem(path: Path, data: bytes) -> str:
    """Why ``path`` (read as ``data``) yielded no text, as far as can be told from its bytes (for the message)."""
    if path.suffix.lower() == ".pdf" and data.startswith(b"%PDF"):
        return "no text could be extracted from the PDF (broken, encrypted or scanned images only)"
    return content_problem(path.name, data) or "no text left after extraction and cleaning"


#: Bytes an embedded index may take per byte of file indexed (chunks and summaries with their text, payload, dense
#: and sparse vectors in the write-ahead log and a segment: the store's own estimate is ~18 per character of text,
#: and the graph's records), and per file (its first nodes' vectors and its manifest record).
SPACE_PER_BYTE, SPACE_PER_FILE = 24, 64 * 1024


def check_batch_space(store: Any, read: dict[Path, bytes]) -> None:
    """Refuse a batch before anything of it is written when an embedded index's disk cannot hold what it may add
    (:data:`SPACE_PER_BYTE` per byte read and :data:`SPACE_PER_FILE`, plus the margin): a refusal in the middle of
    it has more to take back.

    :raises InsufficientSpaceError: naming the space needed.
    """
    folder = getattr(store, "shard_path", None)
    if folder is not None:
        need = sum(SPACE_PER_BYTE * len(data) + SPACE_PER_FILE for data in read.values())
        require_space(Path(folder), "index these files", need=need, need_for=f"{len(read)} file(s)")


def extraction_shortfalls(result: dict[str, Any], read: dict[Path, bytes]) -> dict[str, str]:
    """``{source: what was kept}`` for the files of ``read`` whose extractor kept less of their text than they hold
    (:attr:`Coverage.short`), from the extractors' outputs in a pipeline ``result``."""
    files = {str(path): data for path, data in read.items()}
    short: dict[str, str] = {}
    for name in EXTRACTORS:
        for doc in result.get(name, {}).get("documents", []):
            source = str(doc.meta.get("file_path") or "")
            coverage = Coverage.from_meta(doc.meta.get("extraction"))
            if coverage is None and source in files and not source.lower().endswith(".pdf"):
                total = text_units(decode_text(files[source]))
                coverage = Coverage(kept=min(text_units(doc.content or ""), total), total=total)
            if coverage is not None and coverage.short:
                short[source] = coverage.describe()
    return short


def unfinished_files(unfinished: list[str], seen: set[str]) -> list[Path]:
    """The files of sources a crash left unfinished (``unfinished``) that are not among ``seen`` and still exist."""
    return [
        Path(s)
        for s in unfinished
        if s not in seen and Path(s).is_file() and Path(s).suffix.lower() in SUPPORTED_SUFFIXES
    ]


def file_batches(files: list[Path], batch_files: int, batch_bytes: int = BATCH_BYTES) -> list[list[Path]]:
    """``files`` in order, cut into batches of at most ``batch_files`` files and ``batch_bytes`` bytes on disk; a
    file of more than ``batch_bytes`` is a batch of its own."""
    if batch_files < 1 or batch_bytes < 1:
        msg = f"batch_files and batch_bytes must be at least 1, got {batch_files} and {batch_bytes}"
        raise ValueError(msg)
    batches: list[list[Path]] = []
    batch: list[Path] = []
    size = 0
    for path in files:
        file_size = path.stat().st_size
        if batch and (len(batch) >= batch_files or size + file_size > batch_bytes):
            batches.append(batch)
            batch, size = [], 0
        batch.append(path)
        size += file_size
    if batch:
        batches.append(batch)
    return batches
