"""The :class:`Indexer`: index files into an indexing pipeline's stores (crash-safe per source), delete sources,
reconcile what a crash left; beside the pure builder of :mod:`~adaptive_retrieval.pipelines.indexing_pipeline`.

Usage::

    from adaptive_retrieval.pipelines.indexer import Indexer, index_paths
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    pipeline = load_pipeline("indexing")
    pipeline.warm_up()
    report = Indexer(pipeline).index(["docs/"])       # or index_paths(pipeline, ["docs/"])
    Indexer(pipeline).delete(["docs/old.md"])
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from haystack import Pipeline

from adaptive_retrieval.components.indexing.index_identity import claim_graph
from adaptive_retrieval.components.indexing.manifest import (
    kept_record,
    looks_complete,
    reconcile,
    remove_sources,
    write_manifests,
)
from adaptive_retrieval.components.manifest_records import STATE_COMPLETE
from adaptive_retrieval.components.stores.disk_space import InsufficientSpaceError
from adaptive_retrieval.components.stores.graph.graph_store import GraphStore
from adaptive_retrieval.pipelines.file_walk import find_files
from adaptive_retrieval.pipelines.index_files import BATCH_BYTES, file_batches, unfinished_files
from adaptive_retrieval.pipelines.index_transaction import IndexTransaction
from adaptive_retrieval.pipelines.indexing_pipeline import EXTRACTORS, GUARD, graph_store_of, store_of
from adaptive_retrieval.pipelines.limits import Limits

logger = logging.getLogger(__name__)


#: Words per chunk when the pipeline has no splitter to say (the splitter's default).
DEFAULT_CHUNK_WORDS = 180


def _up_to_date(record: dict[str, Any] | None, source_hash: str, intact: bool) -> bool:
    return (
        bool(record) and record.get("state") == STATE_COMPLETE and record.get("source_hash") == source_hash and intact
    )


class Indexer:
    """Index files into an indexing pipeline's stores, transactionally per source; delete sources; reconcile.

    The pipeline (built by :func:`~adaptive_retrieval.pipelines.indexing_pipeline.build_indexing_pipeline` or loaded
    from YAML, warmed up) is only run: the manifest records, the verification in both stores, the fault points and
    taking back an interrupted batch are this class's (:class:`~adaptive_retrieval.pipelines.index_transaction.
    IndexTransaction`).

    Usage::

        indexer = Indexer(pipeline)
        report = indexer.index(["docs/", "notes.md"])
        indexer.delete(["notes.md"])
    """

    def __init__(self, pipeline: Pipeline) -> None:
        self.pipeline = pipeline
        self.store = store_of(pipeline)
        self.graph_store = graph_store_of(pipeline)

    def reconcile(self) -> Any:
        """Claim the graph for this index (a graph another index wrote is refused, never mixed into or pruned:
        :mod:`~adaptive_retrieval.components.indexing.index_identity`), then repair what a crash left (see
        :func:`~adaptive_retrieval.components.indexing.manifest.reconcile`); returns its state (records, unfinished
        sources)."""
        claim_graph(self.store, self.graph_store)
        return reconcile(self.store, self.graph_store)

    def delete(self, sources: Iterable[str | Path]) -> int:
        """:func:`delete_sources` on this pipeline's stores."""
        return delete_sources(self.store, sources, self.graph_store)

    def index(
        self,
        paths: Iterable[str | Path],
        force: bool = False,
        batch_files: int = 64,
        progress: Callable[[int, int], None] | None = None,
        check: Callable[[list[Path]], None] | None = None,
        limits: Limits | None = None,
        batch_bytes: int = BATCH_BYTES,
        follow_symlinks: bool = False,
    ) -> dict[str, Any]:
        """Index the supported files under ``paths`` with an indexing pipeline (built or loaded from YAML).

        Crash-safe per source: each source's manifest record (see
        :mod:`adaptive_retrieval.components.indexing.manifest`) is written ``indexing`` before its first node and
        ``complete`` only after every chunk, summary and graph record was verified in both stores. Before indexing, the
        graph is claimed for this index (a graph another index wrote is refused:
        :mod:`~adaptive_retrieval.components.indexing.index_identity`), the stores are reconciled and sources a crash
        left unfinished are redone (also when not among ``paths``). Sources whose record is ``complete`` with the same
        SHA-256 are skipped unless ``force``; changed files replace their chunks.

        A file that cannot be indexed is reported in ``failed`` (``source``, ``reason``, ``kind``) and the others go on:
        ``unreadable`` (permissions, I/O), ``refused`` (binary or not UTF-8, empty, over a size limit before any work,
        or over a limit on what splitting produced, before anything is embedded) or ``yielded no text``. Bad input never
        loses indexed data: the version indexed before, if any, is kept (``stats`` shows it as ``kept``).

        :param paths: a list of files or folders (a single string is refused: iterating it would walk its letters).
        :param batch_files: at most this many files per pipeline run.
        :param progress: ``progress(done, total)`` in files, as each batch's files finish (the CLI draws a bar with it):
            a file of more than ``batch_bytes`` is a batch of its own, so large files are reported one by one.
        :param check: called with each batch before it runs; raise to stop (time budget, client gone).
        :param limits: per-file size limits checked from the bytes (default :meth:`Limits.from_env`), with the limit and
            the variable that raises it in the reason.
        :param batch_bytes: at most this many bytes of files per pipeline run (see :func:`file_batches`).
        :param follow_symlinks: follow symbolic links met inside a folder, wherever they point; off (the default), a
            folder is never left and each link is listed in ``links_skipped`` (a path given in ``paths`` is read even
            when it is a link: it was named).
        :returns: counts ``files``, ``indexed``, ``skipped``, ``chunks_written``, ``chunks_deleted``, ``redone``
            (unfinished sources redone), ``failed`` (``[{"source", "reason", "kind"}]``) and ``partial``
            (``[{"source", "reason"}]``: indexed, but their file was read only in part, e.g. a PDF page that could not
            be read; ``stats`` shows them as ``partial``) and ``links_skipped`` (``[{"path", "target", "reason"}]``).
        :raises TypeError: when ``paths`` is a string or bytes rather than a list of them.
        """
        if isinstance(paths, (str, bytes, os.PathLike)):
            kind = type(paths).__name__
            msg = f"paths must be a list of files or folders, e.g. [{str(paths)!r}], not a single {kind}"
            raise TypeError(msg)
        found = find_files(paths, follow_symlinks)
        for link in found.skipped_links:
            logger.info("Not followed: the link %s -> %s: %s", link.path, link.target, link.reason)
        # Before anything is written or reconciled: a graph of another index is refused, never mixed into (or pruned).
        state = self.reconcile()
        files = sorted(found.files + unfinished_files(state.unfinished, {str(f) for f in found.files}))
        run = IndexTransaction(self.store, self.graph_store, records={})
        todo = self._plan(run, files, state.records, force)
        limits = limits or Limits.from_env()
        finished = 0
        for batch in file_batches(todo, batch_files, batch_bytes):
            if check is not None:
                check(batch)
            logger.info("Indexing files %d-%d of %d", finished + 1, finished + len(batch), len(todo))
            self._run_batch(run, batch, limits)
            finished += len(batch)
            if progress is not None:
                progress(finished, len(todo))
        optimize_store(self.store)
        return {
            "files": len(files),
            "indexed": len(run.completed),
            "skipped": len(run.hashes) - len(todo),
            "chunks_written": run.written,
            "chunks_deleted": run.deleted,
            "redone": len(set(state.unfinished) & {str(f) for f in todo}),
            "failed": run.failed,
            "partial": [{"source": s, "reason": r} for s, r in sorted(run.partial.items())],
            "links_skipped": [link.to_dict() for link in found.skipped_links],
        }

    def _plan(
        self, run: IndexTransaction, files: list[Path], records: dict[str, dict[str, Any]], force: bool
    ) -> list[Path]:
        """Hash ``files`` and return those to index: all with ``force``, else those whose record is not ``complete``
        with the same hash and whole nodes. A file back to the content indexed before its refused change has its
        record's refusal dropped."""
        run.hash_files(files)
        run.records = {s: r for s, r in records.items() if s in run.hashes}
        intact = looks_complete(self.store, run.records, self.graph_store)
        todo = [
            f
            for f in files
            if str(f) in run.hashes
            and (force or not _up_to_date(run.records.get(str(f)), run.hashes[str(f)], intact.get(str(f), False)))
        ]
        back = [s for s, r in run.records.items() if r.get("refused") and s not in {str(f) for f in todo}]
        write_manifests(self.store, [kept_record(s, run.records[s], None, None) for s in back])
        return todo

    def _run_batch(self, run: IndexTransaction, batch: list[Path], limits: Limits) -> None:
        """Read one batch and index it; a batch refused for disk space is taken back before the error goes on."""
        names = {name for name, _ in self.pipeline.walk()}
        splitter = self.pipeline.get_component("splitter") if "splitter" in names else None
        chunk_words = int(getattr(splitter, "chunk_words", DEFAULT_CHUNK_WORDS))
        keep = {n for n in ("section_tree", GUARD, "splitter", "entity_extractor", *EXTRACTORS) if n in names}
        read = run.read_batch(batch, limits, chunk_words)
        try:
            run.index_batch(self.pipeline, read, keep)
        except Exception as err:
            if isinstance(err, InsufficientSpaceError) or isinstance(err.__cause__, InsufficientSpaceError):
                run.undo(self.pipeline, [str(f) for f in read])  # "nothing was written" holds for this batch
            raise


def index_paths(pipeline: Pipeline, paths: Iterable[str | Path], **options: Any) -> dict[str, Any]:
    """``Indexer(pipeline).index(paths, **options)`` (see :meth:`Indexer.index`)."""
    return Indexer(pipeline).index(paths, **options)


def optimize_store(store: Any) -> None:
    """After a bulk write: let an embedded store build its HNSW graph when enough was written (a server
    optimises by itself, and a store without ``optimize`` needs nothing)."""
    optimize = getattr(store, "optimize", None)
    if callable(optimize):
        optimize()


def delete_sources(store: Any, sources: Iterable[str | Path], graph_store: GraphStore | None = None) -> int:
    """Delete every node (chunks and summaries) of the given sources, their chunks in ``graph_store`` when given
    (see :func:`graph_store_of`) and their manifest records, in a crash-safe order (records marked ``deleting``
    first, removed last); returns how many document-store nodes were removed."""
    if isinstance(sources, (str, bytes, os.PathLike)):
        msg = f"sources must be a list of sources, e.g. [{str(sources)!r}], not a single {type(sources).__name__}"
        raise TypeError(msg)
    names = [str(Path(s).expanduser().resolve()) if Path(s).expanduser().exists() else str(s) for s in sources]
    return remove_sources(store, graph_store, names)
