"""What Haystack's copy of every component input costs the query pipeline, measured with public APIs only.

    python scripts/lab/bench_pipeline_copies.py [--chunks 1000] [--queries 50] [--repeats 300]

``Pipeline.run`` deep-copies every input of every component before it runs, and checks each value it copies
against Haystack's runtime ``Component`` protocol (``isinstance``), so that components passed as data are not
copied. A query through ``yaml/query.yaml`` hands hundreds of documents from one component to the next. Steps,
in one run:

1. index ``--chunks`` synthetic passages (``scripts/lab/bench.py``'s corpus and cache) and answer ``--queries``
   synthetic queries with every component's outputs kept (``include_outputs_from``); for each connection of the
   pipeline, count the documents its sender gave (Haystack copies each once, when the receiver runs; a component
   that runs twice, in a retry, is counted once);
2. time the same queries again without keeping outputs: ``Pipeline.run``'s wall time, and the time inside
   its component spans (Haystack's public tracing hooks, :func:`adaptive_retrieval.pipelines.timing.stage_timings`:
   a span holds the copy of the component's inputs and its run). What lies outside the spans is Haystack's
   scheduling between components;
3. hand the documents of step 1 from one component to another in a two-component pipeline (``Source`` ->
   ``Sink``), with all of them and with none: Haystack's cost per handed document is the difference over their
   number (medians of ``--repeats`` runs each). Peers on the same documents in the same run: ``copy.deepcopy``
   (what the copy itself costs; the channels' documents carry their own ``__deepcopy__``) and the protocol check
   alone.

Prints the documents per query by connection, microseconds per handed document, and Haystack's own milliseconds per
query (the copies of step 3 times the documents of step 1, and the scheduling of step 2) against the whole run.
The protocol check costs less on Python 3.12 and later, which cache a protocol's members.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from haystack import Document, Pipeline, component
from haystack.core.component import Component


@component
class Source:
    """Gives the documents it was made with (the sender of the two-component pipeline)."""

    def __init__(self, documents: list[Document]) -> None:
        self.documents = documents

    @component.output_types(documents=list[Document])
    def run(self, trigger: int) -> dict[str, Any]:
        """The documents, as they are (Haystack copies them when ``Sink`` runs)."""
        return {"documents": self.documents}


@component
class Sink:
    """Counts what it receives (the receiver of the two-component pipeline)."""

    @component.output_types(count=int)
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """How many documents came in."""
        return {"count": len(documents)}


def documents_in(value: Any) -> list[Document]:
    """The documents inside an output value (a document, or lists and dicts of them) that Haystack copies one by
    one: none of a ``SharedDocuments`` (a channel's or the joiner's shared list is copied as one value)."""
    if isinstance(value, Document):
        return [value]
    if isinstance(value, (list, tuple)):
        return [d for item in value for d in documents_in(item)]
    if isinstance(value, dict):
        return [d for item in value.values() for d in documents_in(item)]
    return []


def values_in(value: Any) -> int:
    """How many values Haystack's copy of an input checks one by one: it walks lists, tuples, sets and dicts and
    checks (and copies) every value it finds there; anything else, a ``SharedDocuments`` or the router's read-only
    weights included, is one value."""
    if isinstance(value, (list, tuple, set)):
        return sum(values_in(item) for item in value)
    if isinstance(value, dict):
        return sum(values_in(item) for item in value.values())
    return 1


def handed_documents(pipeline: Pipeline, queries: list[str]) -> tuple[Counter, list[Document], float]:
    """Documents per query on each connection ``sender.socket -> receiver.socket``, a sample of them, and the values
    per query that Haystack's copies check one by one over all connections (:func:`values_in`)."""
    from adaptive_retrieval.pipelines import query_inputs

    names = {name for name, _ in pipeline.walk()}
    per_connection: Counter = Counter()
    sample: list[Document] = []
    values = 0
    for query in queries:
        outputs = pipeline.run(query_inputs(pipeline, query), include_outputs_from=names)
        for sender, receiver, data in pipeline.graph.edges(data=True):
            value = outputs.get(sender, {}).get(data["from_socket"].name)
            docs = documents_in(value)
            per_connection[f"{sender}.{data['from_socket'].name} -> {receiver}.{data['to_socket'].name}"] += len(docs)
            values += values_in(value) if data["from_socket"].name in outputs.get(sender, {}) else 0
            if len(sample) < 500:
                sample.extend(docs[: 500 - len(sample)])
    for key in per_connection:
        per_connection[key] /= len(queries)
    return per_connection, sample, values / len(queries)


def scheduling_ms(pipeline: Pipeline, queries: list[str]) -> tuple[float, float]:
    """Mean milliseconds per query of ``Pipeline.run`` and of its time outside the component spans."""
    from adaptive_retrieval.pipelines import query_inputs, stage_timings

    whole = outside = 0.0
    for query in queries:
        inputs = query_inputs(pipeline, query)
        with stage_timings() as spans:
            start = time.perf_counter()
            pipeline.run(inputs)
            elapsed = 1000 * (time.perf_counter() - start)
        whole += elapsed
        outside += elapsed - sum(spans.values())
    return whole / len(queries), outside / len(queries)


def median_seconds(call: Any, repeats: int) -> float:
    """Median wall seconds of ``call()`` over ``repeats`` runs (after three unmeasured ones)."""
    for _ in range(3):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def per_document_costs(documents: list[Document], repeats: int) -> dict[str, float]:
    """Microseconds per document: handed over by ``Pipeline.run``, ``copy.deepcopy``, the protocol check."""

    def handover(docs: list[Document]) -> Any:
        pipe = Pipeline()
        pipe.add_component("source", Source(docs))
        pipe.add_component("sink", Sink())
        pipe.connect("source.documents", "sink.documents")
        return lambda: pipe.run({"source": {"trigger": 0}})

    n = len(documents)
    full, empty = median_seconds(handover(documents), repeats), median_seconds(handover([]), repeats)
    deep = median_seconds(lambda: [copy.deepcopy(d) for d in documents], repeats)
    check = median_seconds(lambda: [isinstance(d, Component) for d in documents], repeats)
    return {
        "haystack_us": 1e6 * (full - empty) / n,
        "deepcopy_us": 1e6 * deep / n,
        "protocol_check_us": 1e6 * check / n,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--chunks", type=int, default=1000, help="synthetic passages in the index (default 1000)")
    parser.add_argument("--queries", type=int, default=50, help="queries whose handed documents are counted")
    parser.add_argument("--repeats", type=int, default=300, help="timed runs of each two-component measurement")
    parser.add_argument("--root", default=".adaptive", help="where the benchmark indexes are cached")
    args = parser.parse_args()

    from profile_server import build_index

    from adaptive_retrieval.pipelines.processes import limit_blas_threads

    limit_blas_threads()
    print(f"[copies] indexing {args.chunks} synthetic passages (cached after the first run) ...", file=sys.stderr)
    pipeline, _, queries = build_index(args.chunks, Path(args.root), args.queries)
    per_connection, sample, values = handed_documents(pipeline, queries)
    whole, scheduling = scheduling_ms(pipeline, queries)
    total = sum(per_connection.values())
    check_us = 1e6 * median_seconds(lambda: isinstance(0.5, Component), args.repeats)

    print(f"\nPython {sys.version.split()[0]}, {args.queries} queries over {args.chunks} chunks\n")
    print("| connection | documents per query |\n|---|---|")
    for key, count in sorted(per_connection.items(), key=lambda kv: -kv[1]):
        if count:
            print(f"| {key} | {count:.1f} |")
    print(f"| **all** | **{total:.1f}** |\n")
    print(
        f"Values Haystack's copies check one by one: {values:.1f} a query; the protocol check alone "
        f"{check_us:.1f} µs a value ({values * check_us / 1000:.2f} ms a query).\n"
    )
    if not sample:
        print(f"No document is handed one by one. Per query: Pipeline.run {whole:.1f} ms (wall), scheduling outside")
        print(f"the component spans {scheduling:.1f} ms.")
        return
    costs = per_document_costs(sample, args.repeats)
    print("| per handed document | µs | ms per query |\n|---|---|---|")
    labels = {
        "haystack_us": "Haystack's handover (`Pipeline.run`, Source -> Sink)",
        "deepcopy_us": "peer: `copy.deepcopy` of the same document",
        "protocol_check_us": "peer: `isinstance(document, Component)` alone",
    }
    for key, label in labels.items():
        print(f"| {label} | {costs[key]:.2f} | {costs[key] * total / 1000:.2f} |")
    share = costs["protocol_check_us"] / costs["haystack_us"] if costs["haystack_us"] > 0 else float("nan")
    print(f"\nThe protocol check is {share:.0%} of Haystack's cost per handed document.")
    copies = costs["haystack_us"] * total / 1000
    print(
        f"\nPer query: Pipeline.run {whole:.1f} ms (wall); Haystack's own work {copies + scheduling:.1f} ms "
        f"({(copies + scheduling) / whole:.0%}): copies of the handed documents {copies:.1f} ms, "
        f"scheduling outside the component spans {scheduling:.1f} ms."
    )


if __name__ == "__main__":
    main()
