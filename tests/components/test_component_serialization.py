"""Every component of the package: built with its defaults (stores where it needs them), serialised with
``to_dict`` and rebuilt with ``from_dict`` to the same dictionary, as Haystack does when it saves and loads YAML."""

from __future__ import annotations

import copy
import importlib
import inspect
import pkgutil
from pathlib import Path
from typing import Any

import pytest
from haystack import component
from haystack.components.generators.chat import OpenAIChatGenerator
from haystack.core.serialization import component_from_dict, component_to_dict
from haystack.utils import Secret

import adaptive_retrieval.components as package
from adaptive_retrieval.components.stores import EdgeDocumentStore, SQLiteGraphStore


def _components() -> list[type]:
    for module in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        importlib.import_module(module.name)
    ours = (cls for name, cls in component.registry.items() if name.startswith("adaptive_retrieval."))
    return sorted(ours, key=lambda c: c.__name__)


COMPONENTS = _components()


def _required(cls: type, tmp: Path) -> dict[str, Any]:
    """The init arguments a component cannot do without: its stores (in a throw-away folder), a model folder."""
    given = {
        "document_store": EdgeDocumentStore(path=str(tmp / "qdrant")),
        "graph_store": SQLiteGraphStore(path=":memory:"),
        "model": str(tmp / "a-model-folder"),  # only read at warm-up, which a round trip never calls
        # Haystack's own ChatGenerator, never called: its key is read from a variable that need not exist.
        "chat_generator": OpenAIChatGenerator(api_key=Secret.from_env_var("ADAPTIVE_TEST_NO_KEY", strict=False)),
    }
    params = inspect.signature(cls.__init__).parameters.values()
    required = [
        p.name
        for p in params
        if p.name != "self" and p.default is inspect.Parameter.empty and p.kind is p.POSITIONAL_OR_KEYWORD
    ]
    unknown = [name for name in required if name not in given]
    assert not unknown, f"{cls.__name__} needs {unknown}: add a value for them here"
    return {name: given[name] for name in required}


def test_every_component_is_found() -> None:
    names = {c.__name__ for c in COMPONENTS}
    assert {
        "IntentRouter",
        "MMRSelector",
        "SectionTreeRetriever",
        "GraphLocalRetriever",
        "GraphGlobalRetriever",
    } <= names
    assert {"WeightedRRFJoiner", "QualityGate"} <= names and len(names) >= 20


@pytest.mark.parametrize("cls", COMPONENTS, ids=lambda c: c.__name__)
def test_init_to_dict_from_dict_round_trip(cls: type, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # What a user sets to load the package's YAML with plain Haystack (pipelines/README.md, "Configuration").
    monkeypatch.setenv("HAYSTACK_DESERIALIZATION_ALLOWLIST", "adaptive_retrieval.*")
    instance = cls(**_required(cls, tmp_path))
    data = component_to_dict(instance, cls.__name__)
    assert data["type"] == f"{cls.__module__}.{cls.__name__}"
    # from_dict deserialises nested stores in place (as Haystack's own store helpers do): give it a copy.
    rebuilt = component_from_dict(cls, copy.deepcopy(data), cls.__name__)
    assert type(rebuilt) is cls and component_to_dict(rebuilt, cls.__name__) == data
