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


def test_local_channels_post_filter_to_the_same_results(store_path: str) -> None:
    import numpy as np
    from haystack.dataclasses import SparseEmbedding
    from haystack_integrations.components.retrievers.qdrant import (
        QdrantEmbeddingRetriever,
        QdrantSparseEmbeddingRetriever,
    )

    from components.retrieval.qdrant_dense_retriever import QdrantDenseRetriever
    from components.retrieval.qdrant_sparse_retriever import QdrantSparseRetriever

    store = make_store(path=store_path)
    rng = np.random.default_rng(0)
    # Level-1 nodes crowd the top: 3 of every 4 points, so some queries need the filtered fallback.
    docs = [
        Document(
            id=f"d{i}",
            content=f"node {i}",
            meta={"level": 0 if i % 4 == 0 else 1},
            embedding=rng.standard_normal(384).tolist(),
            sparse_embedding=SparseEmbedding(indices=[i % 7, 7 + i % 5], values=[1.0, 0.5]),
        )
        for i in range(400)
    ]
    store.write_documents(docs)
    chunks = {"field": "meta.level", "operator": "==", "value": 0}
    for k in (5, 40):
        for seed in range(3):
            q = np.random.default_rng(seed + 10).standard_normal(384).tolist()
            ours = QdrantDenseRetriever(document_store=store, top_k=k, filters=chunks).run(query_embedding=q)
            stock = QdrantEmbeddingRetriever(document_store=store, top_k=k, filters=chunks).run(query_embedding=q)
            assert [d.id for d in ours["documents"]] == [d.id for d in stock["documents"]]
            assert all(d.meta["level"] == 0 for d in ours["documents"])
        sparse = SparseEmbedding(indices=[3, 9], values=[1.0, 1.0])
        ours = QdrantSparseRetriever(document_store=store, top_k=k, filters=chunks).run(query_sparse_embedding=sparse)
        stock = QdrantSparseEmbeddingRetriever(document_store=store, top_k=k, filters=chunks).run(
            query_sparse_embedding=sparse
        )
        assert {d.id for d in ours["documents"]} == {d.id for d in stock["documents"]}
        assert [round(d.score, 5) for d in ours["documents"]] == [round(d.score, 5) for d in stock["documents"]]


def test_channel_documents_share_their_vector_on_copy_and_drop_sparse() -> None:
    import copy

    from haystack.dataclasses import SparseEmbedding

    from components.retrieval.channel import channel_documents

    doc = Document(
        id="a",
        content="text",
        meta={"channels": {"dense": 1}},
        embedding=[0.1] * 4,
        sparse_embedding=SparseEmbedding(indices=[1], values=[1.0]),
        score=0.5,
    )
    [out] = channel_documents([doc])
    assert out == Document(id="a", content="text", meta={"channels": {"dense": 1}}, embedding=[0.1] * 4, score=0.5)
    copied = copy.deepcopy(out)
    assert copied == out and copied.embedding is out.embedding  # Haystack copies inputs; the vector is shared
    copied.meta["channels"]["sparse"] = 2
    assert out.meta == {"channels": {"dense": 1}}  # everything else is a real copy
    assert Document(id="a", content="text", meta={"channels": {"dense": 1}}, embedding=[0.1] * 4, score=0.5) == out
