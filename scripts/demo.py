"""Index a real corpus with yaml/indexing.yaml and answer queries of every intent with yaml/query.yaml.

    python scripts/demo.py [PATH ...] [--query TEXT ...] [--store DIR] [--force] [--no-calibrate]

Without PATH it indexes the Python language reference topics that ship with CPython (``pydoc_data``) into
``.adaptive/qdrant``. Your own PATHs get an index of their own, ``.adaptive/stores/<name>-<hash>/qdrant`` (named in
the output; the hash is of the paths), never mixed with the reference corpus. ``--store`` (or
``$ADAPTIVE_QDRANT_PATH``) chooses the folder instead. The index persists; a second run skips unchanged files.
After indexing, the quality gate's calibration is brought up to date from the index's own pseudo-queries, as the
CLI's ``index`` does (``--no-calibrate``: the gate judges with its built-in prior, or the calibration it has).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import re
import textwrap
import time
from pathlib import Path

from adaptive_retrieval.pipelines import QueryResult, index_paths, load_pipeline, run_query
from adaptive_retrieval.pipelines.cli.format import provenance
from adaptive_retrieval.pipelines.gate_upkeep import update_calibration

#: One query per intent, keyed by the intent the router is expected to pick on the Python reference index
#: (tests/components/routing/test_intent_router.py checks that it does).
DEMO_QUERIES: dict[str, str] = {
    "factual": "What happens when a break statement runs inside a loop with an else clause?",
    "keyword": "__aenter__ __aexit__",
    "analytical": "Compare lists and tuples: how do mutable and immutable sequences differ?",
    "opinion": "What do people think of using global variables in functions?",
    "contextual": "What does the section on resolution of names say about free variables?",
    "relational": "The method that the with statement calls on entry is defined by which protocol?",
    "summary": "Give an overview of the main topics the Python language reference covers",
}


def write_pydoc_topics(folder: str | Path) -> list[Path]:
    """Write each ``pydoc_data.topics`` entry (about 80 reference chapters with reST headings) to
    ``folder/<topic>.txt``; files whose text is unchanged are left alone so re-indexing can skip them."""
    from pydoc_data.topics import topics

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in sorted(topics.items()):
        path = folder / (re.sub(r"[^\w.-]", "_", name) + ".txt")
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    logging.getLogger(__name__).info("Python reference topics in %s: %d files", folder, len(paths))
    return paths


def show(result: QueryResult, top: int) -> None:
    print(f"\nQ: {result.query}")
    if result.reason:
        print(f"   {result.reason}")
    probs = ", ".join(f"{k} {v:.2f}" for k, v in list(result.routing["probabilities"].items())[:3])
    rules = ",".join(result.routing["rules"]) or "-"
    print(f"   intent: {result.intent} (confidence {result.confidence:.2f}; {probs}; rules: {rules})")
    if fallback := result.routing.get("fallback"):
        print(f"   the fallback profile: {fallback}")
    strategy = result.strategy
    weights = " ".join(f"{c}={w:.2f}" for c, w in strategy.weights.items() if w > 0)
    print(
        f"   profile weights: {weights} | top_k={strategy.top_k} fetch_k={strategy.fetch_k} "
        f"mmr_lambda={strategy.mmr_lambda:.2f} rerank={strategy.rerank}"
    )
    used = " ".join(f"{c}={w:.2f}" for c, w in result.weights.items())
    print(f"   channels used: {used} (skipped: {', '.join(result.fusion['skipped']) or '-'})")
    for rank, doc in enumerate(result.documents[:top], start=1):
        where = doc.meta.get("section") or doc.meta.get("title")
        snippet = textwrap.shorten(doc.content or "", 90)
        print(f"   {rank}. {where}  <{provenance(doc)}>\n        {snippet}")
    if gate := result.gate:
        signals = " ".join(f"{k}={v:.2f}" for k, v in gate.signals.items())
        print(
            f"   gate: {gate.decision} (quality {gate.quality:.2f}, attempt {gate.attempt + 1} of "
            f"{len(gate.attempts)}; {signals})"
        )
    stages = " ".join(f"{k}={v:.1f}" for k, v in result.timings_ms.items())
    print(f"   timings ms: {stages}")


#: The reference corpus's index (the demo's default).
REFERENCE_STORE = ".adaptive/qdrant"


def own_store(paths: list[str]) -> str:
    """The index of the user's own ``paths``: a folder named after the first path plus a hash of all of them
    (resolved), so that the same folders reuse their index and other folders, or the reference corpus, never
    share it."""
    resolved = sorted(str(Path(p).expanduser().resolve()) for p in paths)
    digest = hashlib.sha256("\n".join(resolved).encode("utf-8")).hexdigest()[:8]
    name = re.sub(r"[^\w.-]+", "_", Path(resolved[0]).name or "files").strip("._") or "files"
    return f".adaptive/stores/{name}-{digest}/qdrant"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", help="files or folders of .txt/.md/.html/.pdf (default: pydoc topics)")
    parser.add_argument("--query", "-q", action="append", help="query to run (repeatable)")
    parser.add_argument("--store", default=None, help="Qdrant local folder (default .adaptive/qdrant)")
    parser.add_argument("--top", type=int, default=3, help="results shown per query")
    parser.add_argument("--force", action="store_true", help="re-index unchanged files")
    parser.add_argument(
        "--no-calibrate", action="store_true", help="leave the quality gate's calibration as it is after indexing"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")

    paths = args.paths
    queries = args.query or list(DEMO_QUERIES.values())
    if not paths:
        corpus = Path(".adaptive/corpus/python-reference")
        write_pydoc_topics(corpus)
        paths = [str(corpus)]
        print(f"Corpus: the Python language reference topics from CPython's pydoc_data, in {corpus}")
    # The demo keeps its indexes in the repository's .adaptive/ (the library's default is the per-user data
    # folder): the reference corpus in one, each set of your own paths in its own; --store or
    # $ADAPTIVE_QDRANT_PATH choose the folder.
    default = own_store(paths) if args.paths else REFERENCE_STORE
    folder = args.store or os.environ.get("ADAPTIVE_QDRANT_PATH") or default
    overrides = {"path": folder}
    whose = f"your files only; the reference corpus is in {REFERENCE_STORE}" if args.paths else "the reference corpus"
    print(f"Index: {folder} ({whose})")

    start = time.perf_counter()
    indexing = load_pipeline("indexing", **overrides)
    stats = index_paths(indexing, paths, force=args.force)
    store = indexing.get_component("writer").document_store
    print(
        f"Indexing: {stats['files']} files, {stats['indexed']} (re)indexed, {stats['skipped']} unchanged; "
        f"{stats['chunks_written']} chunks written, {stats['chunks_deleted']} stale removed; "
        f"{store.count_documents()} nodes in the index ({time.perf_counter() - start:.1f} s)"
    )

    query = load_pipeline("query", **overrides)
    query.warm_up()
    if not args.no_calibrate:
        kept = update_calibration(query)
        if kept.written:
            print(f"Quality gate: calibrated on {kept.samples} pseudo-queries of this index ({kept.seconds:.1f} s)")
        else:
            print(f"Quality gate: calibration {kept.reason}")
    for text in queries:
        show(run_query(query, text), args.top)


if __name__ == "__main__":
    main()
