"""Entry of the quality gate's corrective loop: where the query enters the pipeline, and re-enters on a retry.

A Haystack cycle needs one component that can start it from the user's input and be triggered again from
inside. ``RetryLoop`` takes the query from the caller and the ``retry`` message from
:class:`~adaptive_retrieval.components.gating.quality_gate.QualityGate`; it sends the query text to the query embedders
(so every channel receives fresh inputs on the next pass), the attempt number to the router (which widens the strategy)
and to the gate, and the best earlier attempt back to the gate. Because the attempt number reaches the router
through this component, the router is ready as soon as the query embedding is, and never waits on the gate.

Usage (see ``pipelines/query_pipeline.py``)::

    p.add_component("loop", RetryLoop())
    p.connect("loop.query", "query_embedder.text")
    p.connect("loop.attempt", "router.escalation")
    p.connect("gate.retry", "loop.retry")
"""

from __future__ import annotations

import unicodedata
from typing import Any

from haystack import component

from adaptive_retrieval.components.gating.attempts import RetryState
from adaptive_retrieval.components.limits import check_query


@component
class RetryLoop:
    """Starts attempt 0 from the caller's query and attempt n from the gate's ``retry`` message.

    The query leaves NFKC-normalised, as the indexing pipeline's cleaner normalises every document: a fullwidth
    ``ｌａｍｂｄａ`` or a ligature ``ﬁle`` then meets the indexed ``lambda`` and ``file`` in every channel. Every
    surface (REST, chat, MCP, the CLI, ``run_query`` and a plain ``Pipeline.run``) enters here.
    """

    @component.output_types(query=str, attempt=int, previous=RetryState | None)
    def run(self, query: str, retry: RetryState | None = None) -> dict[str, Any]:
        """Forward the query with its attempt number, and the loop's memory to the gate.

        :param query: the caller's question.
        :param retry: the quality gate's :class:`~adaptive_retrieval.components.gating.attempts.RetryState`,
            absent on the first pass.
        :raises ValueError: for an empty query.
        :raises TypeError: for a retry that is not a ``RetryState``.
        """
        check_query(query)
        query = unicodedata.normalize("NFKC", query)
        if retry is None:
            return {"query": query, "attempt": 0, "previous": None}
        if not isinstance(retry, RetryState):
            msg = f"A retry is the quality gate's RetryState; got {type(retry).__name__}"
            raise TypeError(msg)
        return {"query": query, "attempt": retry.attempt, "previous": retry}
