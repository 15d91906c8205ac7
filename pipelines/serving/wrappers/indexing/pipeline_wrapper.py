"""Hayhooks wrapper of the indexing pipeline (``yaml/indexing.yaml``): upload files to index them.

Served as ``POST /indexing/run`` (multipart: one or more ``files``, optional ``force``) and as the handler of
the OpenAI-compatible ``POST /v1/files``. Uploads are kept under ``uploads/`` beside the Qdrant folder, so
uploading a changed file of the same name replaces its chunks and an unchanged one is skipped.

Usage::

    curl -s localhost:1416/indexing/run -F files=@notes.md -F files=@report.pdf
"""

from __future__ import annotations

# First and alone: loads the heavy stack under one import lock (Hayhooks deploys wrappers in parallel threads).
import adaptive_retrieval.pipelines.serving.wrapper_support  # noqa: F401

# isort: split

import hashlib
import logging
import time
from pathlib import Path
from typing import Any

from fastapi import HTTPException, UploadFile
from hayhooks import BasePipelineWrapper
from haystack.core.errors import PipelineRuntimeError
from starlette.datastructures import Headers

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.indexing.manifest import read_manifests
from adaptive_retrieval.components.manifest_records import STATE_COMPLETE
from adaptive_retrieval.components.stores.disk_space import InsufficientSpaceError
from adaptive_retrieval.pipelines.gate_upkeep import CalibrationKeeper
from adaptive_retrieval.pipelines.indexer import index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of
from adaptive_retrieval.pipelines.limits import Limits
from adaptive_retrieval.pipelines.serving.security import guard_request, is_guarded, public_server_error
from adaptive_retrieval.pipelines.serving.upload_queue import QueueFullError, TimeBudgetError, UploadQueue
from adaptive_retrieval.pipelines.serving.upload_undo import (
    clear_stale_backups,
    forget_backups,
    full_disk_message,
    save_uploads,
    take_back,
)
from adaptive_retrieval.pipelines.serving.wrapper_support import (
    IndexResponse,
    Replacement,
    StoredUpload,
    UploadRejectedError,
    check_upload,
    load_served_pipeline,
    safe_filename,
    uploads_dir,
)
from adaptive_retrieval.pipelines.upload_names import upload_base_name

logger = logging.getLogger(__name__)

#: Pseudo-queries per background update of the gate's calibration (0: none).
CALIBRATION_QUERIES_ENV = "ADAPTIVE_GATE_CALIBRATION_QUERIES"


def _query_pipeline() -> Any:
    """The query pipeline the calibration keeper samples with: ``yaml/query.yaml`` over the served store (the
    process-wide shared one), warmed up."""
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    pipeline = load_pipeline("query")
    pipeline.warm_up()
    return pipeline


class PipelineWrapper(BasePipelineWrapper):
    """Indexes uploaded files into the process-wide shared store; one indexing run at a time."""

    # Uploads need multipart form data, which MCP tool calls cannot send.
    skip_mcp = True

    def setup(self) -> None:
        """Load ``yaml/indexing.yaml`` (store from ``$QDRANT_URL``/``$ADAPTIVE_QDRANT_PATH``) and the models."""
        self.pipeline = load_served_pipeline("indexing")
        self.store = store_of(self.pipeline)
        # This server owns the index and accepts uploads: create it (and its graph) now, so that the query wrapper
        # beside it, whose stores never create one, answers "nothing indexed yet" with an empty list.
        self.store.count_documents()
        if (graph := graph_store_of(self.pipeline)) is not None:
            graph.chunk_count()
        self.uploads = uploads_dir(self.store)
        clear_stale_backups(self.uploads)
        # Indexing is CPU-bound and replaces chunks per source: a bounded queue admits a few uploads and runs
        # one at a time (by default), so uploads never take every worker and queries go on in parallel.
        self.queue = UploadQueue.from_env()
        splitter = self.pipeline.get_component("splitter")
        self.chunk_words = int(getattr(splitter, "chunk_words", 180))
        # After each upload or delete, the quality gate's calibration catches up in a background thread (its own
        # query pipeline over the shared store, loaded on the first update; lowest CPU priority).
        budget = settings.whole(CALIBRATION_QUERIES_ENV)
        self.keeper = CalibrationKeeper(_query_pipeline, budget) if budget > 0 else None

    def _check_limits(self, uploads: list[tuple[str | None, bytes]]) -> None:
        """413 for a request or file over a size limit, before anything is saved or queued."""
        limits = Limits.from_env()
        problem = limits.request_problem([len(content) for _, content in uploads])
        for name, content in uploads:
            if problem:
                break
            problem = limits.content_problem(safe_filename(name), content, self.chunk_words)
        if problem:
            raise HTTPException(status_code=413, detail=f"Upload refused: {problem}")

    def _checked(self, uploads: list[tuple[str | None, bytes]]) -> list[str]:
        """The stored name of each upload, after every check (nothing is written yet): 413 over a limit, 400 for a
        bad file or for two files of the request that would be stored under one name."""
        try:
            self._check_limits(uploads)
            names = [check_upload(name, content) for name, content in uploads]
        except UploadRejectedError as err:
            raise HTTPException(status_code=400, detail=str(err)) from err
        seen: dict[str, str | None] = {}
        for (sent, _), name in zip(uploads, names, strict=True):
            if name in seen:
                msg = (
                    f"Two files of this upload have the same name ({seen[name]!r} and {sent!r}, both stored as "
                    f"'{name}'): rename one and send them again; nothing was indexed"
                )
                raise HTTPException(status_code=400, detail=msg)
            seen[name] = sent
        return names

    def _index(self, uploads: list[tuple[str | None, bytes]], force: bool) -> IndexResponse:
        start = time.perf_counter()
        names = self._checked(uploads)
        sources = [str(self.uploads / name) for name in names]
        try:
            with self.queue.admit() as ticket:
                # Written only once admitted: a refused upload (queue full) never overwrites an indexed file.
                before = read_manifests(self.store, sources)
                paths = self._write(names, uploads)
                try:
                    counts = index_paths(self.pipeline, paths, force=force, batch_files=8, check=ticket.check)
                except (InsufficientSpaceError, PipelineRuntimeError) as err:
                    cause = err if isinstance(err, InsufficientSpaceError) else err.__cause__
                    if not isinstance(cause, InsufficientSpaceError):
                        raise
                    # index_paths took back the batch the disk refused; the files not indexed go too.
                    kept = take_back(paths, [hashlib.sha256(c).hexdigest() for _, c in uploads], self.store)
                    raise public_server_error(507, full_disk_message(cause, names, kept)) from err
                forget_backups(paths)
                after = read_manifests(self.store, sources)
                total = self.store.count_documents()
            if self.keeper is not None and (counts["indexed"] or counts["chunks_deleted"]):
                self.keeper.request()
        except InsufficientSpaceError as err:
            raise public_server_error(507, err.public_message()) from err
        except QueueFullError as err:
            raise HTTPException(429, detail=str(err), headers={"Retry-After": str(err.retry_after)}) from err
        except TimeBudgetError as err:
            raise public_server_error(503, str(err), headers={"Retry-After": str(err.retry_after)}) from err
        if counts["failed"] and len(counts["failed"]) == counts["files"] - counts["skipped"]:
            # Nothing was indexed. A 200 would read as success: 413 when every file was over a limit on what
            # splitting produced (the content check already answered 400 for the others), else 422.
            reasons = "; ".join(f"{Path(f['source']).name}: {f['reason']}" for f in counts["failed"])
            status = 413 if all(f.get("kind") == "refused" for f in counts["failed"]) else 422
            raise HTTPException(status_code=status, detail=f"No file of the upload could be indexed ({reasons})")
        return IndexResponse(
            **counts,
            sources=[str(p) for p in paths],
            uploads=[
                StoredUpload(name=upload_base_name(sent), stored_as=name, source=source)
                for (sent, _), name, source in zip(uploads, names, sources, strict=True)
            ],
            replaced=_replacements(uploads, names, sources, before, after),
            documents_total=total,
            timings_ms={"total": round((time.perf_counter() - start) * 1000, 2)},
        )

    def _write(self, names: list[str], uploads: list[tuple[str | None, bytes]]) -> list[Path]:
        """Write the checked uploads under their stored names (the files they replace kept until indexed: see
        ``upload_undo.py``); 507 when the uploads folder's disk is full (nothing is left behind)."""
        try:
            return save_uploads(self.uploads, names, [content for _, content in uploads])
        except OSError as err:  # no server path in the answer
            detail = f"The server could not save the upload: {err.strerror or type(err).__name__}; nothing was written"
            raise public_server_error(507, detail) from err

    def delete_sources(self, names: list[str]) -> list[dict]:
        """Delete sources (upload file names or stored paths): their chunks, summaries, graph records and uploaded
        files; served as ``DELETE /sources`` by ``adaptive_retrieval.pipelines.serving.app``.

        :raises SourceNotFoundError: when a name matches nothing (nothing is deleted then).
        """
        from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of
        from adaptive_retrieval.pipelines.sources import delete_sources

        # On the indexer, never inside a batch of an indexing run (nor its reconciliation): between two batches
        # of a running upload, before waiting ones, and never refused because uploads fill the queue.
        try:
            with self.queue.admit_delete():
                deleted = delete_sources(self.store, names, self.uploads, graph_store_of(self.pipeline))
            if self.keeper is not None:
                self.keeper.request()
            return deleted
        except InsufficientSpaceError as err:  # a delete writes too (the write-ahead log, the manifest records)
            raise public_server_error(507, err.public_message()) from err
        except QueueFullError as err:
            raise HTTPException(429, detail=str(err), headers={"Retry-After": str(err.retry_after)}) from err
        except TimeBudgetError as err:
            raise public_server_error(503, str(err), headers={"Retry-After": str(err.retry_after)}) from err

    def run_api(
        self, files: list[UploadFile] | None = None, force: bool = False, headers: Headers | None = None
    ) -> IndexResponse:
        """Index uploaded files (.md, .txt, .html, .pdf): split by section, embed dense + sparse, write.

        :param files: the files to index (multipart form field ``files``, repeatable).
        :param force: re-index even files whose content has not changed.
        :param headers: the request's headers (Hayhooks passes them): an upload from a foreign web page is refused.
        :returns: counts of files and chunks, each file's stored name, what it replaced, the store's total.
        """
        guard_request(headers)
        if not files:
            raise HTTPException(status_code=400, detail="No file uploaded: send one or more multipart 'files'")
        self._check_sizes([(f.filename, f.size) for f in files])
        return self._index([(f.filename, f.file.read()) for f in files], force)

    def _check_sizes(self, sizes: list[tuple[str | None, int | None]]) -> None:
        """413 for a request or file over a size limit by the sizes the multipart parser measured, before any file
        is read into memory (a 120 MB file was read whole only to be refused); unknown sizes are checked later."""
        limits = Limits.from_env()
        known = [(name, size) for name, size in sizes if size is not None]
        problem = limits.request_problem([size for _, size in known]) if len(known) == len(sizes) else None
        for name, size in known:
            problem = problem or limits.size_problem(upload_base_name(name)[:200] or "(no name)", size)
        if problem:
            raise HTTPException(status_code=413, detail=f"Upload refused: {problem}")

    def run_file_upload(self, filename: str | None, content_type: str | None, content: bytes, purpose: str) -> dict:
        """OpenAI ``/v1/files``: index the uploaded file and describe it as an OpenAI FileObject.

        Served by ``adaptive-retrieval serve`` only: Hayhooks does not hand this method the request headers, so under
        plain ``hayhooks run`` it could not tell a web page's upload from a client's (use ``/indexing/run`` there).
        """
        if not is_guarded():
            msg = (
                "POST /v1/files is served by `adaptive-retrieval serve` only, which refuses uploads from foreign web "
                "pages; on this server upload with POST /indexing/run"
            )
            raise HTTPException(status_code=403, detail=msg)
        result = self._index([(filename, content)], force=False)
        return {
            "id": "file-" + result.sources[0].rsplit("/", 1)[-1],
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": filename or "",
            "purpose": purpose,
            "status": "processed",
        }


def _replacements(
    uploads: list[tuple[str | None, bytes]],
    names: list[str],
    sources: list[str],
    before: dict[str, dict[str, Any]],
    after: dict[str, dict[str, Any]],
) -> list[Replacement]:
    """The uploads whose stored name held other indexed content before: what it had, what it has now."""
    replaced = []
    for (sent, content), name, source in zip(uploads, names, sources, strict=True):
        earlier = before.get(source) or {}
        if earlier.get("state") != STATE_COMPLETE or earlier.get("source_hash") == hashlib.sha256(content).hexdigest():
            continue  # nothing indexed under this name, or the same content (skipped or forced again)
        now = after.get(source) or {}
        if now.get("refused"):
            continue  # the new content was refused: the version indexed before is kept ("failed" says so)
        replaced.append(
            Replacement(
                name=upload_base_name(sent),
                stored_as=name,
                chunks_before=int(earlier.get("chunks") or 0),
                chunks_after=int(now.get("chunks") or 0) if now.get("state") == STATE_COMPLETE else 0,
            )
        )
    return replaced
