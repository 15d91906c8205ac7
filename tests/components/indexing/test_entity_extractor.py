"""Entity extraction on real text (no LLM), normalisation of variants, and tolerance of malformed LLM output."""

from __future__ import annotations

from typing import Any

import pytest
from haystack import Document, component
from haystack.dataclasses import ChatMessage

from adaptive_retrieval.components.indexing import EntityExtractor
from adaptive_retrieval.components.indexing.llm_entities import parse_llm_entities
from adaptive_retrieval.components.text.keys import normalise_key, title_aliases

# Encyclopedic sentences (facts from public reference works), written as such text is.
CURIE = (
    "Marie Curie was a Polish and naturalised-French physicist and chemist who conducted pioneering research on "
    "radioactivity. She was the first woman to win a Nobel Prize. Born in Warsaw, she studied at the University of "
    "Paris, where she met Pierre Curie. Originally the couple worked in a shed. In 1903 the Nobel Prize in Physics "
    "went to Marie Curie, Pierre Curie and Henri Becquerel. Her research on radioactivity continued at the "
    "Radium Institute."
)
LELAND = (
    'Leland is a town in Brunswick County, North Carolina, United States. A number of movies, such as "Maximum '
    'Overdrive" (1986), were filmed in or around the town. It is part of the Myrtle Beach Metropolitan '
    "Statistical Area."
)
CMLL = (
    "The Leyenda de Azul is a tournament held by the Mexican promotion Consejo Mundial de Lucha Libre (CMLL). "
    "CMLL did not hold the tournament in 2009. All tournaments took place in Arena México in Mexico City."
)
STATUE = (
    "The Statue of Liberty is a colossal neoclassical sculpture on Liberty Island in New York Harbor. The copper "
    "statue was a gift from the people of France to the U.S. and was designed by Frédéric Auguste Bartholdi."
)


def names(doc_entities: Any) -> dict[str, str]:
    return {m.key: m.kind for m in doc_entities.mentions}


@pytest.fixture(scope="module")
def extracted() -> dict[str, Any]:
    docs = [
        Document(id="curie", content=CURIE, meta={"title": "Marie Curie", "doc_id": "curie"}),
        Document(id="leland", content=LELAND, meta={"title": "Leland, North Carolina", "doc_id": "leland"}),
        Document(id="cmll", content=CMLL, meta={"title": "Leyenda de Azul (tournament)"}),
        Document(id="statue", content=STATUE, meta={"title": "Statue of Liberty", "doc_id": "statue"}),
    ]
    result = EntityExtractor().run(documents=docs)
    assert result["stats"] == {
        "chunks": 4,
        "mentions": sum(len(e.mentions) for e in result["entities"]),
        "llm_failures": 0,
    }
    return {e.chunk_id: e for e in result["entities"]}


def test_titles_and_their_aliases(extracted: dict[str, Any]) -> None:
    leland = names(extracted["leland"])
    assert leland["leland"] == "title" and leland["leland north carolina"] == "title"
    cmll = names(extracted["cmll"])
    assert cmll["leyenda de azul"] == "title"
    assert extracted["cmll"].doc_id == "cmll"  # a chunk without doc_id is its own document
    # The title outweighs every other entity of its chunk.
    top = max(extracted["curie"].mentions, key=lambda m: m.weight)
    assert top.key == "marie curie" and top.kind == "title" and top.count >= 3


def test_capitalised_names_connectors_and_sentence_starts(extracted: dict[str, Any]) -> None:
    curie = names(extracted["curie"])
    for key in ("pierre curie", "henri becquerel", "university of paris", "warsaw", "radium institute"):
        assert key in curie, key
    # "in" is not a connector ("Curie in Warsaw" is two names), so the prize is found without its field.
    assert "nobel prize" in curie and "nobel prize in physics" not in curie
    # Grammatical capitals at a sentence start are not entities.
    assert not {"originally", "she", "her", "in", "born"} & set(curie)
    statue = names(extracted["statue"])
    assert {"liberty island", "new york harbor", "frederic auguste bartholdi", "france"} <= set(statue)
    leland = names(extracted["leland"])
    assert {"brunswick county", "north carolina", "united states", "maximum overdrive"} <= set(leland)


def test_acronyms_and_their_definitions(extracted: dict[str, Any]) -> None:
    cmll = extracted["cmll"]
    assert names(cmll)["cmll"] in ("acronym", "name")
    assert "consejo mundial de lucha libre" in names(cmll)
    assert ("cmll", "consejo mundial de lucha libre") in cmll.relations or (
        "consejo mundial de lucha libre",
        "cmll",
    ) in cmll.relations
    assert "us" in names(extracted["statue"])  # "U.S." normalised


def test_normalisation_merges_variants() -> None:
    assert normalise_key("Alû") == normalise_key("ALU") == "alu"
    assert normalise_key("The Beatles") == "beatles"
    assert normalise_key("Carl Philipp Emanuel Bach's") == "carl philipp emanuel bach"
    assert normalise_key("U.S.") == normalise_key("US") == "us"
    assert normalise_key("AT&T") == "att"
    assert normalise_key("Procter & Gamble") == "procter and gamble"
    assert normalise_key("publishing houses", phrase=True) == normalise_key("publishing house", phrase=True)
    assert normalise_key("Flute Sonata in C major") == "flute sonata in c major"
    assert title_aliases("Lilu (mythology)") == ["Lilu (mythology)", "Lilu"]


def test_noun_phrases_need_statistics() -> None:
    texts = [
        "The team built a flood barrier near the harbour. Engineers tested the flood barrier twice.",
        "A storm surge damaged the old pier last winter.",
        "Officials praised the new flood barrier and the pier.",
        "A storm surge is expected this season as well.",
        "Farmers sold fresh apples at the market.",
    ]
    docs = [Document(id=f"d{i}", content=t) for i, t in enumerate(texts)]
    out = {
        e.chunk_id: {m.key for m in e.mentions if m.kind == "phrase"} for e in EntityExtractor().run(docs)["entities"]
    }
    assert "flood barrier" in out["d0"] and "flood barrier" in out["d2"]  # repeated in a chunk / across chunks
    assert "storm surge" in out["d1"] and "storm surge" in out["d3"]  # recurring across the batch
    assert out["d4"] == set()  # "fresh apples" occurs once: not salient
    assert EntityExtractor(phrases=False).run(docs[:1])["entities"][0].mentions == ()
    # A phrase in too large a share of a large batch is boilerplate.
    boiler = [Document(id=f"b{i}", content=f"See the privacy policy for item {i}.") for i in range(25)]
    got = EntityExtractor(max_phrase_df_ratio=0.1).run(boiler)["entities"]
    assert not any(m.key == "privacy policy" for e in got for m in e.mentions)


def test_caps_and_validation() -> None:
    doc = Document(id="x", content=CURIE, meta={"title": "Marie Curie"})
    capped = EntityExtractor(max_entities_per_chunk=3).run([doc])["entities"][0]
    assert len(capped.mentions) == 3 and capped.mentions[0].key == "marie curie"
    assert EntityExtractor().run([Document(id="empty", content="")])["entities"] == []
    with pytest.raises(TypeError, match="Documents"):
        EntityExtractor().run(["not a document"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="llm_mode"):
        EntityExtractor(llm_mode="sometimes")
    with pytest.raises(TypeError, match="ChatGenerator"):
        EntityExtractor(chat_generator=object())


@component
class MalformedChatGeneratorDouble:
    """TEST DOUBLE, not a model: a ChatGenerator-compatible component that replays canned answers of the kinds a
    small local LLM produces (no LLM can run in this environment). Each call returns the next answer; an
    answer that is an exception instance is raised instead."""

    def __init__(self, answers: list[Any]) -> None:
        self.answers = answers
        self.calls = 0

    @component.output_types(replies=list[ChatMessage])
    def run(self, messages: list[ChatMessage]) -> dict[str, Any]:
        assert messages and messages[-1].text  # it is given the chunk text
        answer = self.answers[self.calls % len(self.answers)]
        self.calls += 1
        if isinstance(answer, Exception):
            raise answer
        return {"replies": [ChatMessage.from_assistant(answer)]}


def test_malformed_llm_output_never_fails_indexing() -> None:
    docs = [
        Document(id="curie", content=CURIE, meta={"title": "Marie Curie"}),
        Document(id="leland", content=LELAND, meta={"title": "Leland, North Carolina"}),
        Document(id="statue", content=STATUE, meta={"title": "Statue of Liberty"}),
        Document(id="cmll", content=CMLL, meta={"title": "Leyenda de Azul"}),
    ]
    double = MalformedChatGeneratorDouble(
        [
            # Readable despite the fence, the prose and the trailing comma; one entity is hallucinated.
            'Sure! Here you go:\n```json\n{"entities": [{"name": "Marie Curie"}, {"name": "radioactivity"}, '
            '{"name": "Albert Einstein"},], "relations": [{"source": "Marie Curie", "target": "radioactivity"}]}\n```',
            '{"entities": [{"name": "Leland", "type": ',  # cut off mid-answer
            "I could not find any entities in this text.",  # no JSON at all
            TimeoutError("local model server timed out"),
        ]
    )
    result = EntityExtractor(chat_generator=double).run(documents=docs)
    assert double.calls == 4
    assert result["stats"]["llm_failures"] == 3
    by_id = {e.chunk_id: e for e in result["entities"]}
    curie = names(by_id["curie"])
    assert curie["radioactivity"] == "llm"  # grounded LLM entity added
    assert "albert einstein" not in curie  # not in the text: dropped
    assert ("marie curie", "radioactivity") in by_id["curie"].relations
    # Chunks whose answer could not be read keep their rule-based entities.
    assert "maximum overdrive" in names(by_id["leland"]) and "liberty island" in names(by_id["statue"])
    assert "consejo mundial de lucha libre" in names(by_id["cmll"])


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            '{"entities": ["Paris", "France"], "relations": [["Paris", "capital of", "France"]]}',
            (["Paris", "France"], [("Paris", "France")]),
        ),
        ("[{'name': 'Paris'}, {'name': 'France'},]", (["Paris", "France"], [])),
        (
            '{"relationships": [{"head": "A Corp", "tail": "B Ltd"}], "entities": []}',
            (["A Corp", "B Ltd"], [("A Corp", "B Ltd")]),
        ),
        (
            '{"nodes": [{"entity": "Oslo"}], "edges": [{"subject": "Oslo", "object": "Norway"}]}',
            (["Oslo", "Norway"], [("Oslo", "Norway")]),
        ),
        ("", None),
        ("{not json at all", None),
        ('{"entities": [42, null, {"type": "PERSON"}]}', None),
    ],
)
def test_tolerant_llm_parser(answer: str, expected: Any) -> None:
    assert parse_llm_entities(answer) == expected


def test_llm_extractor_serialises_its_generator() -> None:
    from haystack.components.generators.chat import OpenAIChatGenerator
    from haystack.utils import Secret

    generator = OpenAIChatGenerator(api_key=Secret.from_env_var("OPENAI_API_KEY", strict=False), model="local-model")
    extractor = EntityExtractor(chat_generator=generator, llm_mode="replace")
    data = extractor.to_dict()
    again = EntityExtractor.from_dict(data)
    assert type(again.chat_generator) is OpenAIChatGenerator and again.llm_mode == "replace"
    assert again.to_dict() == extractor.to_dict()
