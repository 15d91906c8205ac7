"""Haystack filters → Qdrant Edge filters: pure translation, no store access.

Haystack filters (``{"field": "meta.year", "operator": ">=", "value": 2020}`` and the logical ``AND``/``OR``/``NOT``
nodes) are translated into ``qdrant_edge.Filter`` with the semantics of Haystack's own filter tests
(``haystack.testing.document_store.FilterDocumentsTest``): ``!=`` and ``not in`` also match documents that lack the
field, ``== None`` matches documents where it is missing or null, range operators on ``None`` match nothing, and a
range on a string is only valid for ISO-8601 dates.

The payload of a stored point is ``Document.to_dict(flatten=False)`` without vectors (the layout qdrant-haystack
writes), so a Haystack field name is also the payload key: ``meta.year``, ``content``, ``id``.

Usage::

    from adaptive_retrieval.components.stores.documents.edge_filters import convert_filters

    edge_filter = convert_filters({"field": "meta.level", "operator": "==", "value": 0})
"""

from __future__ import annotations

import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

import qdrant_edge as qe
from haystack.errors import FilterError

if TYPE_CHECKING:
    from qdrant_client.http import models as rest

#: A filter that matches nothing (Qdrant has no literal "false").
_MATCH_NOTHING = qe.Filter(must=[qe.HasIdCondition(point_ids=set())])


def convert_filters(filters: dict[str, Any] | rest.Filter | None) -> qe.Filter | None:
    """The ``qdrant_edge.Filter`` for a Haystack filter (or for a native qdrant-client ``Filter``, which
    qdrant-haystack's store also accepts), or ``None`` for no filter.

    :raises FilterError: for a malformed filter, an unknown operator or a value the operator cannot compare.
    """
    if not filters:
        return None
    # A native filter is a qdrant_client object, so qdrant_client is loaded when one exists: the embedded store's
    # queries never import it (its models take 0.6 s to import, a third of a one-shot CLI query).
    if "qdrant_client" in sys.modules and isinstance(filters, _rest().Filter):
        return _native_filter(filters)
    if not isinstance(filters, dict):
        msg = f"Filters must be a dictionary, got {type(filters).__name__}"
        raise FilterError(msg)
    return _node(filters)


def _rest() -> Any:
    from qdrant_client.http import models as rest

    return rest


def _native_filter(native: rest.Filter) -> qe.Filter:
    """A qdrant-client ``Filter`` of field conditions (match value/any/except/text/phrase, ranges, is-empty,
    is-null, nested filters) in Edge's types."""

    def clauses(value: Any) -> list[Any] | None:
        if value is None:
            return None
        return [_native_condition(c) for c in (value if isinstance(value, list) else [value])]

    return qe.Filter(must=clauses(native.must), should=clauses(native.should), must_not=clauses(native.must_not))


def _native_condition(condition: Any) -> Any:
    rest = _rest()
    if isinstance(condition, rest.Filter):
        return _native_filter(condition)
    if isinstance(condition, rest.IsEmptyCondition):
        return qe.IsEmptyCondition(key=condition.is_empty.key)
    if isinstance(condition, rest.IsNullCondition):
        return qe.IsNullCondition(key=condition.is_null.key)
    if isinstance(condition, rest.FieldCondition):
        match, bounds = condition.match, condition.range
        if isinstance(match, rest.MatchValue):
            return qe.FieldCondition(key=condition.key, match=qe.MatchValue(match.value))
        if isinstance(match, rest.MatchAny):
            return qe.FieldCondition(key=condition.key, match=qe.MatchAny(list(match.any)))
        if isinstance(match, rest.MatchExcept):
            return qe.FieldCondition(key=condition.key, match=qe.MatchExcept(list(match.except_)))
        if isinstance(match, rest.MatchText):
            return qe.FieldCondition(key=condition.key, match=qe.MatchText(match.text))
        if isinstance(match, rest.MatchPhrase):
            return qe.FieldCondition(key=condition.key, match=qe.MatchPhrase(match.phrase))
        if isinstance(bounds, rest.Range):
            return qe.FieldCondition(
                key=condition.key, range=qe.RangeFloat(gte=bounds.gte, gt=bounds.gt, lte=bounds.lte, lt=bounds.lt)
            )
    msg = f"This native Qdrant condition has no Qdrant Edge translation here: {condition!r}"
    raise FilterError(msg)


def _node(node: dict[str, Any]) -> qe.Filter:
    if not isinstance(node, dict):
        msg = f"Each filter condition must be a dictionary, got {type(node).__name__}"
        raise FilterError(msg)
    if "field" in node:
        return _comparison(node)
    if "operator" not in node:
        msg = "A logical filter needs an 'operator' (AND, OR, NOT)"
        raise FilterError(msg)
    if "conditions" not in node:
        msg = f"The logical filter '{node['operator']}' needs 'conditions'"
        raise FilterError(msg)
    operator, conditions = node["operator"], node["conditions"]
    if not isinstance(conditions, list):
        msg = f"'conditions' of '{operator}' must be a list"
        raise FilterError(msg)
    children = [_node(c) for c in conditions]
    if operator == "AND":
        return qe.Filter(must=children)
    if operator == "OR":
        return qe.Filter(should=children) if children else _MATCH_NOTHING
    if operator == "NOT":
        # Haystack's NOT negates the conjunction of its conditions.
        return qe.Filter(must_not=[qe.Filter(must=children)])
    msg = f"Unknown logical operator '{operator}' (use AND, OR or NOT)"
    raise FilterError(msg)


def _comparison(node: dict[str, Any]) -> qe.Filter:
    for key in ("operator", "value"):
        if key not in node:
            msg = f"The condition on '{node.get('field')}' needs '{key}'"
            raise FilterError(msg)
    field, operator, value = node["field"], node["operator"], node["value"]
    if not isinstance(field, str) or not field:
        msg = "A condition's 'field' must be a non-empty string"
        raise FilterError(msg)
    handler = _COMPARISONS.get(operator)
    if handler is None:
        msg = f"Unknown comparison operator '{operator}' (use ==, !=, >, >=, <, <=, in, not in)"
        raise FilterError(msg)
    return handler(field, value)


def _equal(field: str, value: Any) -> qe.Filter:
    if value is None:
        return qe.Filter(must=[qe.IsEmptyCondition(key=field)])
    return qe.Filter(must=[_equals_condition(field, value)])


def _not_equal(field: str, value: Any) -> qe.Filter:
    if value is None:
        return qe.Filter(must_not=[qe.IsEmptyCondition(key=field)])
    return qe.Filter(must_not=[_equals_condition(field, value)])


def _equals_condition(field: str, value: Any) -> Any:
    if isinstance(value, bool | str) or (isinstance(value, int) and not isinstance(value, bool)):
        return qe.FieldCondition(key=field, match=qe.MatchValue(value))
    if isinstance(value, float):
        return qe.FieldCondition(key=field, range=qe.RangeFloat(gte=value, lte=value))
    msg = f"Cannot compare '{field}' with == / != to a {type(value).__name__}"
    raise FilterError(msg)


def _in(field: str, value: Any) -> qe.Filter:
    return qe.Filter(should=_any_of(field, value)) if value else _MATCH_NOTHING


def _not_in(field: str, value: Any) -> qe.Filter:
    return qe.Filter(must_not=_any_of(field, value)) if value else qe.Filter()


def _any_of(field: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        msg = f"'in' / 'not in' on '{field}' need a list value, got {type(value).__name__}"
        raise FilterError(msg)
    keywords = [v for v in value if isinstance(v, str)]
    integers = [v for v in value if isinstance(v, int) and not isinstance(v, bool)]
    others = [v for v in value if not isinstance(v, str) and (isinstance(v, bool) or not isinstance(v, int))]
    conditions: list[Any] = []
    if keywords:
        conditions.append(qe.FieldCondition(key=field, match=qe.MatchAny(keywords)))
    if integers:
        conditions.append(qe.FieldCondition(key=field, match=qe.MatchAny(integers)))
    conditions.extend(_equals_condition(field, v) for v in others if v is not None)
    if any(v is None for v in value):
        conditions.append(qe.IsEmptyCondition(key=field))
    return conditions


def _range(bound: str) -> Any:
    def convert(field: str, value: Any) -> qe.Filter:
        if value is None:
            return _MATCH_NOTHING  # nothing is greater or smaller than None
        if isinstance(value, bool | list | dict | tuple):
            msg = f"Cannot compare '{field}' with a range operator to a {type(value).__name__}"
            raise FilterError(msg)
        if isinstance(value, str):
            try:
                datetime.fromisoformat(value)
            except ValueError as err:
                msg = f"A range on '{field}' takes a number or an ISO-8601 date, got the string {value!r}"
                raise FilterError(msg) from err
            return qe.Filter(must=[qe.FieldCondition(key=field, range=qe.RangeDateTime(**{bound: value}))])
        return qe.Filter(must=[qe.FieldCondition(key=field, range=qe.RangeFloat(**{bound: float(value)}))])

    return convert


_COMPARISONS = {
    "==": _equal,
    "!=": _not_equal,
    ">": _range("gt"),
    ">=": _range("gte"),
    "<": _range("lt"),
    "<=": _range("lte"),
    "in": _in,
    "not in": _not_in,
}
