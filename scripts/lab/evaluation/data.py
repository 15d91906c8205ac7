"""Evaluation sets: passages with ids and questions with gold passage ids, from JSONL or the native formats.

Formats:

- JSONL corpus: one ``{"id", "title", "text"}`` per line (``title`` optional);
- JSONL questions: one ``{"id", "question", "gold_ids": [...], "type"}`` per line (``type`` optional);
- HotpotQA (``hotpotqa100/``): ``corpus.json`` ``{title: [sentences]}`` and ``questions.json``; a passage's id
  is its title and the gold passages are the titles in ``supporting_facts``;
- 2WikiMultihopQA passages (``wiki2_corpus/corpus.json``, ``[{title, text}]``): distractors with no questions;
- MuSiQue as released (``musique_ans_v1.0_*.jsonl``, or a JSON list of the same records): each question brings
  its paragraphs; a passage's id is ``mq_`` + the SHA-1 of ``title\ntext`` (the ids of ``musique_dev100/``), so
  a paragraph shared by questions is indexed once, and the gold passages are those marked ``is_supporting``;
- ARAGOG (``aragog/``): ``questions.json`` ``{questions, ground_truths, filepaths}`` and ``papers/*.pdf``; each
  paper is one passage (indexed from its file), the gold passage of a question is its paper.

Usage::

    corpus = load_hotpot("../shared/data/hotpotqa100")
    corpus = corpus.with_distractors(load_wiki2("../shared/data/wiki2_corpus/corpus.json", limit=2000))
    corpus.passages[0].id, corpus.questions[0].gold_ids
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Passage:
    """A retrievable unit with an id: text, or a file (``path``) that the pipelines convert themselves."""

    id: str
    title: str = ""
    text: str = ""
    path: str | None = None

    @property
    def content(self) -> str:
        """What is indexed as the passage's text: its text, or its title when it has no text (CACM records)."""
        return self.text or self.title


@dataclass(frozen=True)
class Question:
    """A question, the ids of the passages that answer it, and a type for per-type metrics."""

    id: str
    question: str
    gold_ids: tuple[str, ...]
    type: str = "all"


@dataclass
class EvalSet:
    """Passages plus questions whose gold ids all name passages of the set."""

    name: str
    passages: list[Passage] = field(default_factory=list)
    questions: list[Question] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Check unique passage ids and that every gold id names a passage.

        :raises ValueError: naming the duplicate id or the question with an unknown gold id.
        """
        ids: set[str] = set()
        for passage in self.passages:
            if passage.id in ids:
                msg = f"{self.name}: duplicate passage id {passage.id!r}"
                raise ValueError(msg)
            ids.add(passage.id)
        for q in self.questions:
            unknown = [g for g in q.gold_ids if g not in ids]
            if unknown:
                msg = f"{self.name}: question {q.id!r} names gold passage(s) {unknown} that are not in the corpus"
                raise ValueError(msg)

    def with_distractors(self, distractors: Iterable[Passage]) -> EvalSet:
        """A copy with extra passages (no questions) appended; ids already present are skipped."""
        ids = {p.id for p in self.passages}
        titles = {p.title for p in self.passages}
        extra = [p for p in distractors if p.id not in ids and p.title not in titles]
        return EvalSet(f"{self.name}+{len(extra)}distractors", [*self.passages, *extra], list(self.questions))

    def fingerprint(self) -> str:
        """SHA-256 over the passages (text and file bytes): the key of a cached index."""
        digest = hashlib.sha256()
        for p in self.passages:
            digest.update(json.dumps([p.id, p.title, p.text], ensure_ascii=False).encode())
            if p.path:
                digest.update(Path(p.path).read_bytes())
        return digest.hexdigest()

    def split(self, held_out: float = 0.3, seed: int = 0) -> tuple[list[Question], list[Question]]:
        """Deterministic (train, held-out) split of the questions, stratified by question type."""
        if not 0.0 <= held_out < 1.0:
            msg = "held_out must be within [0, 1)"
            raise ValueError(msg)
        train: list[Question] = []
        test: list[Question] = []
        for qtype in sorted({q.type for q in self.questions}):
            group = sorted((q for q in self.questions if q.type == qtype), key=lambda q: q.id)
            random.Random(f"{seed}:{qtype}").shuffle(group)
            cut = round(len(group) * held_out)
            test.extend(group[:cut])
            train.extend(group[cut:])
        return train, test


def _read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    rows = []
    with open(path, encoding="utf-8") as fh:
        for number, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                msg = f"{path}:{number}: not valid JSON ({err.msg})"
                raise ValueError(msg) from err
            if not isinstance(row, dict):
                msg = f"{path}:{number}: expected a JSON object per line"
                raise ValueError(msg)
            rows.append({**row, "_line": number})
    return rows


def _require(row: dict[str, Any], path: str | Path, fields: tuple[str, ...]) -> None:
    missing = [f for f in fields if f not in row or row[f] in (None, "")]
    if missing:
        msg = f"{path}:{row['_line']}: missing field(s) {missing}"
        raise ValueError(msg)


def load_jsonl_corpus(path: str | Path) -> list[Passage]:
    """Passages from a JSONL file of ``{"id", "title", "text"}`` lines; a record may have an empty ``text`` when it
    has a title (half of CACM's records are a title alone: the title is then what is indexed).

    :raises ValueError: for a malformed line or one without ``id``, or without both ``text`` and ``title``.
    """
    passages = []
    for row in _read_jsonl(path):
        _require(row, path, ("id",) if row.get("title") else ("id", "text"))
        passages.append(Passage(id=str(row["id"]), title=str(row.get("title") or ""), text=str(row.get("text") or "")))
    return passages


def load_jsonl_questions(path: str | Path) -> list[Question]:
    """Questions from a JSONL file of ``{"id", "question", "gold_ids": [...], "type"}`` lines.

    :raises ValueError: for a malformed line, a missing field or an empty ``gold_ids``.
    """
    questions = []
    for row in _read_jsonl(path):
        _require(row, path, ("id", "question", "gold_ids"))
        gold = row["gold_ids"]
        if not isinstance(gold, list) or not gold:
            msg = f"{path}:{row['_line']}: gold_ids must be a non-empty list"
            raise ValueError(msg)
        questions.append(
            Question(
                id=str(row["id"]),
                question=str(row["question"]),
                gold_ids=tuple(str(g) for g in gold),
                type=str(row.get("type") or "all"),
            )
        )
    return questions


def load_jsonl(corpus_paths: Iterable[str | Path], questions_path: str | Path, name: str = "jsonl") -> EvalSet:
    """An :class:`EvalSet` from one or more JSONL corpora and a JSONL question file."""
    passages = [p for path in corpus_paths for p in load_jsonl_corpus(path)]
    return EvalSet(name, passages, load_jsonl_questions(questions_path))


def add_jsonl_arguments(parser: Any, name_default: str = "the questions file's stem") -> None:
    """The ``--corpus`` / ``--questions`` / ``--name`` options of a JSONL evaluation (an argparse parser);
    ``name_default`` says in the help what the script names the set when ``--name`` is not given."""
    parser.add_argument(
        "--corpus",
        action="append",
        default=[],
        help="JSONL {id, title, text}, or a .json [{title, text}] list (or its folder) as distractors; repeatable",
    )
    parser.add_argument("--questions", help="JSONL {id, question, gold_ids, type}")
    parser.add_argument("--name", help=f"name of a JSONL evaluation (default: {name_default})")


def jsonl_evalset(corpora: Iterable[str | Path], questions: str | Path | None, name: str | None = None) -> EvalSet:
    """The JSONL evaluation ``--corpus/--questions/--name`` describe: the ``.jsonl`` corpora with the questions,
    plus every other corpus (a ``{title, text}`` list) as distractors (ids from titles, titles already present
    skipped).

    :raises SystemExit: when the questions or a JSONL corpus is missing.
    """
    corpora = list(corpora)
    jsonl = [c for c in corpora if str(c).endswith(".jsonl")]
    if not (jsonl and questions):
        raise SystemExit("--corpus and --questions go together, with at least one JSONL corpus ({id, title, text}).")
    evalset = load_jsonl(jsonl, questions, name=name or Path(questions).stem)
    for extra in (c for c in corpora if not str(c).endswith(".jsonl")):
        evalset = evalset.with_distractors(load_wiki2(extra))
    return evalset


def _folder(path: str | Path, *required: str) -> Path:
    folder = Path(path).expanduser()
    for name in required:
        if not (folder / name).exists():
            msg = f"{folder} has no {name}: is this the right data folder?"
            raise FileNotFoundError(msg)
    return folder


def load_hotpot(path: str | Path) -> EvalSet:
    """HotpotQA questions and passages (id = title; gold = the titles in ``supporting_facts``)."""
    folder = _folder(path, "corpus.json", "questions.json")
    corpus = json.loads((folder / "corpus.json").read_text(encoding="utf-8"))
    passages = [Passage(id=title, title=title, text="".join(sentences).strip()) for title, sentences in corpus.items()]
    questions = []
    for row in json.loads((folder / "questions.json").read_text(encoding="utf-8")):
        gold = tuple(dict.fromkeys(title for title, _ in row["supporting_facts"]))
        questions.append(Question(id=row["_id"], question=row["question"], gold_ids=gold, type=row["type"]))
    return EvalSet("hotpotqa100", passages, questions)


def load_wiki2(path: str | Path, limit: int | None = None) -> list[Passage]:
    """2WikiMultihopQA passages as distractors (id ``wiki2:<title>``, repeated titles numbered)."""
    file = Path(path).expanduser()
    if file.is_dir():
        file = _folder(file, "corpus.json") / "corpus.json"
    rows = json.loads(file.read_text(encoding="utf-8"))
    passages: list[Passage] = []
    seen: dict[str, int] = {}
    for row in rows[:limit] if limit is not None else rows:
        title = str(row["title"])
        count = seen.get(title, 0)
        seen[title] = count + 1
        pid = f"wiki2:{title}" if count == 0 else f"wiki2:{title}#{count}"
        passages.append(Passage(id=pid, title=title, text=str(row["text"])))
    return passages


def musique_passage_id(title: str, text: str) -> str:
    """The id of a MuSiQue paragraph: ``mq_`` + the first 12 hex digits of SHA-1 over ``title\ntext``."""
    return "mq_" + hashlib.sha1(f"{title}\n{text}".encode()).hexdigest()[:12]


def read_musique_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a MuSiQue file as released: JSONL, or one JSON list; each with its ``_line`` (its position)."""
    file = Path(path).expanduser()
    text = file.read_text(encoding="utf-8")
    if not text.lstrip().startswith("["):
        return _read_jsonl(file)
    try:
        records = json.loads(text)
    except json.JSONDecodeError as err:
        msg = f"{file}: not valid JSON ({err.msg})"
        raise ValueError(msg) from err
    if not all(isinstance(r, dict) for r in records):
        msg = f"{file}: expected a list of JSON objects"
        raise ValueError(msg)
    return [{**record, "_line": number} for number, record in enumerate(records, 1)]


def load_musique(path: str | Path, name: str | None = None) -> EvalSet:
    """MuSiQue questions in the released format, with the paragraphs they bring as the corpus.

    A record holds ``id`` (``2hop__…``, ``3hop1__…``, ``4hop3__…``), ``question``, ``paragraphs``
    (``title``, ``paragraph_text``, ``is_supporting``) and ``answerable``. The question type is the hop count
    (``3hop1`` and ``3hop2`` are both ``3hop``); unanswerable records (MuSiQue-Full) are skipped with a warning,
    as they have no supporting passages.

    :raises ValueError: for a record without its fields or without a supporting paragraph.
    """
    file = Path(path).expanduser()
    records = read_musique_records(file)
    passages: dict[str, Passage] = {}
    questions = []
    skipped = 0
    for record in records:
        _require(record, file, ("id", "question", "paragraphs"))
        if record.get("answerable") is False:
            skipped += 1
            continue
        gold = []
        for paragraph in record["paragraphs"]:
            title, body = str(paragraph.get("title") or ""), str(paragraph.get("paragraph_text") or "")
            pid = musique_passage_id(title, body)
            passages.setdefault(pid, Passage(id=pid, title=title, text=body))
            if paragraph.get("is_supporting"):
                gold.append(pid)
        if not gold:
            msg = f"{file}:{record['_line']}: question {record['id']!r} has no supporting paragraph"
            raise ValueError(msg)
        hops = re.match(r"\d+hop", str(record["id"]))
        questions.append(
            Question(
                id=str(record["id"]),
                question=str(record["question"]),
                gold_ids=tuple(gold),
                type=hops[0] if hops else "all",
            )
        )
    if skipped:
        logger.warning("MuSiQue: %d unanswerable question(s) in %s were skipped", skipped, file)
    return EvalSet(name or file.stem, list(passages.values()), questions)


def load_aragog(path: str | Path) -> EvalSet:
    """ARAGOG questions over arXiv papers: one passage per PDF (id = file name); questions whose paper is
    missing from ``papers/`` are dropped with a warning."""
    folder = _folder(path, "questions.json", "papers")
    data = json.loads((folder / "questions.json").read_text(encoding="utf-8"))
    papers = {p.name: p for p in sorted((folder / "papers").glob("*.pdf"))}
    passages = [Passage(id=name, title=file.stem, path=str(file.resolve())) for name, file in papers.items()]
    questions = []
    dropped = 0
    for index, (question, filepath) in enumerate(zip(data["questions"], data["filepaths"], strict=True)):
        name = Path(filepath).name
        if name not in papers:
            dropped += 1
            continue
        questions.append(Question(id=f"aragog-{index:03d}", question=question, gold_ids=(name,), type="paper"))
    if dropped:
        logger.warning("ARAGOG: %d question(s) about papers missing from %s were dropped", dropped, folder / "papers")
    return EvalSet("aragog", passages, questions)
