"""The adaptive query pipeline: embed once → route → dense + sparse channels → weighted RRF → MMR."""

from __future__ import annotations

from typing import Any

from haystack import Document, Pipeline

from components.fusion.weighted_rrf_joiner import WeightedRRFJoiner
from components.models.paths import DEFAULT_MODEL
from components.models.sparse_text_embedder import Bm25TextEmbedder
from components.models.text_embedder import OnnxTextEmbedder
from components.retrieval.qdrant_dense_retriever import QdrantDenseRetriever
from components.retrieval.qdrant_sparse_retriever import QdrantSparseRetriever
from components.routing.intent_router import IntentRouter
from components.selection.mmr_selector import MMRSelector
from components.stores.qdrant_store import SharedQdrantDocumentStore
from pipelines.store_config import make_store
from pipelines.timing import stage_timings

CHANNELS = ["dense", "sparse"]


def build_query_pipeline(
    store: SharedQdrantDocumentStore | None = None,
    model: str = DEFAULT_MODEL,
    precision: str = "int8",
    profiles: dict[str, dict[str, Any]] | None = None,
) -> Pipeline:
    """Build the query pipeline over ``store`` (default: local Qdrant at ``.adaptive/qdrant``)."""
    store = store or make_store()
    p = Pipeline()
    p.add_component("query_embedder", OnnxTextEmbedder(model=model, precision=precision))
    p.add_component("sparse_embedder", Bm25TextEmbedder())
    p.add_component("router", IntentRouter(model=model, precision=precision, profiles=profiles))
    p.add_component("dense", QdrantDenseRetriever(document_store=store))
    p.add_component("sparse", QdrantSparseRetriever(document_store=store))
    p.add_component("joiner", WeightedRRFJoiner(channels=CHANNELS))
    p.add_component("mmr", MMRSelector())

    p.connect("query_embedder.embedding", "router.query_embedding")
    p.connect("query_embedder.embedding", "dense.query_embedding")
    p.connect("query_embedder.embedding", "mmr.query_embedding")
    p.connect("sparse_embedder.sparse_embedding", "sparse.query_sparse_embedding")
    for channel in CHANNELS:
        p.connect("router.weights", f"{channel}.weights")
        p.connect("router.fetch_k", f"{channel}.top_k")
        p.connect(f"{channel}.documents", f"joiner.{channel}")
    p.connect("router.weights", "joiner.weights")
    p.connect("router.mmr_lambda", "mmr.lambda_threshold")
    p.connect("router.top_k", "mmr.top_k")
    p.connect("joiner.documents", "mmr.documents")
    return p


def query_inputs(pipeline: Pipeline, query: str) -> dict[str, dict[str, Any]]:
    """Inputs for every component of ``pipeline`` that takes the query text."""
    inputs: dict[str, dict[str, Any]] = {}
    for name, sockets in pipeline.inputs().items():
        for socket in ("text", "query"):
            if socket in sockets:
                inputs.setdefault(name, {})[socket] = query
    return inputs


def run_query(pipeline: Pipeline, query: str) -> dict[str, Any]:
    """Run ``query`` and gather the documents with the routing and fusion diagnostics and stage timings.

    :returns: ``documents``, ``intent``, ``confidence``, ``weights`` (as used by the joiner), ``strategy``,
        ``routing``, ``fusion``, ``timings_ms`` (per component and ``total``).
    """
    if not isinstance(query, str) or not query.strip():
        msg = "The query is empty: pass a non-empty question or keywords."
        raise ValueError(msg)
    with stage_timings() as times:
        result = pipeline.run(query_inputs(pipeline, query), include_outputs_from={"router", "joiner"})
    router = result["router"]
    documents: list[Document] = result.get("mmr", {}).get("documents", result.get("joiner", {}).get("documents", []))
    return {
        "query": query,
        "documents": documents,
        "intent": router["intent"],
        "confidence": router["confidence"],
        "weights": result["joiner"]["fusion"]["weights"],
        "strategy": {k: router[k] for k in ("weights", "top_k", "fetch_k", "mmr_lambda", "rerank")},
        "structural": router.get("structural"),
        "routing": router["routing"],
        "fusion": result["joiner"]["fusion"],
        "timings_ms": {**{k: round(v, 2) for k, v in times.items()}, "total": round(sum(times.values()), 2)},
    }
