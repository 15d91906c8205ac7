"""What the Hayhooks wrappers share: response models with the diagnostics, upload handling, chat context.

The wrappers in ``pipelines/serving/wrappers/query`` and ``pipelines/serving/wrappers/indexing`` stay thin; the
logic lives here so that the REST app, the CLI and the tests use one implementation.

Usage::

    from adaptive_retrieval.pipelines.query_pipeline import run_query
    from adaptive_retrieval.pipelines.serving.wrapper_support import QueryResponse

    response = QueryResponse.from_result(run_query(pipeline, "What does Section 3.2 say?"))
    response.verdict, response.intent, response.documents[0].provenance
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline
from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

import adaptive_retrieval.pipelines.diagrams.drawing
import adaptive_retrieval.pipelines.query_pipeline  # noqa: F401

# Hayhooks imports the wrapper modules in parallel threads, and two threads importing qdrant_client's circular
# modules at once fail ("partially initialized module"). Every wrapper imports this module first and alone, so
# the whole stack loads once, under this module's import lock, while the other threads wait for it.
from adaptive_retrieval.components import settings
from adaptive_retrieval.components.errors import InputError
from adaptive_retrieval.pipelines.query_result import QueryResult, document_to_wire
from adaptive_retrieval.pipelines.text_answer import answer_text
from adaptive_retrieval.pipelines.upload_names import UploadNameError, stored_name
from adaptive_retrieval.pipelines.validation import check_top_k

logger = logging.getLogger(__name__)

# Hayhooks also runs the wrappers' setup() in parallel threads and only logs (then skips the route) when one
# raises: loading one pipeline at a time keeps a lazy import, a first store opening or a model session from
# racing another wrapper's, which under load silently left a pipeline undeployed.
_SETUP_LOCK = threading.Lock()


def load_served_pipeline(name: str) -> Pipeline:
    """``yaml/<name>.yaml`` loaded (store from ``$QDRANT_URL`` / ``$ADAPTIVE_QDRANT_PATH``) and warmed up, one
    wrapper at a time."""
    from adaptive_retrieval.pipelines.processes.threads import limit_blas_threads
    from adaptive_retrieval.pipelines.serving.security import require_safe_hayhooks
    from adaptive_retrieval.pipelines.serving.served_store import claim_served_store
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    require_safe_hayhooks()
    limit_blas_threads()
    with _SETUP_LOCK:
        claim_served_store()
        pipeline = load_pipeline(name)
        pipeline.warm_up()
        return pipeline


#: Folder for uploaded files; default: ``uploads`` beside the local Qdrant folder.
UPLOAD_DIR_ENV = "ADAPTIVE_UPLOAD_DIR"


class UploadRejectedError(InputError):
    """An uploaded file cannot be indexed (type, size, name or content); the message says why."""


class RetrievedDocument(BaseModel):
    """One retrieved passage with its provenance (which channel found it, at which rank); the form of
    :func:`~adaptive_retrieval.pipelines.query_result.document_to_wire`."""

    id: str
    content: str | None = None
    score: float | None = Field(None, description="Fused (weighted RRF) or final score")
    source: str | None = None
    title: str | None = None
    section: str | None = None
    provenance: dict[str, int] = Field(default_factory=dict, description="channel → rank in that channel's list")
    channel_scores: dict[str, float] = Field(default_factory=dict)
    meta: dict[str, Any] = Field(
        default_factory=dict, description="The rest of the passage's meta (positions, the user's own fields)"
    )
    # Absent unless asked for: ~8 KB of JSON per document for a 384-d model, of no use to most clients.
    embedding: list[float] | None = Field(
        None, description="Dense vector (only with include_embeddings)", exclude_if=lambda v: v is None
    )
    sparse_embedding: dict[str, list] | None = Field(
        None, description="Sparse vector (only with include_embeddings)", exclude_if=lambda v: v is None
    )

    @classmethod
    def from_document(cls, doc: Document, include_embeddings: bool = False) -> RetrievedDocument:
        """Build from a Haystack ``Document``; its vectors only with ``include_embeddings``."""
        return cls(**document_to_wire(doc, include_embeddings))


class QueryResponse(BaseModel):
    """A query's answer over REST: the verdict, the documents, and the routing, fusion and gate diagnostics with
    per-stage timings (:meth:`QueryResult.to_dict <adaptive_retrieval.pipelines.query_result.QueryResult.to_dict>`).

    Diagnostics that the query pipeline adds later (new channels, retries) pass through as extra fields.
    """

    model_config = ConfigDict(extra="allow")

    query: str
    documents: list[RetrievedDocument]
    verdict: str | None = Field(None, description="The gate's verdict: found, not_found or uncertain")
    reason: str | None = Field(None, description="The verdict in one sentence (what is missing, or where it is)")
    intent: str = Field(description="Most probable intent (factual, keyword, analytical, ...)")
    confidence: float = Field(description="Router probability of that intent")
    weights: dict[str, float] = Field(description="Channel weights the joiner applied (renormalised)")
    strategy: dict[str, Any] = Field(
        default_factory=dict, description="weights, top_k, fetch_k, mmr_lambda, rerank, max_per_source"
    )
    structural: dict[str, Any] | None = None
    routing: dict[str, Any] = Field(default_factory=dict)
    fusion: dict[str, Any] = Field(default_factory=dict)
    gate: dict[str, Any] | None = Field(None, description="Quality gate decision and its signals, if any")
    timings_ms: dict[str, float] = Field(default_factory=dict)
    query_embedding: list[float] | None = Field(
        None, description="The query's vector (only with include_embeddings)", exclude_if=lambda v: v is None
    )
    _result: QueryResult | None = PrivateAttr(None)

    @classmethod
    def from_result(
        cls, result: QueryResult, top_k: int | None = None, include_embeddings: bool = False
    ) -> QueryResponse:
        """From :func:`~adaptive_retrieval.pipelines.query_pipeline.run_query`'s result; ``top_k`` keeps at most
        that many documents (``None``: all); the query's and the documents' vectors only with
        ``include_embeddings``.

        :raises TypeError: when ``top_k`` is not a whole number (a boolean, a float, ``NaN``...).
        :raises ValueError: when it is out of range (see :func:`~adaptive_retrieval.pipelines.validation.check_top_k`).
        """
        kept = result.head(check_top_k(top_k))
        response = cls.model_validate(kept.to_dict(include_embeddings))
        response._result = kept  # what str() renders for MCP, without reading the JSON form back
        return response

    def result(self) -> QueryResult:
        """The typed result this answer renders (documents as Haystack ``Document`` s): the one it was made from, else
        read back from its JSON form (an answer validated from a server's JSON)."""
        return self._result if self._result is not None else QueryResult.from_dict(self.model_dump())

    def __str__(self) -> str:
        # An MCP tool answers str(result): the verdict and the passages, as text a model reads (answer_text); the
        # diagnostics stay in the REST answer. A client that asked for vectors wants the whole answer: JSON.
        if self.query_embedding is not None:
            return self.model_dump_json()
        return answer_text(self.result())


class StoredUpload(BaseModel):
    """One uploaded file: the name it was sent with and the file it is kept in."""

    name: str = Field(description="The file name as sent (base name, NFC)")
    stored_as: str = Field(description="The file name under uploads/ (see upload_names.stored_name)")
    source: str = Field(description="The source name in the index (meta.source)")


class Replacement(BaseModel):
    """An earlier upload that this one replaced (same stored name, other content): what it held, what is there now."""

    name: str
    stored_as: str
    chunks_before: int = Field(description="Chunks the earlier upload had in the index")
    chunks_after: int = Field(description="Chunks of the new content (0 when it yielded no text: see failed)")


class IndexResponse(BaseModel):
    """Outcome of an indexing request."""

    files: int = Field(description="Supported files received")
    indexed: int = Field(description="Files (re)indexed")
    skipped: int = Field(description="Files unchanged since they were indexed")
    chunks_written: int
    chunks_deleted: int
    redone: int = Field(0, description="Sources an interrupted earlier run left unfinished, indexed again")
    failed: list[dict[str, str]] = Field(default_factory=list, description="Files that yielded no text: source, reason")
    partial: list[dict[str, str]] = Field(default_factory=list, description="Files indexed in part: source, reason")
    sources: list[str] = Field(default_factory=list, description="Source names of the files, as stored in meta")
    uploads: list[StoredUpload] = Field(default_factory=list, description="Each file's name as sent and as stored")
    replaced: list[Replacement] = Field(
        default_factory=list, description="Earlier uploads of the same (stored) name that this upload replaced"
    )
    documents_total: int = Field(description="Documents in the store after indexing")
    timings_ms: dict[str, float] = Field(default_factory=dict)

    def __str__(self) -> str:
        return self.model_dump_json()


def uploads_dir(store: Any) -> Path:
    """Where uploads are kept (re-uploading a file of the same name replaces its chunks, as the source is the same).

    ``$ADAPTIVE_UPLOAD_DIR``, else ``uploads`` beside a local Qdrant folder (its path, or the folder it resolves
    from ``$ADAPTIVE_QDRANT_PATH``), else ``uploads`` in the per-user data folder.
    """
    from adaptive_retrieval.components.locations import data_dir

    if configured := settings.text(UPLOAD_DIR_ENV):
        return Path(configured).expanduser().resolve()
    folder = getattr(store, "folder", None) or getattr(store, "path", None)
    if folder:
        return (Path(folder).expanduser().resolve().parent / "uploads").resolve()
    return (data_dir() / "uploads").resolve()


def safe_filename(filename: str | None) -> str:
    """The name an uploaded file is stored under (:func:`~adaptive_retrieval.pipelines.upload_names.stored_name`:
    distinct names stay distinct, letters of every script are kept, at most 200 bytes).

    :raises UploadRejectedError: without a usable name or with an unsupported extension.
    """
    try:
        return stored_name(filename)
    except UploadNameError as err:
        raise UploadRejectedError(str(err)) from err


def check_upload(filename: str | None, content: bytes) -> str:
    """Check one uploaded file without writing it; returns the name it will be stored under.

    :raises UploadRejectedError: for an unsupported type, an oversized file, or content that cannot be indexed
        (empty, binary, not UTF-8, not a PDF: :func:`~adaptive_retrieval.pipelines.file_checks.content_problem`,
        the check ``index_paths`` makes too).
    """
    from adaptive_retrieval.pipelines.file_checks import content_problem
    from adaptive_retrieval.pipelines.limits import Limits

    name = safe_filename(filename)
    limit = Limits.from_env().file_bytes
    if len(content) > limit:
        msg = f"The uploaded file '{name}' has {len(content)} bytes; the limit is {limit} ($ADAPTIVE_MAX_UPLOAD_MB)"
        raise UploadRejectedError(msg)
    if problem := content_problem(name, content):
        raise UploadRejectedError(f"The uploaded file {problem}")
    return name


def write_upload(folder: Path, name: str, content: bytes) -> Path:
    """Write a checked upload as ``folder/name`` (a stored name from :func:`check_upload`); returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    # Write then rename, so a concurrent reader never sees half a file.
    partial = path.with_name(f".{name}.partial")
    try:
        partial.write_bytes(content)
        partial.replace(path)
    except OSError:
        partial.unlink(missing_ok=True)  # a full disk leaves no half-written file behind
        raise
    return path


def save_upload(folder: Path, filename: str | None, content: bytes) -> Path:
    """Check (:func:`check_upload`) and write (:func:`write_upload`) one uploaded file; returns its path.

    :raises UploadRejectedError: for an unsupported type, an oversized file, or content that cannot be indexed.
    """
    return write_upload(folder, check_upload(filename, content), content)


class ChatInputError(InputError, ValueError):
    """A chat request whose last user message holds no usable text question; the message says what to send."""


def _part_text(index: int, part: Any) -> str | None:
    """The text of one content part (``None`` for a part of another type: an image, audio, a file).

    :raises ChatInputError: for a part that is not an object, has no string ``type``, or a text part whose ``text``
        is not a string.
    """
    if not isinstance(part, dict) or not isinstance(part.get("type"), str):
        msg = f"Content part {index} of the last user message must be an object with a 'type' (e.g. 'text')"
        raise ChatInputError(msg)
    if part["type"] != "text":
        return None
    text = part.get("text")
    if not isinstance(text, str):
        msg = (
            f"Content part {index} of the last user message is a text part whose 'text' is "
            f"{type(text).__name__ if text is not None else 'null'}, not a string"
        )
        raise ChatInputError(msg)
    return text


def last_user_text(messages: list[dict[str, Any]]) -> str:
    """The text question of the last user message of an OpenAI-style chat (string or list-of-parts content; the
    text parts joined, other parts such as images ignored).

    Only the last user message counts: one without text (an image alone) is refused rather than answered with an
    earlier question.

    :raises ChatInputError: when there is no user message, the last one holds no text, or a part is malformed.
    """
    users = [m for m in messages or [] if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        msg = "The chat has no user message: send messages=[{'role': 'user', 'content': '...'}]"
        raise ChatInputError(msg)
    content = users[-1].get("content")
    if isinstance(content, list):
        texts = [_part_text(i, part) for i, part in enumerate(content)]
        kinds = sorted({part["type"] for part, text in zip(content, texts, strict=True) if text is None})
        joined = " ".join(t for t in texts if t is not None).strip()
        if not joined:
            only = f" (only {', '.join(kinds)} parts)" if kinds else ""
            msg = (
                f"The last user message has no text question{only}: this server retrieves passages for text; send "
                "the question as a text part"
            )
            raise ChatInputError(msg)
        return joined
    if not isinstance(content, str):
        kind = "null" if content is None else type(content).__name__
        msg = f"The last user message's content is {kind}: send a string or a list of content parts"
        raise ChatInputError(msg)
    if not content.strip():
        msg = "The last user message has no text question: its content is empty"
        raise ChatInputError(msg)
    return content.strip()


def context_text(result: QueryResult, max_chars: int = 1200) -> str:
    """The retrieved context as chat text: the verdict in one sentence, then numbered passages with where they
    are, their sources and why they were chosen (:func:`~adaptive_retrieval.pipelines.text_answer.answer_text`)."""
    return answer_text(result, max_chars)
