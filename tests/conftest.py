"""Shared fixtures: the exported ONNX model, a throw-away Qdrant folder, and a small real indexed corpus."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
# A store given no folder and no $ADAPTIVE_QDRANT_PATH lives in the per-user data folder: point it at a throw-away
# folder so that no test (nor a server or CLI it starts) writes to the home directory of whoever runs the suite.
os.environ["XDG_DATA_HOME"] = tempfile.mkdtemp(prefix="adaptive-test-data-")
# Likewise the cache of embeddings of fixed texts (the router's exemplars): one per run, not the user's.
os.environ["ADAPTIVE_CACHE_DIR"] = tempfile.mkdtemp(prefix="adaptive-test-cache-")

from adaptive_retrieval.components.models.export import export_model
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL, default_models_dir
from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients

REFERENCE_TOPICS = [
    "while",
    "for",
    "try",
    "with",
    "execmodel",
    "naming",
    "exceptions",
    "lambda",
    "global",
    "typesseq",
    "typesmapping",
    "break",
    "continue",
    "if",
    "import",
    "raise",
]


@pytest.fixture(scope="session")
def model_dir() -> Path:
    """The exported all-MiniLM-L6-v2 folder (built once if missing, as scripts/setup does)."""
    return export_model(name=DEFAULT_MODEL, models_dir=default_models_dir())


@pytest.fixture
def store_path(tmp_path: Path) -> Iterator[str]:
    """A fresh Qdrant local folder; shared clients are released afterwards so the next test starts clean."""
    yield str(tmp_path / "qdrant")
    release_all_clients()


@pytest.fixture(scope="session")
def reference_corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small real corpus: some Python language reference topics from CPython's ``pydoc_data``."""
    from pydoc_data.topics import topics

    folder = tmp_path_factory.mktemp("python-reference")
    for name in REFERENCE_TOPICS:
        (folder / f"{name}.txt").write_text(topics[name], encoding="utf-8")
    return folder
