"""The shared text helpers: sentence splitting in its two readings, name reading, keys and stop words."""

from __future__ import annotations

from adaptive_retrieval.components.text.keys import fold, normalise_key, singular, title_aliases
from adaptive_retrieval.components.text.names import CONNECTORS, capitalised, is_acronym, mostly_upper, tokens
from adaptive_retrieval.components.text.numbering import heading_number, heading_without_number
from adaptive_retrieval.components.text.sentences import name_sentences, split_prose, summary_candidates
from adaptive_retrieval.components.text.stopwords import stopwords


def test_prose_sentences_end_before_a_capital_a_digit_or_a_quote() -> None:
    assert split_prose("It rained. Then it stopped, e.g. here.") == ["It rained.", "Then it stopped, e.g. here."]
    assert split_prose('He left. "Why?" she asked. 3 days later.') == ["He left.", '"Why?" she asked.', "3 days later."]


def test_name_sentences_also_break_at_lines_and_lower_case_starts() -> None:
    assert name_sentences("Paris is big. it is old.\nLondon too.") == ["Paris is big.", "it is old.", "London too."]


def test_summary_candidates_keep_prose_and_cut_long_sentences() -> None:
    text = "Short one. This sentence has enough words to be a summary sentence of the section.\n\n| 1 | 2 | 3 | 4 | 5 |"
    assert summary_candidates(text) == ["This sentence has enough words to be a summary sentence of the section."]
    long = " ".join(["word"] * 80) + "."
    assert summary_candidates(long, max_words=60)[0].endswith(" …")


def test_name_reading() -> None:
    toks = tokens("Marie Curie won.")
    assert [t.text for t in toks] == ["Marie", "Curie", "won"] and toks[0].initial and not toks[1].initial
    assert capitalised("Paris") and not capitalised("paris")
    assert is_acronym("NASA") and is_acronym("U.S.") and not is_acronym("IV") and not is_acronym("Cat")
    # Letters that all read as a Roman numeral are taken for one ("CMLL", like "MCM"): a known limit.
    assert not is_acronym("MCM")
    assert mostly_upper("WHO DIRECTED THE FILM ABOUT THE WAR?") and not mostly_upper("Who directed it?")
    assert "of" in CONNECTORS and "and" not in CONNECTORS


def test_keys_merge_spelling_variants() -> None:
    assert normalise_key("The U.S. Army's") == normalise_key("us army") == "us army"
    assert normalise_key("Universities", phrase=True) == "university"
    assert fold("Élodie") == "Elodie" and singular("cities") == "city" and singular("bus") == "bus"
    assert title_aliases("Leland, North Carolina") == ["Leland, North Carolina", "Leland"]


def test_heading_numbers() -> None:
    assert heading_number("3.2 Termination") == ("3.2", 2) and heading_number("A simple model") is None
    assert heading_without_number("IV. Results") == "Results" and heading_without_number("Appendix B") == "Appendix B"


def test_stopwords_are_lower_case_function_words() -> None:
    words = stopwords()
    assert {"the", "of", "which"} <= words and all(w == w.lower() for w in words)


def test_fold_drops_exactly_the_combining_marks_of_nfkd() -> None:
    """fold looks only at non-ASCII runs: the same text as NFKD with every combining mark dropped, on every code
    point and on mixed text."""
    import sys
    import unicodedata

    def reference(text: str) -> str:
        return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))

    points = "".join(chr(i) for i in range(sys.maxunicode + 1) if not 0xD800 <= i <= 0xDFFF)
    for start in range(0, len(points), 997):  # runs of mixed characters, every code point once
        chunk = points[start : start + 997]
        assert fold(chunk) == reference(chunk)
    assert fold("Cre\u0300me bru\u0302le\u0301e — “Ångström”") == "Creme brulee — “Angstrom”"
