"""Surface rules that recognise intents an embedding classifier handles poorly: structural references
("Section 3.2", "Table 2", "the methodology section"), code-like keyword queries, comparisons, summaries, and
plain searches (a topic described, not a question asked).

Each intent rule returns a *prior* that :class:`~adaptive_retrieval.components.routing.intent_router.IntentRouter`
mixes with the classifier's probabilities, never a hard decision. The plain-search rule is the one exception: it
sends the query to the router's fallback profile (the one measured never to fall below the stock hybrid), as a
query the classifier is unsure of goes there.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import Any

# The reference follows a space, or directly a "§", an abbreviation's dot or a digit ("§3", "Fig.2", "Table2"):
# never a letter, or "articles" and "tables" would read as Article S and Table S.
_NUMBERED_REF = re.compile(
    r"\b(?P<kind>section|sect\.|§|chapter|appendix|table|figure|fig\.|paragraph|clause|article|part)"
    r"(?:\s+|(?<=[§.])\s*|(?=\d))"
    r"(?P<ref>\d+(?:\.\d+)*|[A-Z](?:\.\d+)*|[ivxlc]+)\b",
    re.IGNORECASE,
)
_NAMED_SECTION = re.compile(
    r"\b(?:the|its|this)\s+(?P<name>[\w-]+(?:\s+[\w-]+){0,2}?)\s+(?:section|chapter|part|heading)\b",
    re.IGNORECASE,
)
_NAMED_PART = re.compile(
    r"\b(?:in|under)\s+the\s+(?P<name>abstract|introduction|conclusions?|methodology|methods|results|discussion|"
    r"related work|background|appendix|evaluation|limitations)\b",
    re.IGNORECASE,
)
_HEADING = re.compile(r"\bheading\s+[\"'“](?P<name>[^\"'”]+)[\"'”]", re.IGNORECASE)
# "the section on resolution of names", "the chapter about descriptors", "the section titled 'Setup'": the name
# runs to the verb or to "in/of the ..." that names the document.
_SECTION_ON = re.compile(
    r"\b(?:section|chapter|part|appendix)\s+(?:on|about|titled|entitled|called|named|dealing with|covering)\s+"
    r"(?:the\s+)?[\"'“]?(?P<name>[^?!;,\"'”]+?)[\"'”]?"
    r"(?=\s+(?:say|says|said|tell|tells|describe|describes|explain|explains|report|reports|show|shows|cover|"
    r"covers|list|lists|find|finds|discuss|discusses|define|defines|mention|mentions|state|states|propose|"
    r"proposes)\b|\s+(?:in|of|from|within)\s+(?:the|this|its|that)\b|\s*[?!;,]|\s*$)",
    re.IGNORECASE,
)
# "the last chapter", "the second section", "its final section": a position in the document's section order.
_POSITION = re.compile(
    r"\b(?:the|its|this)\s+(?P<position>first|second|third|fourth|fifth|last|final|penultimate|next-to-last|"
    r"opening|concluding|closing)\s+(?:section|chapter|part)\b",
    re.IGNORECASE,
)
# "the introduction of the LLaMA paper", "the conclusion says": parts every paper or report has, named without the
# word "section" (only with a document or a verb after them, so "the introduction of the euro" stays factual).
_PART_OF = re.compile(
    r"\bthe\s+(?P<name>abstract|introduction|conclusions?|summary|methodology|discussion|limitations|"
    r"acknowledge?ments|references|preface|overview)\s+(?:(?:of|in|to)\s+(?:the\s+|this\s+|its\s+|that\s+)?"
    r"(?:[\w'-]+\s+){0,6}?(?:paper|report|document|article|chapter|book|guide|manual|thesis|study|"
    r"specification|reference|standard|proposal)\b|(?:say|says|said|state|states|claim|claims|conclude|"
    r"concludes|describe|describes|mention|mentions)\b)",
    re.IGNORECASE,
)
_POSITIONS = {
    "first": 1, "opening": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5,
    "last": -1, "final": -1, "closing": -1, "concluding": -1, "penultimate": -2, "next-to-last": -2,
}  # fmt: skip
_CODE_TOKEN = re.compile(
    r"(__\w+__|\b\w+\.\w+\(|\b\w+\(\)|\b[A-Z]{1,5}-?\d{2,}\b|\b0x[0-9A-Fa-f]+\b|(?<!\w)--?[a-z][\w-]*|\*\*?\w+|"
    r"\b[a-z]+_[a-z_]+\b|\b\w+\.\w+\.\w+\b|[<>=!]=|->|::)"
)
#: The question words (one alternation, used by every rule that looks for one).
_WH = r"(?:what|which|who|whom|whose|when|where|why|how)"
#: The verbs a yes/no question opens with (both opening-word rules list them).
_AUXILIARY = r"is|are|was|were|do|does|did|can|could|should|would|will"
_QUESTION_WORD = re.compile(
    rf"^\s*({_WH}|{_AUXILIARY}|"
    r"explain|describe|tell|give|list|compare|summar\w+)\b",
    re.IGNORECASE,
)
_COMPARISON = re.compile(
    r"\b(compare[sd]?|comparison|differences?|differ|versus|vs\.?|trade-?offs?|pros and cons|"
    r"advantages and disadvantages|contrast|both|same (?:\w+ )?as|in common|"
    r"(?:which|who|what) (?:\w+ ){0,3}(?:is|was|are|were|has|had|came|come|did) "
    r"(?:\w+ )?(?:older|younger|larger|smaller|longer|shorter|earlier|later|higher|lower|bigger|more|less|"
    r"faster|slower)|(?:came|come|started|founded|formed|published|released|born|opened) first)\b",
    re.IGNORECASE,
)
_SUMMARY = re.compile(
    r"\b(main themes?|themes|overview|summar(?:y|ise|ize)|key (?:findings|points|ideas|takeaways)|overall|"
    r"big[- ]picture|what topics|high-level|across (?:all|these|the) (?:documents|reports|papers|articles|"
    r"sources)|whole (?:collection|corpus|document))\b",
    re.IGNORECASE,
)
_OPINION = re.compile(
    r"\b(critics?|criticis\w+|opinions?|views? on|think (?:of|about)|reviewers?|reception|received|recommend\w*|"
    r"perspectives?|worth it|worth learning|complaints?|praised?|controvers\w+)\b",
    re.IGNORECASE,
)
_NESTED = re.compile(
    r"\b(?:of|by|in|for|from|with) the \w+(?: \w+){0,3} (?:that|who|which|whose|where)\b", re.IGNORECASE
)
# "A or B?" closing a which/who question: the answer is one of two named candidates, so both must be retrieved.
_ALTERNATIVE = re.compile(
    r"^\s*(?:which|who|whom|whose|what)\b[^?]*[,:]\s*(?:the\s+)?[\w'.&-]+(?:\s+[\w'.&-]+){0,6}\s+or\s+"
    r"(?:the\s+)?[\w'.&-]+(?:\s+[\w'.&-]+){0,6}\s*\?\s*$",
    re.IGNORECASE,
)
# Yes/no questions that carry a property over from one entity to another ("Does B also ...?"), or pair them off.
_PAIRED = re.compile(
    r"(?:^|[.;]\s+)(?:does|did|do|is|was|are|were|has|have|had)\b[^?]*\balso\b|\brespective(?:ly)?\b|"
    r"\beach other\b|^\s*(?:are|is|were|was|do|does|did)\b[^?]*\band\b[^?]*\bthe same\b",
    re.IGNORECASE,
)
# An entity introduced by a description ("a consultant who has worked with ..."): answering needs the described
# entity first, then a fact about it (a bridge or multi-hop question).
_DESCRIBED = re.compile(
    r"\b(?:a|an|the)\s+(?:[\w'-]+\s+){0,4}?(?:who|which|that|whose)\s+(?:\w+\s+)?"
    r"(?:is|was|are|were|has|had|have|also|starred|played|wrote|directed|founded|won|served|worked|released|"
    r"published|produced|formed|located|based|born|died|shot|includes?|included|became|\w+ed)\b",
    re.IGNORECASE,
)
# A declarative question with the question word inside it ("... was born in which city?"), typical of questions
# that describe one entity and ask about another linked to it.
_EMBEDDED_WH = re.compile(
    rf"^(?!\s*{_WH}\b)[^?]*?\s"
    r"(?:in|of|for|by|from|at|on|with|to|as|during|under|into|after|before|about|behind|against|"
    r"is|was|are|were)\s+(?:what|which|whom|whose)\b"
    r"(?!\s+(?:the|these|this|those|it|they|is|was|are|were|you|we)\b)",
    re.IGNORECASE,
)


# An information need written as a request for documents rather than as a question ("I am interested in ...",
# "articles about ...", "any information on ...").
_REQUEST = re.compile(
    r"\b(?:i am|i'm|i would be|i'd be|we are)\s+(?:\w+\s+){0,2}?interested\b|\bi (?:would like|want|need|am looking|"
    r"seek)\b|\b(?:articles?|papers?|documents?|literature|publications?|studies|reports?|material|information)\s+"
    r"(?:on|about|concerning|regarding|dealing|which deal|that deal|relating|related|describing|discussing)\b",
    re.IGNORECASE,
)
# A question or an instruction: what the plain-search rule leaves to the classifier.
_ASKING = re.compile(
    rf"^\s*(?:{_WH}|{_AUXILIARY}|"
    r"has|have|had|explain|describe|discuss|tell|give|list|compare|summar\w+|according|name|find|identify|define|"
    r"state|outline|evaluate|analy[sz]e|contrast)\b",
    re.IGNORECASE,
)
# A question without its question mark, as old collections and lower-case typing write one: a question word after an
# opening preposition ("in what region of …") or last ("… whose godfather is whom ."). Elsewhere a question word
# mostly opens a relative or embedded clause ("alternatives which have been offered …"), as a described topic may.
_PREPOSITION = r"(?:in|on|at|of|for|from|by|with|to|into|during|under|over|after|before|since|through|about|among)"
_QUESTION_UNMARKED = re.compile(rf"^\s*{_PREPOSITION}\s+{_WH}\b|\b{_WH}\s*[?.!]*\s*$", re.IGNORECASE)
#: Words a query needs before it counts as a described topic (a shorter one is plain when it names nothing: "terms").
PLAIN_MIN_WORDS = 5
#: Words a question needs before, naming nothing, it counts as a described information need ("What problems are
#: there in making up descriptive titles? ..."). Shorter name-free questions stay with the classifier, as a
#: question about one's own documents often is. Measured: ADI's name-free questions of 12, 15 and 18 words or more
#: give nDCG@10 1.13×, 1.13× and 1.12× the stock hybrid (1.00× routed); CACM, hotpotqa100 and MuSiQue unchanged.
PLAIN_LONG_WORDS = 15
# A name, number or identifier: a capitalised word that does not open a sentence, a digit, a quoted span, or a
# code-like token. A question that names one of these is left to the classifier: the multi-hop channels link names.
_SENTENCE_END = (".", "?", "!", ":", ";")
_SPECIFIC = re.compile(r"\d|[\"“”]|\w[_./]\w|[a-z][A-Z]")


def _nested(query: str) -> bool:
    """An entity described by another ("the director of the film that ...")."""
    return bool(_NESTED.search(query) or _DESCRIBED.search(query) or _EMBEDDED_WH.search(query))


def names_something(query: str) -> bool:
    """Whether ``query`` names an entity, number or identifier (see :data:`_SPECIFIC`): a capitalised word past
    the first of its sentence (other than "I"), or a digit, quote or code-like token."""
    if _SPECIFIC.search(query):
        return True
    words = query.split()
    return any(
        word[:1].isupper() and word not in ("I", "I'm", "I've", "I'd") and not before.endswith(_SENTENCE_END)
        for before, word in itertools.pairwise(words)
    )


def plain_search(query: str) -> str | None:
    """Why ``query`` reads as a plain search, or ``None``: ``"upper case"`` (a query written in capitals, as old
    test collections and pasted headings are), ``"request"`` (a request for documents: "I am interested in
    ...", "articles about ..."), ``"statement"`` (a described topic of at least :data:`PLAIN_MIN_WORDS` words
    that asks nothing: no question mark, no question or instruction word first, no question word after an
    opening preposition or last), ``"description"`` (a question of at least :data:`PLAIN_LONG_WORDS` words that
    names nothing (:func:`names_something`) and describes no entity by another, which is a multi-hop question for
    the relational profile), or ``"terms"`` (a few ordinary words that ask and name nothing: "portable operating
    systems"; a terse query that names an identifier, a code or a number, "KeyError __missing__", is the keyword
    rule's)."""
    words = query.split()
    letters = [c for c in query if c.isalpha()]
    if len(words) >= 3 and letters and sum(c.isupper() for c in letters) >= 0.8 * len(letters):
        return "upper case"
    if _REQUEST.search(query):
        return "request"
    asks = "?" in query or bool(_ASKING.search(query) or _QUESTION_UNMARKED.search(query))
    if len(words) >= PLAIN_MIN_WORDS and not asks:
        return "statement"
    if len(words) >= PLAIN_LONG_WORDS and not names_something(query) and not _nested(query):
        return "description"
    if words and not asks and not names_something(query):
        return "terms"
    return None


@dataclass
class RuleResult:
    """Priors from the rules that fired, the structural reference found, whether the query reads as a plain
    search (and why), and evidence for diagnostics."""

    priors: dict[str, float] = field(default_factory=dict)
    structural: dict[str, Any] | None = None
    fired: list[str] = field(default_factory=list)
    plain: str | None = None

    def add(self, intent: str, strength: float, name: str) -> None:
        self.priors[intent] = max(self.priors.get(intent, 0.0), strength)
        self.fired.append(name)


def structural_reference(query: str) -> dict[str, Any] | None:
    """The first structural reference in ``query``, or ``None`` when there is none.

    By number: ``{"kind": "section", "ref": "3.2"}`` ("Section 3.2", "Table 2", "Appendix B"); by name:
    ``{"kind": "section", "name": "resolution of names"}`` ("the section on resolution of names", "the
    methodology section", "the introduction of the paper"); by position: ``{"kind": "section", "position": -1}``
    ("the last chapter"; 1 is the first section, -1 the last). "The concluding section" carries both a name and
    a position: the retriever takes a section so named, else the position.
    """
    match = _NUMBERED_REF.search(query)
    if match:
        kind = match.group("kind").lower().rstrip(".")
        kind = {"sect": "section", "§": "section", "fig": "figure"}.get(kind, kind)
        return {"kind": kind, "ref": match.group("ref"), "text": match.group(0)}
    match = _POSITION.search(query)
    if match:
        word = match.group("position").lower()
        found: dict[str, Any] = {"kind": "section", "position": _POSITIONS[word], "text": match.group(0)}
        if word in ("concluding", "closing"):
            found["name"] = "conclusion"
        return found
    for pattern in (_HEADING, _SECTION_ON, _NAMED_SECTION, _NAMED_PART, _PART_OF):
        match = pattern.search(query)
        if match:
            name = " ".join(match.group("name").split()).lower()
            if name.startswith("the "):
                name = name[4:]
            # "the conclusion of the LLaMA paper": the reference is "the conclusion"; the rest names the document
            end = match.end("name") if pattern is _PART_OF else match.end()
            return {"kind": "section", "name": name, "text": query[match.start() : end]}
    return None


def apply_rules(query: str, strengths: dict[str, float]) -> RuleResult:
    """Run every rule on ``query``; ``strengths`` gives each rule's prior weight (0 disables a rule)."""
    result = RuleResult()
    structural = structural_reference(query)
    if structural is not None:
        result.structural = structural
        result.add("contextual", strengths.get("structural", 0.0), "structural")
    words = query.split()
    codes = _CODE_TOKEN.findall(query)
    if codes and not _QUESTION_WORD.search(query):
        result.add("keyword", strengths.get("code", 0.0), "code")
    elif len(words) <= 4 and not _QUESTION_WORD.search(query) and not query.rstrip().endswith("?"):
        result.add("keyword", strengths.get("terse", 0.0), "terse")
    if _COMPARISON.search(query) or _ALTERNATIVE.search(query) or _PAIRED.search(query):
        result.add("analytical", strengths.get("comparison", 0.0), "comparison")
    if _SUMMARY.search(query) and structural is None:
        result.add("summary", strengths.get("summary", 0.0), "summary")
    if _OPINION.search(query):
        result.add("opinion", strengths.get("opinion", 0.0), "opinion")
    if _nested(query):
        result.add("relational", strengths.get("nested", 0.0), "nested")
    if strengths.get("plain", 0.0) > 0 and structural is None:
        result.plain = plain_search(query)
        if result.plain is not None:
            result.fired.append("plain")
    return result
