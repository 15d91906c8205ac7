"""Development questions rewritten in the styles other collections write theirs, to see whether routing transfers.

The router reads a query's form (capitals, names, question words, length: ``components/routing/rules.py``), and
every development set writes its information needs one way: MEDLINE and CACM as sentences, TIME and LISA in
capitals, the question sets as cased questions. Collections the package is judged on but never sees write them
otherwise (old test collections in lower case ending in " .", keyword strings), so a set is also evaluated with its
needs restyled, the judgments unchanged:

- ``as-written``: the questions as the set gives them;
- ``lower``: lower case, the closing punctuation replaced by " ." ("what similarity laws must be obeyed … ."):
  no capitalised name is left for the rules to see;
- ``terms``: the content words only, in lower case (stop words and punctuation dropped: "crystalline lens
  vertebrates including humans"), as a keyword search is typed.

The stock hybrid is asked the same rewritten needs in the same run, so the ratio compares like with like.

Usage::

    evalset = restyle(dev_set.load(data), "lower")
    restyle(evalset, "as-written") is evalset      # True: nothing to rewrite
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from adaptive_retrieval.components.text import content_words
from evaluation.data import EvalSet

_CLOSING = re.compile(r"[\s?.!]+$")


def lower(question: str) -> str:
    """``question`` in lower case, its closing punctuation replaced by " ."."""
    return _CLOSING.sub("", question.strip()).lower() + " ."


def terms(question: str) -> str:
    """The content words of ``question`` in order, lower case, space-separated."""
    return " ".join(content_words(question))


#: Every style by its name (``--query-style``); the first is the default.
STYLES: dict[str, Callable[[str], str] | None] = {"as-written": None, "lower": lower, "terms": terms}


def restyle(evalset: EvalSet, style: str) -> EvalSet:
    """``evalset`` with every question rewritten in ``style`` (the same object for ``as-written``).

    :raises ValueError: for a style not in :data:`STYLES`, or one that leaves a question empty.
    """
    if style not in STYLES:
        msg = f"Unknown query style {style!r}; choose from {list(STYLES)}"
        raise ValueError(msg)
    rewrite = STYLES[style]
    if rewrite is None:
        return evalset
    questions = []
    for q in evalset.questions:
        text = rewrite(q.question)
        if not text.strip(" ."):
            msg = f"{evalset.name}: question {q.id!r} has nothing left in the {style!r} style: {q.question!r}"
            raise ValueError(msg)
        questions.append(replace(q, question=text))
    return replace(evalset, questions=questions)
