"""Link the words of a query to knowledge-graph entities: exact names with their spelling variants, and partial
names ("Reznor" → "Trent Reznor") resolved against the entities of the passages around the query.

Exact links come from :func:`~adaptive_retrieval.components.retrieval.graph_local_retriever.query_entity_candidates`
(normalised n-grams with plural variants, so case, accents, possessives, punctuation and a leading article never matter)
and one lookup in the graph's entity dictionary; a title's disambiguator-free base name is an alias the indexer
already stored ("Lilu (mythology)" → "lilu"). Partial links need context: a query n-gram that is the first or
last words of a longer entity *named in the passages the query reached* (its dense/sparse hits, or the walk's
subgraph) is read as that entity. Context keeps "Reznor" from meaning every Reznor in the graph.

Usage::

    exact = link_exact(graph_store, "Who produced Reznor's album?", total=graph_store.chunk_count())
    partial = link_partial("Who produced Reznor's album?", ["trent reznor", "nine inch nails"], df, total)
    partial  # {"trent reznor": 1.9}
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from adaptive_retrieval.components.stores.graph.graph_store import GraphStore, idf
from adaptive_retrieval.components.text.keys import normalise_key
from adaptive_retrieval.components.text.stopwords import stopwords

_NAME_WORD = re.compile(r"\b[A-Z0-9][\w'’.\-]*")
_ACRONYM = re.compile(r"\b[A-Z][A-Z0-9&.]{1,9}\b")


def query_entity_candidates(query: str, max_ngram: int = 8) -> dict[str, tuple[int, int]]:
    """Normalised n-grams of ``query`` (and their singular variants) with their word span ``(start, end)``.

    Unigrams that are stop words are skipped unless the query writes them as an acronym ("US").
    """
    words = normalise_key(query).split()
    acronyms = {normalise_key(a) for a in _ACRONYM.findall(query)}
    stop = stopwords()
    out: dict[str, tuple[int, int]] = {}
    for n in range(1, max_ngram + 1):
        for start in range(len(words) - n + 1):
            gram = words[start : start + n]
            if all(w in stop for w in gram) and not (n == 1 and gram[0] in acronyms):
                continue
            if n == 1 and len(gram[0]) < 2:
                continue
            for key in (" ".join(gram), normalise_key(" ".join(gram), phrase=True)):
                out.setdefault(key, (start, start + n))
    return out


def link_exact(
    graph_store: GraphStore,
    query: str,
    total: int,
    max_ngram: int = 8,
    candidates: dict[str, tuple[int, int]] | None = None,
) -> dict[str, float]:
    """Entities named in the query with strength ``idf`` (half for a match inside a longer match).

    :param candidates: the query's n-grams from :func:`query_entity_candidates`, when already computed.
    """
    candidates = candidates if candidates is not None else query_entity_candidates(query, max_ngram)
    found = graph_store.find_entities(candidates)
    spans = {key: candidates[key] for key in found}
    seeds: dict[str, float] = {}
    for key, (start, end) in spans.items():
        inside = any(s <= start and end <= e and (s, e) != (start, end) for s, e in spans.values())
        seeds[key] = max(seeds.get(key, 0.0), idf(found[key].df, total) * (0.5 if inside else 1.0))
    return seeds


def link_partial(
    query: str,
    context: Iterable[str],
    df: dict[str, int],
    total: int,
    exact: dict[str, float] | None = None,
    max_ngram: int = 8,
    max_span_df: int = 20,
    candidates: dict[str, tuple[int, int]] | None = None,
) -> dict[str, float]:
    """Entities of ``context`` whose first or last words appear in the query as a whole n-gram written as a name
    (every word capitalised or a number: "Reznor", not "company").

    Strength ``idf(entity) · matched words / entity words``; the longest match of each entity counts.

    :param context: entity keys named near the query (a hit's mentions, the walk's subgraph).
    :param df: chunk counts of the ``context`` entities.
    :param exact: the exact links already found: an n-gram that is itself an entity mentioned in more than
        ``max_span_df`` chunks ("university", "john") is too common to stand for a longer name.
    :param candidates: the query's n-grams from :func:`query_entity_candidates`, when already computed.
    """
    grams = candidates if candidates is not None else query_entity_candidates(query, max_ngram)
    exact = exact or {}
    stop = stopwords()
    named = {normalise_key(w) for w in _NAME_WORD.findall(query)}
    common = idf(max_span_df, total)
    out: dict[str, float] = {}
    for key in context:
        words = key.split()
        if len(words) < 2 or key in exact:
            continue
        best = 0
        for i in range(len(words) - 1, 0, -1):
            for span in (words[:i], words[-i:]):
                text = " ".join(span)
                if text not in grams or all(w in stop for w in span) or len(text.replace(" ", "")) < 4:
                    continue
                if not all(w in named or w in stop for w in span):
                    continue
                if text in exact and exact[text] < common:
                    continue
                best = max(best, i)
            if best:
                break
        if best:
            out[key] = idf(df.get(key, 1), total) * best / len(words)
    return out
