"""Structural questions: the router reads references by number, name and position; the outlines resolve them in
the documents the query names; the named section leads the query pipeline's final list."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from haystack import Document

from adaptive_retrieval.components.retrieval.structural_match import Outline, rank_documents, resolve, sections_for
from adaptive_retrieval.components.routing.rules import structural_reference
from adaptive_retrieval.components.selection import StructuralFirst
from adaptive_retrieval.pipelines.indexer import index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import build_indexing_pipeline
from adaptive_retrieval.pipelines.query_pipeline import build_query_pipeline, run_query
from adaptive_retrieval.pipelines.store_config import make_store
from tests.components.indexing.test_structured_converter import BODY, _pdf


def test_router_reads_numbers_names_and_positions() -> None:
    assert structural_reference("What does Appendix B of the paper say?") == {
        "kind": "appendix",
        "ref": "B",
        "text": "Appendix B",
    }
    found = structural_reference("What does the section on resolution of names say about free variables?")
    assert found is not None and found["name"] == "resolution of names"
    # "in the ..." after the name names the document, not the section
    found = structural_reference("What does the section about error handling in the server guide cover?")
    assert found is not None and found["name"] == "error handling"
    found = structural_reference("What does the introduction of the LLaMA paper say?")
    assert found is not None and found["name"] == "introduction"
    found = structural_reference("What is the last chapter about?")
    assert found is not None and found["position"] == -1 and "name" not in found
    found = structural_reference("What does the concluding section say?")
    assert found is not None and found["position"] == -1 and found["name"] == "conclusion"
    assert structural_reference("What does the second section of the manual cover?")["position"] == 2
    assert structural_reference("When was the introduction of the euro?") is None
    assert structural_reference("Who wrote the last book of the series?") is None


def outline(doc_id: str, title: str, paths: list[list[str]], captions: dict[int, list[str]] | None = None) -> Outline:
    entries = [{"section_id": f"{doc_id}-{i}", "section_path": p} for i, p in enumerate(paths)]
    for i, found in (captions or {}).items():
        entries[i]["captions"] = found
    return Outline(doc_id=doc_id, title=title, source=f"/papers/{doc_id}.pdf", entries=entries)


PAPER = [
    [],
    ["Abstract"],
    ["1 Introduction"],
    ["2 Method"],
    ["2 Method", "2.1 Resolution of names"],
    ["3 Results"],
    ["4 Conclusion and future work"],
    ["References"],
    ["A Proofs"],
    ["Appendix B Data"],
]
GUIDE = [["User guide"], ["User guide", "Setup"], ["User guide", "Usage"], ["User guide", "Troubleshooting"]]


def test_sections_by_number_name_position_and_caption() -> None:
    paper = outline("bert", "BERT: Pre-training of Deep Bidirectional Transformers", PAPER, {5: ["table 2"]})
    assert sections_for({"kind": "section", "ref": "2"}, paper) == ["bert-3", "bert-4"]
    assert sections_for({"kind": "section", "ref": "2.1"}, paper) == ["bert-4"]
    assert sections_for({"kind": "appendix", "ref": "B"}, paper) == ["bert-9"]
    assert sections_for({"kind": "appendix", "ref": "A"}, paper) == ["bert-8"]
    assert sections_for({"kind": "section", "name": "methodology"}, paper) == ["bert-3", "bert-4"]
    assert sections_for({"kind": "section", "name": "resolution of names"}, paper) == ["bert-4"]
    # positions count body sections: no abstract, references or appendices
    assert sections_for({"kind": "section", "position": 1}, paper) == ["bert-2"]
    assert sections_for({"kind": "section", "position": -1}, paper) == ["bert-6"]
    assert sections_for({"kind": "section", "position": 2}, paper) == ["bert-3", "bert-4"]
    assert sections_for({"kind": "table", "ref": "2"}, paper) == ["bert-5"]
    assert sections_for({"kind": "table", "ref": "9"}, paper) == []
    # a guide under one title heading: its children are the top level; "conclusion" falls back to the last one
    guide = outline("guide", "User guide", GUIDE)
    assert sections_for({"kind": "section", "position": -1}, guide) == ["guide-3"]
    assert sections_for({"kind": "section", "name": "conclusion"}, guide) == ["guide-3"]
    assert sections_for({"kind": "section", "name": "introduction"}, guide) == ["guide-1"]


def test_the_query_names_the_document() -> None:
    bert = outline("bert", "BERT: Pre-training of Deep Bidirectional Transformers", PAPER)
    distil = outline("distilbert", "DistilBERT, a distilled version of BERT: smaller, faster", PAPER)
    llama = outline("llama", "LLaMA: Open and Efficient Foundation Language Models", PAPER)
    docs = [bert, distil, llama]
    assert rank_documents("What does Section 2 of the BERT paper say?", docs) == [bert]
    assert rank_documents("What does Section 2 of the DistilBERT paper say?", docs) == [distil]
    assert rank_documents("What does Section 2 say?", docs) == docs
    # words about the content name no document: only a phrase such as "the X paper" does
    assert rank_documents("What does Section 2 say about open and efficient models?", docs) == docs
    assert rank_documents("Section 2 of the paper on open and efficient foundation models", docs) == [llama]
    sections, _ = resolve({"kind": "section", "ref": "2.1"}, "Section 2.1 of the LLaMA paper", docs)
    assert sections == ["llama-4"]
    # a name found nowhere in the named document: every document is searched, then titles
    sections, titled = resolve({"kind": "section", "name": "bidirectional transformers"}, "", docs)
    assert sections == [] and titled == ["bert"]


def test_structural_first_leads_and_keeps_the_length() -> None:
    ranked = [Document(id=f"d{i}", content=f"doc {i}") for i in range(5)]
    matched = [
        Document(id="d3", content="doc 3", meta={"section_tree": {"via": "structural"}}),
        Document(id="x", content="not ranked", meta={"section_tree": {"via": "structural"}}),
        Document(id="d0", content="doc 0", meta={"section_tree": {"via": "direct"}}),
    ]
    out = StructuralFirst(max_first=3).run(documents=ranked, structural=matched)["documents"]
    assert [d.id for d in out] == ["d3", "x", "d0", "d1", "d2"]
    assert out[0] is ranked[3] or out[0].meta["section_tree"]["via"] == "structural"
    assert StructuralFirst().run(documents=ranked, structural=None)["documents"] == ranked
    with pytest.raises(ValueError, match="max_first"):
        StructuralFirst(max_first=0)


def test_a_leader_fusion_did_not_return_says_its_score_is_the_sections() -> None:
    """A named section's chunk taken from the section channel's list keeps that channel's score: its provenance
    names the channel and its rank there, and the passage line calls the score the section's, not a fused one."""
    from adaptive_retrieval.pipelines.cli.format import provenance

    fused = Document(id="d1", content="doc 1", score=0.4, meta={"channels": {"dense": 1}, "channel_scores": {}})
    ranked = [Document(id="d0", content="doc 0", score=0.5, meta={"channels": {"sparse": 1}}), fused]
    section = [
        Document(id="d9", content="doc 9", score=0.9, meta={"section_tree": {"via": "direct"}}),
        Document(id="x", content="not ranked", score=1.55, meta={"section_tree": {"via": "structural"}}),
        Document(id="d1", content="doc 1", score=1.2, meta={"section_tree": {"via": "structural"}}),
    ]
    out = StructuralFirst(max_first=3).run(documents=ranked, structural=section)["documents"]
    assert [d.id for d in out] == ["x", "d1"]
    assert out[0].score == 1.55 and out[0].meta["channels"] == {"section": 2}
    assert out[0].meta["channel_scores"] == {"section": 1.55}
    assert provenance(out[0]) == "the named section; section#2; section score 1.550"
    assert provenance(out[1]) == "the named section; dense#1; fused score 0.400"
    assert provenance(ranked[0]) == "sparse#1; fused score 0.500"


def test_structural_first_leads_with_a_paragraph_once() -> None:
    """The same paragraph indexed from two files leads once, and its twin leaves the rest of the list too."""
    mark = {"section_tree": {"via": "structural"}}
    ranked = [Document(id="a", content="same text"), Document(id="b", content="other")]
    matched = [Document(id="a", content="same text", meta=mark), Document(id="twin", content="same text", meta=mark)]
    out = StructuralFirst(max_first=3).run(documents=ranked, structural=matched)["documents"]
    assert [d.id for d in out] == ["a", "b"]


GUIDE_MD = """# Operations guide

## 1 Installation

Install the service with the package manager, then create the configuration file in the home folder.

## 2 Retention

Logs are kept for thirty days; audit records are kept for one year before they are archived to cold storage.

## 3 Monitoring

Dashboards show latency, error rates and queue depth; alerts page the on-call engineer.

## 4 Conclusion

Keep the service patched and review the retention policy every quarter.
"""


@pytest.mark.slow
def test_pipeline_puts_the_named_section_first(tmp_path: Path, store_path: str, reference_corpus: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "operations.md").write_text(GUIDE_MD, encoding="utf-8")
    pages = [
        [
            ("h1", "Structure of Documents"),
            ("p", BODY),
            ("h2", "1 Introduction"),
            ("p", "Retention of structure matters for retrieval. " + BODY),
            ("h2", "2 Method"),
            ("p", "The method keeps every heading. " + BODY),
        ],
        [("h2", "3 Conclusion"), ("p", "Structure helps retrieval and retention of context. " + BODY)],
    ]
    (corpus / "paper.pdf").write_bytes(_pdf(pages))
    for name in ("execmodel.txt", "while.txt"):
        shutil.copy(reference_corpus / name, corpus / name)
    store = make_store(path=store_path)
    index_paths(build_indexing_pipeline(store, progress_bar=False), [corpus])
    pipeline = build_query_pipeline(store)

    def first(question: str) -> Document:
        result = run_query(pipeline, question)
        assert result.structural is not None, question
        return result.documents[0]

    top = first("What does section 2 of the operations guide say about retention?")
    assert top.meta["section_path"][-1] == "2 Retention" and top.meta["section_tree"]["via"] == "structural"
    top = first("What does the section on resolution of names say about free variables?")
    assert top.meta["section_path"][-1] == "Resolution of names"
    top = first("What does the last section of the Structure of Documents paper say?")
    assert top.meta["source"].endswith("paper.pdf") and top.meta["section_path"] == ["3 Conclusion"]
    top = first("What does the introduction of the Structure of Documents paper say?")
    assert top.meta["section_path"] == ["1 Introduction"]
