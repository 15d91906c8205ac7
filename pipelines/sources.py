"""Delete indexed sources: every store document of the source (chunks and summaries), its graph records, and its
uploaded file when the file lies under ``uploads/``.

A source is named as stored in ``meta.source`` (the absolute path of the indexed file) or, for an upload, by the
file name it was uploaded with (``notes.md`` → ``<uploads>/notes.md``, ``a?b.md`` → ``<uploads>/a%3Fb.md``) or the
name it is stored under. Files outside ``uploads/`` are the user's own and are never
removed. Names that match nothing are an error, checked before anything is deleted.

Usage::

    removed = delete_sources(store, ["notes.md"], uploads=Path(".adaptive/uploads"), graph_store=graph)
    removed[0]["documents_removed"], removed[0]["graph_chunks_removed"], removed[0]["file_removed"]
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from haystack import Document

from adaptive_retrieval.components.errors import AdaptiveRetrievalError
from adaptive_retrieval.components.stores.graph.graph_store import GraphStore
from adaptive_retrieval.pipelines.upload_names import UploadNameError, stored_name
from adaptive_retrieval.pipelines.validation import check_source_name


class SourceNotFoundError(AdaptiveRetrievalError, LookupError):
    """No stored document and no uploaded file has this source name; the message lists them."""


def source_candidates(name: str, uploads: Path) -> list[str]:
    """The stored sources ``name`` may mean, most likely first.

    A bare file name is an upload: the file it is stored under (``über.md`` → ``<uploads>/über.md``, ``a?b.md`` →
    ``<uploads>/a%3Fb.md``, see :mod:`~adaptive_retrieval.pipelines.upload_names`), then the name as a stored name
    itself (as the upload response lists it). Anything else is a ``meta.source`` value (a path, resolved when it
    exists).
    """
    if "/" not in name and "\\" not in name:
        literal = str(uploads.resolve() / name)
        try:
            stored = str(uploads.resolve() / stored_name(name))
        except UploadNameError:
            return [literal]
        return list(dict.fromkeys([stored, literal]))
    path = Path(name).expanduser()
    try:
        return [str(path.resolve()) if path.exists() else name]
    except OSError:  # a name longer than the file system allows is no file here
        return [name]


def _upload_file(source: str, uploads: Path) -> Path | None:
    path = Path(source)
    try:
        return path if path.parent == uploads and path.is_file() else None
    except OSError:  # ENAMETOOLONG: no such file
        return None


def _documents_of(store: Any, source: str) -> list[Document]:
    """Every document whose ``meta.source`` is ``source``, plus those sharing its ``meta.doc_id`` values."""
    by_source = store.filter_documents(filters={"field": "meta.source", "operator": "==", "value": source})
    found = {d.id: d for d in by_source}
    doc_ids = sorted({str(d.meta["doc_id"]) for d in found.values() if d.meta.get("doc_id")})
    if doc_ids:
        more = store.filter_documents(filters={"field": "meta.doc_id", "operator": "in", "value": doc_ids})
        found.update({d.id: d for d in more})
    return list(found.values())


def delete_sources(
    store: Any, names: Iterable[str], uploads: Path, graph_store: GraphStore | None = None
) -> list[dict[str, Any]]:
    """Delete the named sources; one ``{"source", "documents_removed", "graph_chunks_removed", "file_removed"}``
    per name.

    :raises SourceNotFoundError: when a name matches no stored document and no uploaded file (nothing deleted).
    :raises ValueError: for a name that cannot name a source (empty, a NUL, over 4,096 characters).
    """
    uploads = uploads.resolve()
    plan = []
    for name in names:
        check_source_name(name)
        for source in source_candidates(name, uploads):
            docs, upload = _documents_of(store, source), _upload_file(source, uploads)
            if docs or upload is not None:
                plan.append((source, docs, upload))
                break
        else:
            msg = f"No indexed source or uploaded file named '{name}'"
            raise SourceNotFoundError(msg)
    removed = []
    for source, docs, upload in plan:
        if docs:
            store.delete_documents([d.id for d in docs])
        doc_ids = sorted({str(d.meta["doc_id"]) for d in docs if d.meta.get("doc_id")})
        graph_removed = graph_store.delete_documents(doc_ids) if graph_store is not None and doc_ids else 0
        if upload is not None:
            upload.unlink(missing_ok=True)
        removed.append(
            {
                "source": source,
                # The source's manifest record (level -1) goes too, but it is not a document of the index.
                "documents_removed": sum(1 for d in docs if int(d.meta.get("level", 0) or 0) >= 0),
                "graph_chunks_removed": graph_removed,
                "file_removed": upload is not None,
            }
        )
    return removed
