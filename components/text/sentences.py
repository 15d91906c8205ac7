"""Sentence splitting, in the two readings the package needs.

- **Prose** (:func:`split_prose`, :func:`summary_candidates`): a sentence ends at ``.``, ``!`` or ``?`` followed by
  white space and a capital letter, a digit, a quote or a bracket. Used to cut long paragraphs into chunks, to
  pick summary sentences and to draw calibration queries: a lower-case word after a full stop ("approx. five",
  "e.g. this") does not start a sentence.
- **Names** (:func:`name_sentences`): a sentence also ends at a line break and before any letter after a full
  stop. Used where the capital of a sentence's *first* word must be told apart from the capital of a name, so
  every place that starts a sentence has to be seen, whatever its case.

Usage::

    split_prose("It rained. Then it stopped, e.g. here.")  # ["It rained.", "Then it stopped, e.g. here."]
    summary_candidates(section_text)                         # prose sentences fit for a summary
"""

from __future__ import annotations

import re

PROSE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")
NAME_END = re.compile(r"(?<=[.!?])\s+(?=[\"“'‘(\[]?[^\W\d_])|\n+")
_WORD = re.compile(r"[^\W\d_]{2,}")


def split_prose(text: str) -> list[str]:
    """``text`` cut at prose sentence ends (white space inside a sentence is kept as it is)."""
    return PROSE_END.split(text)


def name_sentences(text: str) -> list[str]:
    """``text`` cut at every sentence start and line break, empty pieces dropped (for reading names)."""
    return [s for s in NAME_END.split(text) if s and s.strip()]


def summary_candidates(text: str, min_words: int = 5, max_words: int = 60) -> list[str]:
    """Sentences of ``text`` fit for a summary: prose only (mostly letters), not too short; long ones cut."""
    out: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text):
        flat = " ".join(paragraph.split())
        for sentence in split_prose(flat):
            words = sentence.split()
            if len(words) < min_words:
                continue
            letters = sum(len(w) for w in _WORD.findall(sentence))
            if letters < 0.6 * len(sentence.replace(" ", "")):
                continue  # tables, formulas, reference lists
            out.append(" ".join(words[:max_words]) + (" …" if len(words) > max_words else ""))
    return out
