"""The embedded store (Qdrant Edge) against stock qdrant-client local mode on the same synthetic points.

Both stores get the same points: a 384-d dense vector (clustered, as text embeddings are) and a BM25-like sparse
vector (Zipf-distributed term ids with saturated term frequencies), 4 of 5 points at ``meta.level`` 0 (chunks) and
the rest at level 1 (summaries). Each query asks for 60 hits with their dense vectors, as the channels fetch them,
once unfiltered and once with the channels' ``meta.level == 0`` filter. The stock side is qdrant-haystack's
``QdrantDocumentStore(path=...)`` searched through its stock retrievers. ``same_top10`` is the fraction of queries
whose top-10 ids agree, documents tied with the 10th score being interchangeable (Edge searches HNSW once
optimised; local mode is exact).

Usage::

    python scripts/lab/bench_store.py --sizes 20000,100000 --queries 50 --json bench_store.json
    python scripts/lab/bench_store.py --sizes 20000,100000 --stock-sizes 20000   # Edge alone at 100k
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document
from haystack.dataclasses import SparseEmbedding

from adaptive_retrieval.components.stores import EdgeDocumentStore, QdrantServerSearch
from evaluation.metrics import percentiles

log = logging.getLogger("bench_store")
DIM, VOCAB, TOP = 384, 30000, 60
CHUNKS = {"field": "meta.level", "operator": "==", "value": 0}


def synthetic(n: int, seed: int = 0) -> list[Document]:
    """``n`` documents with clustered dense vectors and Zipfian sparse vectors."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((max(n // 200, 8), DIM))
    dense = centres[rng.integers(0, len(centres), n)] + 0.6 * rng.standard_normal((n, DIM))
    docs = []
    for i in range(n):
        terms = np.unique(np.minimum(rng.zipf(1.3, 40), VOCAB - 1))
        tf = rng.integers(1, 4, len(terms)).astype(float)
        norm = 1.2 * (0.25 + 0.75 * rng.uniform(0.3, 2.0))  # BM25's length normalisation: k1 (1 - b + b len/avg)
        docs.append(
            Document(
                id=f"p{i}",
                content=f"passage {i}",
                meta={"level": 0 if i % 5 else 1, "doc_id": f"s{i // 20}"},
                embedding=dense[i].tolist(),
                sparse_embedding=SparseEmbedding(indices=terms.tolist(), values=(tf * 2.2 / (tf + norm)).tolist()),
            )
        )
    return docs


def queries(docs: list[Document], count: int, seed: int = 1) -> list[tuple[list[float], SparseEmbedding]]:
    """Queries near random documents: a noisy copy of the vector and a few of the document's terms."""
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.choice(len(docs), count, replace=False):
        doc = docs[int(i)]
        vector = (np.asarray(doc.embedding) + 0.8 * rng.standard_normal(DIM)).tolist()
        terms = list(doc.sparse_embedding.indices)[:5]
        out.append((vector, SparseEmbedding(indices=terms, values=[1.0] * len(terms))))
    return out


def timed(search: Any, qs: list[Any]) -> tuple[list[float], list[list[Document]]]:
    times, hits = [], []
    for q in qs:
        start = time.perf_counter()
        found = search(q)
        times.append((time.perf_counter() - start) * 1000)
        hits.append(found)
    return times, hits


def same_top10(ours: list[Document], stock: list[Document]) -> bool:
    """Our top 10 are the stock top 10, where documents that tie with the stock 10th score are interchangeable."""
    if len(stock) <= 10:
        return {d.id for d in ours[:10]} == {d.id for d in stock}
    tenth = stock[9].score
    eligible = {d.id for d in stock if d.score >= tenth - 1e-6 * max(1.0, abs(tenth))}
    return len(ours) >= 10 and all(d.id in eligible for d in ours[:10])


def timing(prefix: str, latencies_ms: list[float]) -> dict[str, float]:
    """``{prefix}_p50_ms`` and ``{prefix}_p95_ms``, rounded (the shared percentile function)."""
    return {f"{prefix}_{k}": round(v, 2) for k, v in percentiles(latencies_ms).items()}


def compare(ours: Any, stock: Any, qs: list[Any]) -> dict[str, Any]:
    ours(qs[0]), stock(qs[0])  # warm both
    ours_t, ours_hits = timed(ours, qs)
    stock_t, stock_hits = timed(stock, qs)
    same = sum(same_top10(a, b) for a, b in zip(ours_hits, stock_hits, strict=True)) / len(qs)
    return {
        **timing("ours", ours_t),
        **timing("stock", stock_t),
        "speedup_p50": round(statistics.median(stock_t) / statistics.median(ours_t), 1),
        "same_top10": round(same, 3),
    }


def concurrency(edge: EdgeDocumentStore, qs: list[Any], threads: int = 2) -> dict[str, float]:
    """Filtered dense queries per second from one thread and from ``threads`` threads sharing the shard."""
    from concurrent.futures import ThreadPoolExecutor

    def run(q: Any) -> None:
        edge.search_dense(q[0], top_k=TOP, filters=CHUNKS)

    work = qs * 4
    start = time.perf_counter()
    for q in work:
        run(q)
    one = len(work) / (time.perf_counter() - start)
    with ThreadPoolExecutor(threads) as pool:
        start = time.perf_counter()
        list(pool.map(run, work))
        many = len(work) / (time.perf_counter() - start)
    return {"qps_1_thread": round(one, 1), f"qps_{threads}_threads": round(many, 1), "ratio": round(many / one, 2)}


def bench(size: int, count: int, folder: Path, with_stock: bool = True) -> dict[str, Any]:
    from haystack_integrations.document_stores.qdrant import QdrantDocumentStore

    docs = synthetic(size)
    qs = queries(docs, count)
    edge = EdgeDocumentStore(path=str(folder / "edge"), embedding_dim=DIM)
    start = time.perf_counter()
    edge.write_documents(docs)
    written = time.perf_counter() - start
    start = time.perf_counter()
    edge.optimize(force=True)
    optimised = time.perf_counter() - start
    log.info("%d points: Edge upsert %.1f s, optimize %.1f s; %s", size, written, optimised, edge.info())
    result: dict[str, Any] = {
        "edge_upsert_s": round(written, 1),
        "edge_optimize_s": round(optimised, 1),
        "concurrency": concurrency(edge, qs),
    }
    log.info("%d points: concurrency %s", size, result["concurrency"])
    if not with_stock:
        for name, filters in (("", None), ("_filtered", CHUNKS)):
            dense_t, _ = timed(lambda q, f=filters: edge.search_dense(q[0], top_k=TOP, filters=f), qs)
            sparse_t, _ = timed(lambda q, f=filters: edge.search_sparse(q[1], top_k=TOP, filters=f), qs)
            result["dense" + name] = timing("ours", dense_t)
            result["sparse" + name] = timing("ours", sparse_t)
            log.info(
                "%d points%s (Edge only): dense %s sparse %s",
                size,
                name,
                result["dense" + name],
                result["sparse" + name],
            )
        edge.close()
        return result
    stock = QdrantDocumentStore(
        path=str(folder / "local"), embedding_dim=DIM, use_sparse_embeddings=True, sparse_idf=True, progress_bar=False
    )
    start = time.perf_counter()
    stock.write_documents(docs)
    log.info("%d points: local mode upsert %.1f s", size, time.perf_counter() - start)
    server = QdrantServerSearch(stock)
    for name, filters in (("", None), ("_filtered", CHUNKS)):
        result["dense" + name] = compare(
            lambda q, f=filters: edge.search_dense(q[0], top_k=TOP, filters=f),
            lambda q, f=filters: server.search_dense(q[0], top_k=TOP, filters=f),
            qs,
        )
        result["sparse" + name] = compare(
            lambda q, f=filters: edge.search_sparse(q[1], top_k=TOP, filters=f),
            lambda q, f=filters: server.search_sparse(q[1], top_k=TOP, filters=f),
            qs,
        )
        log.info("%d points%s: dense %s sparse %s", size, name, result["dense" + name], result["sparse" + name])
    stock.close()
    edge.close()
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="20000,100000")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument(
        "--stock-sizes",
        help="sizes at which stock local mode is measured too (default: all; its 100k upsert takes "
        "about an hour on 2 cores)",
    )
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    out: dict[str, Any] = {"sizes": {}}
    sizes = [int(s) for s in args.sizes.split(",")]
    stock_sizes = {int(s) for s in args.stock_sizes.split(",")} if args.stock_sizes else set(sizes)
    for size in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            out["sizes"][str(size)] = bench(size, args.queries, Path(tmp), with_stock=size in stock_sizes)
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
