"""Every development set, found by its folder name under one data folder, with the kind of collection it is and
the metrics the floor is judged on.

``scripts/lab/evaluate.py --all-dev DATA`` evaluates them all and ``scripts/lab/calibrate_profiles.py --all-dev DATA``
fits on them, leaving each out in turn. Three kinds:

- **multi-hop**: questions whose answer needs several passages (hotpotqa100; musique_dev100 with the 2Wiki
  passages as distractors): nDCG@10 and full-support@10;
- **long documents**: questions over a few long documents (dragonball_law_en's answerable questions; ARAGOG's
  arXiv papers): nDCG@10, and full-support@10 on the law set, whose comparison questions name two judgments;
- **ad-hoc**: classic test collections of information needs with many judged documents each (MEDLINE, CACM,
  TIME, LISA): nDCG@10. ADI (82 documents, 35 needs) is too small to fit or choose anything on: evaluated, never
  fitted (``fit=False``).

Usage::

    sets = available_dev_sets(Path("DATA"))        # those whose folders are there, in DEV_SETS order
    evalset = sets[0].load(Path("DATA"))
    sets[0].floor_metrics                           # ("ndcg@10", "full@10")
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from evaluation.data import EvalSet, jsonl_evalset, load_aragog, load_hotpot

#: The law set's questions whose fact is absent from the corpus: the gate's test, not retrieval's.
UNANSWERABLE_TYPE = "Irrelevant Unsolvable Question"


@dataclass(frozen=True)
class DevSet:
    """One development set: its name, kind, the folders it needs, how to load it, and its floor metrics."""

    name: str
    kind: str
    folders: tuple[str, ...]
    loader: Callable[[Path], EvalSet]
    floor_metrics: tuple[str, ...] = ("ndcg@10",)
    fit: bool = True

    def present(self, data: Path) -> bool:
        """Whether every folder the set needs is under ``data``."""
        return all((data / f).is_dir() for f in self.folders)

    def load(self, data: Path) -> EvalSet:
        """The set's passages and questions (named as ``scripts/lab/evaluate.py`` names the same set given by its
        files, so both share the cached indexes under ``.adaptive/eval-<name>``)."""
        return self.loader(data)


def _jsonl(folder: str, name: str | None = None) -> Callable[[Path], EvalSet]:
    def load(data: Path) -> EvalSet:
        return jsonl_evalset([data / folder / "corpus.jsonl"], data / folder / "questions.jsonl", name or folder)

    return load


def _musique(data: Path) -> EvalSet:
    corpora = [data / "musique_dev100" / "corpus.jsonl", data / "wiki2_corpus" / "corpus.json"]
    return jsonl_evalset(corpora, data / "musique_dev100" / "questions.jsonl", "musique")


def _law(data: Path) -> EvalSet:
    evalset = _jsonl("dragonball_law_en", "law")(data)
    answerable = [q for q in evalset.questions if q.type != UNANSWERABLE_TYPE]
    return EvalSet(evalset.name, evalset.passages, answerable)


#: Every development set, in the order tables list them.
DEV_SETS: tuple[DevSet, ...] = (
    DevSet(
        "hotpotqa100", "multi-hop", ("hotpotqa100",), lambda d: load_hotpot(d / "hotpotqa100"), ("ndcg@10", "full@10")
    ),
    DevSet("musique", "multi-hop", ("musique_dev100", "wiki2_corpus"), _musique, ("ndcg@10", "full@10")),
    DevSet("law", "long documents", ("dragonball_law_en",), _law, ("ndcg@10", "full@10")),
    DevSet("aragog", "long documents", ("aragog",), lambda d: load_aragog(d / "aragog")),
    DevSet("medline", "ad-hoc", ("medline",), _jsonl("medline")),
    DevSet("cacm", "ad-hoc", ("cacm",), _jsonl("cacm")),
    DevSet("time", "ad-hoc", ("time",), _jsonl("time")),
    DevSet("lisa", "ad-hoc", ("lisa",), _jsonl("lisa")),
    DevSet("adi", "ad-hoc", ("adi",), _jsonl("adi"), fit=False),
)


def available_dev_sets(data: Path, names: list[str] | None = None) -> list[DevSet]:
    """The sets of :data:`DEV_SETS` whose folders are under ``data`` (``names``: only those, in that order).

    :raises SystemExit: naming an unknown set, or when none is there.
    """
    by_name = {s.name: s for s in DEV_SETS}
    unknown = sorted(set(names or []) - set(by_name))
    if unknown:
        raise SystemExit(f"Unknown development set(s) {unknown}; known: {list(by_name)}")
    chosen = [by_name[n] for n in names] if names else list(DEV_SETS)
    present = [s for s in chosen if s.present(data)]
    if not present:
        raise SystemExit(f"No development set under {data}: expected folders such as {DEV_SETS[0].folders}")
    return present
