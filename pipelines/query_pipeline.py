"""The adaptive query pipeline: embed once → route → channels → weighted RRF → MMR → rerank → quality gate,
which loops back to routing with a wider strategy when the evidence is weak."""

from __future__ import annotations

from typing import Any

from haystack import Document, Pipeline
from haystack.core.errors import PipelineRuntimeError

from adaptive_retrieval.components.fusion.weighted_rrf_joiner import (
    NoChannelAnsweredError,
    WeightedRRFJoiner,
    failure_socket,
)
from adaptive_retrieval.components.gating.lean_answer import LeanAnswer
from adaptive_retrieval.components.gating.quality_gate import QualityGate
from adaptive_retrieval.components.gating.retry_loop import RetryLoop
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.models.query_vector import as_float_list
from adaptive_retrieval.components.models.sparse_text_embedder import Bm25TextEmbedder
from adaptive_retrieval.components.models.text_embedder import OnnxTextEmbedder
from adaptive_retrieval.components.ranking.late_interaction_ranker import LateInteractionRanker
from adaptive_retrieval.components.retrieval.channels import (
    CHANNELS,
    QUERY_EMBEDDING,
    ROUTER_INPUTS,
    SPARSE_EMBEDDING,
    STRUCTURAL,
    check_channel_sockets,
    pipeline_channels,
)
from adaptive_retrieval.components.routing.intent_router import IntentRouter
from adaptive_retrieval.components.selection.mmr_selector import MMRSelector
from adaptive_retrieval.components.selection.structural_first import StructuralFirst
from adaptive_retrieval.components.stores.graph.graph_store import GraphStore
from adaptive_retrieval.pipelines.query_result import GateOutcome, QueryResult
from adaptive_retrieval.pipelines.store_config import make_graph_store, make_store
from adaptive_retrieval.pipelines.timing import stage_timings
from adaptive_retrieval.pipelines.validation import check_query

#: Where the query-side inputs a channel registers (components/retrieval/channels.py) come from in this pipeline.
CHANNEL_SOURCES = {
    QUERY_EMBEDDING: "query_embedder.vector",
    SPARSE_EMBEDDING: "sparse_embedder.sparse_embedding",
    STRUCTURAL: "router.structural",
}
#: RRF constant of the query pipeline's joiner, chosen on hotpotqa100's training split (scripts/lab/README.md,
#: "Calibrating the router"). A small k lets a bridge passage that only one channel ranks near its top
#: (graph_local) beat passages that every channel ranks mid-list.
FUSION_K = 10
#: The late-interaction ranker (when a profile turns it on) reorders the first 10 documents only: its cost stays
#: bounded and the set of the first 10 never changes (scripts/lab/README.md, "Ablations of single parts": Reranker).
RERANK_TOP = 10


def build_query_pipeline(
    store: Any = None,
    model: str = DEFAULT_MODEL,
    precision: str | None = None,
    profiles: dict[str, dict[str, Any]] | None = None,
    graph_store: GraphStore | None = None,
    graph_ppr: bool = False,
    opt_in: tuple[str, ...] = (),
    fallback_profile: dict[str, Any] | None = None,
) -> Pipeline:
    """Build the query pipeline over ``store`` (default: the server at ``$QDRANT_URL``, else embedded Qdrant Edge
    at ``$ADAPTIVE_QDRANT_PATH`` or the per-user data folder, resolved when it opens; a missing index is an error,
    never an empty store) and ``graph_store`` (default: Neo4j when ``$NEO4J_URI`` is set, else SQLite next to the
    Qdrant folder). ``precision=None``: the models read ``$ADAPTIVE_PRECISION`` at warm-up (default int8).

    The retrieval channels come from the registry (:mod:`adaptive_retrieval.components.retrieval.channels`):
    every channel that is not opt-in, plus the opt-in channels named in ``opt_in``, each added and wired as its
    registration says. ``graph_ppr=True`` (same as ``opt_in=("graph_ppr",)``) adds the personalised-PageRank
    channel (``yaml/query_ppr.yaml``); it is opt-in because through the whole pipeline it lowered full@10 on
    MuSiQue (README, "Personalised PageRank"). ``fallback_profile``: the router's profile for plain searches (default:
    the packaged one with the packaged ``profiles``; give it with profiles of your own)."""
    # The query side only reads: opening an index that is not there fails loudly instead of creating an empty one.
    store = store or make_store(create=False)
    graph_store = graph_store or make_graph_store(qdrant_path=getattr(store, "path", None), create=False)
    channels = pipeline_channels(opt_in=[*opt_in, *(["graph_ppr"] if graph_ppr else [])])
    p = Pipeline()
    # return_list=False: the components read `vector`; an unread list output would be part of every served answer.
    p.add_component("query_embedder", OnnxTextEmbedder(model=model, precision=precision, return_list=False))
    p.add_component("sparse_embedder", Bm25TextEmbedder())
    router = IntentRouter(
        model=model, precision=precision, profiles=profiles, channels=channels, fallback_profile=fallback_profile
    )
    p.add_component("router", router)
    # Channels, joiner, MMR, reranker and StructuralFirst hand their documents on shared, as far as the gate
    # (Haystack copies each list once, not per document); channels send no vectors: MMR reads them by id.
    stores = {"document_store": store, "graph_store": graph_store}
    for channel in channels:
        p.add_component(channel, CHANNELS[channel].build(stores, share_documents=True))
    p.add_component("joiner", WeightedRRFJoiner(channels=channels, k=FUSION_K, share_documents=True))
    p.add_component("mmr", MMRSelector(document_store=store, share_documents=True))
    ranker = LateInteractionRanker(model=model, precision=precision, rerank_top=RERANK_TOP, share_documents=True)
    p.add_component("ranker", ranker)
    p.add_component("structural_first", StructuralFirst(share_documents=True))
    # The gate reads the index's self-calibration (gate_calibration.json) from the store's folder.
    p.add_component("gate", QualityGate(document_store=store, share_documents=True))
    p.add_component("loop", RetryLoop())
    # Where the final list ends: a served YAML answers with its documents without their vectors (see LeanAnswer).
    p.add_component("answer", LeanAnswer())
    p.connect("query_embedder.vector", "router.query_embedding")
    connect_channels(p, channels)
    p.connect("query_embedder.vector", "mmr.query_embedding")
    p.connect("router.weights", "joiner.weights")
    for out, into in (("mmr_lambda", "lambda_threshold"), ("top_k", "top_k"), ("max_per_source", "max_per_source")):
        p.connect(f"router.{out}", f"mmr.{into}")
    p.connect("joiner.documents", "mmr.documents")
    p.connect("mmr.documents", "ranker.documents")
    p.connect("router.top_k", "ranker.top_k")
    p.connect("router.rerank", "ranker.rerank")
    # The section a query names ("Section 3.2", "the last chapter") leads the final list, whatever the reranker did.
    p.connect("ranker.documents", "structural_first.documents")
    p.connect("section.structural_hits", "structural_first.structural")
    p.connect("structural_first.documents", "gate.documents")
    p.connect("query_embedder.vector", "gate.query_embedding")
    p.connect("joiner.fusion", "gate.fusion")
    p.connect("router.strategy", "gate.strategy")
    p.connect("router.next_strategy", "gate.next_strategy")
    # The corrective loop: the query enters at `loop`, which feeds both embedders (so every channel gets fresh
    # inputs on each pass) and gives the router its escalation level; the gate's retry re-enters there.
    p.connect("loop.query", "query_embedder.text")
    p.connect("loop.query", "sparse_embedder.text")
    p.connect("loop.attempt", "router.escalation")
    p.connect("loop.attempt", "gate.attempt")
    p.connect("loop.previous", "gate.previous")
    p.connect("gate.retry", "loop.retry")
    p.connect("gate.documents", "answer.documents")
    p.connect("gate.decision", "answer.decision")
    p.connect("gate.quality", "answer.quality")
    p.connect("query_embedder.vector", "answer.query_embedding")
    connect_query_entry(p)
    return p


def without_answer(pipeline: Pipeline) -> Pipeline:
    """``pipeline`` (changed in place) without its ``LeanAnswer`` components: for a caller that reads the result
    through :func:`run_query`, which takes the gate's documents and renders them (vectors only on request,
    ``QueryResponse``), as ``adaptive-retrieval serve`` does. The answer component is where a YAML-only deployment
    (``hayhooks pipeline deploy-yaml``) ends; here it would only copy the final list once more per query."""
    for name, instance in list(pipeline.walk()):
        if isinstance(instance, LeanAnswer):
            pipeline.remove_component(name)
    return pipeline


def connect_channels(pipeline: Pipeline, channels: list[str], router: str = "router", joiner: str = "joiner") -> None:
    """Wire each channel as its registration says: its query inputs (:data:`CHANNEL_SOURCES` or another channel's
    documents), the router's weights and ``fetch_k``, and its documents into the joiner's socket of its name.

    :raises TypeError: when a channel component does not follow the channel contract
        (:func:`~adaptive_retrieval.components.retrieval.channels.check_channel_sockets`).
    """
    inputs = pipeline.inputs(include_components_with_connected_inputs=True)
    outputs = pipeline.outputs(include_components_with_connected_outputs=True)
    for channel in channels:
        check_channel_sockets(channel, pipeline.get_component(channel), inputs[channel], outputs[channel])
        for socket, source in CHANNELS[channel].inputs.items():
            pipeline.connect(CHANNEL_SOURCES.get(source, source), f"{channel}.{socket}")
        for socket, output in ROUTER_INPUTS.items():
            pipeline.connect(f"{router}.{output}", f"{channel}.{socket}")
        pipeline.connect(f"{channel}.documents", f"{joiner}.{channel}")
        pipeline.connect(f"{channel}.failure", f"{joiner}.{failure_socket(channel)}")


def connect_query_entry(pipeline: Pipeline, entry: str = "loop") -> None:
    """Feed the query text from ``entry`` to every other component input named ``query`` or ``text``.

    Call it after adding every component. The loop entry must be the only component the caller feeds: inside
    a cycle Haystack runs components that wait on optional inputs in name order, so one fed directly (e.g. a
    channel reading ``query``) could run before ``loop`` started the pass, with inputs missing.
    """
    for name, sockets in pipeline.inputs().items():
        for socket in ("text", "query"):
            if name != entry and socket in sockets:
                pipeline.connect(f"{entry}.query", f"{name}.{socket}")


def query_inputs(pipeline: Pipeline, query: str) -> dict[str, dict[str, Any]]:
    """Inputs for every component of ``pipeline`` that takes the query text."""
    inputs: dict[str, dict[str, Any]] = {}
    for name, sockets in pipeline.inputs().items():
        for socket in ("text", "query"):
            if socket in sockets:
                inputs.setdefault(name, {})[socket] = query
    return inputs


def run_query(pipeline: Pipeline, query: str) -> QueryResult:
    """Run ``query`` and gather the documents with the routing, fusion and gate outcome and the stage timings.

    :returns: a :class:`~adaptive_retrieval.pipelines.query_result.QueryResult`: the gate's final list, its
        verdict and reason (``found`` / ``not_found`` / ``uncertain`` and one sentence why; ``None`` for a pipeline
        without a gate) and every attempt; the intent and its confidence, the weights as the joiner used them, the
        strategy, the routing and fusion diagnostics of the last attempt (``failed``: channels the router weighted
        that delivered nothing because they failed, with why), milliseconds per component and the last attempt's
        query vector.
    :raises TypeError: when ``query`` is not a string.
    :raises ValueError: when it is empty or holds only whitespace and control characters, is longer than
        :data:`~adaptive_retrieval.pipelines.validation.MAX_QUERY_CHARS` or is not valid Unicode
        (:func:`~adaptive_retrieval.pipelines.validation.check_query`).
    :raises NoChannelAnsweredError: when every channel the router weighted failed, or some failed and no
        document came back (not "no match": an error).
    """
    check_query(query)
    joiner = pipeline.get_component("joiner")
    with stage_timings() as times:
        # The gate's own outputs: its documents keep their vectors here (the answer component drops them for a
        # served YAML); the embedder's: the query vector, for a caller that asks for embeddings.
        outputs = {"router", "joiner", "gate", "query_embedder"}
        try:
            result = pipeline.run(query_inputs(pipeline, query), include_outputs_from=outputs)
        except PipelineRuntimeError as err:
            # The joiner raises it inside the pipeline (so that a plain Pipeline.run fails too): the caller gets
            # the error itself, not Haystack's wrapper around it.
            if isinstance(err.__cause__, NoChannelAnsweredError):
                raise err.__cause__ from None
            raise
    router = result["router"]
    fusion = result["joiner"]["fusion"]
    # Pipelines without a gate (older YAML) end at the ranker or at MMR.
    ends = ("gate", "structural_first", "ranker", "mmr", "joiner")
    final = next((result[n] for n in ends if "documents" in result.get(n, {})), {})
    documents: list[Document] = list(final.get("documents", []))
    weighted = [c for c in joiner.channels if router["weights"].get(c, 0.0) > 0]
    failed = [c for c in weighted if c not in fusion["sizes"]]
    reasons = {c: fusion.get("failures", {}).get(c, "failed (see the log)") for c in failed}
    if failed and (len(failed) == len(weighted) or not documents):
        # All failed, or some failed and nothing came back: "no match" would hide the failure.
        raise NoChannelAnsweredError(reasons)
    return QueryResult(
        query=query,
        documents=documents,
        intent=router["intent"],
        confidence=router["confidence"],
        weights=fusion["weights"],
        strategy=router["strategy"],
        routing=router["routing"],
        fusion={k: v for k, v in fusion.items() if k != "failures"},
        failed=reasons,
        structural=router.get("structural"),
        gate=GateOutcome.from_outputs(result.get("gate", {})),
        timings_ms={**{k: round(v, 2) for k, v in times.items()}, "total": round(sum(times.values()), 2)},
        query_embedding=as_float_list(result.get("query_embedder", {}).get("vector")),
    )
