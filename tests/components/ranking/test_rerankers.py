"""Rerankers: late interaction on the shipped MiniLM ONNX model, and a cross-encoder built and exported here.

The cross-encoder is a tiny randomly initialised BERT sequence classifier with the packaged tokenizer, exported
through the same ONNX/INT8 path as the embedders: its scores mean nothing, but they must equal the PyTorch
model's logits, and loading, batching, ordering and the router's pass-through are the real code paths.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.ranking import LateInteractionRanker
from adaptive_retrieval.components.ranking.cross_encoder_ranker import CrossEncoderRanker, export_cross_encoder

PASSAGES = {
    "Eiffel Tower": "The Eiffel Tower is a wrought-iron lattice tower in Paris, built from 1887 to 1889.",
    "Python": "Python is a programming language created by Guido van Rossum and released in 1991.",
    "Photosynthesis": "Photosynthesis converts light energy into chemical energy in green plants.",
    "Mount Everest": "Mount Everest, in the Himalayas, is the highest mountain above sea level.",
    "Nile": "The Nile is a major river flowing north through north-eastern Africa into the Mediterranean Sea.",
}


@pytest.fixture
def documents() -> list[Document]:
    return [
        Document(id=t, content=c, meta={"title": t}, score=1.0 / (i + 1)) for i, (t, c) in enumerate(PASSAGES.items())
    ]


# -- late interaction ----------------------------------------------------------------------------------------


def test_late_interaction_orders_by_maxsim(model_dir: Path, documents: list[Document]) -> None:
    ranker = LateInteractionRanker(model=str(model_dir), precision="int8")
    ranked = ranker.run(documents=documents, query="When was the tower in Paris built?", top_k=3)["documents"]
    assert ranked[0].id == "Eiffel Tower"
    assert len(ranked) == 3
    assert [d.score for d in ranked] == sorted((d.score for d in ranked), reverse=True)
    assert ranked[0].meta["reranker"] == "late_interaction" and ranked[0].meta["upstream_score"] == 1.0
    river = ranker.run(documents=documents, query="Which river flows into the Mediterranean?")["documents"]
    assert river[0].id == "Nile" and len(river) == len(documents)


def test_late_interaction_encodes_query_once_and_batches_documents(
    model_dir: Path, documents: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    ranker = LateInteractionRanker(model=str(model_dir), precision="fp32", batch_size=2)
    ranker.warm_up()
    encoder = get_encoder(str(model_dir), "fp32", "cpu")
    batches: list[int] = []
    real = encoder.token_embeddings

    def counting(texts):  # the real encoder, counted
        batches.append(len(texts))
        return real(texts)

    monkeypatch.setattr(encoder, "token_embeddings", counting)
    scores = ranker.score("highest mountain", [ranker.document_text(d) for d in documents])
    assert batches == [1, 2, 2, 1]  # the query once, then 5 documents in batches of 2
    monkeypatch.undo()

    # Batching and padding do not change the scores (fp32; dynamic INT8 scales each batch's activations).
    single = LateInteractionRanker(model=str(model_dir), precision="fp32", batch_size=1)
    assert np.allclose(
        single.score("highest mountain", [single.document_text(d) for d in documents]), scores, atol=1e-5
    )
    assert int(np.argmax(scores)) == list(PASSAGES).index("Mount Everest")


def test_late_interaction_int8_agrees_with_fp32(model_dir: Path, documents: list[Document]) -> None:
    query = "Who created the Python language?"
    fp32 = LateInteractionRanker(model=str(model_dir), precision="fp32").run(documents=documents, query=query)
    int8 = LateInteractionRanker(model=str(model_dir), precision="int8").run(documents=documents, query=query)
    assert fp32["documents"][0].id == int8["documents"][0].id == "Python"
    a = {d.id: d.score for d in fp32["documents"]}
    b = {d.id: d.score for d in int8["documents"]}
    assert max(abs(a[k] - b[k]) for k in a) < 0.05


def test_router_switches_reranking_off(model_dir: Path, documents: list[Document]) -> None:
    ranker = LateInteractionRanker(model=str(model_dir))
    out = ranker.run(documents=documents, query="highest mountain", top_k=2, rerank=False)["documents"]
    assert out == documents[:2]  # untouched: same order, same scores, no reranker meta
    with pytest.raises(ValueError, match="empty"):
        ranker.run(documents=documents, query="  ")
    with pytest.raises(ValueError, match="top_k"):
        ranker.run(documents=documents, query="x", top_k=0)
    assert ranker.run(documents=[], query="x")["documents"] == []


def test_late_interaction_reranks_the_head_only_and_caches_the_query(
    model_dir: Path, documents: list[Document], monkeypatch: pytest.MonkeyPatch
) -> None:
    ranker = LateInteractionRanker(model=str(model_dir), precision="int8", rerank_top=3, query_cache_size=2)
    ranker.warm_up()
    encoder = get_encoder(str(model_dir), "int8", "cpu")
    encoded: list[int] = []
    real = encoder.token_embeddings

    def counting(texts):  # the real encoder, counted
        encoded.append(len(texts))
        return real(texts)

    monkeypatch.setattr(encoder, "token_embeddings", counting)
    query = "Which river flows into the Mediterranean?"  # the Nile is 5th upstream: outside the head
    out = ranker.run(documents=documents, query=query)["documents"]
    assert sum(encoded) == 1 + 3  # the query, then the head's 3 documents only
    assert [d.id for d in out[3:]] == ["Mount Everest", "Nile"]  # the tail keeps its upstream order, unscored
    assert all(d.meta.get("reranker") == "late_interaction" for d in out[:3]) and "reranker" not in out[3].meta
    assert out[3].score == documents[3].score
    encoded.clear()
    ranker.run(documents=documents, query=query)  # a retry of the same question: the query is not encoded again
    assert sum(encoded) == 3
    ranker.run(documents=documents, query="a")
    ranker.run(documents=documents, query="b")  # the cache holds 2 queries: the first is evicted
    encoded.clear()
    ranker.run(documents=documents, query=query)
    assert sum(encoded) == 4
    ranker.clear_query_cache()
    assert ranker.run(documents=documents, query=query, top_k=2)["documents"][:2] == out[:2]
    with pytest.raises(ValueError, match="rerank_top"):
        LateInteractionRanker(model=str(model_dir), rerank_top=0)


# -- cross-encoder ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_cross_encoder(model_dir: Path, tmp_path_factory: pytest.TempPathFactory):
    """A 2-layer random BERT cross-encoder with the packaged tokenizer, exported to ONNX fp32 + INT8."""
    torch = pytest.importorskip("torch")
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

    root = tmp_path_factory.mktemp("cross-encoder")
    source = root / "tiny-reranker"
    source.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt"):
        if (model_dir / name).exists():
            shutil.copy2(model_dir / name, source / name)
    tokenizer = BertTokenizerFast.from_pretrained(str(source))
    config = BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=64,
        num_labels=1,
        initializer_range=0.2,  # spread the random logits so that orderings are well defined
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(config).eval()
    model.save_pretrained(source)
    exported = export_cross_encoder(source, models_dir=root / "models")
    return exported, model, tokenizer


def torch_logits(model, tokenizer, query: str, texts: list[str]) -> np.ndarray:
    import torch

    batch = tokenizer([query] * len(texts), texts, padding=True, truncation=True, max_length=64, return_tensors="pt")
    with torch.no_grad():
        return model(**batch).logits[:, 0].numpy()


def test_cross_encoder_export_layout(tiny_cross_encoder) -> None:
    folder, _, _ = tiny_cross_encoder
    assert {"model.onnx", "model_int8.onnx", "tokenizer.json", "config.json"} <= {p.name for p in folder.iterdir()}


def test_cross_encoder_copied_without_its_weights_says_so(tiny_cross_encoder, tmp_path: Path) -> None:
    folder, _, _ = tiny_cross_encoder
    copied = tmp_path / "copied"
    shutil.copytree(folder, copied)
    (copied / "model.onnx.data").unlink()
    ranker = CrossEncoderRanker(model=str(copied), precision="fp32")
    with pytest.raises(FileNotFoundError, match=r"beside it \(model.onnx.data\), which is missing"):
        ranker.warm_up()


def test_cross_encoder_scores_equal_the_torch_model(tiny_cross_encoder, documents: list[Document]) -> None:
    folder, model, tokenizer = tiny_cross_encoder
    ranker = CrossEncoderRanker(model=str(folder), precision="fp32", scale_score=False, batch_size=2)
    texts = [ranker.document_text(d) for d in documents]
    query = "When was the tower in Paris built?"
    scores = ranker.score(query, texts)
    assert np.allclose(scores, torch_logits(model, tokenizer, query, texts), atol=1e-4)
    # The position table caps the pair length (64 here), so a long passage is truncated, not an error.
    long = ranker.score(query, ["word " * 500])
    assert long.shape == (1,) and np.isfinite(long).all()


def test_cross_encoder_batches_and_orders(tiny_cross_encoder, documents: list[Document]) -> None:
    folder, _, _ = tiny_cross_encoder
    query = "highest mountain"
    one = CrossEncoderRanker(model=str(folder), precision="fp32", batch_size=1)
    many = CrossEncoderRanker(model=str(folder), precision="fp32", batch_size=4)
    texts = [one.document_text(d) for d in documents]
    s1, s4 = one.score(query, texts), many.score(query, texts)
    assert np.allclose(s1, s4, atol=1e-5)
    assert ((s1 > 0) & (s1 < 1)).all()  # scale_score: sigmoid of the logit
    ranked = many.run(documents=documents, query=query, top_k=3)["documents"]
    expected = [documents[i].id for i in np.argsort(-s4, kind="stable")[:3]]
    assert [d.id for d in ranked] == expected
    assert [d.score for d in ranked] == pytest.approx(sorted(s4, reverse=True)[:3], abs=1e-6)
    assert many.run(documents=documents, query=query, rerank=False)["documents"] == documents


def test_cross_encoder_int8_and_errors(tiny_cross_encoder, documents: list[Document], tmp_path: Path) -> None:
    folder, _, _ = tiny_cross_encoder
    int8 = CrossEncoderRanker(model=str(folder), precision="int8")
    ranked = int8.run(documents=documents, query="river")["documents"]
    assert len(ranked) == len(documents) and all(np.isfinite(d.score) for d in ranked)
    with pytest.raises(FileNotFoundError, match="not found"):
        CrossEncoderRanker(model=str(tmp_path / "missing")).warm_up()
    with pytest.raises(ValueError, match="precision"):
        CrossEncoderRanker(model=str(folder), precision="fp8")


def test_torch_cross_encoder_scores_equal_the_torch_model(tiny_cross_encoder, documents: list[Document]) -> None:
    # The GPU path (PyTorch weights, pairs bucketed by token length, only the scores to the host) on torch's CPU
    # device: the same scores as the model itself, in the documents' order.
    from tokenizers import Tokenizer

    from adaptive_retrieval.components.ranking.torch_cross_encoder import TorchCrossEncoder

    folder, model, tokenizer = tiny_cross_encoder
    fast = Tokenizer.from_file(str(folder / "tokenizer.json"))
    fast.enable_truncation(max_length=64)
    fast.no_padding()
    scorer = TorchCrossEncoder(folder, fast, pad_id=0, precision="fp32", device="cpu", max_length=64)
    texts = [CrossEncoderRanker(model=str(folder)).document_text(d) for d in documents] + ["word " * 500]
    query = "When was the tower in Paris built?"
    got = scorer.relevance(query, texts, batch_size=2)
    assert np.allclose(got, torch_logits(model, tokenizer, query, texts), atol=1e-4)
    onnx = CrossEncoderRanker(model=str(folder), precision="fp32", scale_score=False).score(query, texts)
    assert np.allclose(got, onnx, atol=1e-4)
    with pytest.raises(ValueError, match="not offered for a cross-encoder"):
        TorchCrossEncoder(folder, fast, pad_id=0, precision="fp8", device="cpu")


def test_cross_encoder_gpu_precision_on_cpu_is_a_clear_error(tiny_cross_encoder) -> None:
    folder, _, _ = tiny_cross_encoder
    with pytest.raises(ValueError, match="needs a GPU"):
        CrossEncoderRanker(model=str(folder), precision="fp16", device="cpu").warm_up()


def test_late_interaction_torch_back_end_scores_like_onnx(model_dir: Path, documents: list[Document]) -> None:
    # The late-interaction ranker's MaxSim on the PyTorch encoder (on a GPU: token vectors stay on the device).
    ranker = LateInteractionRanker(model=str(model_dir), precision="fp32", batch_size=2)
    ranker.warm_up()
    texts = [ranker.document_text(d) for d in documents]
    q = ranker.query_tokens("highest mountain")
    torch_encoder = get_encoder(str(model_dir), "fp32", "cpu", backend="torch")
    assert np.allclose(torch_encoder.maxsim_scores(q, texts, 2), ranker.score("highest mountain", texts), atol=1e-4)


@pytest.mark.gpu
def test_cross_encoder_fp16_on_cuda(tiny_cross_encoder, documents: list[Document]) -> None:
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU (the PyTorch cross-encoder path is tested on torch's CPU device above)")
    folder, _, _ = tiny_cross_encoder
    query = "highest mountain"
    fp32 = CrossEncoderRanker(model=str(folder), precision="fp32", scale_score=False)
    fp16 = CrossEncoderRanker(model=str(folder), precision="fp16", device="cuda", scale_score=False)
    texts = [fp32.document_text(d) for d in documents]
    assert np.allclose(fp16.score(query, texts), fp32.score(query, texts), atol=2e-2)
