"""Scale-out by configuration alone: server URLs, cluster layout, device and precision, secrets never in YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from adaptive_retrieval.pipelines.yaml_io import YAML_DIR, env_store_overrides, load_pipeline, loads_pipeline


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
    assert pipeline.get_component("query_embedder").device == "cuda"
    assert pipeline.get_component("query_embedder").precision == "fp16"
    assert pipeline.get_component("router").precision == "fp16"
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
