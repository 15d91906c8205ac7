"""components.fast_copy: Haystack's input copy gives the same copies, faster, and is installed on import."""

from __future__ import annotations

from collections import namedtuple

from haystack import Document
from haystack.core.pipeline import base, pipeline, utils

import components  # noqa: F401  (installs the wrapper)
from components.fast_copy import install, skipping_atoms

Point = namedtuple("Point", ["x", "y"])


def test_installed_everywhere_haystack_binds_it() -> None:
    assert install() is True
    fast = utils._deepcopy_with_exceptions
    assert hasattr(fast, "__wrapped__")
    assert base._deepcopy_with_exceptions is fast and pipeline._deepcopy_with_exceptions is fast


def test_same_copies_as_haystack() -> None:
    original = utils._deepcopy_with_exceptions.__wrapped__
    fast = skipping_atoms(original)
    doc = Document(content="x", meta={"channels": {"dense": 1}}, embedding=[0.1, 0.2])
    data = {
        "query_embedding": [0.5] * 384,
        "weights": {"dense": 0.4, "sparse": 0.6},
        "mixed": [1, "a", None, [2.0, 3.0], (4, 5), {6}],
        "point": Point(1, [2.0]),
        "documents": [doc],
        "flag": True,
    }
    got, want = fast(data), original(data)
    assert got == want
    assert got["query_embedding"] is not data["query_embedding"]  # still a copy, as Haystack's is
    assert got["documents"][0] is not doc and got["documents"][0].meta is not doc.meta
    assert got["mixed"][3] is not data["mixed"][3]
    assert type(got["point"]) is Point


def test_document_copies_are_deep_and_equal() -> None:
    import copy

    from haystack.dataclasses import ByteStream, SparseEmbedding

    from components.fast_copy import copy_document
    from components.retrieval.channel import SharedEmbeddingDocument

    doc = Document(
        content="x",
        blob=ByteStream(data=b"raw"),
        meta={"section_path": ["A", "B"], "channels": {"dense": 1}, "score": 0.5, "tags": [{"k": [1, 2]}]},
        embedding=[0.1, 0.2],
        sparse_embedding=SparseEmbedding(indices=[1, 4], values=[0.5, 1.5]),
        score=0.25,
    )
    fast, slow = copy_document(doc), copy.deepcopy(doc)
    assert fast == slow == doc and type(fast) is Document
    for name in ("meta", "embedding", "blob", "sparse_embedding"):
        assert getattr(fast, name) is not getattr(doc, name)
    fast.meta["section_path"].append("C")
    fast.meta["tags"][0]["k"].append(3)
    assert doc.meta["section_path"] == ["A", "B"] and doc.meta["tags"] == [{"k": [1, 2]}]

    shared = copy.deepcopy(SharedEmbeddingDocument(content="x", meta={"a": [1]}, embedding=[0.3]))
    again = copy.deepcopy(shared)
    assert type(again) is SharedEmbeddingDocument and again == shared
    assert again.embedding is shared.embedding and again.meta["a"] is not shared.meta["a"]
    assert utils._deepcopy_with_exceptions({"documents": [doc]})["documents"][0] == doc
