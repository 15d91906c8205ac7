"""The quality gate's verdict in words: whether the documents answer the question, and why, in one sentence.

The gate decides ``pass`` or ``insufficient`` from a score; a person needs to know what that means for the question
and what to check. :func:`verdict` turns the decision and the evidence behind it into one of :data:`VERDICTS`:

- ``found``: the gate passed the list ("Found in your documents: passage 1 (Widget Pro FAQ > Installation) holds
  what the question asks.");
- ``not_found``: the gate did not pass it and can say what is missing, a name the question writes or a word of
  what it asks that no returned passage holds ("Not found in your documents: no passage mentions sick leave.");
- ``uncertain``: the gate did not pass it but nothing it can name is missing: the evidence is only weak
  ("Uncertain: no passage is clearly the answer …"; "the passages hold what the question asks about, but none is
  clearly the answer …" where the gate checked that they do).

A gate judging with its shipped prior because the index has no calibration yet says so in the same sentence, so
that a reader knows the judgment is generic.

Usage::

    v = verdict("insufficient", quality=0.21, threshold=0.36, missing_names=[], missing_asked=["sick leave"],
                top="Employee Handbook > Vacation", calibration="prior")
    v.verdict, v.reason    # 'not_found', 'Not found in your documents: no passage mentions sick leave (…).'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

#: What the gate can say of a list: found (it passed), not found (something named is missing), uncertain.
VERDICTS: tuple[str, ...] = ("found", "not_found", "uncertain")

#: The opening each verdict's sentence starts with (the CLI prints the reason as it is).
OPENINGS: dict[str, str] = {
    "found": "Found in your documents",
    "not_found": "Not found in your documents",
    "uncertain": "Uncertain",
}

#: The note of a gate without a calibration of its own (the index's own is written after indexing).
NO_CALIBRATION = "judged with the built-in prior: this index has no gate calibration yet"


@dataclass(frozen=True)
class Verdict:
    """What the gate tells a person: one of :data:`VERDICTS` and a one-sentence reason."""

    verdict: str
    reason: str


def _phrase(words: Sequence[str]) -> str:
    """Words as a reader expects them: ``a``, ``a and b``, ``a, b and c``."""
    words = [w for w in words if w]
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def verdict(
    decision: str,
    quality: float,
    threshold: float,
    missing_names: Sequence[str] = (),
    missing_asked: Sequence[str] = (),
    top: str | None = None,
    calibration: str = "index",
    documents: int = 1,
    asked_held: bool = False,
) -> Verdict:
    """The verdict and its reason (see the module docstring).

    :param decision: the gate's final decision (``pass``, ``insufficient``).
    :param quality: the quality of the returned attempt; ``threshold``: the pass threshold it was judged against.
    :param missing_names: names the question writes that no returned passage holds.
    :param missing_asked: what the question asks that no returned passage holds: phrases of adjacent question
        words, in question order ("sick leave"; see
        :func:`~adaptive_retrieval.components.gating.answerability.missing_asked`).
    :param top: where the first passage comes from (its section path or title), for the ``found`` sentence.
    :param calibration: ``index`` (the index's own calibration) or ``prior`` (none yet: said in the sentence).
    :param documents: how many passages were returned (none: not found, whatever the decision).
    :param asked_held: the gate checked that the passages hold what the question asks (its ``asked`` check is on
        and passed): the uncertain sentence says so. Where the check is off the sentence claims nothing about the
        question's words ("How many days of sick leave …" on a programming reference is not "on its words").
    """
    note = f" ({NO_CALIBRATION})" if calibration == "prior" else ""
    if documents == 0:
        return Verdict("not_found", f"{OPENINGS['not_found']}: no passage matched the question{note}.")
    if decision == "pass":
        where = f"passage 1 ({top})" if top else "passage 1"
        return Verdict("found", f"{OPENINGS['found']}: {where} holds what the question asks{note}.")
    if missing_names:
        quoted = _phrase([f"'{n}'" for n in missing_names])
        return Verdict("not_found", f"{OPENINGS['not_found']}: no passage mentions {quoted}{note}.")
    if missing_asked:
        return Verdict("not_found", f"{OPENINGS['not_found']}: no passage mentions {_phrase(missing_asked)}{note}.")
    held = "the passages hold what the question asks about, but none is" if asked_held else "no passage is"
    return Verdict(
        "uncertain",
        f"{OPENINGS['uncertain']}: {held} clearly the answer (quality {quality:.2f}, {threshold:.2f} needed){note}.",
    )
