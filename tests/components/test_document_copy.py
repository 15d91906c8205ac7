"""The package's document copies make what the generic ones make: ``copy_document`` what ``copy.deepcopy`` makes,
``with_fields`` what ``dataclasses.replace`` makes (same class, same fields), only faster."""

from __future__ import annotations

import copy
import dataclasses
import warnings

import pytest
from haystack import Document
from haystack.dataclasses import ByteStream, SparseEmbedding

from adaptive_retrieval.components.document_copy import copy_document, copy_json, with_fields
from adaptive_retrieval.components.retrieval.channel import SharedEmbeddingDocument


def _document(cls: type[Document] = Document) -> Document:
    return cls(
        id="d1",
        content="text",
        meta={"level": 0, "path": ["a", {"b": [1, 2.5, None]}], "flag": True},
        embedding=[0.1, 0.2],
        sparse_embedding=SparseEmbedding(indices=[1], values=[0.5]),
        score=0.7,
    )


def test_copy_document_equals_deepcopy_and_shares_nothing_but_what_it_is_told() -> None:
    original = _document()
    clone = copy_document(original, shared=frozenset({"embedding"}))
    assert clone == copy.deepcopy(original) and type(clone) is Document
    assert clone.meta is not original.meta and clone.meta["path"][1] is not original.meta["path"][1]
    assert clone.embedding is original.embedding
    assert copy_json({"a": [1, {"b": "c"}]}) == {"a": [1, {"b": "c"}]}


@pytest.mark.parametrize("cls", [Document, SharedEmbeddingDocument])
def test_with_fields_equals_dataclasses_replace(cls: type[Document]) -> None:
    original = _document(cls)
    fields = {"score": 1.5, "meta": {**original.meta, "rank": 1}, "blob": ByteStream(b"x")}
    made, expected = with_fields(original, **fields), dataclasses.replace(original, **fields)
    assert type(made) is type(expected) is cls
    assert made.__dict__ == expected.__dict__
    assert original.score == 0.7 and "rank" not in original.meta  # the original is left as it was
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # made like replace: later changes warn as Haystack's would, no earlier
        copy.deepcopy(made)
    with pytest.raises(TypeError, match="no field"):
        with_fields(original, scroe=1.0)
