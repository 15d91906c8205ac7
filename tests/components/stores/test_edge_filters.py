"""Haystack filters → Qdrant Edge filters, checked on the translation itself (the store tests check the results)."""

from __future__ import annotations

import pytest
from haystack.errors import FilterError

from adaptive_retrieval.components.stores.documents.edge_filters import convert_filters


def test_no_filter_is_none() -> None:
    assert convert_filters(None) is None and convert_filters({}) is None


def test_equality_is_a_match_on_the_payload_key() -> None:
    translated = convert_filters({"field": "meta.level", "operator": "==", "value": 0})
    assert len(translated.must) == 1
    assert 'key="meta.level"' in repr(translated) and "MatchValue(value=0)" in repr(translated)


def test_not_equal_is_a_must_not_so_documents_without_the_field_match() -> None:
    translated = convert_filters({"field": "meta.a", "operator": "!=", "value": "x"})
    assert 'must_not=[FieldCondition(key="meta.a"' in repr(translated)


def test_logical_nodes_nest() -> None:
    translated = convert_filters(
        {
            "operator": "AND",
            "conditions": [
                {"field": "meta.a", "operator": "==", "value": "x"},
                {"operator": "OR", "conditions": [{"field": "meta.y", "operator": ">=", "value": 3}]},
            ],
        }
    )
    assert len(translated.must) == 2 and "RangeFloat(gte=3" in repr(translated)


def test_a_date_string_range_is_a_datetime_range() -> None:
    translated = convert_filters({"field": "meta.d", "operator": "<", "value": "2020-01-01T00:00:00"})
    assert "RangeDateTime" in repr(translated)


@pytest.mark.parametrize(
    "bad",
    [
        {"field": "meta.a", "operator": "~=", "value": 1},
        {"operator": "AND"},
        {"operator": "XOR", "conditions": []},
        {"conditions": []},
        {"operator": "AND", "conditions": "not a list"},
        {"field": "meta.a", "operator": ">", "value": "not a date"},
    ],
)
def test_malformed_filters_raise_filter_error(bad: dict) -> None:
    with pytest.raises(FilterError):
        convert_filters(bad)


def test_a_filter_that_is_not_a_dict_is_refused() -> None:
    with pytest.raises(FilterError, match="dictionary"):
        convert_filters(["field", "meta.a"])  # type: ignore[arg-type]
