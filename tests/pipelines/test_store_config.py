"""Scale-out by configuration alone: server URLs, cluster layout, device and precision, secrets never in YAML."""

from __future__ import annotations

from pathlib import Path

import pytest
from haystack import Pipeline

import yaml
from adaptive_retrieval.components.stores.documents.edge_document_store import IndexNotFoundError
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import GraphNotFoundError
from adaptive_retrieval.pipelines.yaml_io import (
    ALLOWED_MODULES,
    YAML_DIR,
    env_store_overrides,
    load_pipeline,
    loads_pipeline,
)


def _stores(pipeline) -> list:
    return [
        c.document_store if hasattr(c, "document_store") else c._document_store
        for _, c in pipeline.walk()
        if hasattr(c, "document_store") or hasattr(c, "_document_store")
    ]


def test_environment_switches_store_cluster_and_models(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("QDRANT_URL", "http://qdrant-cluster:6333")
    monkeypatch.setenv("QDRANT_API_KEY", "s3cret")
    monkeypatch.setenv("ADAPTIVE_QDRANT_SHARDS", "6")
    monkeypatch.setenv("ADAPTIVE_QDRANT_REPLICATION", "2")
    monkeypatch.setenv("ADAPTIVE_DEVICE", "cuda")
    monkeypatch.setenv("ADAPTIVE_PRECISION", "fp16")
    overrides = env_store_overrides()
    assert overrides["shard_number"] == 6 and overrides["replication_factor"] == 2
    pipeline = load_pipeline("query")
    stores = _stores(pipeline)
    assert stores and all(s.url == "http://qdrant-cluster:6333" and s.path is None for s in stores)
    assert all(s.shard_number == 6 and s.replication_factor == 2 for s in stores)
    # Device and precision are the components' own business: they stay unset in the pipeline (and its YAML) and are
    # read from $ADAPTIVE_DEVICE / $ADAPTIVE_PRECISION at warm-up (next tests).
    assert pipeline.get_component("query_embedder").device is None
    assert pipeline.get_component("router").precision is None
    # The API key is resolved from the environment at connection time and serialised only as a reference.
    dumped = pipeline.dumps()
    assert "s3cret" not in dumped and "QDRANT_API_KEY" in dumped


def test_fp8_on_cpu_is_a_clear_error(model_dir: Path, tmp_path: Path) -> None:
    pipeline = load_pipeline("query", path=str(tmp_path / "qdrant"), precision="fp8")
    with pytest.raises(ValueError, match="needs a GPU"):
        pipeline.get_component("query_embedder").warm_up()


def test_checked_in_yaml_holds_no_secret_values() -> None:
    for name in ("indexing", "query"):
        text = (YAML_DIR / f"{name}.yaml").read_text(encoding="utf-8")
        loads_pipeline(text)
        assert "password:" not in text.replace("password: null", "") or "env_var" in text


def test_a_folder_override_keeps_the_stores_other_yaml_settings(tmp_path: Path) -> None:
    text = (
        (YAML_DIR / "query.yaml")
        .read_text(encoding="utf-8")
        .replace("optimize_threshold: 5000", "optimize_threshold: 123")
    )
    pipeline = loads_pipeline(text, path=str(tmp_path / "q"))
    store = pipeline.get_component("dense").document_store
    assert (store.path, store.optimize_threshold) == (str(tmp_path / "q"), 123)
    server = loads_pipeline(text, url="http://127.0.0.1:9").get_component("dense").document_store
    assert type(server).__name__ == "QdrantDocumentStore"  # another kind of store: replaced


def test_models_read_device_and_precision_from_the_environment_at_warm_up(
    model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    text = (YAML_DIR / "query.yaml").read_text(encoding="utf-8")
    assert "device: null" in text and "precision: null" in text
    monkeypatch.delenv("ADAPTIVE_DEVICE", raising=False)
    monkeypatch.setenv("ADAPTIVE_PRECISION", "fp8")
    pipeline = Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)  # plain Haystack, no override
    with pytest.raises(ValueError, match="needs a GPU"):
        pipeline.get_component("query_embedder").warm_up()
    monkeypatch.setenv("ADAPTIVE_PRECISION", "fp32")
    embedder = Pipeline.loads(text, allowed_modules=ALLOWED_MODULES).get_component("query_embedder")
    assert embedder.run("a question")["meta"]["precision"] == "fp32"
    assert "precision: null" in Pipeline.loads(text, allowed_modules=ALLOWED_MODULES).dumps()  # round trip as given


def test_yaml_stores_resolve_their_folder_when_they_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ADAPTIVE_QDRANT_PATH", str(tmp_path / "idx" / "qdrant"))
    monkeypatch.delenv("ADAPTIVE_GRAPH_PATH", raising=False)
    text = (YAML_DIR / "query.yaml").read_text(encoding="utf-8")
    pipeline = Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)
    store = pipeline.get_component("dense").document_store
    graph = pipeline.get_component("graph_local").graph_store
    assert (store.path, graph.path) == (None, None)  # serialised as given
    assert store.folder == tmp_path / "idx" / "qdrant"
    # The query side never creates an index: a missing one is an error naming the folder and the fix.
    with pytest.raises(IndexNotFoundError, match=r"ADAPTIVE_QDRANT_PATH.*adaptive-retrieval index --store"):
        store.count_documents()
    with pytest.raises(GraphNotFoundError, match="graph.sqlite"):
        graph.chunk_count()
    assert not (tmp_path / "idx").exists()
    monkeypatch.delenv("ADAPTIVE_QDRANT_PATH")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    assert store.folder == tmp_path / "xdg" / "adaptive-retrieval" / "qdrant"  # the default is never the cwd


def test_every_shipped_yaml_is_plain_data_with_hayhooks_io() -> None:
    paths = sorted(YAML_DIR.glob("*.yaml"))
    assert {p.name for p in paths} == {"indexing.yaml", "query.yaml", "query_ppr.yaml"}
    for path in paths:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text)  # a plain YAML reader: no !!python/... tags
        assert "!!" not in text, path.name
        # No request field may name a path on the server: the indexing YAML declares no Hayhooks input at all
        # (`POST /indexing/run {"sources": ["/etc/..."]}` indexed a server file), the query YAMLs the query only.
        expected = {"indexing.yaml": None}.get(path.name, {"query": "loop.query"})
        assert data.get("inputs") == expected, (path.name, data.get("inputs"))
        if expected is None:
            continue
        assert data["outputs"], path.name
        pipeline = Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)
        inputs, outputs = pipeline.inputs(), pipeline.outputs()
        for declared, sockets in ((data["inputs"], inputs), (data["outputs"], outputs)):
            for target in declared.values():  # what Hayhooks maps each request field / response field to
                component, socket = target.split(".", 1)
                assert socket in sockets.get(component, {}), (path.name, target)
