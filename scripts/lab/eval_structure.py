"""Do structural questions land in the right section? Top-1 / top-3 section accuracy of the query pipeline.

Questions: ``scripts/lab/eval_structure_questions.json`` (written before any system was run on them): 37 about the
ARAGOG papers (``../shared/data/aragog/papers``: numbered sections, appendices, introductions, conclusions,
tables) and 14 about the Python language reference topics the demo indexes (``pydoc_data``), by number ("Section
3.2", "Appendix B", "Table 2"), by name ("the section on resolution of names") and by position ("the last
section", "the introduction"). Both corpora go into one index through ``build_indexing_pipeline``; every question
runs through ``build_query_pipeline`` (``run_query``) and its final list is judged.

Judging is independent of how the system under test cut its sections: each returned chunk is located by its text
(three 60-character windows of its letters and digits) in a reference segmentation of its source file — the
outline/layout parse of ``components/indexing/structure`` for PDFs, the reST headings for the reference topics —
computed by a child process from this script's own checkout. A chunk is in the expected section when one of its
windows lies in a block whose heading path matches: ``number`` (that heading or a subsection), ``title`` (a
heading containing the words; ``last``: the block's own heading), ``table`` (the chunk holds that caption,
"Table 2: ..."). Top-k: one of the first k chunks is.

Run it on another checkout (e.g. main, for the before figures) with that checkout on PYTHONPATH:

    git worktree add --detach /tmp/struct-base main && ln -s $PWD/.venv $PWD/models /tmp/struct-base/
    (cd /tmp/struct-base && PYTHONPATH=/tmp/struct-base nice -n 10 $OLDPWD/.venv/bin/python \\
        $OLDPWD/scripts/eval_structure.py --label before --work /tmp/eval-structure-before)
    PYTHONPATH=$PWD nice -n 10 .venv/bin/python scripts/lab/eval_structure.py --label after
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

ROOT = Path(__file__).resolve().parents[2]
WINDOW = 60


def _norm(text: str) -> str:
    return re.sub(r"[^0-9a-z]+", "", text.lower())


def _words(text: str) -> str:
    return " ".join(re.findall(r"[^\W_]+", text.lower()))


# -- reference segmentation (runs in a child process on this script's own checkout) ----------------------------


def reference(files: list[str]) -> dict[str, list[dict[str, Any]]]:
    """``{file name: [{"path": [...], "text": normalised text}]}`` for PDFs and reference topics."""
    logging.disable(logging.WARNING)
    from adaptive_retrieval.components.indexing import SectionSplitter, parse_pdf

    out: dict[str, list[dict[str, Any]]] = {}
    for name in files:
        path = Path(name)
        if path.suffix.lower() == ".pdf":
            blocks = [(list(b.path), b.text) for b in parse_pdf(path).blocks]
        else:
            _, sections = SectionSplitter()._sections(path.read_text(encoding="utf-8"))
            blocks = sections
        out[path.name] = [{"path": p, "text": _norm(t)} for p, t in blocks]
    return out


def reference_in_child(files: list[Path]) -> dict[str, list[dict[str, Any]]]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    command = [sys.executable, str(Path(__file__).resolve()), "--reference-only", *map(str, files)]
    done = subprocess.run(command, env=env, capture_output=True, text=True, check=True, cwd=str(ROOT))
    return json.loads(done.stdout)


# -- judging ---------------------------------------------------------------------------------------------------


def heading_is_numbered(heading: str, ref: str) -> bool:
    pattern = rf"^(?:(?:section|chapter|appendix|part)\s*)?{re.escape(ref)}(?=$|[\s.:)\-])"
    return re.match(pattern, heading.strip(), re.IGNORECASE) is not None


def _bare(heading: str) -> str:
    text = re.sub(
        r"^(?:(?:appendix|chapter|section|part)\s+)?(?:\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|[IVX]+)\.?\s+", "", heading
    )
    return _words(text)


def block_matches(path: list[str], spec: dict[str, Any]) -> bool:
    if "number" in spec:
        return any(heading_is_numbered(h, str(spec["number"])) for h in path)
    titles = spec["title"] if isinstance(spec["title"], list) else [spec["title"]]
    headings = path[-1:] if spec.get("last") else path
    return any(_words(t) and _words(t) in _bare(h) for t in titles for h in headings)


def chunk_in_section(doc: Any, spec: dict[str, Any], ref: dict[str, list[dict[str, Any]]]) -> bool:
    sources = spec["source"] if isinstance(spec["source"], list) else [spec["source"]]
    name = Path(str(doc.meta.get("source") or doc.meta.get("file_path") or "")).name
    if name not in sources:
        return False
    if "table" in spec:
        caption = rf"\btable\s+{re.escape(str(spec['table']))}\s*:"  # the caption ("Table 2: ..."), not a mention
        return re.search(caption, doc.content or "", re.IGNORECASE) is not None
    text = _norm(doc.content or "")
    if not text:
        return False
    middle = max(0, len(text) // 2 - WINDOW // 2)
    windows = {text[:WINDOW], text[middle : middle + WINDOW], text[-WINDOW:]}
    return any(w in block["text"] for block in ref.get(name, []) if block_matches(block["path"], spec) for w in windows)


# -- run -------------------------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "aragog"))
    parser.add_argument("--questions", default=str(ROOT / "scripts" / "lab" / "eval_structure_questions.json"))
    parser.add_argument("--work", default=str(ROOT / ".adaptive" / "eval_structure"))
    parser.add_argument("--label", default="this checkout")
    parser.add_argument("--limit", type=int, default=0, help="only the first N questions (a quick check)")
    parser.add_argument("--set", default="", help="only the questions of this set ('fresh': the later ones)")
    parser.add_argument("--rejudge", nargs="*", help="judge stored results.json files again (current reference)")
    parser.add_argument("--reference-only", nargs="*", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reference_only is not None:
        print(json.dumps(reference(args.reference_only)))
        return
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("pypdf", "haystack_integrations", "adaptive_retrieval"):
        logging.getLogger(noisy).setLevel(logging.ERROR)

    if args.rejudge:
        rejudge([Path(p) for p in args.rejudge], Path(args.questions), Path(args.data), Path(args.work))
        return
    from adaptive_retrieval.pipelines import (
        build_indexing_pipeline,
        build_query_pipeline,
        index_paths,
        make_store,
        run_query,
    )
    from evaluation.corpus import write_pydoc_topics

    questions = json.loads(Path(args.questions).read_text(encoding="utf-8"))["questions"]
    if args.set:
        questions = [q for q in questions if q.get("set", "first") == args.set]
    questions = questions[: args.limit] if args.limit else questions
    work = Path(args.work)
    shutil.rmtree(work, ignore_errors=True)
    topics = work / "corpus" / "python-reference"
    write_pydoc_topics(topics)
    papers = sorted(Path(args.data, "papers").glob("*.pdf"))
    named = {s for q in questions for s in (q["source"] if isinstance(q["source"], list) else [q["source"]])}
    files = [p for p in [*papers, *sorted(topics.glob("*.txt"))] if p.name in named]
    t0 = time.perf_counter()
    ref = reference_in_child(files)
    print(f"reference segmentation of {len(files)} files: {time.perf_counter() - t0:.1f} s")

    store = make_store(path=str(work / "qdrant"))
    indexing = build_indexing_pipeline(store, progress_bar=False)
    t0 = time.perf_counter()
    counts = index_paths(indexing, [*papers, topics])
    print(f"indexed {counts['indexed']} files ({counts['chunks_written']} nodes) in {time.perf_counter() - t0:.1f} s")
    pipeline = build_query_pipeline(store)

    rows: list[dict[str, Any]] = []
    for q in questions:
        t0 = time.perf_counter()
        result = run_query(pipeline, q["q"])
        ms = (time.perf_counter() - t0) * 1000
        docs = result.documents
        hits = [chunk_in_section(d, q, ref) for d in docs[:3]]
        top = docs[0] if docs else None
        rows.append(
            {
                "q": q["q"],
                "kind": q["kind"],
                "set": q.get("set", "first"),
                "top1": bool(hits[:1] and hits[0]),
                "top3": any(hits),
                "structural": result.structural,
                "intent": result.intent,
                "ms": round(ms, 1),
                "first": None if top is None else [Path(str(top.meta.get("source"))).name, top.meta.get("section")],
                "top3_docs": [{"source": d.meta.get("source"), "content": d.content} for d in docs[:3]],
            }
        )
    out = work / "results.json"
    out.write_text(json.dumps({"label": args.label, "rows": rows}, indent=1), encoding="utf-8")
    report(args.label, rows, out)


def rejudge(paths: list[Path], questions_path: Path, data: Path, work: Path) -> None:
    """Judge stored runs again against the reference segmentation of this checkout (no system is run)."""
    from types import SimpleNamespace

    from evaluation.corpus import write_pydoc_topics

    questions = {q["q"]: q for q in json.loads(questions_path.read_text(encoding="utf-8"))["questions"]}
    topics = work / "rejudge-topics"
    write_pydoc_topics(topics)
    named = {s for q in questions.values() for s in (q["source"] if isinstance(q["source"], list) else [q["source"]])}
    files = [p for p in [*sorted((data / "papers").glob("*.pdf")), *sorted(topics.glob("*.txt"))] if p.name in named]
    ref = reference_in_child(files)
    for path in paths:
        stored = json.loads(path.read_text(encoding="utf-8"))
        for row in stored["rows"]:
            docs = [SimpleNamespace(meta={"source": d["source"]}, content=d["content"]) for d in row["top3_docs"]]
            hits = [chunk_in_section(d, questions[row["q"]], ref) for d in docs]
            row["top1"], row["top3"] = bool(hits[:1] and hits[0]), any(hits)
        report(f"{stored['label']} (judged again)", stored["rows"], path)


def report(label: str, rows: list[dict[str, Any]], out: Path) -> None:
    print(f"\n{label}: {len(rows)} questions (results in {out})")
    print(f"{'kind':10} {'n':>3} {'top-1':>6} {'top-3':>6} {'structural ref read':>20}")
    for kind in ("number", "name", "position", "table", "first", "fresh", "all"):
        sel = [r for r in rows if kind in ("all", r["kind"], r.get("set", "first"))]
        if not sel:
            continue
        read = sum(r["structural"] is not None for r in sel)
        top1 = statistics.fmean(r["top1"] for r in sel)
        top3 = statistics.fmean(r["top3"] for r in sel)
        print(f"{kind:10} {len(sel):3d} {top1:6.3f} {top3:6.3f} {read:17d}/{len(sel)}")
    print(f"latency p50 {statistics.median(r['ms'] for r in rows):.0f} ms (2 shared cores; compare only in one run)")
    for r in rows:
        if not r["top1"]:
            print(f"  miss@1 [{r['kind']}] {r['q'][:70]!r} → {r['first']}")


if __name__ == "__main__":
    main()
