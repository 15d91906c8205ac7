"""What sharing the channels' and the joiner's documents saves a query, interleaved in one process.

    python scripts/lab/bench_handover.py [--chunks 1000] [--queries 200] [--json OUT.json]

The packaged query pipeline's channels and joiner hand their documents on as one ``SharedDocuments``
(``share_documents: true``): Haystack copies it once instead of document by document. The peer is the same YAML
with ``share_documents: false`` (each document copied, as before), loaded in the same process over the same index
(``scripts/lab/bench.py``'s synthetic corpus and cache). Both answer every query, in alternating order, so a
machine that speeds up or slows down during the run weighs on both alike. Prints the CPU milliseconds of the
calling thread per query (median and mean; the store's search threads are not in it, and are the same for both),
their ratio, and how many queries got the same documents and scores from both.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from profile_server import build_index  # a sibling: the script's folder is first on sys.path

from adaptive_retrieval.pipelines import loads_pipeline, resolve_yaml, run_query
from adaptive_retrieval.pipelines.processes import limit_blas_threads

SHARED = "share_documents: true"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1000, help="synthetic passages in the index")
    parser.add_argument("--queries", type=int, default=200, help="queries, each answered by both pipelines")
    parser.add_argument("--root", type=Path, default=Path(".adaptive"), help="where the benchmark index is cached")
    parser.add_argument("--json", type=Path, help="write the figures here too")
    args = parser.parse_args()
    limit_blas_threads()  # as the CLI and the server do
    shared, store, queries = build_index(args.chunks, args.root, args.queries)
    text = resolve_yaml("query").read_text(encoding="utf-8")
    if SHARED not in text:
        raise SystemExit("yaml/query.yaml shares no documents: nothing to compare")
    copied = loads_pipeline(text.replace(SHARED, "share_documents: false"), path=str(store))
    copied.warm_up()
    pipelines = {"shared": shared, "copied": copied}
    for query in queries[:5]:  # warm-up
        for pipeline in pipelines.values():
            run_query(pipeline, query)
    spent: dict[str, list[float]] = {name: [] for name in pipelines}
    same = 0
    for i, query in enumerate(queries):
        answers = {}
        for name in sorted(pipelines, reverse=i % 2 == 1):
            start = time.thread_time()
            result = run_query(pipelines[name], query)
            spent[name].append(1000 * (time.thread_time() - start))
            answers[name] = [(d.id, d.score) for d in result.documents]
        same += answers["shared"] == answers["copied"]
    report = {
        "chunks": args.chunks,
        "queries": len(queries),
        "median_ms": {name: statistics.median(v) for name, v in spent.items()},
        "mean_ms": {name: statistics.fmean(v) for name, v in spent.items()},
        "same_answers": same,
    }
    median, mean = report["median_ms"], report["mean_ms"]
    print(f"{args.chunks} chunks, {len(queries)} queries, each through both pipelines (alternating order)")
    print("| pipeline | CPU ms/query, median | mean |\n|---|---|---|")
    for name in ("shared", "copied"):
        print(f"| {name} | {median[name]:.1f} | {mean[name]:.1f} |")
    ratios = median["shared"] / median["copied"], mean["shared"] / mean["copied"]
    print(f"shared / copied = {ratios[0]:.2f} (median), {ratios[1]:.2f} (mean)")
    print(f"same documents and scores: {same} of {len(queries)}")
    if args.json:
        args.json.write_text(json.dumps(report, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
