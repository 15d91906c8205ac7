"""On-topic unanswerable questions, built by rule from a set's answerable ones (no hand-written case).

A real question names its subject (a document's title) and asks one of its attributes ("According to the
judgment of Urbana, Belmont, Court, what was the address of R. Johnson's residence?"). Its *absent-fact* twin asks
the same attribute of another document **on the same subject** that does not hold it: the nearest document (cosine
of the documents' mean chunk embeddings) whose text lacks every *specific* asked word, i.e. the question's asked
words (:func:`~adaptive_retrieval.components.gating.answerability.asked_words`) that fewer than ``max_df`` of the
set's documents contain ("address" is specific to a few judgments; "defense lawyer" is in every one, so it is
context, not the attribute). The twin names the other document's subject:

1. the subject: the gold document whose title (without a "(disambiguator)") the question writes as a phrase; a
   question that writes two gold titles (a comparison) or none is skipped;
2. the other document: the nearest one (not a gold document, its title not in the question) that holds no
   specific asked word by stem or stem prefix (as the gate matches), lacks most of the asked words that are not
   context (held by fewer than ``context_df`` of the documents; a counting word such as "pieces" in "how many
   pieces of evidence" is not asked: a judgment that lists its evidence answers it), and has no word whose
   single-word vector comes within ``soft_cut`` cosine of a specific one (``"residence"`` for ``"address"``: a
   paraphrase would hold the fact);
3. the rewrite: the subject's title replaced by the other's; every other name of the question that the subject
   document holds and the other does not (a person: "R. Johnson") replaced by the name the other document writes
   after the same role words ("Defendant:", "Defense Lawyer:"); a name with no such counterpart drops the
   question.

What is built is on topic (the other document is the subject's nearest neighbour, the question names what it is
about) and unanswerable from that document by construction. It is not proof that no other document answers it:
a set of Wikipedia paragraphs may hold the fact elsewhere (rare; the rewrite names a subject that no other
question asks about).

Usage::

    twins = absent_fact_questions(questions, documents, vectors=WordVectors())
    twins[0].question, twins[0].document, twins[0].source   # the rewritten question, its document, the original
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from adaptive_retrieval.components.gating import PREFIX_MIN, asked_words
from adaptive_retrieval.components.text import content_words, normalise_key, query_names, stems

if TYPE_CHECKING:
    from adaptive_retrieval.components.gating import WordVectors

#: "how many pieces of …": a counting word before "of" is not the asked attribute.
_UNIT = re.compile(r"\bhow\s+(?:many|much)\s+(\w+)\s+of\b", re.IGNORECASE)
_DISAMBIGUATOR = re.compile(r"\s*\([^)]*\)\s*$")
#: A name as a document writes it after its role words: capitalised words, initials ("R."), "&", "of".
_NAME = r"[A-Z][\w'’.\-]*(?:[ \t]+(?:&[ \t]+)?(?:of[ \t]+|de[ \t]+|van[ \t]+)?[A-Z][\w'’.\-]*)*"


@dataclass(frozen=True)
class DocumentText:
    """One document of a set: its id, title, whole text and mean chunk embedding (unit length)."""

    id: str
    title: str
    text: str
    vector: np.ndarray


@dataclass(frozen=True)
class AbsentFact:
    """A rewritten question, the document it now names (which lacks the asked fact) and where it came from."""

    question: str
    document: str
    source: str
    subject: str
    replaced: str
    attribute: tuple[str, ...]


def _title_name(title: str) -> str:
    return _DISAMBIGUATOR.sub("", title).strip()


def _phrase_pattern(phrase: str) -> re.Pattern[str]:
    """A case-insensitive pattern for ``phrase``'s words with any punctuation and spaces between them."""
    words = re.findall(r"\w+", phrase)
    return re.compile(r"(?<!\w)" + r"[\W_]+".join(re.escape(w) for w in words) + r"(?!\w)", re.IGNORECASE)


def _document_stems(text: str) -> tuple[set[str], list[str]]:
    words = content_words(text)
    return set(stems(words)), sorted(set(words))


def _holds(stem_set: set[str], stem: str) -> bool:
    """Whether a document's stems hold ``stem`` as the gate matches: itself, or from :data:`PREFIX_MIN` letters a
    stem it is a prefix of or that is a prefix of it."""
    if stem in stem_set:
        return True
    if len(stem) < PREFIX_MIN:
        return False
    return any(s.startswith(stem) or (len(s) >= PREFIX_MIN and stem.startswith(s)) for s in stem_set)


def _role_words(text: str, name: str) -> list[str] | None:
    """The 1-3 words right before the first mention of ``name`` in ``text`` (its role: "Defense Lawyer")."""
    found = _phrase_pattern(name).search(text)
    if not found:
        return None
    before = re.findall(r"[A-Za-z]+", text[max(0, found.start() - 60) : found.start()])
    return before[-3:] if before else None


def _counterpart(text: str, role: list[str], avoid: set[str], words: int) -> str | None:
    """The name ``text`` writes right after the words ``role`` (the first that is not in ``avoid``, has at least
    ``words`` words like the name it replaces, and is not a label: "Defendant Name:")."""
    for size in range(len(role), 0, -1):
        pattern = re.compile(r"[\W_]+".join(re.escape(w) for w in role[-size:]) + r"[\W_]{1,8}(" + _NAME + ")")
        for match in pattern.finditer(text):
            name = match.group(1).rstrip(".,;:")
            label = text[match.end(1) : match.end(1) + 3].lstrip("*").startswith(":")
            if normalise_key(name) not in avoid and len(name.split()) >= words and not label:
                return name
    return None


def absent_fact_questions(
    questions: Sequence[tuple[str, str, Sequence[str]]],
    documents: Sequence[DocumentText],
    vectors: WordVectors | None = None,
    max_df: float = 0.5,
    soft_cut: float = 0.75,
    neighbours: int = 10,
    context_df: float = 0.9,
) -> list[AbsentFact]:
    """At most one absent-fact twin per question (see the module docstring).

    :param questions: ``(id, question, gold document ids)`` of answerable questions.
    :param documents: every document of the set.
    :param vectors: word vectors for the paraphrase check (``None``: stems only).
    :param max_df: share of documents under which an asked word is specific (an attribute, not context).
    :param soft_cut: cosine from which a document word counts as the asked word said otherwise.
    :param neighbours: nearest documents tried per question.
    :param context_df: share of documents from which an asked word is context every document of the kind holds
        ("defense lawyer" in judgments), left out of the majority the other document must lack.
    """
    if len(documents) < 2:
        return []
    ids = [d.id for d in documents]
    index = {d: i for i, d in enumerate(ids)}
    held = [_document_stems(f"{d.title}\n{d.text}") for d in documents]
    df: dict[str, int] = {}
    for stem_set, _ in held:
        for s in stem_set:
            df[s] = df.get(s, 0) + 1
    matrix = np.stack([d.vector for d in documents])
    keys = [normalise_key(_title_name(d.title)) for d in documents]
    out: list[AbsentFact] = []
    for qid, text, gold in questions:
        names = query_names(text)
        asked = asked_words(text, names)
        unit = _UNIT.search(text)
        if unit:  # "how many pieces of evidence": "pieces" counts, it is not what is asked
            asked = {s: w for s, w in asked.items() if w != unit.group(1).lower()}
        specific = {s: w for s, w in asked.items() if _df_share(df, s, len(held)) < max_df}
        attribute = [s for s in asked if _df_share(df, s, len(held)) < context_df]
        if not specific:
            continue
        written = normalise_key(text)
        subjects = [g for g in gold if g in index and keys[index[g]] and f" {keys[index[g]]} " in f" {written} "]
        if len(set(subjects)) != 1:
            continue
        subject = index[subjects[0]]
        title = _title_name(documents[subject].title)
        sims = matrix @ matrix[subject]
        tried = 0
        for other in np.argsort(-sims):
            if tried >= neighbours:
                break
            other = int(other)
            if ids[other] in gold or not keys[other] or f" {keys[other]} " in f" {written} ":
                continue
            tried += 1
            stem_set, words = held[other]
            lacking = [s for s in attribute if not _holds(stem_set, s)]
            if any(_holds(stem_set, s) for s in specific) or 2 * len(lacking) <= len(attribute):
                continue
            if vectors is not None and words and vectors.similarity(list(specific.values()), words).max() >= soft_cut:
                continue
            rewritten = _rewrite(text, names, title, documents[subject], documents[other])
            if rewritten is None:
                continue
            out.append(
                AbsentFact(
                    question=rewritten,
                    document=ids[other],
                    source=qid,
                    subject=ids[subject],
                    replaced=title,
                    attribute=tuple(specific.values()),
                )
            )
            break
    return out


def _df_share(df: dict[str, int], stem: str, n: int) -> float:
    """Share of the ``n`` documents holding ``stem`` itself (prefix matches are not counted: a word is specific
    where its own stem is rare)."""
    return df.get(stem, 0) / max(n, 1)


def _rewrite(text: str, names: list[str], title: str, subject: DocumentText, other: DocumentText) -> str | None:
    """``text`` naming ``other`` instead of ``subject`` (see the module docstring), or ``None``."""
    new_title = _title_name(other.title)
    out = _phrase_pattern(title).sub(lambda _: new_title, text)
    subject_key = f" {normalise_key(subject.title + ' ' + subject.text)} "
    other_key = f" {normalise_key(other.title + ' ' + other.text)} "
    title_key = f" {normalise_key(title)} "
    avoid = {normalise_key(n) for n in names}
    for name in names:
        key = normalise_key(name)
        if not key or f" {key} " in title_key or f" {key} " not in subject_key or f" {key} " in other_key:
            continue  # part of the title, or not the subject's, or shared by both: stays as written
        role = _role_words(subject.text, name)
        replacement = _counterpart(other.text, role, avoid, min(2, len(name.split()))) if role else None
        if replacement is None:
            return None
        out = _phrase_pattern(name).sub(lambda _, r=replacement: r, out)
    return out if out != text else None
