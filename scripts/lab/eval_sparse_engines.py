"""The sparse channel alone with fastembed's BM25 and with Qdrant Edge's built-in BM25, on the same corpus.

Both vectorise the passages (title + text) with the bundled stop words, both are stored in a Qdrant Edge shard
scored with Qdrant's IDF modifier, and each question asks for its top 10. Prints recall@10, full-support@10 and
MRR per engine, and how many passages got the same term set from both.

    python scripts/lab/eval_sparse_engines.py --hotpot ../shared/data/hotpotqa100
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from haystack import Document

from adaptive_retrieval.components.models import Bm25DocumentEmbedder, Bm25TextEmbedder
from adaptive_retrieval.components.stores import EdgeDocumentStore
from evaluation.data import load_hotpot


def evaluate(engine: str, evalset, folder: Path) -> tuple[dict[str, float], list[Document]]:
    docs = [Document(id=p.id, content=p.text, meta={"title": p.title}) for p in evalset.passages]
    embedded = Bm25DocumentEmbedder(engine=engine, progress_bar=False, meta_fields_to_embed=["title"]).run(docs)
    store = EdgeDocumentStore(path=str(folder / engine), payload_fields_to_index={})
    store.write_documents(embedded["documents"])
    query_embedder = Bm25TextEmbedder(engine=engine)
    recall = full = mrr = 0.0
    for q in evalset.questions:
        hits = [d.id for d in store.search_sparse(query_embedder.run(q.question)["sparse_embedding"], top_k=10)]
        gold = set(q.gold_ids)
        found = gold & set(hits)
        recall += len(found) / len(gold)
        full += found == gold
        mrr += next((1 / (i + 1) for i, h in enumerate(hits) if h in gold), 0.0)
    n = len(evalset.questions)
    store.close()
    return {"recall@10": round(recall / n, 3), "full@10": round(full / n, 3), "mrr": round(mrr / n, 3)}, embedded[
        "documents"
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hotpot", required=True)
    args = parser.parse_args()
    evalset = load_hotpot(args.hotpot)
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        vectors = {}
        for engine in ("fastembed", "edge"):
            out[engine], vectors[engine] = evaluate(engine, evalset, Path(tmp))
    same = sum(
        set(a.sparse_embedding.indices) == set(b.sparse_embedding.indices)
        for a, b in zip(vectors["fastembed"], vectors["edge"], strict=True)
    )
    out["same_term_sets"] = f"{same}/{len(evalset.passages)}"
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
