"""Answerability without an LLM: does one returned document hold what the question asks for?

A document on the right topic is not an answer: "What is the favourite cuisine of the defence lawyer K. Gonzalez?"
retrieves the judgment that names him, and every evidence signal (similarity, names, coverage over the whole list)
says "found". What is missing is the *asked* part: the attribute, relation or quantity. This module reads it from
the query and looks for it document by document:

- :func:`asked_terms`: the stemmed content words of the clause the first question word opens ("what is the
  favourite cuisine of the defence lawyer K. Gonzalez" → favourit, cuisin, defenc, lawyer), without the query's
  names and without the framing words of ``data/question_operators.txt`` ("according", "mentioned", "document"…);
  a query without a question word keeps all its non-name content words;
- :func:`asked_coverage`: how many of those terms the returned passages contain: the mean of the best single
  document's share (the passages of one ``doc_id`` together) and the share over all of them (one document
  holding the attribute counts fully, a list that only spreads it thinly counts half). A term matches its stem
  and, from :data:`PREFIX_MIN` letters on, stems it is a prefix of or that are a prefix of it ("methodology" /
  "method", "creator" / "creation"). Measured on dragonball_law_en (answerable vs. "Irrelevant Unsolvable"
  questions, AUROC of the signal alone, passages holding a name only): sentence windows of 1/2/4 sentences in
  the top 5 passages 0.72/0.72/0.74, whole passages in the top 5 0.77, whole passages in all returned (~13)
  0.86, the mean of best and all 0.88. A fact's words often sit in a passage the top 5 does not reach (a
  judgment's header lists the defendant's occupation; the question retrieves the crime's narrative first).
  Counting only the passages that hold one of the question's names cost multi-hop questions their bridge
  passage (hotpotqa100: 76 % of answerable questions passed at 0.55 against 88 % over all passages, the gate's
  AUROC 0.895 against 0.904) and gained nothing on the law set, so every returned passage counts. The best
  *document* rather than the best passage, with prefix matches, kept the law set as it was and took ARAGOG (a
  paper's chunks; wordy questions) from 0.923, 88/17 to 0.933, 92/18 (the gate's AUROC, pass % answerable /
  unanswerable, on its dumped attempt-0 lists; without the check 0.937, 94/18).
- **Soft matches** (with :class:`~adaptive_retrieval.components.gating.word_vectors.WordVectors`), looked up only
  where the stems fall short of the gate's threshold: a passage that words the relation otherwise ("spouse"
  asked, "wife" written) holds the fact without the stem. An asked word a passage lacks gets partial credit from
  the passage's most similar word (single-word MiniLM vectors; the question's own names excluded):
  ``clip((cos - floor) / (1 - floor), 0, 1)``, so a near synonym (cos 0.87) counts 2/3 and a word of the same
  field ("color" / "white", 0.78) about half. ``floor`` is read off the index (the self-calibration: a quantile
  of what absent attributes reach, :func:`unmatched`). Measured on the development sets' dumped attempt-0 lists
  (stems → soft at floor 0.6): dragonball_law_en 0.882, 94/18 → 0.884, 94/20; musique_dev100 0.888, 74/15 →
  0.891, 76/15; hotpotqa100 0.904, 88/25 → 0.905, 88/25. All-or-nothing credit at a cut passed the "favorite
  color" questions (cos of "color" and "white" 0.78): at 0.75 the law set's unanswerable pass rate went 18 → 30 %.

The gate (:class:`~adaptive_retrieval.components.gating.quality_gate.QualityGate`) reads it as the ``asked`` signal
and vetoes a pass when it falls below its ``asked_threshold`` (set by the self-calibration on pseudo-queries that ask
an attribute present in a document against ones that ask an attribute no passage of that document holds; off on an
index where those hold back few absent attributes).

Usage::

    asked_terms("Who was the defense lawyer for T. Collins?", ["T. Collins"])   # {'defens', 'lawyer'}
    asked_coverage(documents, "Who was the defense lawyer for T. Collins?", ["T. Collins"])  # 1.0
    asked_coverage(documents, query, names, vectors=WordVectors(), floor=0.6)   # with soft matches
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
from haystack import Document

from adaptive_retrieval.components.text.keys import fold
from adaptive_retrieval.components.text.terms import content_terms, content_words, stems, term_set

if TYPE_CHECKING:
    from adaptive_retrieval.components.gating.word_vectors import WordVectors

_OPERATORS = Path(__file__).resolve().parent / "data" / "question_operators.txt"
#: Shortest stem that matches by prefix (a design constant, not fitted: the only value tried).
PREFIX_MIN = 5
#: Passages the check reads, from the top of the returned list. The check was designed on lists of 10-15 (the
#: profiles' ``top_k``); reading every returned passage made it depend on the routing profile: with profiles that
#: return 12-14 passages, more of them graph neighbours, an absent attribute found a passage that words something
#: like it more often, and the self-calibration's hold-back of absent-attribute pseudo-queries fell from 45 % to
#: 31 % on dragonball_law_en, near the 30 % under which the check turns itself off (scripts/lab/README.md, "A missing
#: fact, not missing evidence"). A fixed count keeps the check's meaning whatever the profile.
ASKED_DOCUMENTS = 10
_RAW_WORD = re.compile(r"[a-z0-9]+")
_AUXILIARIES = frozenset(
    [
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "do",
        "does",
        "did",
        "has",
        "have",
        "had",
        "can",
        "could",
        "will",
        "would",
        "should",
        "shall",
        "may",
        "might",
        "must",
    ]
)
#: The noun phrase a "which"/"what" opens, up to the first auxiliary verb or the end of the question.
_ANSWER_TYPE = re.compile(
    r"\b(?:which|what)\s+((?:[\w'\-]+\s+){0,2}?[\w'\-]+)\s*(?=[?.!]*\s*$|\s(?:"
    + "|".join(sorted(_AUXILIARIES))
    + r")\b)",
    re.IGNORECASE,
)
_QUESTION_WORD = re.compile(r"\b(?:what|which|who|whom|whose|when|where|why|how)\b", re.IGNORECASE)


@cache
def question_operators() -> frozenset[str]:
    """The packaged framing words, stemmed as :func:`~adaptive_retrieval.components.text.terms.content_terms` does."""
    lines = _OPERATORS.read_text(encoding="utf-8").splitlines()
    return frozenset(content_terms(" ".join(w.strip() for w in lines if w.strip() and not w.startswith("#"))))


def asked_words(query: str, names: Sequence[str]) -> dict[str, str]:
    """What ``query`` asks for (see the module docstring), stem → the word the query writes (its first)."""
    found = _QUESTION_WORD.search(query)
    clause = query[found.start() :] if found else query
    drop = content_terms(" ".join(names)) | question_operators()
    words = content_words(clause)
    out: dict[str, str] = {}
    for word, stem in zip(words, stems(words), strict=True):
        if stem not in drop:
            out.setdefault(stem, word)
    return out


def answer_type(query: str, names: Sequence[str]) -> set[str]:
    """The stems of the answer's *kind* a question names after "which"/"what", up to its verb or its end ("which
    protocol?", "what crime did …", "which law firm did …"): a passage that holds the answer need not write the
    kind ("in 1889" answers "what year"), so the check forgives it half (see :func:`asked_coverage`)."""
    found = _ANSWER_TYPE.search(query)
    if not found or found.group(1).split()[0].lower() in _AUXILIARIES:
        return set()
    return set(asked_words(found.group(1), names))


def asked_terms(query: str, names: Sequence[str]) -> set[str]:
    """The stemmed terms of what ``query`` asks for (see the module docstring); ``names``: the query's names."""
    return set(asked_words(query, names))


def _variants(term: str, stemmed: list[str]) -> set[str]:
    """The stems of ``stemmed`` (sorted) that ``term`` matches: itself, and from :data:`PREFIX_MIN` letters on,
    the stems it is a prefix of ("method" → "methodolog") and those that are a prefix of it ("creat" ← "creator")."""
    found = {term}
    if len(term) >= PREFIX_MIN:
        start = bisect.bisect_left(stemmed, term)
        while start < len(stemmed) and stemmed[start].startswith(term):
            found.add(stemmed[start])
            start += 1
        found.update(term[:k] for k in range(PREFIX_MIN, len(term)))
    return found


def _lexical(documents: Sequence[Document], terms: list[str]) -> tuple[list[list[str]], np.ndarray]:
    """Each passage's content words and which asked ``terms`` (stems, or a stem variant, :func:`_variants`) it
    holds ``[docs, terms]`` (0/1)."""
    texts = [content_words(doc.content or "") for doc in documents]
    held = [term_set(doc.content or "") for doc in documents]
    stemmed = sorted(set().union(*held))
    variants = [_variants(t, stemmed) for t in terms]
    credit = np.asarray([[not forms.isdisjoint(stems_) for forms in variants] for stems_ in held], dtype=np.float64)
    return texts, credit.reshape(len(texts), len(terms))


def _soft(
    texts: list[list[str]],
    credit: np.ndarray,
    asked: list[str],
    names: Sequence[str],
    vectors: WordVectors,
    floor: float,
) -> np.ndarray:
    """Raise ``credit`` (in place) with soft matches of the ``asked`` words (one per column) in each passage's
    words ``texts`` (the query's ``names`` excluded); returns each asked word's best similarity in any passage
    (``nan`` for words every passage holds by stem)."""
    best = np.full(len(asked), np.nan)
    missing = [j for j in range(len(asked)) if not credit[:, j].all()]
    if not missing:
        return best
    vectors.warm_up()
    named = set(content_words(" ".join(names)))
    kept = [vectors.known(set(words) - named) for words in texts]
    union = list(set().union(*kept))
    if not union:
        best[missing] = 0.0
        return best
    column = dict(zip(union, range(len(union)), strict=True))
    sims = vectors.similarity([asked[j] for j in missing], union)
    best[missing] = sims.max(axis=1)
    for i, words in enumerate(kept):
        if words:
            top = sims[:, np.fromiter((column[w] for w in words), dtype=np.int64, count=len(words))].max(axis=1)
            soft = np.clip((top - floor) / max(1.0 - floor, 1e-9), 0.0, 1.0)
            credit[i, missing] = np.maximum(credit[i, missing], soft)
    return best


def _coverage(credit: np.ndarray, groups: list[np.ndarray]) -> float:
    """The mean of the best document's share (its passages' credits, ``groups``: the rows of each document) and
    the share over all passages."""
    best = max(credit[rows].max(axis=0).sum() for rows in groups)
    return float(0.5 * (best + credit.max(axis=0).sum()) / credit.shape[1])


def _forgiven(credit: np.ndarray, kinds: list[int]) -> np.ndarray:
    """``credit`` with the answer-kind columns (:func:`answer_type`) at least half credited in every passage."""
    if not kinds:
        return credit
    out = credit.copy()
    out[:, kinds] = np.maximum(out[:, kinds], 0.5)
    return out


def _groups(documents: Sequence[Document]) -> list[np.ndarray]:
    """The rows of each document among ``documents`` (passages by ``meta["doc_id"]``, else each its own)."""
    rows: dict[str, list[int]] = {}
    for i, doc in enumerate(documents):
        rows.setdefault(str(doc.meta.get("doc_id") or f"#{i}"), []).append(i)
    return [np.asarray(r) for r in rows.values()]


def asked_coverage(
    documents: Sequence[Document],
    query: str,
    names: Sequence[str],
    vectors: WordVectors | None = None,
    floor: float = 1.0,
    needed: float = 1.0,
) -> float:
    """How much of what ``query`` asks for the first :data:`ASKED_DOCUMENTS` returned passages hold, in [0, 1]: the
    mean of the best single document's share of :func:`asked_terms` (its passages together, by ``doc_id``) and
    the share found across all of them (``names``: the query's names, left out of the asked terms). 1.0 when the
    query asks nothing beyond its names, 0.0 without passages.

    :param vectors: word vectors for soft matches (``None``: stems only).
    :param floor: the similarity at which a soft match starts to count (1.0: stems only).
    :param needed: soft matches are looked for only when the stems cover less than this (the gate passes its
        ``asked_threshold``: a coverage at or above it passes with or without them, and the table lookups are
        skipped); 1.0: whenever a stem is missing.
    """
    asked = asked_words(query, names)
    if not asked:
        return 1.0
    documents = documents[:ASKED_DOCUMENTS]
    if not documents:
        return 0.0
    kinds = [i for i, stem in enumerate(asked) if stem in answer_type(query, names)]
    if len(kinds) == len(asked):
        return 1.0  # it asks for a kind of thing only ("which protocol?"): nothing to look for but the kind
    texts, credit = _lexical(documents, list(asked))
    groups = _groups(documents)
    coverage = _coverage(_forgiven(credit, kinds), groups)
    if vectors is None or floor >= 1.0 or coverage >= needed:
        return coverage
    _soft(texts, credit, list(asked.values()), names, vectors, floor)
    return _coverage(_forgiven(credit, kinds), groups)


def unmatched(documents: Sequence[Document], query: str, names: Sequence[str], vectors: WordVectors) -> list[float]:
    """For each asked word that no returned passage holds by stem, its best similarity to a passage word (the
    query's names excluded): over absent-attribute pseudo-queries, what an absent attribute reaches by
    similarity alone, from which the self-calibration reads the soft-match ``floor``."""
    asked = asked_words(query, names)
    documents = documents[:ASKED_DOCUMENTS]
    if not asked or not documents:
        return []
    texts, credit = _lexical(documents, list(asked))
    nowhere = ~credit.any(axis=0)
    best = _soft(texts, credit, list(asked.values()), names, vectors, 1.0)
    return [float(v) for v in best[nowhere]]


def missing_asked(
    documents: Sequence[Document],
    query: str,
    names: Sequence[str],
    vectors: WordVectors | None = None,
    floor: float = 1.0,
    below: float = 0.5,
) -> list[str]:
    """What ``query`` asks that the first :data:`ASKED_DOCUMENTS` passages do not hold, as a person reads it: each
    run of adjacent asked words in the question (no other word between them) that holds a word whose best credit in
    any passage (stems, and soft matches from ``floor`` with ``vectors``) is under ``below``, in question order:
    "sick leave" when no passage mentions "sick" (though one mentions parental "leave"). Empty when everything
    asked is held (or the query asks nothing beyond its names)."""
    asked = asked_words(query, names)
    if not asked:
        return []
    documents = documents[:ASKED_DOCUMENTS]
    if documents:
        texts, credit = _lexical(documents, list(asked))
        if vectors is not None and floor < 1.0:
            _soft(texts, credit, list(asked.values()), names, vectors, floor)
        best = credit.max(axis=0)
    else:
        best = np.zeros(len(asked))
    kinds = answer_type(query, names)
    missing = {stem for stem, value in zip(asked, best, strict=True) if value < below and stem not in kinds}
    found = _QUESTION_WORD.search(query)
    words = _RAW_WORD.findall(fold(query[found.start() :] if found else query).lower())
    phrases: list[str] = []
    run: list[tuple[str, str]] = []
    for word, stem in [*zip(words, stems(words), strict=True), ("", "")]:
        if stem in asked and len(word) > 1:
            run.append((word, stem))
            continue
        if any(s in missing for _, s in run):
            phrase = " ".join(w for w, _ in run)
            if phrase not in phrases:
                phrases.append(phrase)
        run = []
    return phrases
