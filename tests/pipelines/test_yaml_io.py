"""The pipeline YAML loader bounds what a file can cost before anything is composed: aliases, the expanded node
count (an alias counts the size of what it refers to) and the nesting depth, each refused within a second with a
:class:`PipelineLoadError` naming the limit."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from adaptive_retrieval.pipelines.yaml_io import (
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    YAML_DIR,
    PipelineLoadError,
    _refuse_alias_bombs,
    loads_pipeline,
)


def alias_ladder(levels: int, per_level: int = 3) -> str:
    """``per_level`` aliases of the previous level's anchor on each level: ``per_level ** levels`` nodes expanded
    from ``levels * per_level`` aliases (37 aliases over 12 levels took 45 s to load before the node bound)."""
    lines = ["l0: &l0 [x, x, x]"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * per_level) + "]")
    lines.append(f"components: *l{levels}")
    return "\n".join(lines) + "\n"


def mapping_ladder(levels: int, per_level: int = 3) -> str:
    """The same as mappings, so that loading walks the expansion (33 aliases took 59 s before the node bound)."""
    lines = ["l0: &l0 {a: x, b: x, c: x}"]
    for i in range(1, levels + 1):
        lines.append(f"l{i}: &l{i} {{" + ", ".join(f"k{j}: *l{i - 1}" for j in range(per_level)) + "}")
    lines.append(f"components: *l{levels}")
    return "\n".join(lines) + "\n"


def nested(levels: int, flow: bool = True) -> str:
    if flow:
        return "components: " + "[" * levels + "]" * levels + "\n"
    return "components:\n  " + "- " * levels + "x\n"  # compact block sequences: one line, one level per "- "


def _refused_within(text: str, seconds: float = 1.0) -> str:
    # CPU time, not wall time: the bound is on the work done, whatever else the machine runs.
    start = time.process_time()
    with pytest.raises(PipelineLoadError) as raised:
        loads_pipeline(text)
    elapsed = time.process_time() - start
    assert elapsed < seconds, f"took {elapsed:.2f} s"
    return str(raised.value)


@pytest.mark.parametrize(("levels", "per_level"), [(12, 3), (20, 3), (30, 2), (9, 7)])
def test_alias_ladders_are_refused_by_their_expanded_size(levels: int, per_level: int) -> None:
    message = _refused_within(alias_ladder(levels, per_level))
    assert f"more than {MAX_YAML_NODES} nodes" in message
    assert "aliases" in message


@pytest.mark.parametrize("levels", [11, 12, 20])
def test_mapping_ladders_are_refused_before_any_store_override_walks_them(levels: int, tmp_path: Path) -> None:
    start = time.process_time()
    with pytest.raises(PipelineLoadError, match=f"more than {MAX_YAML_NODES} nodes"):
        loads_pipeline(mapping_ladder(levels), path=str(tmp_path / "qdrant"))
    assert time.process_time() - start < 1


@pytest.mark.parametrize("flow", [True, False], ids=["flow", "block"])
def test_deep_nesting_is_refused_not_a_recursion_error(flow: bool) -> None:
    # Flow nesting past libyaml's own 1,000 levels is refused by the parser as malformed, before the guard's bound.
    message = _refused_within(nested(20_000, flow=flow), seconds=0.2)
    assert f"deeper than {MAX_YAML_DEPTH} levels" in message or "exceeded maximum nesting depth" in message


@pytest.mark.parametrize("flow", [True, False], ids=["flow", "block"])
def test_nesting_past_the_bound_is_refused_by_the_guard(flow: bool) -> None:
    message = _refused_within(nested(MAX_YAML_DEPTH * 5, flow=flow), seconds=0.2)
    assert f"deeper than {MAX_YAML_DEPTH} levels" in message


def test_an_alias_to_a_deep_anchor_counts_its_depth() -> None:
    deep = "a: &a " + "[" * 60 + "]" * 60 + "\nb: " + "[" * 50 + "*a" + "]" * 50 + "\n"
    with pytest.raises(PipelineLoadError, match="deeper than"):
        _refuse_alias_bombs(deep)


def test_small_aliases_and_moderate_nesting_pass_the_guard() -> None:
    _refuse_alias_bombs(alias_ladder(3) + nested(MAX_YAML_DEPTH - 1).replace("components", "other"))


@pytest.mark.parametrize("name", ["query", "indexing"])
def test_the_shipped_pipelines_are_well_inside_the_bounds(name: str) -> None:
    _refuse_alias_bombs((YAML_DIR / f"{name}.yaml").read_text(encoding="utf-8"))


def test_a_query_yaml_saved_before_the_lean_documents_answers_as_it_did(tmp_path: Path) -> None:
    """Before issue 44 MMR read the vectors its documents carried and StructuralFirst the section channel's list:
    such a YAML loads with MMR given the channels' store and StructuralFirst the section's structural hits."""
    from haystack.marshal import YamlMarshaller

    from adaptive_retrieval.pipelines.yaml_upgrade import upgrade_lean_documents

    data = YamlMarshaller().unmarshal((YAML_DIR / "query.yaml").read_text(encoding="utf-8"))
    old = YamlMarshaller().unmarshal((YAML_DIR / "query.yaml").read_text(encoding="utf-8"))
    del old["components"]["mmr"]["init_parameters"]["document_store"]
    for component in old["components"].values():  # nor did channels share their documents then
        component["init_parameters"].pop("share_documents", None)
    for connection in old["connections"]:
        if connection["sender"] in ("section.structural_hits", "dense.hits", "sparse.hits"):
            connection["sender"] = connection["sender"].rsplit(".", 1)[0] + ".documents"
    upgraded = upgrade_lean_documents(YamlMarshaller().unmarshal(YamlMarshaller().marshal(old)))
    mmr_store = upgraded["components"]["mmr"]["init_parameters"]["document_store"]
    assert mmr_store == data["components"]["dense"]["init_parameters"]["document_store"]
    assert {"sender": "section.structural_hits", "receiver": "structural_first.structural"} in upgraded["connections"]
    assert upgrade_lean_documents(YamlMarshaller().unmarshal(YamlMarshaller().marshal(data))) == data  # as written
    # Loaded the way the package loads YAML (its store moved with the others by a path override).
    pipeline = loads_pipeline(YamlMarshaller().marshal(old), path=str(tmp_path / "qdrant"))
    mmr = pipeline.get_component("mmr")
    assert mmr.document_store is not None and str(mmr.document_store.path) == str(tmp_path / "qdrant")
    edges = {(s, d["from_socket"].name, r) for s, r, d in pipeline.graph.edges(data=True)}
    assert ("section", "structural_hits", "structural_first") in edges and ("dense", "documents", "bridge") in edges


@pytest.mark.parametrize("name", ["query", "indexing"])
def test_a_yaml_naming_the_stores_old_module_paths_loads_as_it_did(name: str, tmp_path: Path) -> None:
    """Before ``components/stores/`` got rooms (issue 44) a saved YAML named ``stores.edge_document_store``,
    ``stores.sqlite_graph_store`` & co.: it loads as the same pipeline as the YAML naming the new paths."""
    from adaptive_retrieval.pipelines.yaml_io import dumps_pipeline
    from adaptive_retrieval.pipelines.yaml_upgrade import MOVED_MODULES

    text = (YAML_DIR / f"{name}.yaml").read_text(encoding="utf-8")
    old = text
    for before, now in MOVED_MODULES.items():
        old = old.replace(f"{now}.", f"{before}.")
    assert "components.stores.edge_document_store.EdgeDocumentStore" in old
    assert "components.stores.sqlite_graph_store.SQLiteGraphStore" in old
    assert "stores.documents." not in old and "stores.graph." not in old
    folder = str(tmp_path / "qdrant")
    assert dumps_pipeline(loads_pipeline(old, path=folder)) == dumps_pipeline(loads_pipeline(text, path=folder))
