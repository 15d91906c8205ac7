"""Hayhooks wrapper of the adaptive query pipeline (``yaml/query.yaml``).

Served by ``hayhooks run --pipelines-dir pipelines/serving/wrappers`` (or ``adaptive-retrieval serve``) as
``POST /query/run``
(documents with routing, fusion, gate diagnostics and timings), ``POST /v1/chat/completions`` with
``model="query"`` (the retrieved context as the answer; no LLM needed) and the MCP tool ``query``.

Usage::

    curl -s localhost:1416/query/run -H 'content-type: application/json' -d '{"query": "What is MMR?"}'
"""

from __future__ import annotations

# First and alone: loads the heavy stack under one import lock (Hayhooks deploys wrappers in parallel threads).
import adaptive_retrieval.pipelines.serving.wrapper_support  # noqa: F401

# isort: split

import logging
from typing import Any

from fastapi import HTTPException
from hayhooks import BasePipelineWrapper
from starlette.datastructures import Headers

from adaptive_retrieval.pipelines.query_pipeline import NoChannelAnsweredError, run_query, without_answer
from adaptive_retrieval.pipelines.query_result import QueryResult
from adaptive_retrieval.pipelines.serving.query_admission import query_slot
from adaptive_retrieval.pipelines.serving.security import guard_request
from adaptive_retrieval.pipelines.serving.wrapper_support import (
    QueryResponse,
    context_text,
    last_user_text,
    load_served_pipeline,
)
from adaptive_retrieval.pipelines.validation import IncludeEmbeddings, NoFilters, QueryText, TopK, check_top_k

logger = logging.getLogger(__name__)


class PipelineWrapper(BasePipelineWrapper):
    """Runs the query pipeline synchronously in Hayhooks' thread pool (the embedded store is synchronous); the
    store is the process-wide shared one, so the indexing wrapper's writes are visible at once."""

    def setup(self) -> None:
        """Load ``yaml/query.yaml`` (store from ``$QDRANT_URL``/``$ADAPTIVE_QDRANT_PATH``) and load the models; the
        answers are rendered here (``QueryResponse``), so the YAML's answer component is left out."""
        self.pipeline = without_answer(load_served_pipeline("query"))

    def _retrieve(self, query: str, top_k: int | None = None) -> QueryResult:
        try:
            # Checked here too: an MCP tool call reaches run_api without the request model's validation.
            check_top_k(top_k)
            with query_slot():
                result = run_query(self.pipeline, query)
        except (ValueError, TypeError) as err:
            # validation.py's rules (empty, control characters, too long, not a string, top_k): a client error.
            raise HTTPException(status_code=400, detail=str(err)) from err
        except NoChannelAnsweredError as err:
            # Every channel failed (store locked, missing, unreachable): an error, never "no match".
            raise HTTPException(status_code=503, detail=str(err)) from err
        return result.head(top_k)

    def run_api(
        self,
        query: QueryText,
        top_k: TopK = None,
        include_embeddings: IncludeEmbeddings = False,
        filters: NoFilters = None,
        headers: Headers | None = None,
    ) -> QueryResponse:
        """Retrieve passages for a question, with the intent, confidence, channel weights, provenance and timings.

        :param query: the question or keywords.
        :param top_k: return at most this many documents (default: as many as the router's strategy selects).
        :param include_embeddings: also return the query's vector and each document's (the dense one, as retrieved).
        :param filters: not supported (metadata filters are not implemented): any value but null is refused, under
            `adaptive-retrieval serve` and plain `hayhooks run` alike, rather than answered unfiltered.
        :param headers: the request's headers (Hayhooks passes them): a write from a foreign web page is refused.
        :returns: documents and diagnostics.
        """
        guard_request(headers)
        return QueryResponse.from_result(self._retrieve(query, top_k), include_embeddings=include_embeddings)

    def run_chat_completion(
        self, model: str, messages: list[dict], body: dict[str, Any], headers: Headers | None = None
    ) -> str:
        """OpenAI-compatible chat: the answer is the verdict in one sentence, then the retrieved context for the last
        user message."""
        guard_request(headers)
        try:
            query = last_user_text(messages)
        except ValueError as err:
            raise HTTPException(status_code=400, detail=str(err)) from err
        return context_text(self._retrieve(query))
