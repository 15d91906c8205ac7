"""Qdrant local mode searched by the stock store vs through SharedQdrantDocumentStore's local caches.

    python scripts/bench_local_store.py [--sizes 1000,10000,100000] [--queries 50] [--top-k 60] [--json OUT.json]

For each size a fresh local-mode collection (on disk, in a temporary folder) gets that many synthetic points:
a random unit 384-d dense vector and a BM25-like sparse vector (Zipf-distributed terms), the shape of this
package's chunks. The same queries then run through the stock ``QdrantDocumentStore`` search methods (Qdrant
local mode: sparse vectors scored one point at a time in Python, every hit's payload deep-copied and converted)
and through ``SharedQdrantDocumentStore`` (``LocalSparseIndex`` + ``LocalPointCache``), with
``return_embedding=True`` as the channels ask. Printed per size: p50/p95 of each, the speed-up, how many queries
returned the same ids (and, for sparse, bit-identical scores), and the cost of (re)building the sparse index,
which the first sparse query after a write pays.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from haystack import Document  # noqa: E402
from haystack.dataclasses import SparseEmbedding  # noqa: E402
from haystack_integrations.document_stores.qdrant import QdrantDocumentStore  # noqa: E402

from components.stores.qdrant_store import release_all_clients  # noqa: E402
from pipelines.eval_metrics import percentiles  # noqa: E402
from pipelines.store_config import make_store  # noqa: E402

logger = logging.getLogger("bench_local_store")
VOCABULARY = 30_000


def _sparse(rng: np.random.Generator, terms: int) -> SparseEmbedding:
    chosen = np.unique(np.minimum(rng.zipf(1.3, size=terms), VOCABULARY))
    values = rng.uniform(0.3, 2.5, len(chosen))
    return SparseEmbedding(indices=[int(i) for i in chosen], values=[float(v) for v in values])


def _documents(rng: np.random.Generator, start: int, count: int) -> list[Document]:
    dense = rng.normal(size=(count, 384)).astype(np.float32)
    dense /= np.linalg.norm(dense, axis=1, keepdims=True)
    return [
        Document(
            id=f"chunk-{start + i}",
            content=f"synthetic chunk {start + i} " * 20,
            meta={"level": 0, "source": f"file-{(start + i) // 7}", "section_path": ["A", "B"], "position": i},
            embedding=dense[i].tolist(),
            sparse_embedding=_sparse(rng, int(rng.integers(20, 80))),
        )
        for i in range(count)
    ]


def _time(fn: Any, queries: list[Any]) -> tuple[list[list[Document]], list[float]]:
    results, times = [], []
    for query in queries:
        start = time.perf_counter()
        results.append(fn(query))
        times.append((time.perf_counter() - start) * 1000)
    return results, times


def measure(size: int, queries: int, top_k: int, seed: int = 0) -> dict[str, Any]:
    """Fill a collection of ``size`` points and time ``queries`` sparse and dense searches both ways."""
    rng = np.random.default_rng(seed)
    with tempfile.TemporaryDirectory() as folder:
        store = make_store(path=str(Path(folder) / "qdrant"))
        started = time.perf_counter()
        for start in range(0, size, 2_000):
            store.write_documents(_documents(rng, start, min(2_000, size - start)))
            logger.info("size %d: %d points written", size, min(size, start + 2_000))
        fill_s = time.perf_counter() - started

        sparse_queries = [_sparse(rng, 8) for _ in range(queries)]
        dense_queries = [list(rng.normal(size=384)) for _ in range(queries)]
        shared = store.client._shared
        with shared.lock:
            started = time.perf_counter()
            shared.sparse_index(store.index, "text-sparse")
            build_ms = (time.perf_counter() - started) * 1000

        def ours_sparse(q: SparseEmbedding) -> list[Document]:
            return store._query_by_sparse(q, top_k=top_k, return_embedding=True)

        def stock_sparse(q: SparseEmbedding) -> list[Document]:
            return QdrantDocumentStore._query_by_sparse(store, q, top_k=top_k, return_embedding=True)

        def ours_dense(q: list[float]) -> list[Document]:
            return store._query_by_embedding(q, top_k=top_k, return_embedding=True)

        def stock_dense(q: list[float]) -> list[Document]:
            return QdrantDocumentStore._query_by_embedding(store, q, top_k=top_k, return_embedding=True)

        ours_sparse(sparse_queries[0])
        ours_dense(dense_queries[0])  # the point cache starts empty: fill it with one query, as a warm server is
        report: dict[str, Any] = {"size": size, "fill_s": fill_s, "sparse_index_build_ms": build_ms}
        for name, ours, stock, asked in (
            ("sparse", ours_sparse, stock_sparse, sparse_queries),
            ("dense", ours_dense, stock_dense, dense_queries),
        ):
            stock_results, stock_times = _time(stock, asked)
            our_results, our_times = _time(ours, asked)
            same_ids = sum(
                [d.id for d in a] == [d.id for d in b] for a, b in zip(our_results, stock_results, strict=True)
            )
            same_scores = sum(
                [d.score for d in a] == [d.score for d in b] for a, b in zip(our_results, stock_results, strict=True)
            )
            report[name] = {
                "stock": percentiles(stock_times),
                "ours": percentiles(our_times),
                "speedup_p50": statistics.median(stock_times) / statistics.median(our_times),
                "same_ids": same_ids,
                "same_scores": same_scores,
                "queries": len(asked),
            }
        store.close()
        release_all_clients()
    return report


def markdown(reports: list[dict[str, Any]]) -> str:
    """The results as a markdown table."""
    lines = [
        "| points | search | stock p50 / p95 ms | ours p50 / p95 ms | speed-up (p50) | same ids | same scores |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in reports:
        for name in ("sparse", "dense"):
            m = r[name]
            lines.append(
                f"| {r['size']:,} | {name} | {m['stock']['p50_ms']:.1f} / {m['stock']['p95_ms']:.1f} | "
                f"{m['ours']['p50_ms']:.2f} / {m['ours']['p95_ms']:.2f} | {m['speedup_p50']:.1f}x | "
                f"{m['same_ids']}/{m['queries']} | {m['same_scores']}/{m['queries']} |"
            )
    lines.append("")
    lines += [f"sparse index (re)build at {r['size']:,} points: {r['sparse_index_build_ms']:.0f} ms" for r in reports]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> list[dict[str, Any]]:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated point counts")
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--top-k", type=int, default=60, help="hits per search (the channels over-fetch 3 x 20)")
    parser.add_argument("--json", help="write the report here")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(name)s] %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    reports = [measure(int(s), args.queries, args.top_k) for s in args.sizes.split(",")]
    print(markdown(reports))
    if args.json:
        Path(args.json).write_text(json.dumps(reports, indent=2))
    return reports


if __name__ == "__main__":
    main()
