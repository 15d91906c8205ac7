"""Resolve a structural reference ("Section 3.2", "the section on resolution of names", "the last chapter",
"Table 2") to sections of the indexed documents, from the outlines the section tree stores on its document nodes.

Pure functions: the retriever reads the outlines from the store and filters chunks by the section ids returned.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.text.numbering import heading_number

#: Kinds answered from the section outline, and those answered from the captions found in a section's text.
OUTLINE_KINDS = ("section", "chapter", "appendix", "part", "paragraph", "clause", "article")
CONTENT_KINDS = {"table": ("table", "tab"), "figure": ("figure", "fig")}
_STOP = {"the", "a", "an", "of", "and", "on", "in", "for", "to", "its", "this"}
_TOKEN = re.compile(r"[^\W_]+")
#: Words of a question that never name a document.
_QUESTION_WORDS = _STOP | {
    "what", "which", "who", "how", "why", "when", "where", "does", "do", "did", "is", "are", "was", "were", "say",
    "says", "said", "tell", "about", "paper", "report", "document", "article", "chapter", "section", "part",
    "appendix", "table", "figure", "fig", "describe", "describes", "explain", "explains", "show", "shows", "list",
    "lists", "cover", "covers", "discuss", "reports", "find", "finds", "in", "from", "with", "that",
    "there", "it", "by", "be", "as", "at", "or", "first", "last", "second", "third", "final", "introduction",
    "conclusion", "conclusions", "summary", "sections", "whether",
}  # fmt: skip
#: Headings that are not part of a document's body when counting sections by position.
_FRONT_MATTER = re.compile(r"^(abstract|contents|table of contents|preface|foreword|title)$")
_BACK_MATTER = re.compile(
    r"^(references?|bibliography|acknowledge?ments?|appendix\b.*|appendices|supplementary.*|index|glossary|"
    r"notes|author contributions|funding)$"
)
#: A named part that the document may not title as such: the first or the last body section stands in.
NAME_POSITIONS = {"introduction": 1, "overview": 1, "conclusion": -1, "conclusions": -1, "summary": -1}


def _name_tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOP]


def heading_matches_name(heading: str, name: str) -> bool:
    """Whether every word of ``name`` starts a word of ``heading`` (long words by their first five letters, so
    "methodology" finds "Methods" and "conclusions" finds "Conclusion")."""
    wanted = _name_tokens(name)
    words = _TOKEN.findall(heading.lower())
    return bool(wanted) and all(any(w.startswith(t[:5]) if len(t) >= 5 else w == t for w in words) for t in wanted)


def _extra_words(heading: str, name: str) -> int:
    """Words of ``heading`` (its number and stop words aside) that ``name`` does not account for."""
    wanted = _name_tokens(name)
    words = [w for w in _TOKEN.findall(_bare(heading)) if w not in _STOP]
    return sum(1 for w in words if not any(w.startswith(t[:5]) if len(t) >= 5 else w == t for t in wanted))


def heading_matches_ref(heading: str, ref: str) -> bool:
    """Whether ``heading`` is numbered ``ref`` ("3.2 Pre-training", "Appendix B", "§ 4") or one of its
    subsections ("3.2.1 ..." for "3.2")."""
    pattern = rf"^(?:(?:{'|'.join(OUTLINE_KINDS)}|sect\.|§)\s*)?{re.escape(ref)}(?=$|[\s.:)\-])"
    return re.match(pattern, heading.strip(), re.IGNORECASE) is not None


def _bare(heading: str) -> str:
    """A heading without its number, lower case: "3.2 Related Work" → "related work"."""
    number = heading_number(heading)
    text = heading.split(None, 1)[1] if number and len(heading.split(None, 1)) > 1 else heading
    if re.match(r"^(appendix|chapter|part|section)\b", text, re.IGNORECASE):
        text = re.sub(r"^\S+\s+\S+[.:]?\s*", "", text)
    return " ".join(_TOKEN.findall(text.lower()))


@dataclass
class Outline:
    """One document's sections in order: ``entries`` are ``{"section_id", "section_path", "captions"}``."""

    doc_id: str
    title: str
    source: str
    entries: list[dict[str, Any]] = field(default_factory=list)

    def top_level(self) -> list[tuple[str, list[str]]]:
        """``(heading, section ids)`` of the body's top-level sections in order: a heading shared by every
        section (the document's own title) is skipped, and so are front and back matter (abstract, references,
        acknowledgements, appendices)."""
        paths = [[str(h) for h in e.get("section_path") or []] for e in self.entries]
        depth = 0
        while (
            all(len(p) > depth for p in paths if p)
            and len({p[depth] for p in paths if p}) == 1
            and any(len(p) > depth + 1 for p in paths)
        ):
            depth += 1
        order: dict[str, list[str]] = {}
        for entry, path in zip(self.entries, paths, strict=True):
            if len(path) <= depth:
                continue
            head = path[depth]
            bare = _bare(head)
            number = heading_number(head)
            appendix = number is not None and number[0][:1].isalpha() and number[0][:1] not in "IVX"
            if not bare or _FRONT_MATTER.match(bare) or _BACK_MATTER.match(bare) or appendix:
                continue
            order.setdefault(head, []).append(str(entry["section_id"]))
        return list(order.items())


_DOC_NOUN = r"(?:paper|report|document|article|chapter|guide|manual|book|thesis|specification|documentation|docs)"
# "the BERT paper", "the execution model chapter"; "the paper on long-tail knowledge", "the report about ...".
_DOC_BEFORE = re.compile(rf"\b(?:the|this|its|that)\s+(?P<doc>(?:[\w.'-]+\s+){{1,5}}?){_DOC_NOUN}\b", re.I)
_DOC_AFTER = re.compile(rf"\b{_DOC_NOUN}\s+(?:on|about|titled|entitled|called|named)\s+(?P<doc>[^?!;,]+)", re.I)


def document_phrase(query: str) -> str:
    """The words with which ``query`` names a document ("the BERT paper", "the paper on long-tail knowledge"),
    empty when it names none (the rest of a question is about content, not about which document)."""
    found = [m.group("doc") for pattern in (_DOC_BEFORE, _DOC_AFTER) for m in pattern.finditer(query)]
    return " ".join(found)


def rank_documents(query: str, outlines: list[Outline]) -> list[Outline]:
    """The outlines of the documents the query names in a phrase such as "the BERT paper" (its words in their
    titles or file names, rarer words and a title's short name — "BERT" in "BERT: Pre-training of ..." —
    weighing more); all of them when it names none.
    """
    if not query or len(outlines) < 2:
        return outlines
    asked = {t for t in _TOKEN.findall(document_phrase(query).lower()) if t not in _QUESTION_WORDS and len(t) > 1}
    if not asked:
        return outlines
    vocab: list[tuple[set[str], set[str]]] = []
    for outline in outlines:
        short = re.split(r"[:,]", outline.title, maxsplit=1)[0] if outline.title else ""
        names = set(_TOKEN.findall(short.lower())) if len(short.split()) <= 3 else set()
        names |= set(_TOKEN.findall(Path(outline.source).stem.lower().replace("_", " ")))
        vocab.append((set(_TOKEN.findall(outline.title.lower())) | names, names))
    df = Counter(t for words, _ in vocab for t in words)
    scores = []
    for words, names in vocab:
        score = sum(math.log(1 + len(outlines) / df[t]) * (3.0 if t in names else 1.0) for t in asked & words)
        scores.append(score)
    best = max(scores)
    if best <= 0:
        return outlines
    return [o for o, s in zip(outlines, scores, strict=True) if s >= best * 0.999]


def _by_position(outline: Outline, position: int) -> list[str]:
    sections = outline.top_level()
    index = position - 1 if position > 0 else len(sections) + position
    return sections[index][1] if 0 <= index < len(sections) else []


def sections_for(structural: dict[str, Any], outline: Outline) -> list[str]:
    """Section ids of ``outline`` that ``structural`` refers to (empty when none)."""
    return [sid for sid, _ in _ranked_sections(structural, outline)]


def _ranked_sections(structural: dict[str, Any], outline: Outline) -> list[tuple[str, int]]:
    """``(section id, rank)`` pairs; a name match ranks by the heading's words the name does not account for (the
    closest titles win), every other match ranks 0. A document's best name matches only."""
    kind = str(structural.get("kind", "")).lower()
    ref, name, position = structural.get("ref"), structural.get("name"), structural.get("position")
    if kind in CONTENT_KINDS and ref:
        wanted = {f"{word} {str(ref).lower()}" for word in CONTENT_KINDS[kind]}
        captioned = [e for e in outline.entries if wanted & {c.lower() for c in e.get("captions") or []}]
        return [(str(e["section_id"]), 0) for e in captioned]
    if kind not in OUTLINE_KINDS:
        return []
    found: list[tuple[str, int]] = []
    for entry in outline.entries:
        path = [str(h) for h in entry.get("section_path") or []]
        if ref is not None:
            if any(heading_matches_ref(h, str(ref)) for h in path):
                found.append((str(entry["section_id"]), 0))
        elif name:
            named = [h for h in path if heading_matches_name(h, str(name))]
            if named:
                # 'The "with" statement' before "With Statement Context Managers" (a section's subsections share
                # its heading, and so its rank)
                found.append((str(entry["section_id"]), min(_extra_words(h, str(name)) for h in named)))
    if found:
        best = min(rank for _, rank in found)
        return [(sid, rank) for sid, rank in found if rank == best]
    if ref is not None:
        return []
    if position is None and name:
        position = NAME_POSITIONS.get(str(name).lower())
    # A named part that no heading carries ("the conclusion" of a paper whose last section is "Discussion") ranks
    # after any heading that does carry the name.
    rank = 0 if structural.get("position") is not None else 1000
    return [(sid, rank) for sid in _by_position(outline, int(position))] if position is not None else []


def resolve(structural: dict[str, Any], query: str, outlines: list[Outline]) -> tuple[list[str], list[str]]:
    """``(section ids, doc ids)``: the sections ``structural`` refers to in the documents the query names (in
    every document when those have none), else — for a name matching a document's title — that document."""
    named = rank_documents(query, outlines)
    for candidates in (named, outlines) if len(named) < len(outlines) else (outlines,):
        ranked = [pair for outline in candidates for pair in _ranked_sections(structural, outline)]
        if ranked:
            best = min(rank for _, rank in ranked)
            return list(dict.fromkeys(sid for sid, rank in ranked if rank == best)), []
    name = structural.get("name")
    if name:
        titled = [o.doc_id for o in outlines if heading_matches_name(o.title, str(name))]
        return [], titled
    return [], []
