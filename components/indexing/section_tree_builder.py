"""RAPTOR-lite tree over a document's chunks: section summaries (level 1) and a document summary (level 2).

The summary nodes live in the same collection as the chunks, told apart by ``meta.level``, and point down the
tree with ``meta.children_ids``. Summaries are extractive by default: the sentences of a node's most central
chunks that lie nearest the node's centroid, bounded in sentences and words, deterministic. A Haystack
ChatGenerator can write them instead; an empty or malformed answer (or a failed call) falls back to the
extractive summary and never fails the run. Every summary is embedded with the chunks' model.

Sections too long to be summarised in a few sentences (PDF text often yields one heading-less section per paper)
are cut into segments of consecutive chunks at the weakest link between neighbouring chunks, so every level-1
node covers at most ``max_section_chunks`` chunks. A parent with a single chunk below it is not written: that
chunk is its own summary.

Usage::

    builder = SectionTreeBuilder(precision="int8")
    builder.warm_up()
    out = builder.run(documents=embedded_chunks)   # chunks first, then their section and document nodes
    [d.meta["level"] for d in out["documents"]]    # [0, 0, ..., 1, 1, 2]
"""

from __future__ import annotations

import logging
import re
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

import numpy as np
from haystack import Document, component, default_from_dict, default_to_dict
from haystack.core.serialization import component_to_dict
from haystack.dataclasses import ChatMessage
from haystack.utils import deserialize_chatgenerator_inplace

from adaptive_retrieval.components.ids import DOCUMENT_LEVEL, SECTION_LEVEL, tree_node_id
from adaptive_retrieval.components.indexing.section_segments import Lexicon, segment_runs
from adaptive_retrieval.components.models.document_embedder import OnnxDocumentEmbedder
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL
from adaptive_retrieval.components.text.sentences import split_prose, summary_candidates

logger = logging.getLogger(__name__)

_WORD = re.compile(r"[^\W\d_]{2,}")
_LABEL = re.compile(r"^\s*(?:here is (?:a|the) summary[^:\n]*:|summary\s*:)\s*", re.IGNORECASE)

PROMPT = """Summarise the following {what} of the document "{title}" in at most {words} words.
Write plain sentences that state its main points and name its key terms. No preamble, no lists, no markdown.

{text}

Summary:"""


@dataclass
class _Node:
    """A summary node being built: its chunks (row indices into the document's chunks, in document order)."""

    level: int
    doc_id: str
    section_id: str
    segment: int
    segments: int
    rows: list[int]
    children_ids: list[str]
    text: str = ""
    via: str = "extractive"

    @property
    def id(self) -> str:
        return tree_node_id(self.level, self.doc_id, self.section_id, self.segment)


@component
class SectionTreeBuilder:
    """Adds level-1 (section) and level-2 (document) summary nodes to embedded chunks, ready for one writer.

    Input chunks come from :class:`~adaptive_retrieval.components.indexing.section_splitter.SectionSplitter` through the
    dense embedder (``meta`` ``doc_id``, ``section_id``, ``section_path``, ``position``, ``level`` = 0, and an
    ``embedding``); they pass through unchanged, followed by the summary nodes. Each node's ``meta`` holds
    ``level``, ``children_ids``, ``doc_id``, ``source``, ``title``, ``section_path``, ``section``,
    ``section_id``, ``position`` (of its first chunk) and ``summary`` (``extractive`` or ``llm``); section
    nodes of a cut section add ``segment`` and ``segments``; document nodes add ``outline``
    (``[{"section_id", "section_path", "captions"}]`` in document order; ``captions`` only where the section
    captions a table or figure), which
    :class:`~adaptive_retrieval.components.retrieval.section_tree_retriever.SectionTreeRetriever` matches structural
    references against.

    The extractive summary is centroid-based (as in MEAD): the node's sentences whose TF-IDF vectors (IDF over
    the document's chunks) lie nearest the node's TF-IDF centroid, drawn from its ``candidate_chunks`` chunks
    nearest the centroid of their embeddings, without near-duplicates, in reading order. It needs no model
    call, so the tree costs one embedding per node (same model, precision and meta fields as the chunks; the
    process shares one encoder session). Nodes get no sparse vector: the BM25 channel serves chunks.

    Usage::

        builder = SectionTreeBuilder(max_section_chunks=8, summary_sentences=4)
        out = builder.run(documents=embedded_chunks)
        out["tree"]   # {"sections": 12, "documents": 3, "llm_summaries": 0, "llm_fallbacks": 0}
    """

    def __init__(
        self,
        model: str = DEFAULT_MODEL,
        precision: str | None = None,
        device: str | None = None,
        meta_fields_to_embed: list[str] | None = None,
        max_section_chunks: int = 8,
        summary_sentences: int = 4,
        summary_words: int = 120,
        document_sentences: int = 6,
        document_words: int = 180,
        candidate_chunks: int = 8,
        redundancy_threshold: float = 0.6,
        batch_size: int = 32,
        chat_generator: Any | None = None,
        llm_input_words: int = 1500,
    ) -> None:
        """
        :param model: embedding model (name in the models folder, or a folder): the one the chunks were embedded
            with, so summaries and chunks share a vector space.
        :param precision: ``int8``/``fp32`` (CPU or CUDA), ``fp16``/``bf16``/``fp8`` (CUDA), as the embedder;
            ``None``: ``$ADAPTIVE_PRECISION``, else ``int8`` (read at warm-up).
        :param device: ``cpu`` or ``cuda``; ``None``: ``$ADAPTIVE_DEVICE``, else ``cpu``.
        :param meta_fields_to_embed: meta fields embedded with a summary (default ``["title", "section_path"]``,
            as the pipeline's dense embedder does for chunks).
        :param max_section_chunks: longer sections are cut into segments of at most this many chunks (>= 2).
        :param summary_sentences: sentences in a section summary.
        :param summary_words: word budget of a section summary.
        :param document_sentences: sentences in a document summary.
        :param document_words: word budget of a document summary.
        :param candidate_chunks: a summary draws its sentences from this many chunks nearest the centroid of the
            node's chunk embeddings (bounds the work on a long document).
        :param redundancy_threshold: a sentence this similar (TF-IDF cosine) to one already chosen is skipped.
        :param batch_size: summaries per encoder call.
        :param chat_generator: optional Haystack ChatGenerator that writes the summaries instead.
        :param llm_input_words: words of a node's text given to the ChatGenerator.
        """
        if max_section_chunks < 2:
            msg = f"max_section_chunks must be >= 2, got {max_section_chunks}"
            raise ValueError(msg)
        counts = {
            "summary_sentences": summary_sentences,
            "summary_words": summary_words,
            "document_sentences": document_sentences,
            "document_words": document_words,
            "candidate_chunks": candidate_chunks,
            "batch_size": batch_size,
            "llm_input_words": llm_input_words,
        }
        bad = [f"{k}={v}" for k, v in counts.items() if int(v) < 1]
        if bad:
            msg = f"SectionTreeBuilder needs positive counts, got {', '.join(bad)}"
            raise ValueError(msg)
        if not 0.0 < redundancy_threshold <= 1.0:
            msg = f"redundancy_threshold must be in (0, 1], got {redundancy_threshold}"
            raise ValueError(msg)
        if chat_generator is not None and not callable(getattr(chat_generator, "run", None)):
            msg = f"chat_generator must be a Haystack ChatGenerator, got {type(chat_generator).__name__}"
            raise TypeError(msg)
        self.model = model
        self.precision = precision
        self.device = device
        self.meta_fields_to_embed = list(meta_fields_to_embed or ["title", "section_path"])
        self.max_section_chunks = max_section_chunks
        self.summary_sentences = summary_sentences
        self.summary_words = summary_words
        self.document_sentences = document_sentences
        self.document_words = document_words
        self.candidate_chunks = candidate_chunks
        self.redundancy_threshold = redundancy_threshold
        self.batch_size = batch_size
        self.chat_generator = chat_generator
        self.llm_input_words = llm_input_words
        self._embedder: OnnxDocumentEmbedder | None = None
        self._generator_ready = False

    def to_dict(self) -> dict[str, Any]:
        """Serialise, with the ChatGenerator's own dictionary when there is one."""
        return default_to_dict(
            self,
            model=self.model,
            precision=self.precision,
            device=self.device,
            meta_fields_to_embed=self.meta_fields_to_embed,
            max_section_chunks=self.max_section_chunks,
            summary_sentences=self.summary_sentences,
            summary_words=self.summary_words,
            document_sentences=self.document_sentences,
            document_words=self.document_words,
            candidate_chunks=self.candidate_chunks,
            redundancy_threshold=self.redundancy_threshold,
            batch_size=self.batch_size,
            chat_generator=component_to_dict(self.chat_generator, "chat_generator") if self.chat_generator else None,
            llm_input_words=self.llm_input_words,
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SectionTreeBuilder:
        """Deserialise, rebuilding the ChatGenerator from its dictionary."""
        if data.get("init_parameters", {}).get("chat_generator"):
            deserialize_chatgenerator_inplace(data["init_parameters"], key="chat_generator")
        return default_from_dict(cls, data)

    def warm_up(self) -> None:
        """Load (or reuse) the encoder session, and warm the ChatGenerator up when it needs it."""
        if self._embedder is None:
            self._embedder = OnnxDocumentEmbedder(
                model=self.model,
                precision=self.precision,
                device=self.device,
                batch_size=self.batch_size,
                progress_bar=False,
                meta_fields_to_embed=self.meta_fields_to_embed,
            )
            self._embedder.warm_up()
        if self.chat_generator is not None and not self._generator_ready:
            if hasattr(self.chat_generator, "warm_up"):
                self.chat_generator.warm_up()
            self._generator_ready = True

    # -- tree structure -------------------------------------------------------------------------------

    def _nodes(self, chunks: list[Document], vectors: np.ndarray) -> list[_Node]:
        """Section (and segment) nodes, then the document node, of one document's chunks (document order)."""
        doc_id = str(chunks[0].meta["doc_id"])
        by_section: dict[str, list[int]] = defaultdict(list)
        for i, chunk in enumerate(chunks):
            by_section[str(chunk.meta.get("section_id") or "")].append(i)
        sections: list[_Node] = []
        loose: list[str] = []  # chunks alone in their section: children of the document node directly
        for section_id, rows in by_section.items():
            if len(rows) < 2:
                loose.extend(chunks[i].id for i in rows)
                continue
            runs = segment_runs(vectors[rows], self.max_section_chunks)
            for segment, (start, end) in enumerate(runs):
                members = rows[start:end]
                sections.append(
                    _Node(
                        level=SECTION_LEVEL,
                        doc_id=doc_id,
                        section_id=section_id,
                        segment=segment,
                        segments=len(runs),
                        rows=members,
                        children_ids=[chunks[i].id for i in members],
                    )
                )
        nodes = sorted(sections, key=lambda n: n.rows[0])
        if len(chunks) >= 2:
            nodes.append(
                _Node(
                    level=DOCUMENT_LEVEL,
                    doc_id=doc_id,
                    section_id="",
                    segment=0,
                    segments=1,
                    rows=list(range(len(chunks))),
                    children_ids=[n.id for n in nodes] + loose,
                )
            )
        return nodes

    # -- extractive summaries -------------------------------------------------------------------------

    def _extractive(self, node: _Node, chunks: list[Document], vectors: np.ndarray, lexicon: Lexicon) -> str:
        """The node's sentences nearest its TF-IDF centroid, within the budgets, in reading order."""
        budget_sentences, budget_words = (
            (self.summary_sentences, self.summary_words)
            if node.level == SECTION_LEVEL
            else (self.document_sentences, self.document_words)
        )
        centroid = vectors[node.rows].mean(axis=0)
        central = np.argsort(-(vectors[node.rows] @ centroid), kind="stable")[: self.candidate_chunks]
        rows = [node.rows[i] for i in sorted(central)]
        sentences = [s for row in rows for s in summary_candidates(chunks[row].content or "")]
        if not sentences:
            return " ".join((chunks[rows[0]].content or "").split()[:budget_words])
        matrix = lexicon.vectors(sentences)
        topic = lexicon.chunks[node.rows].sum(axis=0)
        topic /= max(float(np.linalg.norm(topic)), 1e-12)
        chosen: list[int] = []
        words = 0
        for i in np.argsort(-(matrix @ topic), kind="stable"):
            if len(chosen) >= budget_sentences:
                break
            n = len(sentences[i].split())
            if chosen and words + n > budget_words:
                continue
            if chosen and float(np.max(matrix[chosen] @ matrix[i])) >= self.redundancy_threshold:
                continue
            chosen.append(int(i))
            words += n
        # Sentences are listed in reading order, so sorting the chosen indices restores it.
        return " ".join(" ".join(sentences[i] for i in sorted(chosen)).split()[:budget_words])

    # -- optional LLM summaries -----------------------------------------------------------------------

    def _llm_summary(self, node: _Node, meta: dict[str, Any], child_texts: list[str]) -> str | None:
        """The ChatGenerator's summary of ``child_texts``, cleaned; ``None`` when it is unusable."""
        words = self.summary_words if node.level == SECTION_LEVEL else self.document_words
        what = "section" if node.level == SECTION_LEVEL else "whole text"
        if node.level == SECTION_LEVEL and meta.get("section"):
            what = f'section "{meta["section"]}"'
        text = " ".join(" ".join(child_texts).split()[: self.llm_input_words])
        prompt = PROMPT.format(what=what, title=meta.get("title", ""), words=words, text=text)
        try:
            result = self.chat_generator.run(messages=[ChatMessage.from_user(prompt)])
            replies = result.get("replies") if isinstance(result, dict) else None
            answer = replies[0].text if replies and isinstance(replies[0], ChatMessage) else None
        except Exception as error:  # any generator failure falls back to the extractive summary
            logger.warning("ChatGenerator failed on node %s (%s): extractive summary used", node.id, error)
            return None
        if not isinstance(answer, str):
            return None
        cleaned = " ".join(_LABEL.sub("", answer.strip()).split())
        if len(_WORD.findall(cleaned)) < 5:
            return None
        tokens = cleaned.split()
        if len(tokens) > words:
            # Over budget: keep whole sentences that fit, or hard-cut the first one.
            kept: list[str] = []
            for sentence in split_prose(cleaned):
                if len(" ".join([*kept, sentence]).split()) > words:
                    break
                kept.append(sentence)
            cleaned = " ".join(kept) if kept else " ".join(tokens[:words])
        return cleaned

    # -- run ------------------------------------------------------------------------------------------

    def _node_document(self, node: _Node, chunks: list[Document]) -> Document:
        first = chunks[node.rows[0]].meta
        meta: dict[str, Any] = {
            "level": node.level,
            "children_ids": node.children_ids,
            "doc_id": node.doc_id,
            "source": first.get("source"),
            "title": first.get("title"),
            "position": first.get("position", 0),
            "summary": node.via,
        }
        if "source_hash" in first:
            meta["source_hash"] = first["source_hash"]
        if node.level == SECTION_LEVEL:
            meta.update(
                section_path=list(first.get("section_path") or []),
                section=first.get("section", ""),
                section_id=node.section_id,
            )
            if node.segments > 1:
                meta.update(segment=node.segment, segments=node.segments)
        else:
            outline: dict[str, dict[str, Any]] = {}
            for chunk in chunks:
                key = str(chunk.meta.get("section_id") or "")
                entry = outline.setdefault(
                    key, {"section_id": key, "section_path": list(chunk.meta.get("section_path") or [])}
                )
                for caption in chunk.meta.get("captions") or []:
                    if caption not in entry.setdefault("captions", []):
                        entry["captions"].append(caption)
            meta.update(section_path=[], section="", section_id="", outline=list(outline.values()))
        return Document(id=node.id, content=node.text, meta=meta)

    @component.output_types(documents=list[Document], tree=dict[str, int])
    def run(self, documents: list[Document]) -> dict[str, Any]:
        """Return ``documents`` followed by the summary nodes of every document they belong to.

        Chunks without ``doc_id`` and documents that are not chunks (``meta.level`` other than 0) pass through.

        :raises ValueError: when a chunk has no embedding (connect this component after the dense embedder).
        """
        if not isinstance(documents, list) or any(not isinstance(d, Document) for d in documents):
            msg = "SectionTreeBuilder expects a list of Documents (chunks from the section splitter)."
            raise TypeError(msg)
        groups: dict[str, list[Document]] = defaultdict(list)
        for doc in documents:
            if doc.meta.get("doc_id") and doc.meta.get("level", 0) == 0:
                if doc.embedding is None:
                    msg = f"Chunk {doc.id} has no embedding: place SectionTreeBuilder after the dense embedder."
                    raise ValueError(msg)
                groups[str(doc.meta["doc_id"])].append(doc)
        stats = {"sections": 0, "documents": 0, "llm_summaries": 0, "llm_fallbacks": 0}
        nodes: list[Document] = []
        for group in groups.values():
            chunks = sorted(group, key=lambda c: c.meta.get("position", 0))
            vectors = np.asarray([c.embedding for c in chunks], dtype=np.float32)
            vectors /= np.clip(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12, None)
            lexicon = Lexicon([c.content or "" for c in chunks])
            texts: dict[str, str] = {}
            for node in self._nodes(chunks, vectors):  # sections first: a document prompt reads their summaries
                node.text = self._extractive(node, chunks, vectors, lexicon)
                if self.chat_generator is not None:
                    self.warm_up()
                    contents = {chunks[i].id: chunks[i].content or "" for i in node.rows}
                    if node.level == DOCUMENT_LEVEL:
                        children = [texts.get(cid) or contents.get(cid, "") for cid in node.children_ids]
                    else:
                        children = list(contents.values())
                    written = self._llm_summary(node, chunks[node.rows[0]].meta, children)
                    if written is None:
                        stats["llm_fallbacks"] += 1
                    else:
                        node.text, node.via = written, "llm"
                        stats["llm_summaries"] += 1
                texts[node.id] = node.text
                stats["sections" if node.level == SECTION_LEVEL else "documents"] += 1
                nodes.append(self._node_document(node, chunks))
        if not nodes:
            return {"documents": documents, "tree": stats}
        self.warm_up()
        assert self._embedder is not None
        summaries = self._embedder.run(nodes)["documents"]
        logger.info(
            "Section tree: %d section and %d document node(s) over %d chunk(s)",
            stats["sections"],
            stats["documents"],
            sum(len(g) for g in groups.values()),
        )
        return {"documents": [*documents, *summaries], "tree": stats}
