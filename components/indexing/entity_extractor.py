"""Find the entities of each chunk for the knowledge graph, with no LLM by default.

Rule-based extraction reads what English text marks as names:

- the chunk's **title** and **section headings** (a title's disambiguator is an alias: "Lilu (mythology)" and
  "Leland, North Carolina" are also mentions of "Lilu" and "Leland");
- **capitalised names**, single or multi-word, joined by connectors ("University of Oxford", "Leyenda de
  Azul"), and **quoted titles** ("The Orange Eats Creeps"); a capitalised word that opens a sentence counts
  only when the batch also shows it capitalised mid-sentence (so "Originally" is dropped, "Paris" kept);
- **acronyms** (CMLL, U.S.), linked to their expansion when the text defines them ("… Lucha Libre (CMLL)");
- **salient noun phrases**: runs of content words between stop words, kept when they repeat in the chunk or
  recur across the batch, and dropped when they occur in too large a share of it (boilerplate).

Variants are normalised to one key (:func:`normalise_key`): case, accents, punctuation, possessives, a leading
article, dotted acronyms, and for noun phrases a plural head noun.

Optionally a Haystack ChatGenerator (any: OpenAI, Ollama, llama.cpp…) adds entities and relations. Its answer
is parsed tolerantly (code fences, prose around the JSON, trailing commas, single quotes, several shapes); an
answer that still cannot be read, or a generator error, leaves that chunk with its rule-based entities and is
counted in ``stats["llm_failures"]`` — a bad answer from a local model never fails the indexing run.

Usage::

    extractor = EntityExtractor()
    result = extractor.run(documents=chunks)
    result["entities"][0].mentions   # (EntityMention(key="marie curie", name="Marie Curie", kind="name", ...), ...)
"""

from __future__ import annotations

import logging
import math
import re
from collections import Counter
from typing import Any

from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.utils import deserialize_chatgenerator_inplace

from adaptive_retrieval.components.indexing.llm_entities import LLM_INSTRUCTIONS, parse_llm_entities
from adaptive_retrieval.components.stores.graph.graph_store import ChunkEntities, EntityMention, merge_mentions
from adaptive_retrieval.components.text.keys import normalise_key, title_aliases
from adaptive_retrieval.components.text.names import CONNECTORS, Token, capitalised, is_acronym, mostly_upper, tokens
from adaptive_retrieval.components.text.numbering import heading_without_number
from adaptive_retrieval.components.text.sentences import name_sentences
from adaptive_retrieval.components.text.stopwords import stopwords

logger = logging.getLogger(__name__)

#: Salience of a mention by the kind of evidence (multiplied by 1 + log(count)).
KIND_WEIGHTS: dict[str, float] = {
    "title": 3.0,
    "heading": 2.0,
    "llm": 1.5,
    "name": 1.0,
    "acronym": 1.0,
    "phrase": 0.5,
}

_QUOTED = re.compile(r"[\"“]([^\"“”\n]{2,80})[\"”]")


@component
class EntityExtractor:
    """Extracts entities (and, with an LLM, relations) from chunks for :class:`GraphWriter`.

    Batch statistics decide the uncertain cases, so give it a batch of chunks (the indexing pipeline does).

    :param max_entities_per_chunk: keep at most this many entities per chunk, strongest first.
    :param min_phrase_df: a noun phrase seen once in a chunk must recur in this many chunks of the batch.
    :param max_phrase_df_ratio: noun phrases in more than this share of the batch's chunks are dropped (only
        in batches of at least 20 chunks, where a share means something).
    :param phrases: extract salient noun phrases at all.
    :param chat_generator: optional Haystack ChatGenerator asked for JSON entities and relations per chunk.
    :param llm_mode: ``"merge"`` (LLM entities added to the rule-based ones) or ``"replace"`` (LLM entities
        only, rule-based kept for chunks whose answer could not be read).
    :param require_grounding: drop LLM entities whose name does not occur in the chunk (hallucinations).
    :param max_llm_chars: characters of a chunk sent to the LLM.
    """

    def __init__(
        self,
        max_entities_per_chunk: int = 40,
        min_phrase_df: int = 2,
        max_phrase_df_ratio: float = 0.1,
        phrases: bool = True,
        chat_generator: Any = None,
        llm_mode: str = "merge",
        require_grounding: bool = True,
        max_llm_chars: int = 4000,
    ) -> None:
        if max_entities_per_chunk < 1:
            msg = "max_entities_per_chunk must be >= 1"
            raise ValueError(msg)
        if not 0.0 < max_phrase_df_ratio <= 1.0:
            msg = "max_phrase_df_ratio must be within (0, 1]"
            raise ValueError(msg)
        if llm_mode not in ("merge", "replace"):
            msg = f"llm_mode must be 'merge' or 'replace', got {llm_mode!r}"
            raise ValueError(msg)
        if chat_generator is not None and not callable(getattr(chat_generator, "run", None)):
            msg = "chat_generator must be a Haystack ChatGenerator (a component with run(messages=...))"
            raise TypeError(msg)
        self.max_entities_per_chunk = max_entities_per_chunk
        self.min_phrase_df = min_phrase_df
        self.max_phrase_df_ratio = max_phrase_df_ratio
        self.phrases = phrases
        self.chat_generator = chat_generator
        self.llm_mode = llm_mode
        self.require_grounding = require_grounding
        self.max_llm_chars = max_llm_chars
        self._warm = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise (the chat generator with its own ``to_dict``)."""
        return default_to_dict(
            self,
            max_entities_per_chunk=self.max_entities_per_chunk,
            min_phrase_df=self.min_phrase_df,
            max_phrase_df_ratio=self.max_phrase_df_ratio,
            phrases=self.phrases,
            chat_generator=None
            if self.chat_generator is None
            else component_to_dict(self.chat_generator, "chat_generator"),
            llm_mode=self.llm_mode,
            require_grounding=self.require_grounding,
            max_llm_chars=self.max_llm_chars,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EntityExtractor:
        """Deserialise (rebuilding the chat generator from its type)."""
        if data["init_parameters"].get("chat_generator"):
            deserialize_chatgenerator_inplace(data["init_parameters"], key="chat_generator")
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Warm up the chat generator, if any."""
        if not self._warm and self.chat_generator is not None and hasattr(self.chat_generator, "warm_up"):
            self.chat_generator.warm_up()
        self._warm = True

    # -- rule-based extraction ------------------------------------------------------------------------------

    def _names(self, sentence: str, toks: list[Token], name_evidence: set[str]) -> list[tuple[str, str]]:
        """(name, kind) spans of capitalised words, acronyms and quoted titles in one sentence."""
        stop = stopwords()
        found: list[tuple[str, str]] = []
        upper_text = mostly_upper(sentence)
        i = 0
        while i < len(toks):
            tok = toks[i]
            if not (capitalised(tok.text) and any(ch.isalpha() for ch in tok.text)):
                i += 1
                continue
            group = [tok]
            j = i + 1
            while j < len(toks):
                gap = sentence[group[-1].end : toks[j].start]
                if gap.strip():  # punctuation (comma, bracket, quote) ends a name
                    break
                word = toks[j].text
                if capitalised(word):
                    group.append(toks[j])
                    j += 1
                elif word in CONNECTORS and j + 1 < len(toks) and capitalised(toks[j + 1].text):
                    if sentence[toks[j].end : toks[j + 1].start].strip():
                        break
                    group.extend([toks[j], toks[j + 1]])
                    j += 2
                else:
                    break
            i = j
            # A grammatical capital at the sentence start ("The", "In", "However") is not part of a name.
            while group and group[0].initial and group[0].text.lower() in stop:
                group = group[1:]
            while group and group[-1].text in CONNECTORS:
                group = group[:-1]
            if not group:
                continue
            if len(group) == 1:
                word = group[0].text
                if upper_text or word.lower() in stop or len(word) < 2:
                    continue
                if is_acronym(word):
                    found.append((word, "acronym"))
                    continue
                if group[0].initial and word.lower() not in name_evidence:
                    continue
            name = re.sub(r"['’]s$", "", sentence[group[0].start : group[-1].end])
            if not upper_text:
                found.append((name, "name"))
        for match in _QUOTED.finditer(sentence):
            quoted = match.group(1).strip(" ,.;:")
            words = quoted.split()
            if words and capitalised(words[0]) and len(words) <= 8:
                found.append((quoted, "name"))
        return found

    @staticmethod
    def _acronym_links(text: str, names: list[tuple[str, str]]) -> list[tuple[str, str]]:
        """(long name key, acronym key) for definitions such as "Consejo Mundial de Lucha Libre (CMLL)"."""
        links = []
        for name, kind in names:
            if kind != "name":
                continue
            initials = "".join(w[0] for w in name.split() if w[:1].isupper())
            if len(initials) < 2:
                continue
            pattern = re.escape(name) + r"\s*\(\s*([A-Z][A-Z.&]{1,9})\s*\)"
            for match in re.finditer(pattern, text):
                acronym = match.group(1)
                if acronym.replace(".", "").replace("&", "") == initials:
                    links.append((normalise_key(name), normalise_key(acronym)))
        return links

    def _phrases(self, toks: list[Token], sentence: str) -> list[str]:
        """Candidate noun phrases: the last (up to) three words of each run of lower-case content words."""
        stop = stopwords()
        out: list[str] = []
        run: list[Token] = []

        def flush() -> None:
            if len(run) >= 2:
                # English noun phrases end in their head noun: keep the last (up to) three words.
                out.append(" ".join(t.text for t in run[-3:]))
            run.clear()

        for tok in toks:
            word = tok.text
            # Past participles and adverbs ("damaged", "quickly") end a noun phrase rather than extend it.
            content = (
                word.isalpha()
                and word.islower()
                and len(word) >= 3
                and word not in stop
                and not word.endswith(("ed", "ly"))
            )
            joined = not run or not sentence[run[-1].end : tok.start].strip()
            if content and joined:
                run.append(tok)
            else:
                flush()
                if content:
                    run.append(tok)
        flush()
        return out

    def _analyse(self, doc: Document) -> tuple[list[tuple[str, list[Token]]], Counter[str]]:
        sentences = [(s, tokens(s)) for s in name_sentences(doc.content or "")]
        caps: Counter[str] = Counter()
        for _, toks in sentences:
            for tok in toks:
                if not tok.initial and capitalised(tok.text):
                    caps[tok.text.lower()] += 1
        return sentences, caps

    def _rule_mentions(
        self,
        doc: Document,
        sentences: list[tuple[str, list[Token]]],
        name_evidence: set[str],
        phrase_df: Counter[str],
        n_docs: int,
    ) -> tuple[list[EntityMention], list[tuple[str, str]]]:
        raw: list[tuple[str, str, str]] = []  # (key, name, kind)
        title = str(doc.meta.get("title") or "").strip()
        titled: dict[str, str] = {}
        if title:
            for alias in title_aliases(title):
                titled.setdefault(normalise_key(alias), alias)
                raw.append((normalise_key(alias), alias, "title"))
        for heading in doc.meta.get("section_path") or []:
            heading = heading_without_number(str(heading)).strip()
            if heading and heading != title and len(heading.split()) <= 8:
                raw.append((normalise_key(heading), heading, "heading"))
        relations: list[tuple[str, str]] = []
        phrase_counts: Counter[str] = Counter()
        phrase_names: dict[str, str] = {}
        for sentence, toks in sentences:
            names = self._names(sentence, toks, name_evidence)
            raw.extend((normalise_key(n), n, k) for n, k in names)
            relations.extend(self._acronym_links(sentence, names))
            if self.phrases:
                for phrase in self._phrases(toks, sentence):
                    key = normalise_key(phrase, phrase=True)
                    phrase_counts[key] += 1
                    phrase_names.setdefault(key, phrase)
        ceiling = self.max_phrase_df_ratio * n_docs if n_docs >= 20 else math.inf
        for key, count in phrase_counts.items():
            df = phrase_df[key]
            if (count >= 2 or df >= self.min_phrase_df) and df <= ceiling:
                raw.extend((key, phrase_names[key], "phrase") for _ in range(count))
        counts = Counter((key, kind) for key, _, kind in raw if key)
        names_of = {(key, kind): name for key, name, kind in raw}
        # The base name ("Leland") carries the title's weight; the longer forms ("Leland, North Carolina") half,
        # so a chunk reached through several forms of its own title is not counted twice over.
        base = min(titled, key=len) if titled else None

        def weight(key: str, kind: str, n: int) -> float:
            share = 0.5 if kind == "title" and key != base else 1.0
            return round(share * KIND_WEIGHTS[kind] * (1 + math.log(n)), 4)

        mentions = [
            EntityMention(key, names_of[(key, kind)], kind, n, weight(key, kind, n))
            for (key, kind), n in counts.items()
            # "U.S." normalises to "us": a stop word as a name, but not as an acronym.
            if len(key) >= 2 and (key not in stopwords() or kind == "acronym")
        ]
        return mentions, relations

    # -- LLM extraction -------------------------------------------------------------------------------------

    def _llm_mentions(self, doc: Document) -> tuple[list[EntityMention], list[tuple[str, str]]] | None:
        """Entities and relations from the chat generator, or ``None`` when it failed or answered garbage."""
        text = (doc.content or "")[: self.max_llm_chars]
        messages = [ChatMessage.from_system(LLM_INSTRUCTIONS), ChatMessage.from_user(text)]
        try:
            replies = self.chat_generator.run(messages=messages).get("replies") or []
            answer = replies[0].text if replies and hasattr(replies[0], "text") else str(replies[0] if replies else "")
        except Exception as err:  # a local model server that is down or times out must not stop indexing
            logger.warning("LLM entity extraction failed for chunk %s: %s", doc.id, err)
            return None
        parsed = parse_llm_entities(answer or "")
        if parsed is None:
            logger.warning("Unreadable LLM entity answer for chunk %s; rule-based entities kept", doc.id)
            return None
        names, pairs = parsed
        folded = normalise_key(f"{doc.meta.get('title', '')} {doc.content or ''}")
        padded = f" {folded} "

        def grounded(key: str) -> bool:
            return not self.require_grounding or f" {key} " in padded

        counts = Counter(normalise_key(n) for n in names)
        display = {normalise_key(n): n for n in names}
        mentions = [
            EntityMention(key, display[key], "llm", n, round(KIND_WEIGHTS["llm"] * (1 + math.log(n)), 4))
            for key, n in counts.items()
            if key and len(key) >= 2 and grounded(key)
        ]
        kept = {m.key for m in mentions}
        relations = [
            (normalise_key(a), normalise_key(b))
            for a, b in pairs
            if normalise_key(a) in kept and normalise_key(b) in kept and normalise_key(a) != normalise_key(b)
        ]
        return mentions, relations

    # -- run ------------------------------------------------------------------------------------------------

    @component.output_types(entities=list[ChunkEntities], stats=dict[str, int])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Extract the entities of every chunk.

        :returns: ``entities`` (one :class:`ChunkEntities` per document with content, in order) and ``stats``
            (``chunks``, ``mentions``, ``llm_failures``).
        :raises TypeError: when ``documents`` is not a list of Documents.
        """
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            msg = "EntityExtractor expects a list of haystack Documents"
            raise TypeError(msg)
        if self.chat_generator is not None:
            self.warm_up()
        docs = [d for d in documents if d.content]
        analysed = [self._analyse(d) for d in docs]
        evidence: set[str] = set()
        for _, caps in analysed:
            evidence.update(caps)
        phrase_df: Counter[str] = Counter()
        if self.phrases:
            for sentences, _ in analysed:
                keys = {
                    normalise_key(p, phrase=True) for sentence, toks in sentences for p in self._phrases(toks, sentence)
                }
                phrase_df.update(keys)
        out: list[ChunkEntities] = []
        failures = 0
        for doc, (sentences, _) in zip(docs, analysed, strict=True):
            mentions, relations = self._rule_mentions(doc, sentences, evidence, phrase_df, len(docs))
            if self.chat_generator is not None:
                llm = self._llm_mentions(doc)
                if llm is None:
                    failures += 1
                else:
                    llm_mentions, llm_relations = llm
                    if self.llm_mode == "replace":
                        keep = [m for m in mentions if m.kind in ("title", "heading")]
                        mentions, relations = keep + llm_mentions, llm_relations
                    else:
                        mentions, relations = mentions + llm_mentions, relations + llm_relations
            merged = sorted(merge_mentions(mentions), key=lambda m: (-m.weight, m.key))
            merged = merged[: self.max_entities_per_chunk]
            kept = {m.key for m in merged}
            out.append(
                ChunkEntities(
                    chunk_id=doc.id,
                    doc_id=str(doc.meta.get("doc_id") or doc.id),
                    title=str(doc.meta.get("title") or ""),
                    text=doc.content or "",
                    mentions=tuple(merged),
                    relations=tuple(sorted({r for r in relations if r[0] in kept and r[1] in kept})),
                )
            )
        stats = {"chunks": len(out), "mentions": sum(len(c.mentions) for c in out), "llm_failures": failures}
        return {"entities": out, "stats": stats}
