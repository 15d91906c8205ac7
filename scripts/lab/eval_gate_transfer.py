"""Does the quality gate transfer? The shipped prior against the index's own self-calibration, on real questions.

python scripts/lab/eval_gate_transfer.py --hotpot ../shared/data/hotpotqa100 \\
    --corpus ../shared/data/musique_dev100/corpus.jsonl --questions ../shared/data/musique_dev100/questions.jsonl \\
    [--root .adaptive/eval-gate-transfer] [--pseudo 500] [--seed 0] [--limit N] [--json out.json]
python scripts/lab/eval_gate_transfer.py --corpus ../shared/data/dragonball_law_en/corpus.jsonl \
    --questions ../shared/data/dragonball_law_en/questions.jsonl \
    --unanswerable-type "Irrelevant Unsolvable Question" [--leave-out 0.5]

Per evaluation set:

1. Index the corpus (cached per corpus and YAML, like ``scripts/lab/evaluate.py``).
2. Self-calibrate on pseudo-queries of that index only (:mod:`adaptive_retrieval.pipelines.gate_calibration`; no
question and no
   gold label is read) and write ``gate_calibration.json`` into the store folder, as ``adaptive-retrieval
   calibrate`` does.
3. Run every real question twice with the loop off: *answerable* (index as is) and *unanswerable* (its
   supporting passages deleted from the eval index and restored after, as in ``scripts/lab/calibrate_gate.py``).
4. Score the attempt-0 signals with the prior (the hotpotqa fit shipped in the gate) and with the
   self-calibration: AUROC answerable vs unanswerable and pass rates at each model's own threshold.
   With ``--unanswerable-type T`` the questions of type ``T`` are the unanswerable ones (their document is
   indexed and on topic, only the asked fact is absent) and every other question is answerable: each runs once
   on the index as is. With ``--leave-out F`` a seeded share ``F`` of the documents is left out of the index
   (another index folder): a question whose gold documents are all left out is unanswerable (missing
   evidence), one whose gold documents are all indexed is answerable (questions of ``--unanswerable-type``
   stay unanswerable), mixed ones are dropped. Both report hit@5 of the answerable questions too.
5. With ``--loop``, run both variants again with the gate's retries on (``max_retries`` as configured) and
   report the self-calibrated gate's final decisions: what a caller is told.

On hotpotqa100 the *prior* was fitted on these very questions (in-sample for the prior); musique_dev100 is a
corpus neither model saw.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import pickle
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")

from calibrate_gate import decision_shares, features, passages, run_both, stores_of  # noqa: E402

from adaptive_retrieval.components.gating import (  # noqa: E402
    DEFAULT_L2,
    SIGNALS,
    QualityGate,
    auroc,
    calibration_path,
    fit_calibration,
    save_calibration,
)
from adaptive_retrieval.pipelines import (  # noqa: E402
    DEFAULT_QUERIES,
    collect_signals,
    run_query,
)
from evaluation.data import (  # noqa: E402
    EvalSet,
    add_jsonl_arguments,
    jsonl_evalset,
    load_aragog,
    load_hotpot,
    load_musique,
)
from evaluation.metrics import recall_at_k  # noqa: E402
from evaluation.systems import AdaptiveSystem, eval_folder  # noqa: E402


def left_out(evalset: EvalSet, share: float, seed: int = 0) -> tuple[EvalSet, set[str]]:
    """The set with a seeded ``share`` of its passages left out of the corpus (its questions kept, gold ids that
    name a left-out passage allowed) and the ids left out."""
    ids = sorted(p.id for p in evalset.passages)
    gone = set(np.random.default_rng(seed).choice(ids, size=round(share * len(ids)), replace=False).tolist())
    kept = EvalSet.__new__(EvalSet)  # no validate(): gold ids of left-out passages are the point
    kept.name = f"{evalset.name}-leave-out-{share:g}"
    kept.passages = [p for p in evalset.passages if p.id not in gone]
    kept.questions = list(evalset.questions)
    return kept, gone


def labelled(evalset: EvalSet, unanswerable_type: str | None, gone: set[str]) -> list[tuple[Any, int]]:
    """(question, label) pairs: label 0 for the questions of ``unanswerable_type`` and those whose gold passages
    are all in ``gone``; 1 for the others whose gold passages are all indexed; mixed ones dropped."""
    out = []
    for q in evalset.questions:
        missing = [g for g in q.gold_ids if g in gone]
        if q.type == unanswerable_type or (missing and len(missing) == len(q.gold_ids)):
            out.append((q, 0))
        elif not missing:
            out.append((q, 1))
    return out


def run_labelled(
    pipeline: Any, questions: list[tuple[Any, int]], label: str, dump: Path | None = None
) -> tuple[np.ndarray, np.ndarray, dict]:
    """Each question once on the index as is (loop as configured): attempt-0 signals, labels, the final
    decisions and hit@5 of the answerable ones; with ``dump``, each question's attempt-0 documents are pickled
    there (to study new signals offline)."""
    x, y, decisions, hits, kept = [], [], {0: [], 1: []}, [], []
    for n, (q, answerable) in enumerate(questions, 1):
        result = run_query(pipeline, q.question)
        gate = result.gate
        assert gate is not None, "the query pipeline has a quality gate"
        x.append([gate.attempts[0].signals[s] for s in SIGNALS])
        y.append(answerable)
        decisions[answerable].append(gate.decision == "pass")
        if answerable:
            hits.append(recall_at_k(passages(result), q.gold_ids, 5) > 0)
        if dump is not None:
            kept.append({"question": q.question, "type": q.type, "label": answerable, "documents": result.documents})
        if n % 50 == 0 or n == len(questions):
            print(f"  {label}: {n}/{len(questions)} questions", flush=True)
    if dump is not None:
        dump.with_suffix(".docs.pkl").write_bytes(pickle.dumps(kept))
    extra = {
        "hit@5": round(float(np.mean(hits)), 4) if hits else None,
        "loop_pass_answerable": round(float(np.mean(decisions[1])), 4) if decisions[1] else None,
        "loop_pass_unanswerable": round(float(np.mean(decisions[0])), 4) if decisions[0] else None,
    }
    return np.asarray(x, dtype=np.float64), np.asarray(y), extra


def score(model: dict[str, Any], x: np.ndarray, y: np.ndarray, asked: bool = True) -> dict[str, float]:
    """AUROC and pass rates of a model's quality (the gate's own :meth:`QualityGate.quality`, the ``asked``
    check included unless ``asked`` is false: the model as it was before that check)."""
    gate = QualityGate(
        weights=model["weights"],
        bias=model["bias"],
        pass_threshold=model["pass_threshold"],
        asked_threshold=model.get("asked_threshold", 0.0) if asked else 0.0,
    )
    quality = np.asarray([gate.quality(dict(zip(SIGNALS, row, strict=True))) for row in x])
    passed = quality >= model["pass_threshold"]
    return {
        "auroc": round(auroc(quality, y), 4),
        "pass_answerable": round(float(passed[y == 1].mean()), 4),
        "pass_unanswerable": round(float(passed[y == 0].mean()), 4),
    }


def evaluate_set(
    evalset: EvalSet,
    root: Path,
    pseudo: int,
    limit: int | None,
    dump: Path | None = None,
    reuse: Path | None = None,
    l2: float = DEFAULT_L2,
    seed: int = 0,
    loop: bool = False,
    unanswerable_type: str | None = None,
    leave_out: float | None = None,
) -> dict[str, Any]:
    gone: set[str] = set()
    if leave_out:
        evalset, gone = left_out(evalset, leave_out)
        dump = dump.with_name(f"{evalset.name}.npz") if dump else None
    system = AdaptiveSystem(eval_folder(root, evalset.name))
    stats = system.index(evalset)
    print(f"[{evalset.name}] index: {stats}", flush=True)
    pipeline = system.pipeline
    gate = pipeline.get_component("gate")
    folder = gate.document_store.to_dict()["init_parameters"]["path"]
    calibration_path(folder).unlink(missing_ok=True)  # self-calibrate from scratch

    samples = collect_signals(pipeline, queries=pseudo, seed=seed)
    fitted = fit_calibration(samples, gate.prior, l2)
    saved = save_calibration(calibration_path(folder), fitted)
    print(f"[{evalset.name}] self-calibration: {json.dumps(fitted['report'])}")
    print(f"[{evalset.name}] wrote {saved}", flush=True)

    questions = evalset.questions[:limit] if limit else evalset.questions
    extra: dict[str, Any] = {}
    if unanswerable_type or gone:
        gate.warm_up()  # the self-calibration decides the loop's decisions
        evalset.questions = questions
        x, y, extra = run_labelled(pipeline, labelled(evalset, unanswerable_type, gone), evalset.name, dump)
        print(f"[{evalset.name}] {json.dumps(extra)}")
    elif reuse is not None:
        # The real questions' signals do not depend on the calibration: reuse those of an earlier --dump.
        saved = np.load(reuse)
        x, y = saved["real_x"], saved["real_y"]
        print(f"[{evalset.name}] real-question signals reused from {reuse}")
    else:
        store, graph = stores_of(pipeline)
        retries = gate.max_retries
        gate.max_retries = 0
        try:
            rows = run_both(pipeline, store, graph, questions, evalset.name)
        finally:
            gate.max_retries = retries
        x, y, _ = features(rows)
    if dump:
        np.savez(dump, pseudo_x=samples["x"], pseudo_y=samples["y"], pseudo_group=samples["group"], real_x=x, real_y=y)
    gate.warm_up()  # picks up the file just written
    assert gate.calibration == "index", "the gate did not pick up the self-calibration"
    result = {
        **extra,
        "questions": int(len(y) // 2) if not extra else len(y),
        "answerable": int((y == 1).sum()),
        "signal_auroc": {s: round(auroc(x[:, j], y), 4) for j, s in enumerate(SIGNALS)},
        "prior": score(gate.prior, x, y),
        "self_calibrated": score(fitted, x, y),
        "prior_without_asked": score(gate.prior, x, y, asked=False),
        "self_calibrated_without_asked": score(fitted, x, y, asked=False),
        "calibration": {k: fitted[k] for k in ("weights", "bias", "pass_threshold", "asked_threshold")},
        "calibration_report": fitted["report"],
    }
    for name in ("prior_without_asked", "self_calibrated_without_asked", "prior", "self_calibrated"):
        r = result[name]
        print(
            f"[{evalset.name}] {name:<29} AUROC {r['auroc']:.3f}  pass answerable {r['pass_answerable']:.0%}  "
            f"unanswerable {r['pass_unanswerable']:.0%}"
        )
    if loop and not extra:
        # What a caller gets: the self-calibrated gate's final decision after the pipeline's own retries.
        store, graph = stores_of(pipeline)
        rows = run_both(pipeline, store, graph, questions, f"{evalset.name} (loop)")
        result["self_calibrated_loop"] = {
            variant: {k: round(v, 4) for k, v in decision_shares([r[variant] for r in rows]).items()}
            for variant in ("answerable", "unanswerable")
        }
        a, u = result["self_calibrated_loop"]["answerable"], result["self_calibrated_loop"]["unanswerable"]
        print(
            f"[{evalset.name}] self_calibrated, max_retries={gate.max_retries}: final decision pass answerable "
            f"{a['pass']:.0%} (retried {a['retried']:.0%})  unanswerable {u['pass']:.0%} (retried {u['retried']:.0%})"
        )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hotpot", default=None)
    parser.add_argument("--aragog", default=None, help="ARAGOG folder (unanswerable: the question's paper removed)")
    add_jsonl_arguments(parser, name_default="the questions file's folder")
    parser.add_argument("--root", default=str(ROOT / ".adaptive" / "eval-gate-transfer"))
    parser.add_argument(
        "--pseudo", type=int, default=DEFAULT_QUERIES, help="pseudo-queries of the self-calibration (the library's)"
    )
    parser.add_argument("--limit", type=int, default=None, help="first N real questions only")
    parser.add_argument("--musique", help="MuSiQue questions as released (named after the file): their paragraphs")
    parser.add_argument("--json", default=None)
    parser.add_argument("--dump", default=None, help="folder for the raw signals (<set>.npz) of both kinds")
    parser.add_argument("--reuse", default=None, help="folder of an earlier --dump: reuse its real-question signals")
    parser.add_argument("--l2", type=float, default=None, help="L2 pull towards the prior (default: the library's)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the pseudo-query sample (the library's: 0)")
    parser.add_argument(
        "--unanswerable-type",
        default=None,
        help="question type whose questions are the unanswerable ones (e.g. 'Irrelevant Unsolvable Question')",
    )
    parser.add_argument(
        "--leave-out", type=float, default=None, help="share of the documents left out of the index (e.g. 0.5)"
    )
    parser.add_argument(
        "--loop", action="store_true", help="also run every question with the gate's retries: its final decisions"
    )
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    sets = []
    if args.hotpot:
        sets.append(load_hotpot(args.hotpot))
    if args.aragog:
        sets.append(load_aragog(args.aragog))
    if args.corpus or args.questions:
        folder = Path(args.questions).parent.name if args.questions else None
        sets.append(jsonl_evalset(args.corpus, args.questions, args.name or folder))
    if args.musique:
        sets.append(load_musique(args.musique))
    if not sets:
        raise SystemExit("Give --hotpot, --aragog, --musique and/or --corpus/--questions")
    dump = Path(args.dump) if args.dump else None
    if dump:
        dump.mkdir(parents=True, exist_ok=True)
    out = {
        s.name: evaluate_set(
            s,
            Path(args.root),
            args.pseudo,
            args.limit,
            dump / f"{s.name}.npz" if dump else None,
            Path(args.reuse) / f"{s.name}.npz" if args.reuse else None,
            **({"l2": args.l2} if args.l2 is not None else {}),
            seed=args.seed,
            loop=args.loop,
            unanswerable_type=args.unanswerable_type,
            leave_out=args.leave_out,
        )
        for s in sets
    }
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
