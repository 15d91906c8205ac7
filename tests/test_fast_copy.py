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
