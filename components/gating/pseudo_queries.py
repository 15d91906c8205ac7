"""Pseudo-queries for the quality gate's self-calibration, drawn from an index's own chunks (no labels needed).

- :func:`pseudo_queries`: a question word, the chunk's heading or title and a few content words or names of one
  of its sentences (``named``), and, where one document names another's title, words from both (``bridge``, the
  multi-hop shape). Each remembers the documents (``doc_id``) it came from, so that the calibration can run it
  with those documents present and excluded (missing evidence).
- :func:`absent_attribute`: the same subject asked for something its document does not hold: the name, a word or
  two of the present question (the context: "defence lawyer") and 2–3 content words of another document that no
  chunk of the subject's document contains (the asked attribute). Run on the index as it is, it is what a
  question about an on-topic document whose asked fact is absent looks like to the gate's ``asked`` signal.

Pure text and numpy; :mod:`adaptive_retrieval.pipelines.gate_calibration` runs them through a query pipeline.

Usage::

    queries = pseudo_queries(chunks, n=500, seed=0)
    queries[0].text, queries[0].sources, queries[0].absent   # 'What Defense Lawyer, B. Lewis firm?', ['db_1'], '…'
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass

import numpy as np
from haystack import Document

from adaptive_retrieval.components.text.numbering import heading_without_number
from adaptive_retrieval.components.text.sentences import split_prose
from adaptive_retrieval.components.text.stopwords import stopwords
from adaptive_retrieval.components.text.terms import content_terms

#: A word as a question writes it: letters of any script ("Agüero", not "Ag") or a dotted abbreviation ("U.S.").
_ABBREVIATION = re.compile(r"(?:[^\W\d_]\.){2,}")
_TOKEN = re.compile(rf"{_ABBREVIATION.pattern}|[^\W_][\w'’\-]*")
#: Share of pseudo-queries drawn as bridges where the chunk names another document's title.
BRIDGE_SHARE = 0.5


_QUESTION_WORDS = ("What", "Which", "Who", "When", "Where", "How")


@dataclass
class PseudoQuery:
    """A query drawn from the index and the documents it came from."""

    text: str
    sources: list[str]
    kind: str
    #: the same subject asked for an attribute its documents do not hold (``named`` only; see
    #: :func:`absent_attribute`), or ``None``
    absent: str | None = None


def _sentences(text: str, min_words: int = 6, max_words: int = 60) -> list[str]:
    sentences = [s.strip() for s in split_prose(" ".join((text or "").split()))]
    good = [s for s in sentences if min_words <= len(s.split()) <= max_words]
    if good:
        return good
    words = (text or "").split()
    return [" ".join(words[:30])] if len(words) >= min_words else []


def _content_words(sentence: str) -> list[str]:
    """The sentence's names (runs of capitalised words, whole, as :func:`query_names` reads them) and its other
    content words, in order; a name ends with a comma so that two names in a row stay two names."""
    stop = stopwords()
    units: list[str] = []
    run: list[str] = []
    for token in sentence.split():
        word = _TOKEN.search(token)
        text = word.group(0).rstrip("'’-") if word else ""
        if text[:1].isupper() or text[:1].isdigit():
            if run or text.lower() not in stop:  # a sentence's capitalised "The" does not open a name
                run.append(text)
        else:
            if run:
                units.append(" ".join(run) + ",")
                run = []
            if text and text.lower() not in stop and len(text) > 1:
                units.append(text)
        if run and re.search(r"[,.;:!?)]$", token) and not _ABBREVIATION.fullmatch(token):
            units.append(" ".join(run) + ",")
            run = []
    if run:
        units.append(" ".join(run) + ",")
    return units


def _question(words: list[str]) -> str:
    return " ".join(words).strip().rstrip(",") + "?"


def _sample_words(rng: np.random.Generator, words: list[str], low: int, high: int) -> list[str]:
    """An ordered random subset of ``words`` of a question's length (keeps the sentence's word order)."""
    if len(words) <= low:
        return list(words)
    n = int(rng.integers(low, min(high, len(words)) + 1))
    keep = np.sort(rng.choice(len(words), size=n, replace=False))
    return [words[i] for i in keep]


def _heading(chunk: Document) -> str:
    path = chunk.meta.get("section_path") or []
    return str(path[-1]).strip() if path else ""


def _heading_key(heading: str) -> str:
    """A heading without its numbering, lower-cased: "1. Introduction" and "1 INTRODUCTION" are one heading."""
    return heading_without_number(heading).lower()


def _title_name(title: str) -> str:
    """How a question names a document by its title: the name before a subtitle ("BERT: Pre-training of …" →
    "BERT"), else the whole title."""
    head, sep, _ = title.partition(":")
    return head.strip() if sep and 0 < len(head.split()) <= 5 else title.strip()


def _name(chunk: Document, shared_headings: set[str]) -> str:
    """What a question about this chunk would name: its section heading when that heading is the chunk's own
    (a heading that several documents share — "Introduction", "References" — names none of them), else its
    document's title."""
    heading = _heading(chunk)
    if 0 < len(heading) <= 80 and _heading_key(heading) not in shared_headings:
        return heading
    return _title_name(str(chunk.meta.get("title") or ""))


def _documents_with_text(
    chunks: list[Document], subjects: set[str] | None
) -> tuple[dict[str, list[Document]], list[str], list[str]]:
    """The chunks with sentences by document, the documents in order, and those a query may be about
    (:func:`pseudo_queries`' ``subjects``).

    :raises ValueError: when fewer than two documents have text, or none of ``subjects`` has.
    """
    by_doc: dict[str, list[Document]] = defaultdict(list)
    for chunk in chunks:
        doc_id = chunk.meta.get("doc_id")
        if doc_id and _sentences(chunk.content or ""):
            by_doc[doc_id].append(chunk)
    docs = sorted(by_doc)
    if len(docs) < 2:
        msg = f"Self-calibration needs at least 2 indexed documents with text; the index has {len(docs)}"
        raise ValueError(msg)
    drawn = docs if subjects is None else [d for d in docs if d in subjects]
    if not drawn:
        msg = "None of the documents to calibrate on has text to draw pseudo-queries from"
        raise ValueError(msg)
    return by_doc, docs, drawn


def pseudo_queries(
    chunks: list[Document], n: int, seed: int = 0, subjects: set[str] | None = None
) -> list[PseudoQuery]:
    """Up to ``n`` pseudo-queries drawn from ``chunks``, deterministic for a seed.

    A question names its subject and asks about a few of its facts: ``named`` = a question word, the chunk's
    section heading (its document's title where other documents share that heading) and 3–6 content words of
    one of its sentences (in their order; the question word is a stop word, so it only shapes the embedding);
    ``bridge`` (where a chunk names another document's title, half of the time) = 2–4 words of the chunk, that
    title and 2–4 words of the other document, with both documents as sources. A "word" is a content word or a
    whole name (:func:`_content_words`). Each ``named`` query carries its :func:`absent_attribute` variant
    (drawn with a generator of its own, so the present queries do not depend on it).

    :param subjects: the documents (``doc_id``) a query may be about (``None``: any); the others still supply
        the other documents of bridges and absent attributes (an update after indexing draws from the new ones).
    :raises ValueError: when fewer than two documents have text to draw from (nothing to exclude against), or
        none of ``subjects`` has.
    """
    rng = np.random.default_rng(seed)
    by_doc, docs, drawn = _documents_with_text(chunks, subjects)
    titles = {d: str(by_doc[d][0].meta.get("title") or "").strip() for d in docs}
    heading_docs: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        for chunk in by_doc[doc]:
            heading_docs[_heading_key(_heading(chunk))].add(doc)
    shared_headings = {key for key, owners in heading_docs.items() if key and len(owners) > 1}
    title_to_doc = {t.lower(): d for d, t in titles.items() if len(t) >= 4}

    arng = np.random.default_rng(seed + 7919)  # the absent-attribute variants: the present queries stay as they were
    terms: dict[str, set[str]] = {}

    def doc_terms(doc: str) -> set[str]:
        if doc not in terms:
            terms[doc] = set().union(*(content_terms(c.content or "") for c in by_doc[doc]))
        return terms[doc]

    def pick_other(doc: str) -> list[str]:
        other = docs[int(arng.integers(len(docs)))]
        while other == doc:
            other = docs[int(arng.integers(len(docs)))]
        chunk = by_doc[other][int(arng.integers(len(by_doc[other])))]
        sentences = _sentences(chunk.content or "")
        return _content_words(sentences[int(arng.integers(len(sentences)))])

    def pick(doc: str) -> tuple[Document, list[str]]:
        chunk = by_doc[doc][int(rng.integers(len(by_doc[doc])))]
        sentences = _sentences(chunk.content or "")
        return chunk, _content_words(sentences[int(rng.integers(len(sentences)))])

    out: list[PseudoQuery] = []
    attempts = 0
    while len(out) < n and attempts < 20 * n:
        attempts += 1
        doc = drawn[int(rng.integers(len(drawn)))]
        chunk, words = pick(doc)
        if len(words) < 3:
            continue
        ask = _QUESTION_WORDS[int(rng.integers(len(_QUESTION_WORDS)))]
        text = (chunk.content or "").lower()
        named = [d for t, d in title_to_doc.items() if d != doc and t in text] if rng.random() < BRIDGE_SHARE else []
        if named:
            other = named[int(rng.integers(len(named)))]
            _, other_words = pick(other)
            query = [
                ask,
                *_sample_words(rng, words, 2, 4),
                titles[other] + ",",
                *_sample_words(rng, other_words, 2, 4),
            ]
            out.append(PseudoQuery(_question(query), [doc, other], "bridge"))
            continue
        body = _sample_words(rng, words, 3, 6)
        subject = [_name(chunk, shared_headings) + ","] if _name(chunk, shared_headings) else []
        absent = absent_attribute(arng, ask, subject, body, doc_terms(doc), pick_other(doc))
        out.append(PseudoQuery(_question([ask, *subject, *body]), [doc], "named", absent))
    return out


def absent_attribute(
    rng: np.random.Generator, ask: str, subject: list[str], body: list[str], held: set[str], other: list[str]
) -> str | None:
    """The ``named`` question ``ask subject body`` asking instead for an attribute its document does not hold:
    ``ask``, ``subject``, 1–2 plain words of ``body`` (the context) and 2–3 plain words of ``other`` (a sentence
    of another document) none of whose stems ``held`` (the subject document's terms) contains; ``None`` when
    ``other`` has fewer than 2 such words."""
    plain = [w for w in body if not w.endswith(",")]
    foreign = [w for w in other if not w.endswith(",") and not (content_terms(w) & held) and content_terms(w)]
    if len(foreign) < 2:
        return None
    context = _sample_words(rng, plain, 1, 2) if plain else []
    return _question([ask, *subject, *context, *_sample_words(rng, foreign, 2, 3)])
