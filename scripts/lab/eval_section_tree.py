"""Does the section tree help? Paper-level hit@5 and MRR on ARAGOG, tree storage overhead and build time.

Corpus: ../shared/data/aragog (arXiv PDFs; each question's gold is the paper that answers it). The PDFs go
through the real indexing pipeline (``build_indexing_pipeline``: converters → section splitter → embedders →
SectionTreeBuilder → writer, graph branch included) into a fresh Qdrant folder; the same chunks, without the
summary nodes, are written to a second folder, the flat index. Compared, per question (gold = the paper):

- ``dense-only``: stock Haystack ``QdrantEmbeddingRetriever`` (top 10) over the flat chunks;
- ``section channel alone``: ``SectionTreeRetriever`` (top 10) over the tree index;
- ``pipeline, section off``: ``build_query_pipeline`` with every profile's ``section`` weight set to 0;
- ``pipeline``: ``build_query_pipeline`` as shipped (the router weights the section channel per query).

Storage overhead is the bytes on disk of the tree index over the flat one; build time is the SectionTreeBuilder's
share of the indexing run (per 1,000 chunks, and against the dense embedder's time in the same run).

    nice -n 10 .venv/bin/python scripts/lab/eval_section_tree.py
    nice -n 10 .venv/bin/python scripts/lab/eval_section_tree.py --papers 3     # quick check on three papers
"""

from __future__ import annotations

import argparse
import copy
import logging
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document
from haystack_integrations.components.retrievers.qdrant import QdrantEmbeddingRetriever

from adaptive_retrieval.components.indexing import ReplacingDocumentWriter
from adaptive_retrieval.components.models import OnnxTextEmbedder
from adaptive_retrieval.components.retrieval import SectionTreeRetriever
from adaptive_retrieval.components.routing import default_profiles
from adaptive_retrieval.pipelines import (
    QueryResult,
    build_indexing_pipeline,
    build_query_pipeline,
    file_hash,
    make_store,
    run_query,
    stage_timings,
)
from evaluation.data import load_aragog
from evaluation.metrics import recall_at_k, reciprocal_rank

ROOT = Path(__file__).resolve().parents[2]


def folder_bytes(path: Path) -> int:
    """Bytes of every file under ``path``."""
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def paper_ranking(documents: list[Document]) -> list[str]:
    """Paper file names of ranked chunks, first occurrence kept."""
    return list(dict.fromkeys(Path(d.meta["source"]).name for d in documents))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "aragog"))
    parser.add_argument("--work", default=str(ROOT / ".adaptive" / "eval_section_tree"))
    parser.add_argument("--papers", type=int, default=0, help="only the first N papers and their questions")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("pypdf", "haystack_integrations", "adaptive_retrieval.components.routing"):
        logging.getLogger(noisy).setLevel(logging.ERROR)

    evalset = load_aragog(args.data)
    passages = evalset.passages[: args.papers] if args.papers else evalset.passages
    names = {p.id for p in passages}
    questions = [q for q in evalset.questions if set(q.gold_ids) <= names]
    files = [Path(p.path) for p in passages if p.path]
    print(f"ARAGOG: {len(files)} papers, {len(questions)} questions with their paper in the corpus")

    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    tree_path, flat_path = work / "tree" / "qdrant", work / "flat" / "qdrant"
    tree_store, flat_store = make_store(path=str(tree_path)), make_store(path=str(flat_path))

    # -- index -----------------------------------------------------------------------------------------
    indexing = build_indexing_pipeline(tree_store, progress_bar=False)
    start = time.perf_counter()
    with stage_timings() as times:
        result = indexing.run(
            {"file_router": {"sources": files, "meta": [{"source_hash": file_hash(f)} for f in files]}},
            include_outputs_from={"section_tree"},
        )
    index_s = time.perf_counter() - start
    documents = result["section_tree"]["documents"]
    chunks = [d for d in documents if d.meta.get("level", 0) == 0]
    summaries = [d for d in documents if d.meta.get("level", 0) > 0]
    ReplacingDocumentWriter(flat_store).run(chunks)
    tree_ms, dense_ms = times.get("section_tree", 0.0), times.get("dense_embedder", 0.0)
    stats = result["section_tree"]["tree"]
    tree_bytes, flat_bytes = folder_bytes(tree_path), folder_bytes(flat_path)

    # -- query -----------------------------------------------------------------------------------------
    embedder = OnnxTextEmbedder()
    embedder.warm_up()
    dense = QdrantEmbeddingRetriever(document_store=flat_store, top_k=10)
    section = SectionTreeRetriever(document_store=tree_store, top_k=10)
    pipeline = build_query_pipeline(tree_store)
    profiles = copy.deepcopy(default_profiles())
    for profile in profiles.values():
        profile["weights"]["section"] = 0.0
    without_section = build_query_pipeline(tree_store, profiles=profiles)
    systems = ["dense-only", "section channel alone", "pipeline, section off", "pipeline"]
    rows: dict[str, list[tuple[float, float]]] = {s: [] for s in systems}
    latency: dict[str, list[float]] = {s: [] for s in systems}
    section_weighted = 0
    for question in questions:
        vector = embedder.run(question.question)["embedding"]
        runs = {
            "dense-only": lambda v=vector: dense.run(query_embedding=v)["documents"],
            "section channel alone": lambda v=vector: section.run(query_embedding=v)["documents"],
            "pipeline, section off": lambda q=question.question: run_query(without_section, q).documents,
            "pipeline": lambda q=question.question: run_query(pipeline, q),
        }
        for name, run in runs.items():
            t0 = time.perf_counter()
            out = run()
            latency[name].append((time.perf_counter() - t0) * 1000)
            if isinstance(out, QueryResult):  # the shipped pipeline: also count how often the router used it
                section_weighted += out.weights.get("section", 0.0) > 0
                out = out.documents
            ranked = paper_ranking(out)
            rows[name].append(
                (recall_at_k(ranked, question.gold_ids, 5), reciprocal_rank(ranked, question.gold_ids, 10))
            )

    # -- report ----------------------------------------------------------------------------------------
    n = len(questions)
    print()
    print(f"{'system':24} {'hit@5':>7} {'MRR@10':>7} {'p50 ms':>8}   (paper level, {n} questions)")
    for name in systems:
        hit = statistics.fmean(r[0] for r in rows[name]) if n else float("nan")
        mrr = statistics.fmean(r[1] for r in rows[name]) if n else float("nan")
        print(f"{name:24} {hit:7.3f} {mrr:7.3f} {statistics.median(latency[name]) if n else 0:8.1f}")
    print(f"router gave the section channel weight on {section_weighted}/{n} questions")
    print()
    print(
        f"tree: {len(chunks)} chunks → {stats['sections']} section + {stats['documents']} document nodes "
        f"({len(summaries) / max(len(chunks), 1):.1%} more nodes)"
    )
    print(
        f"storage: flat {flat_bytes / 1e6:.2f} MB, with tree {tree_bytes / 1e6:.2f} MB, "
        f"overhead {tree_bytes / max(flat_bytes, 1) - 1:+.1%} (target < +50%)"
    )
    per_k = tree_ms / max(len(chunks), 1) * 1000 / 1000
    print(
        f"build: section tree {tree_ms / 1000:.1f} s = {per_k:.1f} s per 1,000 chunks; dense embedding of the "
        f"chunks {dense_ms / 1000:.1f} s (tree/dense = {tree_ms / max(dense_ms, 1e-9):.2f}); whole indexing run "
        f"{index_s:.1f} s"
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
