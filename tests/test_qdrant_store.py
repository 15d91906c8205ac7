"""SharedQdrantDocumentStore: one client per local path, dimension checks, server mode configuration."""

from __future__ import annotations

import os

import pytest
from haystack import Document

from components.stores.qdrant_store import SharedQdrantDocumentStore
from pipelines.store_config import make_store, store_parameters


def test_two_stores_on_one_path_share_the_client(store_path: str) -> None:
    a = make_store(path=store_path)
    b = make_store(path=store_path)
    a.write_documents([Document(id="1", content="hello", embedding=[0.1] * 384)])
    assert b.count_documents() == 1
    a.close()
    assert b.count_documents() == 1  # the shared client stays open while b uses it


def test_dimension_mismatch_is_a_clear_error_and_keeps_the_data(store_path: str) -> None:
    store = make_store(path=store_path)
    store.write_documents([Document(id="1", content="hello", embedding=[0.1] * 384)])
    with pytest.raises(ValueError, match="dimension|384|768"):
        make_store(path=store_path, embedding_dim=768).count_documents()
    assert make_store(path=store_path).count_documents() == 1


def test_url_switches_to_server_mode_with_secret_api_key() -> None:
    params = store_parameters(url="http://qdrant.example:6333")
    assert params["url"] == "http://qdrant.example:6333" and "path" not in params
    store = SharedQdrantDocumentStore(**params)
    data = store.to_dict()
    assert data["init_parameters"]["api_key"]["type"] == "env_var"  # a reference, never the key itself
    assert not store.is_local


@pytest.mark.server
@pytest.mark.skipif(not os.environ.get("QDRANT_URL"), reason="QDRANT_URL is not set: no Qdrant server to test")
def test_server_round_trip() -> None:
    store = make_store(url=os.environ["QDRANT_URL"], index="adaptive_contract_test", recreate_index=True)
    store.write_documents([Document(id="1", content="hello", embedding=[0.1] * 384)])
    assert store.count_documents() == 1
