"""Development questions restyled as other collections write them (scripts/lab/evaluation/query_styles.py)."""

from __future__ import annotations

import pytest
from script_modules import load_script

from evaluation.data import EvalSet, Passage, Question
from evaluation.query_styles import STYLES, lower, restyle, terms


def _evalset() -> EvalSet:
    passages = [Passage("p1", "Lens", "Crystallins keep the lens of the eye transparent.")]
    questions = [
        Question("q1", "What keeps the Lens of the vertebrate eye transparent?", ("p1",)),
        Question("q2", "CRYSTALLIN PROTEINS IN THE LENS .", ("p1",), "caps"),
    ]
    return EvalSet("tiny", passages, questions)


class TestQueryStyles:
    def test_lower_drops_capitals_and_closes_with_a_spaced_full_stop(self) -> None:
        assert lower("What keeps the Lens transparent?") == "what keeps the lens transparent ."
        assert lower("RESULTS OF THE POLLS IN BRITAIN .") == "results of the polls in britain ."

    def test_terms_keeps_the_content_words_in_order(self) -> None:
        written = "What keeps the Lens of the vertebrate eye transparent?"
        assert terms(written) == "keeps lens vertebrate eye transparent"

    def test_restyle_rewrites_every_question_and_keeps_ids_gold_and_types(self) -> None:
        evalset = _evalset()
        styled = restyle(evalset, "lower")
        assert [q.question for q in styled.questions] == [
            "what keeps the lens of the vertebrate eye transparent .",
            "crystallin proteins in the lens .",
        ]
        assert [(q.id, q.gold_ids, q.type) for q in styled.questions] == [
            (q.id, q.gold_ids, q.type) for q in evalset.questions
        ]
        assert styled.passages == evalset.passages
        assert evalset.questions[0].question.startswith("What")  # the set itself is left as it was

    def test_as_written_is_the_set_itself(self) -> None:
        evalset = _evalset()
        assert restyle(evalset, "as-written") is evalset
        assert next(iter(STYLES)) == "as-written"

    def test_unknown_style_and_an_emptied_question_are_errors(self) -> None:
        with pytest.raises(ValueError, match="Unknown query style 'upper'"):
            restyle(_evalset(), "upper")
        empty = EvalSet("tiny", _evalset().passages, [Question("q3", "What is it?", ("p1",))])
        with pytest.raises(ValueError, match="q3.*nothing left in the 'terms' style"):
            restyle(empty, "terms")

    def test_evaluate_takes_the_style_for_every_system(self) -> None:
        evaluate = load_script("evaluate")
        args = evaluate.parse_args(["--all-dev", "DATA", "--query-style", "terms"])
        assert args.query_style == "terms"
        assert evaluate.parse_args(["--all-dev", "DATA"]).query_style == "as-written"
        with pytest.raises(SystemExit):
            evaluate.parse_args(["--all-dev", "DATA", "--query-style", "upper"])
