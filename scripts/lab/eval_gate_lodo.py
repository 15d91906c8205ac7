"""The quality gate across domains: absent facts and missing evidence, every development set, leave-one-domain-out.

python scripts/lab/eval_gate_lodo.py --data ../shared/data [--sets dragonball_law_en,hotpotqa100,...]
                                 [--root .adaptive/eval-gate-lodo] [--pseudo 200] [--collect-only]

1. **Collect** (cached per set, index and this script's version, under ``--root``/dumps): index the set (cached like
   ``scripts/lab/evaluate.py``), then run through the real query pipeline with the gate's loop off:

   - *answerable*: every real question (the law set's 'Irrelevant Unsolvable' ones excepted) on the index as is;
   - *absent fact*: the law set's 50 real 'Irrelevant Unsolvable' questions, and on every set the on-topic
     unanswerable questions that :mod:`evaluation.absent_facts` builds by rule from the answerable ones (a
     question asked of its subject's nearest document that lacks the asked attribute);
   - *missing evidence*: every answerable question with its gold documents deleted from both stores (restored
     right after; see ``scripts/lab/calibrate_gate.py``);
   - the index's own pseudo-queries, as the self-calibration draws them (present, sources excluded, absent
     attribute).

   Each run keeps the list the gate judged (:class:`evaluation.gate_dump.GateRecord`), so that every signal and
   threshold below is computed offline.
2. **Leave one domain out**: for each held-out set, the asked check's threshold is chosen on the other sets only
   (:func:`evaluation.gate_lodo.choose_asked_threshold`) and the held-out set is scored: AUROC and pass rates
   (answerable / unanswerable) for absent facts and for missing evidence. Rows per set: *main* (another commit's
   asked check, ``--before``, at 0.55, self-calibrated by the old rule; ``--before none`` leaves them out), *now*
   (this checkout's gate: the prior, and self-calibrated by the shipped per-index rule), *LODO θ* (self-calibrated
   at the prior's threshold chosen without the set) and *strict rule* (self-calibrated by the strictness rule,
   :data:`evaluation.gate_lodo.STRICT_GRID`, chosen without the set: :func:`evaluation.gate_lodo.choose_strict_rule`,
   every other set's answerable pass >= 80 %). ``--score-rule B,C,K`` scores one such rule as it stands on every set.

The ad-hoc sets (TIME, MEDLINE, ADI) have no titles to build absent-fact twins from: missing evidence only there.
CACM is not in the default sets (its loader rejects records without text) nor LISA (6,000 abstracts: an hour of
indexing on a shared 2-core machine); ``--sets`` takes them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import pickle
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from calibrate_gate import removed, stores_of  # noqa: E402  (a sibling: the script's folder is first on sys.path)

from adaptive_retrieval.components.models import as_float_list  # noqa: E402
from adaptive_retrieval.pipelines import pseudo_queries, query_inputs  # noqa: E402
from evaluation.absent_facts import AbsentFact, DocumentText, absent_fact_questions  # noqa: E402
from evaluation.data import EvalSet, jsonl_evalset, load_aragog, load_hotpot  # noqa: E402
from evaluation.gate_dump import GateRecord  # noqa: E402
from evaluation.systems import PASSAGE_KEY, AdaptiveSystem, eval_folder  # noqa: E402

logger = logging.getLogger("eval_gate_lodo")

#: Bump when what a dump holds changes: older dumps are collected again.
DUMP_VERSION = "1"
UNSOLVABLE = "Irrelevant Unsolvable Question"
SETS = ("dragonball_law_en", "hotpotqa100", "musique_dev100", "aragog", "time", "medline", "adi")


def load_set(data: Path, name: str) -> EvalSet:
    if name == "hotpotqa100":
        return load_hotpot(data / name)
    if name == "aragog":
        return load_aragog(data / name)
    return jsonl_evalset([data / name / "corpus.jsonl"], data / name / "questions.jsonl", name)


def documents_of(store: Any, evalset: EvalSet) -> list[DocumentText]:
    """Each passage of the set as the index holds it: its chunks' text in order and their mean embedding."""
    chunks = store.filter_documents({"field": "meta.level", "operator": "==", "value": 0})
    grouped: dict[str, list[Any]] = defaultdict(list)
    for chunk in chunks:
        if chunk.meta.get(PASSAGE_KEY) is not None:
            grouped[chunk.meta[PASSAGE_KEY]].append(chunk)
    titles = {p.id: p.title for p in evalset.passages}
    out = []
    for pid in sorted(grouped):
        parts = sorted(grouped[pid], key=lambda c: c.meta.get("position") or 0)
        vectors = [c.embedding for c in parts if c.embedding is not None]
        if not vectors:
            continue
        mean = np.mean(np.asarray(vectors, dtype=np.float32), axis=0)
        text = "\n".join(c.content or "" for c in parts)
        out.append(DocumentText(pid, titles.get(pid, ""), text, mean / np.linalg.norm(mean)))
    return out


def _run(pipeline: Any, text: str) -> dict[str, Any]:
    return pipeline.run(
        query_inputs(pipeline, text), include_outputs_from={"query_embedder", "router", "joiner", "gate"}
    )


def _record(kind: str, text: str, result: dict[str, Any], group: int = 0, **extra: Any) -> GateRecord:
    return GateRecord.from_run(
        kind,
        text,
        result["gate"]["documents"],
        as_float_list(result["query_embedder"]["vector"]),
        result["joiner"]["fusion"],
        group,
        intent=result["router"]["intent"],
        **extra,
    )


def _excluded(pipeline: Any, result: dict[str, Any], text: str, sources: set[str]) -> list[Any]:
    """The fused candidates minus ``sources``' documents through the same MMR and reranker (the
    self-calibration's *excluded* list, :mod:`adaptive_retrieval.pipelines.gate_calibration`)."""
    router, joiner = result["router"], result["joiner"]
    embedding = as_float_list(result["query_embedder"]["vector"])
    candidates = [d for d in joiner["documents"] if d.meta.get("doc_id") not in sources]
    selected = pipeline.get_component("mmr").run(
        documents=candidates, query_embedding=embedding, lambda_threshold=router["mmr_lambda"], top_k=router["top_k"]
    )["documents"]
    return pipeline.get_component("ranker").run(
        documents=selected, query=text, top_k=router["top_k"], rerank=router["rerank"]
    )["documents"]


def collect(evalset: EvalSet, root: Path, pseudo: int, vectors: Any) -> dict[str, Any]:
    """Run the set (see the module docstring) and return its records, the built questions and timings."""
    system = AdaptiveSystem(eval_folder(root, evalset.name))
    stats = system.index(evalset)
    print(f"[{evalset.name}] index: {stats}", flush=True)
    pipeline = system.pipeline
    gate = pipeline.get_component("gate")
    gate.max_retries = 0
    gate.use_calibration = False  # the lists do not depend on it; the records are scored offline
    store, graph = stores_of(pipeline)
    answerable = [q for q in evalset.questions if q.type != UNSOLVABLE]
    unsolvable = [q for q in evalset.questions if q.type == UNSOLVABLE]
    built: list[AbsentFact] = absent_fact_questions(
        [(q.id, q.question, q.gold_ids) for q in answerable], documents_of(store, evalset), vectors
    )
    print(f"[{evalset.name}] {len(answerable)} answerable, {len(unsolvable)} real absent-fact, {len(built)} built")
    records: list[GateRecord] = []
    start = time.perf_counter()
    todo: list[tuple[str, str, Any]] = [
        *(("answerable", q.question, q) for q in answerable),
        *(("absent_real", q.question, q) for q in unsolvable),
        *(("absent_built", b.question, b) for b in built),
    ]
    for n, (kind, text, item) in enumerate(todo, 1):
        records.append(_record(kind, text, _run(pipeline, text), qid=getattr(item, "id", getattr(item, "source", ""))))
        if n % 50 == 0:
            print(f"  [{evalset.name}] {n}/{len(todo)} ({time.perf_counter() - start:.0f} s)", flush=True)
    for n, q in enumerate(answerable, 1):
        with removed(store, graph, list(q.gold_ids)):
            records.append(_record("missing", q.question, _run(pipeline, q.question), qid=q.id))
        if n % 50 == 0:
            print(f"  [{evalset.name}] missing {n}/{len(answerable)} ({time.perf_counter() - start:.0f} s)", flush=True)
    chunks = store.filter_documents({"field": "meta.level", "operator": "==", "value": 0})
    sampled = pseudo_queries(chunks, pseudo, seed=0) if pseudo else []
    for i, query in enumerate(sampled):
        result = _run(pipeline, query.text)
        records.append(_record("pseudo_present", query.text, result, group=i, pseudo=query.kind))
        ranked = _excluded(pipeline, result, query.text, set(query.sources))
        records.append(
            GateRecord.from_run(
                "pseudo_excluded",
                query.text,
                ranked,
                as_float_list(result["query_embedder"]["vector"]),
                result["joiner"]["fusion"],
                i,
                pseudo=query.kind,
            )
        )
        if query.absent:
            records.append(_record("pseudo_absent", query.absent, _run(pipeline, query.absent), group=i))
        if (i + 1) % 50 == 0:
            print(f"  [{evalset.name}] pseudo {i + 1}/{len(sampled)} ({time.perf_counter() - start:.0f} s)", flush=True)
    return {
        "set": evalset.name,
        "index": stats,
        "records": records,
        "built": [b.__dict__ for b in built],
        "seconds": round(time.perf_counter() - start, 1),
    }


def dump_path(root: Path, evalset: EvalSet, pseudo: int) -> Path:
    key = hashlib.sha256(f"{evalset.fingerprint()}|{DUMP_VERSION}|{pseudo}".encode())
    key.update((ROOT / "yaml" / "query.yaml").read_bytes())
    return root / "dumps" / f"{evalset.name}-{key.hexdigest()[:12]}.pkl"


def load_or_collect(data: Path, name: str, root: Path, pseudo: int, vectors: Any) -> dict[str, Any]:
    evalset = load_set(data, name)
    path = dump_path(root, evalset, pseudo)
    if path.exists():
        return pickle.loads(path.read_bytes())
    dump = collect(evalset, root, pseudo, vectors)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(dump))
    os.replace(tmp, path)
    print(f"[{name}] wrote {path} ({dump['seconds']} s)", flush=True)
    return dump


def branch_point_answerability(rev: str | None, root: Path) -> Any:
    """The ``answerability`` module (the asked check) as it was at ``rev`` (default: where this branch left
    ``main``), loaded from git under its own name with its data file, for the ``main`` rows: the rest of the gate's
    signals did not change, so only this one is recomputed."""
    import importlib.util
    import subprocess

    def git(*args: str) -> bytes:
        return subprocess.run(["git", "-C", str(ROOT), *args], check=True, capture_output=True).stdout

    commit = git("rev-parse", rev or git("merge-base", "main", "HEAD").decode().strip()).decode().strip()
    folder = root / "before" / commit[:10]
    (folder / "data").mkdir(parents=True, exist_ok=True)
    (folder / "answerability.py").write_bytes(git("show", f"{commit}:components/gating/answerability.py"))
    operators = git("show", f"{commit}:components/gating/data/question_operators.txt")
    (folder / "data" / "question_operators.txt").write_bytes(operators)
    spec = importlib.util.spec_from_file_location(f"answerability_{commit[:10]}", folder / "answerability.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.commit = commit
    return module


#: Bump when the gate's signals change: cached signals are computed again.
SIGNALS_VERSION = "1"


def domain_of(name: str, dump: dict[str, Any], gate: Any, args: Any) -> Any:
    """The gate's signals of one dump (:func:`evaluation.gate_lodo.domain_signals`, cached) with its records."""
    from evaluation.gate_lodo import domain_signals

    cache = Path(args.root) / "dumps" / f"{name}-signals-{SIGNALS_VERSION}.pkl"
    key = (dump_path(Path(args.root), load_set(Path(args.data), name), args.pseudo).name, SIGNALS_VERSION)
    cached = pickle.loads(cache.read_bytes()) if cache.exists() else None
    if cached is None or cached[0] != key:
        start = time.perf_counter()
        domain = domain_signals(dump, gate, progress=lambda m: print(f"  signals {m}", flush=True))
        domain.records = {}  # the records stay in the dump; the cache keeps the signals
        cache.write_bytes(pickle.dumps((key, domain)))
        print(f"[{name}] signals in {time.perf_counter() - start:.0f} s", flush=True)
    else:
        domain = cached[1]
    domain.records = {}
    for record in dump["records"]:
        domain.records.setdefault(record.kind, []).append(record)
    return domain


def main_signals(domain: Any, old: Any, gate: Any, before: dict[str, Any], args: Any) -> Any:
    """``domain`` with the ``asked`` signal of ``old`` (another commit's answerability module), cached."""
    from evaluation.gate_lodo import with_asked

    cache = Path(args.root) / "dumps" / f"{domain.name}-before-{old.commit[:10]}-{SIGNALS_VERSION}.pkl"
    key = (dump_path(Path(args.root), load_set(Path(args.data), domain.name), args.pseudo).name, old.commit)
    cached = pickle.loads(cache.read_bytes()) if cache.exists() else None
    if cached is not None and cached[0] == key:
        return type(domain)(domain.name, cached[1], domain.records, cached[2])
    start = time.perf_counter()
    signals = with_asked(domain, old.asked_coverage, old.unmatched, gate.word_vectors, before["asked_floor"])
    cache.write_bytes(pickle.dumps((key, signals.x, signals.pseudo)))
    print(f"[{domain.name}] main's asked signal in {time.perf_counter() - start:.0f} s", flush=True)
    return signals


def write_prior(theta: float, names: list[str], rows: list[dict[str, Any]]) -> None:
    """The asked threshold and its provenance into the shipped prior (the evidence model is kept)."""
    import datetime

    from adaptive_retrieval.components.gating import PRIOR_FILE, validate_calibration

    prior = json.loads(PRIOR_FILE.read_text(encoding="utf-8"))
    prior["asked_threshold"] = theta
    absent = [r["lodo_self"]["absent"]["auroc"] for r in rows if "absent" in r["lodo_self"]]
    prior["provenance"]["asked_threshold"] = {
        "data": f"every development domain ({', '.join(names)}): answerable questions only",
        "command": "python scripts/lab/eval_gate_lodo.py " + " ".join(sys.argv[1:]),
        "date": datetime.date.today().isoformat(),
        "metric": (
            "the strictest threshold (steps of 0.05) that keeps >= 90 % of every domain's answerable passes; "
            "leave-one-domain-out (the threshold chosen without the held-out domain, then self-calibrated on it): "
            f"absent-fact AUROC {np.mean(absent):.3f} on average, "
            + ", ".join(
                f"{r['domain']} {r['lodo_self']['absent']['auroc']:.3f} ({r['lodo_self']['pass_answerable']:.0%} / "
                f"{r['lodo_self']['absent']['pass']:.0%})"
                for r in rows
                if "absent" in r["lodo_self"]
            )
            + "; never relaxed per index"
        ),
    }
    validate_calibration(prior)
    PRIOR_FILE.write_text(json.dumps(prior, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {PRIOR_FILE}")


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--root", default=str(ROOT / ".adaptive" / "eval-gate-lodo"))
    parser.add_argument("--pseudo", type=int, default=200, help="pseudo-queries per set (the self-calibration's)")
    parser.add_argument("--collect-only", action="store_true")
    parser.add_argument(
        "--before",
        default=None,
        help="the commit whose asked check the 'main' rows use (default: merge-base with main; 'none': no such rows)",
    )
    parser.add_argument("--json", default=None)
    parser.add_argument(
        "--score-rule",
        action="append",
        default=[],
        metavar="BOUND,CAP,KEEP",
        help="also score this strictness rule, fixed, on every domain (e.g. 0.8,0.7,true); repeatable",
    )
    parser.add_argument(
        "--write-prior",
        action="store_true",
        help="write the asked threshold chosen on every domain into components/gating/data/gate_prior.json",
    )
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    from adaptive_retrieval.components.gating import WordVectors

    vectors = WordVectors()
    vectors.warm_up()
    dumps = {
        name: load_or_collect(Path(args.data), name, Path(args.root), args.pseudo, vectors)
        for name in args.sets.split(",")
    }
    if args.collect_only:
        return
    from adaptive_retrieval.components.gating import QualityGate, asked_coverage, load_prior
    from evaluation.gate_lodo import (
        calibrated,
        choose_asked_threshold,
        choose_strict_rule,
        lodo_rows,
        print_fixed_rule,
        print_table,
    )

    # Signals with soft matches wherever the stems fall short (asked_threshold 1.0): the same decisions at any
    # threshold the folds try, since the check only reads values under its threshold.
    gate = QualityGate(asked_threshold=1.0)
    gate.warm_up()
    domains = [domain_of(name, dump, gate, args) for name, dump in dumps.items()]
    prior = load_prior()
    before, before_domains, old = None, None, None
    if args.before != "none":
        # main's gate at ``--before``: the same evidence model, the asked check at 0.55 (set on the law set) and
        # its own asked signal (answerability.py of that commit), self-calibrated by its rules.
        before = {**prior, "asked_threshold": 0.55, "asked_floor": 0.6}
        old = branch_point_answerability(args.before, Path(args.root))
        before_domains = [main_signals(domain, old, gate, before, args) for domain in domains]
    rows = lodo_rows(
        domains, prior, gate.word_vectors, before, before_domains, old.asked_coverage if old else asked_coverage
    )
    main_rows = f"main = {old.commit[:10]} (its asked check); " if old else ""
    print(f"\n{main_rows}now = this checkout, asked threshold {prior['asked_threshold']}")
    print()
    print_table(rows)
    theta = choose_asked_threshold(domains, prior)
    print(f"\nasked threshold chosen on every domain (keeps >= 90 % of each one's answerable passes): {theta:.2f}")
    cals = [calibrated(d, prior, gate.word_vectors) for d in domains]
    rule = choose_strict_rule(cals, prior)
    print(f"strict rule chosen on every domain (AUROC bound, cap, kept on; None: never stricter): {rule}")
    for text in args.score_rule:
        bound, cap, keep = text.split(",")
        print_fixed_rule(cals, prior, (float(bound), float(cap), keep.lower() in ("1", "true", "yes")))
    if args.write_prior:
        write_prior(theta, [d.name for d in domains], rows)
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "asked_threshold": theta}, indent=2, default=float))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
