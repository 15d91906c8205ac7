"""What an LLM is asked for entities and relations, and a tolerant reader of its answer.

Local models answer in many shapes: code fences, prose around the JSON, trailing commas, single quotes, lists
of strings or of objects. :func:`parse_llm_entities` reads all of them and returns ``None`` only when nothing
can be read, so that :class:`~adaptive_retrieval.components.indexing.entity_extractor.EntityExtractor` keeps the
chunk's rule-based entities and counts the failure.

Usage::

    parse_llm_entities('```json\n{"entities": ["Marie Curie"], "relations": []}\n```')  # (["Marie Curie"], [])
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")


LLM_INSTRUCTIONS = (
    "Extract the named entities (people, organisations, places, works, events, concepts) and the relations "
    "between them from the user's text. Answer with JSON only, in this shape: "
    '{"entities": [{"name": "...", "type": "..."}], '
    '"relations": [{"source": "...", "target": "...", "relation": "..."}]}. '
    "Use names exactly as written in the text."
)


def _load_json_like(text: str) -> Any:
    """Parse JSON, then JSON without trailing commas, then a Python literal (single quotes, True/None)."""
    for attempt in (text, _TRAILING_COMMA.sub(r"\1", text)):
        try:
            return json.loads(attempt)
        except (json.JSONDecodeError, ValueError):
            pass
    try:
        return ast.literal_eval(_TRAILING_COMMA.sub(r"\1", text))
    except (ValueError, SyntaxError, MemoryError, RecursionError, TypeError):
        return None


def _json_candidates(text: str) -> list[str]:
    """Fenced blocks first, then every balanced {...} or [...] span, outermost first."""
    candidates = [m.group(1).strip() for m in _FENCE.finditer(text)]
    for opener, closer in (("{", "}"), ("[", "]")):
        start = text.find(opener)
        while start != -1:
            depth = 0
            in_string: str | None = None
            for pos in range(start, len(text)):
                ch = text[pos]
                if in_string:
                    if ch == in_string and text[pos - 1] != "\\":
                        in_string = None
                    continue
                if ch in "\"'":
                    in_string = ch
                elif ch == opener:
                    depth += 1
                elif ch == closer:
                    depth -= 1
                    if depth == 0:
                        candidates.append(text[start : pos + 1])
                        break
            start = text.find(opener, start + 1)
    candidates.append(text.strip())
    return candidates


def _entity_name(item: Any) -> str | None:
    if isinstance(item, str):
        name = item
    elif isinstance(item, dict):
        name = next((item[k] for k in ("name", "entity", "text", "label", "value") if isinstance(item.get(k), str)), "")
    elif isinstance(item, (list, tuple)) and item and isinstance(item[0], str):
        name = item[0]
    else:
        return None
    name = " ".join(name.split())
    return name if 0 < len(name) <= 120 else None


def _relation_pair(item: Any) -> tuple[str, str] | None:
    if isinstance(item, dict):
        pairs = (("source", "target"), ("head", "tail"), ("subject", "object"), ("from", "to"), ("e1", "e2"))
        for a, b in pairs:
            if isinstance(item.get(a), str) and isinstance(item.get(b), str):
                return item[a], item[b]
        return None
    if isinstance(item, (list, tuple)) and len(item) >= 2 and all(isinstance(x, str) for x in item[:3]):
        return (item[0], item[2]) if len(item) >= 3 else (item[0], item[1])
    return None


def parse_llm_entities(text: str) -> tuple[list[str], list[tuple[str, str]]] | None:
    """Read entity names and relation pairs from an LLM answer, tolerating common malformations.

    Accepts ``{"entities": [...], "relations": [...]}`` (entities as strings or objects with ``name``;
    relations as ``source/target``, ``head/tail``, ``subject/object`` objects or ``[s, p, o]`` lists) or a bare
    list of entities, inside code fences or prose, with trailing commas or single quotes.

    :returns: ``(names, pairs)``, or ``None`` when no usable entity could be read.
    """
    if not isinstance(text, str) or not text.strip():
        return None
    for candidate in _json_candidates(text):
        data = _load_json_like(candidate)
        if isinstance(data, dict):
            raw_entities = next(
                (data[k] for k in ("entities", "Entities", "nodes", "names") if isinstance(data.get(k), list)), None
            )
            raw_relations = next(
                (data[k] for k in ("relations", "relationships", "edges", "triples") if isinstance(data.get(k), list)),
                [],
            )
        elif isinstance(data, list):
            raw_entities, raw_relations = data, []
        else:
            continue
        if raw_entities is None:
            continue
        names = [n for n in (_entity_name(e) for e in raw_entities) if n]
        pairs = [p for p in (_relation_pair(r) for r in raw_relations) if p]
        # Relation endpoints are entities too, even when the model forgot to list them.
        names.extend(x for pair in pairs for x in pair if x not in names)
        if names:
            return names, pairs
    return None
