"""scripts/lab/bench_ppr.py: the replica tagging that grows the benchmark index keeps each replica's entities its
own."""

from __future__ import annotations

from bench_ppr import replica_documents, tag_replica

from adaptive_retrieval.components.indexing import EntityExtractor
from evaluation.data import Passage

PASSAGES = [
    Passage(
        id="a",
        title="Leland, North Carolina",
        text="Leland is a town in Brunswick County. The U.S. Census Bureau counted it. In 2010 the Leland "
        "town hall opened, and Kentucky Tavern's maker moved to Louisville.",
    ),
    Passage(id="b", title="Brunswick County", text="Brunswick County borders South Carolina and the town of Leland."),
]


def names(replica: int) -> set[str]:
    chunks = EntityExtractor(phrases=False).run(documents=replica_documents(PASSAGES, replica))["entities"]
    return {m.key for chunk in chunks for m in chunk.mentions}


def test_replica_zero_is_the_original_text() -> None:
    assert tag_replica("The U.S. town of Leland", 0) == "The U.S. town of Leland"
    docs = replica_documents(PASSAGES, 0)
    assert [d.content for d in docs] == [p.text for p in PASSAGES]
    assert docs[0].meta["doc_id"] == "a"


def test_tagging_keeps_names_and_stop_words() -> None:
    assert tag_replica("In 2010 the Leland town hall, Kentucky Tavern's maker", 3) == (
        "In 2010 the LelandQ3 town hall, KentuckyQ3 TavernQ3's maker"
    )


def test_replicas_have_distinct_entities_of_the_same_number() -> None:
    original, first, second = names(0), names(1), names(2)
    assert "leland" in original and "brunswick county" in original
    assert "lelandq1" in first and "brunswickq2 countyq2" in second
    assert not original & first and not first & second and not original & second
    assert len(original) == len(first) == len(second)
    assert {d.id for d in replica_documents(PASSAGES, 1)}.isdisjoint(d.id for d in replica_documents(PASSAGES, 0))
