"""Every component family's public names (``from adaptive_retrieval.components.fusion import WeightedRRFJoiner``):
each is the class its module defines, a family imports none of its modules until a name is asked for, and the
module paths that saved YAML names keep loading."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

FAMILIES = ("fusion", "gating", "indexing", "models", "ranking", "retrieval", "routing", "selection", "stores", "text")
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_public_name_is_its_modules_class(family: str) -> None:
    package = importlib.import_module(f"adaptive_retrieval.components.{family}")
    assert package.__all__, family
    for module, names in package._import_structure.items():
        defined = importlib.import_module(f"adaptive_retrieval.components.{family}.{module}")
        for name in names:
            assert getattr(package, name) is getattr(defined, name)
            assert name in dir(package) and name in package.__all__
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = package.Nothing


def test_a_family_imports_nothing_until_a_name_is_asked_for() -> None:
    code = (
        "import sys\n"
        f"for family in {FAMILIES!r}:\n"
        "    __import__(f'adaptive_retrieval.components.{family}')\n"
        "loaded = [m for m in sys.modules if m.count('.') >= 3 and m.startswith('adaptive_retrieval.components.')]\n"
        "print(sorted(loaded), sorted(m for m in ('torch', 'onnxruntime', 'haystack') if m in sys.modules))\n"
        "from adaptive_retrieval.components.fusion import WeightedRRFJoiner\n"
        "print('adaptive_retrieval.components.fusion.weighted_rrf_joiner' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.splitlines() == ["[] []", "True"], done.stdout


def test_the_query_yaml_as_saved_before_the_public_names_loads(tmp_path: Path) -> None:
    """``yaml/query.yaml`` names its components by their modules (Haystack's registry key, what plain
    ``Pipeline.loads`` and ``hayhooks run`` resolve): those paths are the classes the families export."""
    from haystack.marshal import YamlMarshaller

    from adaptive_retrieval.pipelines.yaml_io import loads_pipeline

    text = (ROOT / "yaml" / "query.yaml").read_text(encoding="utf-8")
    data = YamlMarshaller().unmarshal(text)
    types = {c["type"] for c in data["components"].values()}
    assert "adaptive_retrieval.components.fusion.weighted_rrf_joiner.WeightedRRFJoiner" in types
    pipeline = loads_pipeline(text, path=str(tmp_path / "qdrant"))
    from adaptive_retrieval.components.fusion import WeightedRRFJoiner
    from adaptive_retrieval.components.routing import IntentRouter

    assert isinstance(pipeline.get_component("joiner"), WeightedRRFJoiner)
    assert isinstance(pipeline.get_component("router"), IntentRouter)


def test_yaml_naming_the_public_paths_loads_with_the_packages_loader(tmp_path: Path) -> None:
    """A YAML written by hand with the public paths: ``loads_pipeline`` reads them (plain Haystack looks a component
    up by its module path only, and refuses it)."""
    from haystack import Pipeline
    from haystack.core.errors import DeserializationError, PipelineError

    from adaptive_retrieval.components.fusion import WeightedRRFJoiner
    from adaptive_retrieval.components.stores import EdgeDocumentStore
    from adaptive_retrieval.pipelines.yaml_io import loads_pipeline

    text = (ROOT / "yaml" / "query.yaml").read_text(encoding="utf-8")
    public = text.replace(
        "adaptive_retrieval.components.fusion.weighted_rrf_joiner.WeightedRRFJoiner",
        "adaptive_retrieval.components.fusion.WeightedRRFJoiner",
    ).replace(
        "adaptive_retrieval.components.stores.documents.edge_document_store.EdgeDocumentStore",
        "adaptive_retrieval.components.stores.EdgeDocumentStore",
    )
    assert public != text
    pipeline = loads_pipeline(public, path=str(tmp_path / "qdrant"))
    assert isinstance(pipeline.get_component("joiner"), WeightedRRFJoiner)
    assert isinstance(pipeline.get_component("dense").document_store, EdgeDocumentStore)
    with pytest.raises((DeserializationError, PipelineError), match=r"fusion\.WeightedRRFJoiner|stores\.EdgeDoc"):
        Pipeline.loads(public, allowed_modules=["adaptive_retrieval"])
