"""The results of a fixed query set, written down to compare two versions of the code (a speed-up must not change
them): per query the final documents' ids and scores (exact) and a digest of each one's text and ``meta``, the
intent, the channel weights, the gate's decision, quality, signals and attempts.

    python scripts/lab/result_fingerprint.py --out before.json            # on the old code
    python scripts/lab/result_fingerprint.py --out after.json --compare before.json   # exit 1 on any difference
    python scripts/lab/result_fingerprint.py --set ../shared/data/hotpotqa100 --out hotpot-before.json

The index is ``scripts/lab/bench.py``'s synthetic one (``--chunks`` passages, cached under ``--root``), the queries
its synthetic queries (``--queries``, fixed seed), run in process through ``yaml/query.yaml`` with ``run_query``.
With ``--set FOLDER``, a development set instead (HotpotQA's ``corpus.json`` + ``questions.json``, or a JSONL
``corpus.jsonl`` + ``questions.jsonl`` such as ``musique_dev100``; ``scripts/lab/evaluation/data.py``): its passages
are indexed once (cached under ``--root``) and its questions are the queries (``--queries``: the first N).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
ROOT = Path(__file__).resolve().parents[2]


def document_digest(document: Any) -> str:
    """A short digest of what a served document says besides its id and score: its text and ``meta``."""
    text = json.dumps([document.content, document.meta], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def dev_set(folder: Path) -> Any:
    """The development set in ``folder``: HotpotQA's JSON files or a JSONL corpus and questions."""
    from evaluation.data import load_hotpot, load_jsonl

    if (folder / "questions.json").exists():
        return load_hotpot(folder)
    return load_jsonl([folder / "corpus.jsonl"], folder / "questions.jsonl", name=folder.name)


def fingerprint(chunks: int, queries: int, root: Path, folder: Path | None = None) -> dict[str, Any]:
    """``{query: {"documents": [[id, score], ...], "digests": [...], "intent": ..., "weights": ...,
    "decision": ..., "quality": ..., "signals": ..., "attempts": ...}}``."""
    from bench import bench_root, synthetic_passages, synthetic_queries  # a sibling in the lab

    from adaptive_retrieval.components.stores import release_all_clients
    from adaptive_retrieval.pipelines import run_query
    from adaptive_retrieval.pipelines.processes import limit_blas_threads
    from evaluation.data import EvalSet
    from evaluation.systems import AdaptiveSystem

    limit_blas_threads()
    if folder is None:
        passages = synthetic_passages(chunks)
        system = AdaptiveSystem(bench_root(root, chunks))
        system.index(EvalSet(f"synthetic-{chunks}", passages, []))
        texts = synthetic_queries(passages, queries)
    else:
        evalset = dev_set(folder)
        system = AdaptiveSystem(root / f"fingerprint-{evalset.name}")
        system.index(evalset)
        texts = list(dict.fromkeys(q.question for q in evalset.questions))[:queries]
    out: dict[str, Any] = {}
    for query in texts:
        result = run_query(system.pipeline, query)
        gate = result.gate
        out[query] = {
            "documents": [[d.id, d.score] for d in result.documents],
            "digests": [document_digest(d) for d in result.documents],
            "intent": result.intent,
            "weights": dict(result.weights),
            "decision": gate.decision if gate else None,
            "quality": gate.quality if gate else None,
            "signals": dict(gate.signals) if gate else None,
            "attempts": [record.to_dict() for record in gate.attempts] if gate else None,
        }
    release_all_clients()
    return out


def differences(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    """One line per query whose fingerprint differs (or that only one side has)."""
    lines = [f"only in one run: {q!r}" for q in sorted(set(old) ^ set(new))]
    for query in sorted(set(old) & set(new)):
        if old[query] != new[query]:
            changed = [k for k in old[query] if old[query][k] != new[query].get(k)]
            lines.append(f"{query!r}: {', '.join(changed)} differ")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1000)
    parser.add_argument(
        "--queries", type=int, help="synthetic queries (default 60), or a set's first N questions (default: all)"
    )
    parser.add_argument("--set", help="a development set's folder (e.g. ../shared/data/hotpotqa100) instead")
    parser.add_argument("--root", default=str(ROOT / ".adaptive"), help="where the benchmark indexes are cached")
    parser.add_argument("--out", required=True, help="write the fingerprint here (JSON)")
    parser.add_argument("--compare", help="an earlier fingerprint: exit 1 when this one differs from it")
    args = parser.parse_args()
    queries = args.queries if args.queries is not None else (10**9 if args.set else 60)
    result = fingerprint(args.chunks, queries, Path(args.root), Path(args.set) if args.set else None)
    Path(args.out).write_text(json.dumps(result, indent=1))
    documents = sum(len(v["documents"]) for v in result.values())
    print(f"{len(result)} queries, {documents} documents -> {args.out}")
    if not args.compare:
        return 0
    diff = differences(json.loads(Path(args.compare).read_text()), result)
    for line in diff:
        print(f"DIFFERENT {line}")
    print("identical" if not diff else f"{len(diff)} of {len(result)} queries differ")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
