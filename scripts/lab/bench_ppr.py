"""How does the graph_ppr channel's latency scale with the index? p50/p95 at ~10k and ~100k chunks, against
graph_local on the same stores and the same queries (issue 18).

What is real and what is synthetic:

- **Passages** are real: MuSiQue dev-100 (1,839), 2WikiMultihopQA distractors (6,119) and HotpotQA-100, titles
  de-duplicated, ≈ 9–10k passages, one chunk each (``chunk_id(doc_id, 0)``).
- **The graph** is built by the package's own indexing components, graph side only: ``EntityExtractor`` (rule
  based, the shipped settings, one batch per replica) → ``GraphWriter`` → ``SQLiteGraphStore``. No communities
  (neither channel reads them).
- **~100k chunks** are the real passages replicated as disjoint copies. Replica 0 is the original text; replica
  ``r ≥ 1`` has new doc/chunk ids and every capitalised word that is not a stop word tagged with the suffix
  ``Q<r>`` ("Paris" → "ParisQ3", "U.S." → "UQ3.SQ3."), so its names are distinct entities and a name's
  document frequency stays what it is in the real corpus while the tables grow ×R. Lower-case noun phrases are
  not tagged: they are shared across replicas and their df grows ×R, as common nouns would in a larger corpus
  (the walk never expands an entity in more than ``max_expand_df`` chunks). Tagging breaks acronym-expansion
  links ("… Libre (CMLL)") in replicas ≥ 1; the build prints the entity counts so the growth can be checked.
- **Embeddings are synthetic**: every chunk gets a deterministic random unit vector (dim 384), and so does each
  query. The channels read at most ``candidate_pool · top_k`` stored vectors per query (by id, for the
  similarity blend); their values do not change the cost. No sparse vectors (neither channel reads them).
- **Queries**: the MuSiQue dev-100 questions (they name replica-0 entities). The pipeline hands the channels the
  top dense and sparse hits (``nearest``/``lexical``); here they are the question's gold passages plus a few
  random chunks of the whole index, fetched from the document store as the dense channel would return them, so
  the walk is seeded as in the pipeline (with better hits than a real dense channel would give).

What is timed (``time.perf_counter``, after a warm-up; sizes and channels interleaved query by query, so a change
in the shared machine's load hits all alike): the channel's ``run()`` as the query pipeline calls it, its graph part
(``GraphPPRRetriever.walk`` / ``GraphLocalRetriever.search``: entity linking, graph reads, PageRank or scoring),
the graph-store reads inside it (a subclass of ``SQLiteGraphStore`` that times its public read methods), and the
rest of ``run()`` — the document-store fetch of the candidates with their vectors and the blend — as run minus
graph part (the graph part is timed in a second call right after ``run()``, on warm caches).

Built stores are cached under ``--root`` (one folder per replica count, extraction cached per replica), so a
re-run only queries. Latency is only meaningful as ratios within one run on a shared machine.

    python scripts/lab/bench_ppr.py --sizes 10000,100000 --json bench_ppr.json
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

import numpy as np
from haystack import Document

from adaptive_retrieval.components import chunk_id
from adaptive_retrieval.components.indexing import EntityExtractor, GraphWriter
from adaptive_retrieval.components.retrieval import GraphLocalRetriever, GraphPPRRetriever
from adaptive_retrieval.components.stores import (
    ChunkEntities,
    EdgeDocumentStore,
    EntityInfo,
    SQLiteGraphStore,
    Subgraph,
    release_all_clients,
    release_all_connections,
)
from adaptive_retrieval.components.text.stopwords import stopwords  # its module shadows it in ``text``
from evaluation.data import Passage, Question, load_hotpot, load_jsonl, load_wiki2

ROOT = Path(__file__).resolve().parents[2]
DIM = 384
WRITE_BATCH = 2000
logger = logging.getLogger("bench_ppr")

_WORD = re.compile(r"[^\W\d_]\w*")


def tag_replica(text: str, replica: int) -> str:
    """``text`` with every capitalised word that is not a stop word suffixed ``Q<replica>`` (replica 0: unchanged),
    so that the entity extractor finds the same names, distinct per replica."""
    if replica == 0:
        return text
    stop = stopwords()
    suffix = f"Q{replica}"

    def tag(match: re.Match[str]) -> str:
        word = match.group(0)
        return word + suffix if word[0].isupper() and word.lower() not in stop else word

    return _WORD.sub(tag, text)


def replica_documents(passages: list[Passage], replica: int) -> list[Document]:
    """One chunk per passage, as the indexing pipeline's chunks carry them (``doc_id``, ``title`` in meta)."""
    docs = []
    for p in passages:
        doc_id = p.id if replica == 0 else f"r{replica}:{p.id}"
        docs.append(
            Document(
                id=chunk_id(doc_id, 0),
                content=tag_replica(p.text, replica),
                meta={"doc_id": doc_id, "title": tag_replica(p.title, replica), "replica": replica},
            )
        )
    return docs


def unit_vectors(count: int, seed: int) -> np.ndarray:
    """``count`` deterministic random unit vectors of dimension :data:`DIM`."""
    vectors = np.random.default_rng(seed).standard_normal((count, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


class TimedGraphStore(SQLiteGraphStore):
    """``SQLiteGraphStore`` that adds the wall time of its public read methods to :attr:`read_s`."""

    read_s = 0.0

    def _timed(self, method: Any, *args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return method(*args, **kwargs)
        finally:
            self.read_s += time.perf_counter() - start

    def subgraph(self, keys: Iterable[str], chunk_ids: Iterable[str] = (), limit: int = 20) -> Subgraph:
        return self._timed(super().subgraph, keys, chunk_ids, limit)

    def find_entities(self, keys: Iterable[str]) -> dict[str, EntityInfo]:
        return self._timed(super().find_entities, keys)

    def chunk_count(self) -> int:
        return self._timed(super().chunk_count)

    def chunk_mentions(self, chunk_ids: Iterable[str]) -> dict[str, dict[str, float]]:
        return self._timed(super().chunk_mentions, chunk_ids)

    def entity_chunks(self, keys: Iterable[str], limit: int = 50) -> dict[str, list[tuple[str, float]]]:
        return self._timed(super().entity_chunks, keys, limit)

    def neighbours(self, keys: Iterable[str], limit: int = 10) -> dict[str, list[tuple[str, float]]]:
        return self._timed(super().neighbours, keys, limit)


# -- build ---------------------------------------------------------------------------------------------------


def load_corpus(data: Path) -> tuple[list[Passage], list[Question]]:
    """The real passages (MuSiQue + 2Wiki + HotpotQA, titles de-duplicated) and the MuSiQue questions."""
    musique = data / "musique_dev100"
    evalset = load_jsonl([musique / "corpus.jsonl"], musique / "questions.jsonl", name="musique")
    evalset = evalset.with_distractors(load_wiki2(data / "wiki2_corpus"))
    evalset = evalset.with_distractors(load_hotpot(data / "hotpotqa100").passages)
    return evalset.passages, evalset.questions


def extracted(passages: list[Passage], replica: int, cache: Path) -> tuple[list[ChunkEntities], float]:
    """The extractor's output for one replica (one batch, as one indexing run) and the seconds it took, both
    cached."""
    file, seconds_file = cache / f"entities-r{replica}.pkl", cache / f"entities-r{replica}.seconds"
    if file.exists() and seconds_file.exists():
        with file.open("rb") as fh:
            return pickle.load(fh), float(seconds_file.read_text())  # our own cache file
    start = time.perf_counter()
    entities = EntityExtractor().run(documents=replica_documents(passages, replica))["entities"]
    seconds = time.perf_counter() - start
    cache.mkdir(parents=True, exist_ok=True)
    with file.open("wb") as fh:
        pickle.dump(entities, fh)
    seconds_file.write_text(f"{seconds:.3f}")
    return entities, seconds


def build(passages: list[Passage], replicas: int, root: Path) -> dict[str, Any]:
    """Build (or reuse) the graph and document store of ``replicas`` copies; returns the build record."""
    folder = root / f"r{replicas}"
    record_file = folder / "build.json"
    if record_file.exists():
        return json.loads(record_file.read_text())
    folder.mkdir(parents=True, exist_ok=True)
    graph = SQLiteGraphStore(path=str(folder / "graph.sqlite"))
    graph.clear()
    store = EdgeDocumentStore(path=str(folder / "edge"), use_sparse_embeddings=False)
    store.delete_all_documents()
    writer = GraphWriter(graph_store=graph)
    times = {"extract_s": 0.0, "graph_write_s": 0.0, "store_write_s": 0.0}
    for replica in range(replicas):
        entities, seconds = extracted(passages, replica, root / "extract")
        times["extract_s"] += seconds
        start = time.perf_counter()
        for i in range(0, len(entities), WRITE_BATCH):
            writer.run(entities=entities[i : i + WRITE_BATCH])
        times["graph_write_s"] += time.perf_counter() - start
        start = time.perf_counter()
        vectors = unit_vectors(len(passages), seed=1000 + replica)
        docs = [
            replace(doc, embedding=vector.tolist())
            for doc, vector in zip(replica_documents(passages, replica), vectors, strict=True)
        ]
        for i in range(0, len(docs), WRITE_BATCH):
            store.write_documents(docs[i : i + WRITE_BATCH])
        times["store_write_s"] += time.perf_counter() - start
        logger.warning("r%d: replica %d/%d written (%s)", replicas, replica + 1, replicas, _fmt_times(times))
    start = time.perf_counter()
    store.optimize(force=True)
    times["store_optimize_s"] = time.perf_counter() - start
    stats = graph.stats()
    record = {
        "replicas": replicas,
        "chunks": store.count_documents(),
        "graph_chunks": stats["chunks"],
        "entities": stats["entities"],
        "mentions": stats["mentions"],
        "relations": stats["relations"],
        "graph_bytes": graph.size_bytes(),
        **{k: round(v, 1) for k, v in times.items()},
    }
    graph.close()
    store.close()
    record_file.write_text(json.dumps(record, indent=2))
    return record


def _fmt_times(times: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f}" for k, v in times.items())


# -- queries -------------------------------------------------------------------------------------------------


@dataclass
class Timings:
    """Per-call seconds of one channel."""

    run: list[float] = field(default_factory=list)
    graph: list[float] = field(default_factory=list)
    reads: list[float] = field(default_factory=list)
    rest: list[float] = field(default_factory=list)
    returned: list[int] = field(default_factory=list)
    nodes: list[int] = field(default_factory=list)


@dataclass
class Query:
    text: str
    vector: list[float]
    nearest: list[Document]
    lexical: list[Document]


def queries(
    questions: list[Question], passages: list[Passage], store: EdgeDocumentStore, replicas: int, n: int
) -> list[Query]:
    """The first ``n`` questions with a random query vector and hit lists as the dense and sparse channels would
    hand them over (stored Documents with vectors): the gold chunks and 3 random chunks of the whole index each."""
    out = []
    vectors = unit_vectors(n, seed=7)
    for index, q in enumerate(questions[:n]):
        rng = np.random.default_rng(index)
        gold = [chunk_id(g, 0) for g in q.gold_ids]
        randoms = []
        for _ in range(6):
            replica, pid = int(rng.integers(replicas)), passages[int(rng.integers(len(passages)))].id
            randoms.append(chunk_id(pid if replica == 0 else f"r{replica}:{pid}", 0))
        nearest_ids = [*gold, *randoms[:3]]
        lexical_ids = [*randoms[3:], *reversed(gold)]
        found = {d.id: d for d in store.fetch_documents(list(dict.fromkeys(nearest_ids + lexical_ids)))}
        missing = [i for i in nearest_ids + lexical_ids if i not in found]
        if missing:
            msg = f"hit chunk(s) {missing[:3]} not in the document store: rebuild with a fresh --root"
            raise RuntimeError(msg)
        out.append(
            Query(q.question, vectors[index].tolist(), [found[i] for i in nearest_ids], [found[i] for i in lexical_ids])
        )
    return out


def timed(graph: TimedGraphStore, call: Any) -> tuple[float, float, Any]:
    """(seconds, graph-store read seconds, result) of ``call()``."""
    graph.read_s = 0.0
    start = time.perf_counter()
    result = call()
    return time.perf_counter() - start, graph.read_s, result


class Bench:
    """Both channels on the stores of one size, with that size's queries."""

    def __init__(self, folder: Path, qs: list[Query], top_k: int = 20) -> None:
        self.graph = TimedGraphStore(path=str(folder / "graph.sqlite"), create=False)
        self.store = EdgeDocumentStore(path=str(folder / "edge"), use_sparse_embeddings=False, create=False)
        self.ppr = GraphPPRRetriever(graph_store=self.graph, document_store=self.store)
        self.local = GraphLocalRetriever(graph_store=self.graph, document_store=self.store)
        self.qs = qs
        self.top_k = top_k  # the channels' default; graph_ppr caps it at its max_top_k
        self.timings = {"graph_ppr": Timings(), "graph_local": Timings()}

    def calls(self, name: str, q: Query) -> tuple[Any, Any]:
        """(the channel's ``run`` as the pipeline calls it, its graph part) for one query, as zero-argument calls."""
        if name == "graph_ppr":
            return (
                lambda: self.ppr.run(
                    query=q.text, query_embedding=q.vector, top_k=self.top_k, nearest=q.nearest, lexical=q.lexical
                ),
                lambda: self.ppr.walk(q.text, self.ppr.hit_seeds(q.nearest, q.lexical)),
            )
        return (
            lambda: self.local.run(query=q.text, query_embedding=q.vector, top_k=self.top_k, nearest=q.nearest),
            lambda: self.local.search(q.text, q.vector, self.top_k, q.nearest),
        )

    def once(self, name: str, index: int, record: bool = True) -> None:
        """Run and time channel ``name`` on query ``index``: its ``run`` first, then its graph part alone."""
        q = self.qs[index]
        run_fn, graph_fn = self.calls(name, q)
        run_s, _, result = timed(self.graph, run_fn)
        if result["documents"] is None:
            msg = f"{name} failed on {q.text!r} (see the log)"
            raise RuntimeError(msg)
        graph_s, reads_s, part = timed(self.graph, graph_fn)
        if record:
            t = self.timings[name]
            t.run.append(run_s)
            t.graph.append(graph_s)
            t.reads.append(reads_s)
            t.rest.append(max(run_s - graph_s, 0.0))
            t.returned.append(len(result["documents"]))
            if name == "graph_ppr":  # the walk's subgraph: entity and chunk nodes
                t.nodes.append(len(part.entities) + len(part.chunks))

    def close(self) -> None:
        self.graph.close()
        self.store.close()


def measure(benches: list[Bench], warmup: int, repeat: int) -> None:
    """Time both channels at every size, interleaved query by query (so a change in the shared machine's load
    hits every size and channel alike); the order of sizes and of channels alternates."""
    names = ["graph_ppr", "graph_local"]
    n = min(len(b.qs) for b in benches)
    for index in range(min(warmup, n)):
        for bench in benches:
            for name in names:
                bench.once(name, index, record=False)
    for round_ in range(repeat):
        for index in range(n):
            flip = (index + round_) % 2
            for bench in benches[::-1] if flip else benches:
                for name in names[::-1] if (index // 2 + round_) % 2 else names:
                    bench.once(name, index)


# -- report --------------------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """Percentile ``q`` of ``values`` in milliseconds."""
    return float(np.percentile(np.asarray(values) * 1000.0, q))


def summary(t: Timings) -> dict[str, float]:
    return {
        "p50_ms": pct(t.run, 50),
        "p95_ms": pct(t.run, 95),
        "graph_p50_ms": pct(t.graph, 50),
        "reads_p50_ms": pct(t.reads, 50),
        "rest_p50_ms": pct(t.rest, 50),
        "returned_mean": float(np.mean(t.returned)),
        "subgraph_nodes_mean": float(np.mean(t.nodes)) if t.nodes else None,
        "calls": len(t.run),
    }


def table(results: list[dict[str, Any]]) -> str:
    """The markdown table, one row per size and channel, then the ratios largest / smallest size."""
    lines = [
        "| chunks | entities | mentions | graph file | channel | p50 ms | p95 ms | graph part p50 | "
        "store reads p50 | fetch+blend p50 | docs | walk nodes |",
        "|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        b = r["build"]
        for name, s in r["channels"].items():
            nodes = "–" if s["subgraph_nodes_mean"] is None else f"{s['subgraph_nodes_mean']:,.0f}"
            lines.append(
                f"| {b['chunks']:,} | {b['entities']:,} | {b['mentions']:,} | {b['graph_bytes'] / 2**20:.0f} MiB "
                f"| {name} | {s['p50_ms']:.1f} | {s['p95_ms']:.1f} | {s['graph_p50_ms']:.1f} | "
                f"{s['reads_p50_ms']:.1f} | {s['rest_p50_ms']:.1f} | {s['returned_mean']:.1f} | {nodes} |"
            )
    lines.append("")
    lines.append(
        "Graph part: `walk()` (graph_ppr) / `search()` (graph_local); store reads: the graph-store reads within it; "
        "fetch+blend: `run()` minus graph part; docs: mean returned; walk nodes: mean entity + chunk nodes of "
        "graph_ppr's subgraph."
    )
    if len(results) >= 2:
        small, large = results[0], results[-1]
        growth = large["build"]["chunks"] / small["build"]["chunks"]
        lines.append("")
        lines.append(f"Ratio {large['build']['chunks']:,} / {small['build']['chunks']:,} chunks (×{growth:.1f}):")
        for name in small["channels"]:
            a, b = small["channels"][name], large["channels"][name]
            parts = ", ".join(
                f"{label} ×{b[key] / a[key]:.2f}"
                for label, key in (
                    ("p50", "p50_ms"),
                    ("p95", "p95_ms"),
                    ("graph part", "graph_p50_ms"),
                    ("store reads", "reads_p50_ms"),
                    ("fetch+blend", "rest_p50_ms"),
                )
                if a[key] > 0
            )
            lines.append(f"- {name}: {parts}")
        for r in results:
            c = r["channels"]
            lines.append(
                f"- graph_ppr / graph_local at {r['build']['chunks']:,} chunks: "
                f"p50 ×{c['graph_ppr']['p50_ms'] / c['graph_local']['p50_ms']:.2f}, "
                f"p95 ×{c['graph_ppr']['p95_ms'] / c['graph_local']['p95_ms']:.2f}"
            )
    return "\n".join(lines)


def default_data() -> Path:
    for candidate in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data"):
        if candidate.exists():
            return candidate
    return ROOT.parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument(
        "--sizes",
        default="10000,100000",
        help="target chunk counts, comma separated; each becomes round(size / real passages) replicas (≥ 1)",
    )
    parser.add_argument("--root", default=str(ROOT / ".adaptive" / "bench-ppr"), help="cache folder of built stores")
    parser.add_argument("--data", default=str(default_data()), help="folder with musique_dev100, wiki2_corpus, …")
    parser.add_argument("--queries", type=int, default=100, help="MuSiQue questions timed (at most 100)")
    parser.add_argument("--warmup", type=int, default=5, help="questions run untimed first (every size and channel)")
    parser.add_argument("--repeat", type=int, default=3, help="timed passes over the questions")
    parser.add_argument("--json", help="also write the results to this JSON file")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")

    data = Path(args.data)
    passages, questions = load_corpus(data)
    root = Path(args.root)
    sizes = sorted({int(s) for s in args.sizes.split(",") if s.strip()})
    built = []
    for replicas in sorted({max(1, round(size / len(passages))) for size in sizes}):
        start = time.perf_counter()
        record = build(passages, replicas, root)
        logger.warning(
            "r%d: %d chunks, %d entities (build/load %.0f s)",
            replicas,
            record["chunks"],
            record["entities"],
            time.perf_counter() - start,
        )
        built.append(record)
    benches = []
    for record in built:
        folder = root / f"r{record['replicas']}"
        store = EdgeDocumentStore(path=str(folder / "edge"), use_sparse_embeddings=False, create=False)
        qs = queries(questions, passages, store, record["replicas"], min(args.queries, len(questions)))
        store.close()
        benches.append(Bench(folder, qs))
    measure(benches, args.warmup, args.repeat)
    results = [
        {"build": record, "channels": {k: summary(v) for k, v in bench.timings.items()}}
        for record, bench in zip(built, benches, strict=True)
    ]
    for bench in benches:
        bench.close()
    release_all_clients()
    release_all_connections()
    report = table(results)
    print(report)
    if args.json:
        Path(args.json).write_text(json.dumps({"results": results, "table": report}, indent=2))


if __name__ == "__main__":
    main()
