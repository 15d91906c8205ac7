"""Latency, throughput and memory of the adaptive pipelines, and MMRSelector vs Haystack's diversity ranker.

    python scripts/lab/bench.py [--sizes 1000,10000] [--queries 40] [--json OUT.json]
    python scripts/lab/bench.py --sizes 1000 --filler 100000   # the same 1,000 indexed passages in a 100k-point store

For every size N (synthetic passages cut from the Python language reference, one chunk each) a fresh process
indexes N passages through yaml/indexing.yaml into its own Qdrant folder under .adaptive/bench-N (reused by
later runs while the corpus and the YAML are unchanged), then answers --queries queries through yaml/query.yaml:

- indexing throughput (passages/s) and the process's peak RSS while indexing;
- p50/p95 per stage (Haystack component spans via adaptive_retrieval.pipelines.timing.stage_timings: the
  component's run plus Haystack's copy of its inputs) and end to end, and the peak RSS after querying.

Then, on the smallest index, the fused candidates of every query go through MMRSelector and through
SentenceTransformersDiversityRanker(strategy="maximum_margin_relevance") with the same λ and top_k. For the
"same selection" check both see the same vectors (sentence-transformers fp32 of each candidate's content, which is
what the stock ranker computes); the speed-up is the stock ranker's median time (it re-embeds the candidates
and the query on every call) over MMRSelector's (it reuses the vectors the documents carry).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[2]

from adaptive_retrieval.pipelines.processes import limit_blas_threads  # noqa: E402
from evaluation.data import EvalSet, Passage  # noqa: E402
from evaluation.metrics import percentiles  # noqa: E402
from evaluation.systems import AdaptiveSystem, minilm_dir  # noqa: E402

QUERY_TEMPLATES = (
    "What does the reference say about {span}?",
    "{span}",
    "Compare {span} and {other}",
    "Explain how {span} works",
    "Which statement is used for {span}?",
    "What are the main themes of {span}?",
)


def _words() -> list[str]:
    from pydoc_data.topics import topics

    return " ".join(topics.values()).split()


def synthetic_passages(n: int, seed: int = 0) -> list[Passage]:
    """``n`` passages of 60-140 words from random windows of the Python language reference (deterministic)."""
    words = _words()
    rng = random.Random(seed)
    passages = []
    for i in range(n):
        start = rng.randrange(len(words) - 200)
        text = " ".join(words[start : start + rng.randint(60, 140)])
        passages.append(Passage(id=f"syn-{i}", title=" ".join(words[start : start + 3]), text=text))
    return passages


def synthetic_queries(passages: list[Passage], n: int, seed: int = 1) -> list[str]:
    """``n`` queries built from spans of indexed passages with templates that exercise several intents."""
    rng = random.Random(seed)
    queries = []
    for i in range(n):
        words = rng.choice(passages).text.split()
        start = rng.randrange(max(1, len(words) - 8))
        span = " ".join(words[start : start + rng.randint(3, 8)])
        other = " ".join(rng.choice(passages).text.split()[:3])
        queries.append(QUERY_TEMPLATES[i % len(QUERY_TEMPLATES)].format(span=span, other=other))
    return queries


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far (Linux reports ru_maxrss in KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def folder_bytes(folder: Path) -> int:
    """Bytes on disk of every file under ``folder`` (the Qdrant folder and the graph file of one index): blocks
    allocated, since Qdrant's write-ahead log and segments are pre-sized sparse files (64 MB and more apparent)."""
    return sum(f.stat().st_blocks * 512 for f in folder.rglob("*") if f.is_file())


def bench_root(root: Path, size: int) -> Path:
    return root / f"bench-{size}"


def add_filler(store: Any, total: int, seed: int = 2) -> int:
    """Fill the vector store up to ``total`` points with copies of its chunks under new ids, dense vectors moved by
    noise (renormalised) and the same sparse vectors; the graph is left as it is. Returns the points added."""
    from haystack import Document

    missing = total - store.count_documents()
    if missing <= 0:
        return 0
    chunks = [d for d in store.filter_documents({"field": "meta.level", "operator": "==", "value": 0}) if d.embedding]
    if not chunks:
        return 0
    rng = np.random.default_rng(seed)
    for start in range(0, missing, 5000):
        batch = []
        for i in range(start, min(start + 5000, missing)):
            base = chunks[i % len(chunks)]
            vector = np.asarray(base.embedding) + 0.05 * rng.standard_normal(len(base.embedding))
            meta = {**base.meta, "doc_id": f"filler-{i}", "source": f"filler:{i}"}
            batch.append(
                Document(
                    id=f"filler-{i}",
                    content=base.content,
                    meta=meta,
                    embedding=(vector / np.linalg.norm(vector)).tolist(),
                    sparse_embedding=base.sparse_embedding,
                )
            )
        store.write_documents(batch)
    store.optimize(force=True)
    return missing


def worker(size: int, queries: int, root: Path, filler: int = 0) -> dict[str, Any]:
    """Index ``size`` synthetic passages (or reuse that index), fill the vector store up to ``filler`` points when
    asked, and time ``queries`` queries, in this process."""
    from adaptive_retrieval.pipelines import run_query

    passages = synthetic_passages(size)
    evalset = EvalSet(f"synthetic-{size}", passages, [])
    system = AdaptiveSystem(bench_root(root, size))
    folder = system.root / system.key(evalset)
    memo = folder / "bench-index.json"
    stats = system.index(evalset)
    if stats["cached"] and memo.exists():
        indexing = json.loads(memo.read_text())
        indexing["cached"] = True
    else:
        indexing = {
            "passages": size,
            "chunks": stats["chunks"],
            "seconds": stats["seconds"],
            "passages_per_s": size / stats["seconds"],
            "peak_rss_mb": peak_rss_mb(),
            "disk_mb": folder_bytes(folder) / 2**20,
        }
        memo.write_text(json.dumps(indexing))
        indexing["cached"] = False
    filled = 0
    if filler:
        filled = add_filler(system.pipeline.get_component("dense").document_store, filler)
    pipeline = system.pipeline
    asked = synthetic_queries(passages, queries)
    for query in asked[:3]:
        run_query(pipeline, query)
    stages: dict[str, list[float]] = defaultdict(list)
    wall: list[float] = []
    intents: dict[str, int] = defaultdict(int)
    for query in asked:
        start = time.perf_counter()
        result = run_query(pipeline, query)
        wall.append((time.perf_counter() - start) * 1000)
        intents[result.intent] += 1
        for stage, ms in result.timings_ms.items():
            stages[stage].append(ms)
    return {
        "size": size,
        "indexing": indexing,
        "queries": len(asked),
        "gate_signals": gate_signals_peer(pipeline, asked),
        "stages": {stage: percentiles(v) for stage, v in stages.items()},
        "end_to_end": percentiles(wall),
        "intents": dict(intents),
        "peak_rss_mb_after_queries": peak_rss_mb(),
        "store_points": store_points(pipeline),
        "filler_points": filled,
    }


def gate_signals_peer(pipeline: Any, asked: list[str]) -> dict[str, Any]:
    """The gate's signals on each query's returned list, timed with soft matching of the asked words (the gate
    as configured) and with stems only (its peer, ``soft_match=False``), alternating on the same lists."""
    from adaptive_retrieval.components.gating import QualityGate
    from adaptive_retrieval.pipelines import run_query

    gate = pipeline.get_component("gate")
    stems_only = QualityGate(signal_k=gate.signal_k, soft_match=False)
    for name in ("weights", "bias", "pass_threshold", "asked_threshold", "asked_floor"):
        setattr(stems_only, name, getattr(gate, name))  # the same model as the gate's calibration
    embedder = pipeline.get_component("query_embedder")
    times: dict[str, list[float]] = {"soft": [], "stems": []}
    differ = 0
    for query in asked:
        documents = run_query(pipeline, query).documents
        vector = list(embedder.run(text=query)["vector"])
        out = {}
        for name, judge in (("soft", gate), ("stems", stems_only)):
            start = time.perf_counter()
            out[name] = judge.signals(documents, query, vector)
            times[name].append((time.perf_counter() - start) * 1000)
        differ += out["soft"]["asked"] != out["stems"]["asked"]
    soft, stems = percentiles(times["soft"]), percentiles(times["stems"])
    return {
        "soft": soft,
        "stems": stems,
        "p50_ratio": soft["p50_ms"] / stems["p50_ms"],
        "asked_differs": differ,
        "asked_floor": gate.asked_floor,
    }


def store_points(pipeline: Any) -> int:
    return pipeline.get_component("dense").document_store.count_documents()


def run_worker(size: int, queries: int, root: Path, timeout: int | None, filler: int = 0) -> dict[str, Any]:
    """Run :func:`worker` in a fresh process, so its peak memory is its own."""
    out = root / f"bench-{size}.result.json"
    command = [sys.executable, __file__, "--worker", str(size), "--queries", str(queries), "--root", str(root)]
    command += ["--filler", str(filler)] if filler else []
    subprocess.run([*command, "--worker-out", str(out)], check=True, timeout=timeout)
    return json.loads(out.read_text())


def mmr_comparison(size: int, queries: int, root: Path, lambda_: float = 0.5, top_k: int = 10) -> dict[str, Any]:
    """MMRSelector vs SentenceTransformersDiversityRanker on the fused candidates of the adaptive pipeline."""
    from haystack_integrations.components.rankers.sentence_transformers import SentenceTransformersDiversityRanker
    from sentence_transformers import SentenceTransformer

    from adaptive_retrieval.components.selection import MMRSelector
    from adaptive_retrieval.pipelines import query_inputs

    passages = synthetic_passages(size)
    system = AdaptiveSystem(bench_root(root, size))
    system.index(EvalSet(f"synthetic-{size}", passages, []))
    pipeline = system.pipeline
    ranker = SentenceTransformersDiversityRanker(
        model=minilm_dir(), top_k=top_k, strategy="maximum_margin_relevance", lambda_threshold=lambda_
    )
    ranker.warm_up()
    model = SentenceTransformer(minilm_dir(), device="cpu", local_files_only=True)
    exact = MMRSelector(top_k=top_k, lambda_threshold=lambda_, relevance="query", duplicate_threshold=None)
    default = MMRSelector(top_k=top_k, lambda_threshold=lambda_)
    stock_ms: list[float] = []
    ours_ms: list[float] = []
    same: list[bool] = []
    overlap_default: list[float] = []
    sizes: list[int] = []
    asked = synthetic_queries(passages, queries, seed=2)
    for n, query in enumerate(asked):
        result = pipeline.run(query_inputs(pipeline, query), include_outputs_from={"joiner", "query_embedder"})
        candidates = list(result["joiner"]["documents"])
        if len(candidates) <= top_k:
            continue
        sizes.append(len(candidates))
        # The vectors the stock ranker computes (fp32 sentence-transformers on the content), given to ours up front.
        vectors = model.encode([d.content or "" for d in candidates], normalize_embeddings=True)
        query_vector = model.encode([query], normalize_embeddings=True)[0].tolist()
        with_vectors = [replace(d, embedding=v.tolist()) for d, v in zip(candidates, vectors, strict=True)]
        start = time.perf_counter()
        stock = ranker.run(query=query, documents=candidates, top_k=top_k, lambda_threshold=lambda_)["documents"]
        elapsed_stock = (time.perf_counter() - start) * 1000
        start = time.perf_counter()
        ours = exact.run(documents=with_vectors, query_embedding=query_vector)["documents"]
        elapsed_ours = (time.perf_counter() - start) * 1000
        if n >= 2:  # the first calls pay one-off costs (thread pools, caches)
            stock_ms.append(elapsed_stock)
            ours_ms.append(elapsed_ours)
        same.append([d.id for d in stock] == [d.id for d in ours])
        # The pipeline's own configuration: fused-score relevance on the ONNX int8 vectors the channels return.
        piped = default.run(documents=candidates, query_embedding=result["query_embedder"]["vector"])["documents"]
        overlap_default.append(len({d.id for d in piped} & {d.id for d in stock}) / top_k)
    stock_p50 = float(np.median(stock_ms))
    ours_p50 = float(np.median(ours_ms))
    return {
        "queries": len(same),
        "candidates_mean": float(np.mean(sizes)),
        "lambda": lambda_,
        "top_k": top_k,
        "stock_ranker": percentiles(stock_ms),
        "mmr_selector": percentiles(ours_ms),
        "mmr_speedup": stock_p50 / ours_p50,
        "mmr_same_selection": all(same),
        "same_selection_fraction": float(np.mean(same)),
        "pipeline_default_overlap_with_stock": float(np.mean(overlap_default)),
    }


def markdown(report: dict[str, Any]) -> str:
    lines = [
        "| chunks | index passages/s | index peak RSS MB | disk MB | p50 ms | p95 ms | peak RSS MB after queries |"
    ]
    lines.append("|---|---|---|---|---|---|---|")
    for size, r in report["sizes"].items():
        idx = r["indexing"]
        lines.append(
            f"| {size} | {idx['passages_per_s']:.1f} | {idx['peak_rss_mb']:.0f} | "
            f"{idx.get('disk_mb', float('nan')):.1f} | {r['end_to_end']['p50_ms']:.1f} | "
            f"{r['end_to_end']['p95_ms']:.1f} | {r['peak_rss_mb_after_queries']:.0f} |"
        )
    lines += ["", f"stages at {report['stage_size']} chunks:", "", "| stage | p50 ms | p95 ms |", "|---|---|---|"]
    for stage, v in report["stages"].items():
        lines.append(f"| {stage} | {v['p50_ms']:.2f} | {v['p95_ms']:.2f} |")
    peer = report.get("gate_signals")
    if peer:
        lines += [
            "",
            f"gate signals per query (same lists, alternating): soft matching of the asked words p50 "
            f"{peer['soft']['p50_ms']:.2f} ms / p95 {peer['soft']['p95_ms']:.2f} ms, stems only p50 "
            f"{peer['stems']['p50_ms']:.2f} ms / p95 {peer['stems']['p95_ms']:.2f} ms "
            f"({peer['p50_ratio']:.2f}x); asked differs on {peer['asked_differs']} queries",
        ]
    mmr = report.get("mmr")
    if mmr:
        lines += [
            "",
            f"MMR over {mmr['candidates_mean']:.0f} candidates, λ={mmr['lambda']}, top_k={mmr['top_k']}, "
            f"{mmr['queries']} queries: stock SentenceTransformersDiversityRanker p50 "
            f"{mmr['stock_ranker']['p50_ms']:.1f} ms, MMRSelector p50 {mmr['mmr_selector']['p50_ms']:.3f} ms "
            f"-> {mmr['mmr_speedup']:.0f}x faster; "
            f"same selection: {mmr['mmr_same_selection']} ({mmr['same_selection_fraction']:.0%} of queries); "
            f"pipeline default (fused-score relevance, int8 vectors) overlaps the stock top {mmr['top_k']} by "
            f"{mmr['pipeline_default_overlap_with_stock']:.0%}",
        ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict[str, Any] | None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000,10000", help="comma-separated chunk counts, e.g. 1000,10000,100000")
    parser.add_argument("--queries", type=int, default=40, help="timed queries per size")
    parser.add_argument("--mmr-queries", type=int, default=30, help="queries for the MMR comparison (0 skips it)")
    parser.add_argument("--root", default=str(ROOT / ".adaptive"))
    parser.add_argument("--timeout", type=int, default=None, help="seconds allowed per size (default: none)")
    parser.add_argument("--json", help="write the report here")
    parser.add_argument(
        "--filler",
        type=int,
        default=0,
        help="after indexing, fill the vector store up to this many points with perturbed copies of its chunks "
        "(the graph stays as indexed): the store's share of the latency at scale without hours of indexing",
    )
    parser.add_argument("--worker", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--worker-out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    limit_blas_threads()  # as the CLI and the server run (the stock peer in the same process shares it)
    root = Path(args.root)
    if args.worker:
        from adaptive_retrieval.components.stores import release_all_clients

        result = worker(args.worker, args.queries, root, args.filler)
        Path(args.worker_out).write_text(json.dumps(result))
        release_all_clients()
        return None
    sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    if not sizes or min(sizes) < 20:
        raise SystemExit("--sizes needs chunk counts >= 20")
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "sizes": {},
    }
    for size in sizes:
        print(f"[bench] {size} chunks ...", file=sys.stderr, flush=True)
        try:
            report["sizes"][str(size)] = run_worker(size, args.queries, root, args.timeout, args.filler)
        except subprocess.TimeoutExpired:
            print(f"[bench] {size} chunks: over --timeout, skipped", file=sys.stderr)
            report["sizes"][str(size)] = {"skipped": f"over {args.timeout} s"}
    measured = {s: r for s, r in report["sizes"].items() if "skipped" not in r}
    if not measured:
        raise SystemExit("no size finished")
    first = min(measured, key=int)
    report["stage_size"] = int(first)
    report["stages"] = measured[first]["stages"]
    report["end_to_end"] = measured[first]["end_to_end"]
    report["gate_signals"] = measured[first].get("gate_signals")
    report["index_passages_per_s"] = measured[first]["indexing"]["passages_per_s"]
    report["index_peak_rss_mb"] = measured[first]["indexing"]["peak_rss_mb"]
    if args.mmr_queries > 0:
        print(f"[bench] MMR comparison on {first} chunks ...", file=sys.stderr, flush=True)
        report["mmr"] = mmr_comparison(int(first), args.mmr_queries, root)
        report["mmr_speedup"] = report["mmr"]["mmr_speedup"]
        report["mmr_same_selection"] = report["mmr"]["mmr_same_selection"]
    report["command"] = "python scripts/lab/bench.py " + " ".join(sys.argv[1:] if argv is None else argv)
    print(markdown({**report, "sizes": measured}))
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2))
    from adaptive_retrieval.components.stores import release_all_clients

    release_all_clients()
    return report


if __name__ == "__main__":
    main()
