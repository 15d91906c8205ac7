"""Put the chunks a structural reference resolved to at the head of the final list."""

from __future__ import annotations

from typing import Any

from haystack import Document, component

from adaptive_retrieval.components.document_copy import with_fields
from adaptive_retrieval.components.shared_documents import RankedDocuments, documents_type, hand_on

_MARK = {"via": "structural", "parent_id": None}
#: The mark of a leader fusion did not return: its score is the section channel's, not a fused one.
_UNFUSED = {**_MARK, "fused": False}


def is_structural(doc: Document) -> bool:
    """Whether the section channel found ``doc`` through the query's structural reference."""
    tree = doc.meta.get("section_tree")
    return isinstance(tree, dict) and tree.get("via") == "structural"


def is_unfused(doc: Document) -> bool:
    """Whether ``doc`` leads as a structural match that fusion did not return: its score is the section channel's."""
    return is_structural(doc) and doc.meta["section_tree"].get("fused") is False


@component
class StructuralFirst:
    """Moves the chunks of the section a query names ("Section 3.2", "the section on ...", "the last chapter",
    "Table 2") to the head of the final list, after fusion, MMR and reranking have ordered it.

    Fusion weighs the section channel against the others and a reranker reorders by text similarity alone, so
    the section the user named can otherwise end up fourth. The structural chunks come from the section
    channel's own list (``meta["section_tree"]["via"] == "structural"``), in that list's order (the channel ranks
    them for the reference: a table's caption chunk first, then by similarity), at most ``max_first``, the final
    list's copy of a document kept when it has one, each marked ``meta["section_tree"]["via"] = "structural"``;
    the list keeps its length. Without a structural match the list passes unchanged.

    Usage::

        first = StructuralFirst(max_first=3)
        out = first.run(documents=ranked, structural=section_channel_documents)
        out["documents"][0].meta["section_tree"]["via"]   # "structural"
    """

    def __init__(self, max_first: int = 3, share_documents: bool = False) -> None:
        """
        :param max_first: structural chunks placed first at most (the rest keep their ranked places).
        :param share_documents: send ``documents`` as one shared, read-only ``SharedDocuments`` (the query
            pipeline's setting: Haystack copies it once, not document by document).
        """
        if max_first < 1:
            msg = f"max_first must be >= 1, got {max_first}"
            raise ValueError(msg)
        self.max_first = max_first
        self.share_documents = share_documents
        component.set_output_types(self, documents=documents_type(share_documents))

    def run(self, documents: RankedDocuments, structural: RankedDocuments | None = None) -> dict[str, Any]:
        """Reorder ``documents`` so that the structural matches in ``structural`` lead.

        :param documents: the ranked final list.
        :param structural: the section channel's documents (``None`` when it was skipped or failed).
        """
        matched = [d for d in structural or [] if is_structural(d)]
        if not matched or not documents:
            return {"documents": hand_on(documents, self.share_documents)}
        # The channel's order: its structural hits are ranked for the reference (a table's caption chunk first,
        # then by similarity); the final list's copy of a document is kept, with its fusion provenance.
        final = {d.id: d for d in documents}
        channel_rank = {d.id: rank for rank, d in enumerate(structural or [], 1)}
        lead: list[Document] = []
        texts: set[str] = set()
        for d in matched:
            # The same paragraph indexed from two files is one piece of evidence: lead with it once (MMR drops
            # such twins from the fused list for the same reason).
            if len(lead) == self.max_first or (d.content or "") in texts:
                continue
            if d.id in final:
                lead.append(final[d.id])
            else:
                # A chunk fusion did not return keeps the section channel's score: its provenance says so, as the
                # joiner's does for the fused ones (readers would otherwise take that score for a fused one).
                provenance = {"channels": {"section": channel_rank[d.id]}, "channel_scores": {"section": d.score}}
                lead.append(with_fields(d, meta={**d.meta, **provenance, "section_tree": _UNFUSED}))
            texts.add(d.content or "")
        lead_ids = {d.id for d in lead}
        # Fusion keeps the first channel's copy of a document: mark the leaders as the structural match.
        lead = [d if is_structural(d) else with_fields(d, meta={**d.meta, "section_tree": _MARK}) for d in lead]
        rest = [d for d in documents if d.id not in lead_ids and (d.content or "") not in texts]
        return {"documents": hand_on((lead + rest)[: max(len(documents), len(lead))], self.share_documents)}
