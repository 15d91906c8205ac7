"""Does the graph-local channel find bridge passages? Recall@10 and full-support@10 of HotpotQA bridge questions
for dense+sparse vs dense+sparse+graph_local, plus graph build time and size per 1,000 chunks.

Corpus: ../shared/data/hotpotqa100 (994 passages) with the 6,119 2WikiMultihopQA passages mixed in as
distractors; each passage is one chunk (id, title, text) fed straight to the embedders and writers of the
indexing pipeline. The Qdrant index is cached under --cache (keyed by the corpus fingerprint); the graph is
rebuilt when missing or with --rebuild-graph, and timed.

The channels are the components of ``build_query_pipeline`` (router, dense, sparse, graph_local), run once per
question; the fused lists are then computed for each variant with the pipeline's ``WeightedRRFJoiner``:

- ``router``: the router's per-query weights, restricted to the variant's channels (renormalised);
- ``equal``:  equal weights over the variant's channels;
- ``+mmr``:   the router variant followed by the pipeline's ``MMRSelector`` (what the pipeline returns).

    nice -n 10 .venv/bin/python scripts/lab/eval_graph.py
    nice -n 10 .venv/bin/python scripts/lab/eval_graph.py --distractors 0        # hotpotqa100 alone, quick
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document

from adaptive_retrieval.components import stable_id
from adaptive_retrieval.components.indexing import (
    CommunityDetector,
    EntityExtractor,
    GraphWriter,
    ReplacingDocumentWriter,
)
from adaptive_retrieval.components.models import Bm25DocumentEmbedder, OnnxDocumentEmbedder
from adaptive_retrieval.components.stores import SQLiteGraphStore
from adaptive_retrieval.pipelines import build_query_pipeline, make_store
from evaluation.data import EvalSet, Question, load_hotpot, load_wiki2
from evaluation.metrics import full_at_k, passage_ranking, recall_at_k

ROOT = Path(__file__).resolve().parents[2]
BATCH = 512


def documents_of(evalset: EvalSet) -> list[Document]:
    """One chunk per passage, with the meta the pipelines expect (doc_id, title, level 0) and its passage id."""
    return [
        Document(
            id=stable_id("eval", p.id),
            content=p.text,
            meta={
                "doc_id": stable_id("eval-doc", p.id),
                "passage_id": p.id,
                "title": p.title,
                "source": p.id,
                "section_path": [],
                "level": 0,
            },
        )
        for p in evalset.passages
    ]


def index_vectors(docs: list[Document], folder: Path) -> float:
    """Sparse + dense embeddings into Qdrant at ``folder/qdrant`` (skipped when cached); returns seconds."""
    marker = folder / "qdrant.done"
    if marker.exists():
        return float(json.loads(marker.read_text())["seconds"])
    shutil.rmtree(folder / "qdrant", ignore_errors=True)
    store = make_store(path=str(folder / "qdrant"))
    sparse = Bm25DocumentEmbedder(meta_fields_to_embed=["title"], progress_bar=False)
    dense = OnnxDocumentEmbedder(meta_fields_to_embed=["title"], progress_bar=False)
    writer = ReplacingDocumentWriter(document_store=store)
    sparse.warm_up()
    dense.warm_up()
    started = time.perf_counter()
    for start in range(0, len(docs), BATCH):
        batch = docs[start : start + BATCH]
        writer.run(documents=dense.run(documents=sparse.run(documents=batch)["documents"])["documents"])
        print(f"  embedded {start + len(batch)}/{len(docs)}", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - started
    marker.write_text(json.dumps({"seconds": seconds, "chunks": len(docs)}))
    return seconds


def build_graph(docs: list[Document], graph: SQLiteGraphStore) -> dict[str, float]:
    """Extraction + graph writing, then communities; returns timings and sizes."""
    graph.clear()
    extractor, writer = EntityExtractor(), GraphWriter(graph_store=graph)
    detector = CommunityDetector(graph_store=graph)
    detector.warm_up()
    started = time.perf_counter()
    for start in range(0, len(docs), BATCH):
        writer.run(entities=extractor.run(documents=docs[start : start + BATCH])["entities"])
    write_s = time.perf_counter() - started
    started = time.perf_counter()
    communities = detector.run(force=True)["communities"]
    community_s = time.perf_counter() - started
    return {
        "extract_write_s": write_s,
        "community_s": community_s,
        "communities": communities,
        "bytes": graph.size_bytes(),
        **graph.stats(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hotpot", default=str(ROOT.parent / "shared/data/hotpotqa100"))
    parser.add_argument("--distractors", default=str(ROOT.parent / "shared/data/wiki2_corpus/corpus.json"))
    parser.add_argument("--limit", type=int, default=None, help="use only the first N distractor passages")
    parser.add_argument("--cache", default=str(ROOT / ".adaptive/eval-hotpot-graph"))
    parser.add_argument("--rebuild-graph", action="store_true", help="rebuild the graph even when cached")
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)

    evalset = load_hotpot(args.hotpot)
    if args.distractors != "0" and args.limit != 0:
        evalset = evalset.with_distractors(load_wiki2(args.distractors, limit=args.limit))
    docs = documents_of(evalset)
    folder = Path(args.cache) / evalset.fingerprint()[:12]
    folder.mkdir(parents=True, exist_ok=True)
    print(f"corpus: {evalset.name}, {len(docs)} chunks; cache {folder}")

    embed_s = index_vectors(docs, folder)
    graph = SQLiteGraphStore(path=str(folder / "graph.sqlite"))
    graph_marker = folder / "graph.json"
    if args.rebuild_graph or not graph_marker.exists() or graph.chunk_count() != len(docs):
        build = build_graph(docs, graph)
        graph_marker.write_text(json.dumps(build))
    build = json.loads(graph_marker.read_text())
    per_k = 1000 / len(docs)
    print(
        f"index: dense+sparse embedding {embed_s:.1f} s (cached run reports the original time); graph: "
        f"{build['entities']} entities, {build['mentions']} mentions, {build['relations']} relations, "
        f"{build['communities']} communities"
    )
    print(
        f"graph build per 1,000 chunks: extraction+writing {build['extract_write_s'] * per_k:.2f} s, "
        f"communities {build['community_s'] * per_k:.2f} s, size {build['bytes'] * per_k / 2**20:.2f} MiB "
        f"(total {build['extract_write_s'] + build['community_s']:.1f} s, {build['bytes'] / 2**20:.1f} MiB)"
    )

    store = make_store(path=str(folder / "qdrant"))
    pipeline = build_query_pipeline(store=store, graph_store=graph)
    embedder, sparse_embedder, router = (
        pipeline.get_component(n) for n in ("query_embedder", "sparse_embedder", "router")
    )
    dense, sparse, local = (pipeline.get_component(n) for n in ("dense", "sparse", "graph_local"))
    joiner, mmr = pipeline.get_component("joiner"), pipeline.get_component("mmr")
    for component in (embedder, sparse_embedder, router):
        component.warm_up()

    variants = {"dense+sparse": ("dense", "sparse"), "dense+sparse+graph_local": ("dense", "sparse", "graph_local")}
    _, held_out = evalset.split(held_out=0.3, seed=0)
    held_ids = {q.id for q in held_out}
    # rows[variant] = [(question type, held out?, recall@k, full@k), ...]
    rows: dict[str, list[tuple[str, bool, float, float]]] = {}
    local_ms: list[float] = []

    def score(name: str, question: Question, documents: list[Document]) -> None:
        ranked = passage_ranking(documents)
        gold = question.gold_ids
        row = (
            question.type,
            question.id in held_ids,
            recall_at_k(ranked, gold, args.k),
            full_at_k(ranked, gold, args.k),
        )
        rows.setdefault(name, []).append(row)

    for question in evalset.questions:
        vector = embedder.run(text=question.question)["vector"]
        route = router.run(query=question.question, query_embedding=vector)
        fetch_k = route["fetch_k"]
        query_sparse = sparse_embedder.run(text=question.question)["sparse_embedding"]
        lists = {
            "dense": dense.run(query_embedding=vector, top_k=fetch_k)["documents"],
            "sparse": sparse.run(query_sparse_embedding=query_sparse, top_k=fetch_k)["documents"],
        }
        started = time.perf_counter()
        lists["graph_local"] = local.run(query=question.question, query_embedding=vector, top_k=fetch_k)["documents"]
        local_ms.append((time.perf_counter() - started) * 1000)
        for name, channels in variants.items():
            router_weights = {c: route["weights"].get(c, 0.0) for c in channels}
            for mode, weights in (("router", router_weights), ("equal", dict.fromkeys(channels, 1.0))):
                fused = joiner.run(weights=weights, **{c: lists[c] for c in channels})["documents"]
                score(f"{name} [{mode}]", question, fused)
                if mode == "router":
                    lam = route["mmr_lambda"]
                    picked = mmr.run(documents=fused, query_embedding=vector, lambda_threshold=lam, top_k=args.k)
                    score(f"{name} [router+mmr]", question, picked["documents"])

    def mean(values: list[float]) -> float:
        return sum(values) / len(values) if values else float("nan")

    n_bridge = sum(q.type == "bridge" for q in evalset.questions)
    n_held = sum(q.type == "bridge" and q.id in held_ids for q in evalset.questions)
    print(
        f"\n{n_bridge} bridge questions of {len(evalset.questions)} ({n_held} of them in the held-out 30% split, "
        f"never used to choose parameters); k = {args.k}"
    )
    print(
        f"{'variant':38s} {'bridge R@k':>10s} {'full@k':>7s} | {'held-out R@k':>12s} {'full@k':>7s} | {'all R@k':>8s}"
    )
    for name, values in rows.items():
        bridge = [v for v in values if v[0] == "bridge"]
        held = [v for v in bridge if v[1]]
        print(
            f"{name:38s} {mean([v[2] for v in bridge]):10.3f} {mean([v[3] for v in bridge]):7.3f} | "
            f"{mean([v[2] for v in held]):12.3f} {mean([v[3] for v in held]):7.3f} | "
            f"{mean([v[2] for v in values]):8.3f}"
        )
    local_ms.sort()
    p50, p95 = local_ms[len(local_ms) // 2], local_ms[int(len(local_ms) * 0.95)]
    print(f"\ngraph_local latency per query (shared 2-core machine): p50 {p50:.1f} ms, p95 {p95:.1f} ms")


if __name__ == "__main__":
    main()
