"""Surface rules for comparison and multi-hop (bridge) questions, added after the HotpotQA confusion matrix
(scripts/lab/evaluate.py) showed alternatives ("A or B?") and described entities routed to the wrong intent."""

from __future__ import annotations

import time

import pytest

from adaptive_retrieval.components.routing.intent_router import DEFAULT_RULE_STRENGTHS
from adaptive_retrieval.components.routing.rules import apply_rules, plain_search, structural_reference


@pytest.mark.parametrize(
    "query",
    [
        "Which painter is Spanish, the cubist or the surrealist?",
        "Who was taller: the goalkeeper or the striker?",
        "The first bridge has a toll. Does the second bridge also charge one?",
        "What instruments did the two musicians play in their respective orchestras?",
        "Are the violinist and the cellist members of the same quartet?",
        "The two ships were launched within a month of each other; which sank?",
    ],
)
def test_comparisons_get_an_analytical_prior(query: str) -> None:
    result = apply_rules(query, DEFAULT_RULE_STRENGTHS)
    assert "comparison" in result.fired and result.priors["analytical"] > 0


@pytest.mark.parametrize(
    "query",
    [
        "The novelist is married to an actor who starred in which television series?",
        "A chemist who worked with the inventor was born in what country?",
        "The river that flows past the abbey rises in which mountain range?",
        "The stadium of the club was designed by whom?",
    ],
)
def test_described_entities_get_a_relational_prior(query: str) -> None:
    result = apply_rules(query, DEFAULT_RULE_STRENGTHS)
    assert "nested" in result.fired and result.priors["relational"] > 0


@pytest.mark.parametrize(
    "query",
    [
        "What year was the bridge opened?",
        "Who was the first person to climb the mountain?",
        "Give a broad summary of what these articles discuss",
        "Is the museum open on Mondays?",
        "error code E1045 pump",
    ],
)
def test_single_hop_questions_fire_neither_rule(query: str) -> None:
    fired = apply_rules(query, DEFAULT_RULE_STRENGTHS).fired
    assert "comparison" not in fired and "nested" not in fired


def test_rules_stay_linear_on_long_input() -> None:
    # Guard against catastrophic backtracking: queries are at most 4,000 characters (MAX_QUERY_CHARS); 5x margin.
    for query in ("x" * 20_000, "word " * 4_000, "Which, " + "ab " * 6_000, "The film which zz " * 1_000):
        start = time.perf_counter()
        apply_rules(query, DEFAULT_RULE_STRENGTHS)
        assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize(
    ("query", "reason"),
    [
        ("EFFECTS OF TARIFFS ON GRAIN EXPORTS FROM CANADA .", "upper case"),
        ("I am interested in papers about caching in distributed file systems", "request"),
        ("Any information on the preservation of rare manuscripts would help me.", "request"),
        ("articles dealing with the measurement of reading speed in children", "request"),
        ("the effect of altitude on the oxygen uptake of athletes.", "statement"),
        ("u.s. policy toward the new regime which overthrew the president .", "statement"),  # a relative clause
        ("alternatives which have been offered if the forces are withdrawn .", "statement"),
        ("Parallel sorting algorithms for shared-memory machines; merge networks", "statement"),
        (
            "What problems are there in making up descriptive titles? How relevant are articles to their titles?",
            "description",
        ),
        ("portable operating systems", "terms"),
        ("Parallel algorithms", "terms"),
    ],
)
def test_plain_searches_are_recognised(query: str, reason: str) -> None:
    assert plain_search(query) == reason
    result = apply_rules(query, {**DEFAULT_RULE_STRENGTHS, "plain": 1.0})
    assert result.plain == reason and "plain" in result.fired


@pytest.mark.parametrize(
    "query",
    [
        "Who directed the film that was shot in the harbour town?",
        "Describe the training objective of the proposed model",
        "According to the report, what did the committee decide",
        "What is the boiling point of water",
        "error code E1045 pump",  # terse and naming a code: the keyword rule's
        "KeyError __missing__",
        "list comprehension",  # an instruction word first
        "What does Section 3.2 say about termination?",
        # Long but naming something (a name, a number, an identifier): left to the classifier.
        "Who is the child of the president under whom prohibition occurred in the United States of the twenties?",
        "When does real time with the pizza man cast member start again in 2018 on the usual channel?",
        "How do I call retry_policy.same_candidates from a router of my own when the gate asks for a retry?",
        # Naming nothing, but an entity described by another: a multi-hop question.
        "How many novels were written by the author whose first book described the history of the old harbour?",
        # A question without its question mark: a question word after an opening preposition, or last.
        "in what region of the country is the city that has the military museum located .",
        "the manuscript of the flute sonata is in the hand of a musician whose godfather is whom .",
        # Naming nothing, but short: a question about one's own documents often is.
        "What happens when a break statement runs inside a loop with an else clause?",
    ],
)
def test_questions_and_instructions_are_not_plain_searches(query: str) -> None:
    assert apply_rules(query, {**DEFAULT_RULE_STRENGTHS, "plain": 1.0}).plain is None


def test_the_plain_rule_is_off_at_zero_strength() -> None:
    query = "EFFECTS OF TARIFFS ON GRAIN EXPORTS FROM CANADA ."
    result = apply_rules(query, {**DEFAULT_RULE_STRENGTHS, "plain": 0.0})
    assert result.plain is None and "plain" not in result.fired


@pytest.mark.parametrize("query", ["What articles exist on time sharing?", "tables of random numbers", "spare parts"])
def test_plural_words_are_not_numbered_references(query: str) -> None:
    # "articles" once read as Article S, a structural reference that sent the query to the section channel.
    assert structural_reference(query) is None


def test_numbered_references_still_read_with_or_without_a_space() -> None:
    for query, ref in (("What does Article 17 say?", "17"), ("Fig.2 shows", "2"), ("see Table2", "2")):
        found = structural_reference(query)
        assert found is not None and found["ref"] == ref
