"""ONNX export and embedders: idempotent export, INT8 accuracy, no torch at query time, clear errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from haystack import Document

from adaptive_retrieval.components.models import OnnxDocumentEmbedder, OnnxTextEmbedder
from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.export import export_model
from adaptive_retrieval.components.models.onnx_encoder import OnnxEncoder

PASSAGES = [
    "The while statement is used for repeated execution as long as an expression is true.",
    "A break statement executed in the first suite terminates the loop without executing the else clause.",
    "Names refer to objects. Names are introduced by name binding operations.",
    "The try statement specifies exception handlers and/or cleanup code for a group of statements.",
    "Lists are mutable sequences, typically used to store collections of homogeneous items.",
]


def test_export_is_idempotent(model_dir: Path) -> None:
    before = {p.name: p.stat().st_mtime_ns for p in model_dir.glob("*.onnx")}
    assert {"model.onnx", "model_int8.onnx"} <= set(before)
    export_model(models_dir=model_dir.parent, name=model_dir.name)
    assert {p.name: p.stat().st_mtime_ns for p in model_dir.glob("*.onnx")} == before


def test_weights_are_kept_beside_the_graph_and_compute_the_same(model_dir: Path, tmp_path: Path) -> None:
    # ONNX Runtime maps a weights file (shared pages between processes) where it copies weights held in the graph.
    import onnx

    graph = model_dir / "model_int8.onnx"
    assert (model_dir / "model_int8.onnx.data").is_file() and (model_dir / "model.onnx.data").is_file()
    assert graph.stat().st_size < 1_000_000
    # A folder built before: the same graph with its weights inside. The next build moves them out, and the
    # embeddings are the same, bit for bit.
    old = tmp_path / model_dir.name
    shutil.copytree(model_dir, old)
    for name in ("model.onnx", "model_int8.onnx"):
        onnx.save_model(onnx.load(str(old / name)), str(old / name))
        (old / f"{name}.data").unlink()
    inside = OnnxEncoder(str(old), "int8").encode(PASSAGES)
    export_model(models_dir=tmp_path, name=model_dir.name)
    assert (old / "model_int8.onnx.data").is_file() and (old / "model_int8.onnx").stat().st_size < 1_000_000
    assert np.array_equal(OnnxEncoder(str(old), "int8").encode(PASSAGES), inside)
    assert np.array_equal(OnnxEncoder(str(model_dir), "int8").encode(PASSAGES), inside)


def test_a_graph_copied_without_its_weights_says_so(model_dir: Path, tmp_path: Path) -> None:
    copied = tmp_path / "copied"
    copied.mkdir()
    for name in ("tokenizer.json", "config.json", "model_int8.onnx"):
        shutil.copy(model_dir / name, copied / name)
    with pytest.raises(
        FileNotFoundError, match=r"weights in a file beside it \(model_int8.onnx.data\), which is missing"
    ):
        OnnxEncoder(str(copied), "int8")


def test_int8_stays_close_to_fp32(model_dir: Path) -> None:
    fp32 = get_encoder(str(model_dir), "fp32").encode(PASSAGES)
    int8 = get_encoder(str(model_dir), "int8").encode(PASSAGES)
    cosines = (fp32 * int8).sum(axis=1)
    assert cosines.min() > 0.97, cosines
    assert np.allclose(np.linalg.norm(int8, axis=1), 1.0, atol=1e-4)


def test_encoding_keeps_input_order_across_batches(model_dir: Path) -> None:
    encoder = get_encoder(str(model_dir), "fp32")
    together = encoder.encode(PASSAGES, batch_size=2)
    alone = np.vstack([encoder.encode([p]) for p in PASSAGES])
    assert np.allclose(together, alone, atol=1e-4)
    # Dynamic INT8 quantises activations per batch, so padding partners shift results slightly, never much.
    int8 = get_encoder(str(model_dir), "int8")
    batched, single = int8.encode(PASSAGES, batch_size=5), np.vstack([int8.encode([p]) for p in PASSAGES])
    assert (batched * single).sum(axis=1).min() > 0.98


def test_document_embedder_copies_and_embeds_meta(model_dir: Path) -> None:
    embedder = OnnxDocumentEmbedder(model=str(model_dir), meta_fields_to_embed=["title"], progress_bar=False)
    docs = [Document(content=PASSAGES[0], meta={"title": "while"})]
    out = embedder.run(docs)["documents"]
    assert docs[0].embedding is None and len(out[0].embedding) == 384
    with pytest.raises(TypeError, match="OnnxTextEmbedder"):
        embedder.run("a string")


def test_text_embedder_errors(model_dir: Path) -> None:
    embedder = OnnxTextEmbedder(model=str(model_dir))
    with pytest.raises(ValueError, match="empty"):
        embedder.run("  ")
    with pytest.raises(TypeError):
        embedder.run(["not", "a", "string"])
    long_query = "word " * 700  # 3,500 characters: within MAX_QUERY_CHARS, past the model's 256-token window
    out = embedder.run(long_query)
    # Embedded whole, in windows (test_a_long_query_is_embedded_whole_in_windows checks the tail counts).
    assert out["meta"]["truncated"] is False and out["meta"]["windows"] > 1 and len(out["embedding"]) == 384
    with pytest.raises(ValueError, match="the limit is 4000"):
        embedder.run("word " * 2000)


def test_text_embedder_vector_is_the_embedding_read_only(model_dir: Path) -> None:
    from haystack.core.pipeline.utils import _deepcopy_with_exceptions  # what Pipeline.run does to every input

    out = OnnxTextEmbedder(model=str(model_dir)).run("How does the with statement work?")
    vector = out["vector"]
    assert isinstance(vector, np.ndarray) and vector.dtype == np.float32 and not vector.flags.writeable
    assert np.allclose(vector, out["embedding"], atol=1e-7)
    with pytest.raises(ValueError, match="read-only"):
        vector[0] = 1.0
    # Haystack copies an array in one step (a list float by float): the copy is equal and the consumer's own.
    copied = _deepcopy_with_exceptions(vector)
    assert copied is not vector and np.array_equal(copied, vector)


def test_missing_model_and_precision_errors(tmp_path: Path, model_dir: Path) -> None:
    with pytest.raises(FileNotFoundError, match=r"adaptive-retrieval models build.*adaptive-retrieval\[models\]"):
        OnnxTextEmbedder(model=str(tmp_path / "nope")).warm_up()
    with pytest.raises(ValueError, match="Unknown precision"):
        get_encoder(str(model_dir), precision="int4")
    with pytest.raises(ValueError, match="Unknown ONNX precision"):
        OnnxEncoder(str(model_dir), precision="bf16")
    with pytest.raises(FileNotFoundError, match="ONNX file for precision 'fp16' not found"):
        OnnxEncoder(str(model_dir), precision="fp16")  # built on request: models build --precisions fp16
    for precision in ("fp16", "bf16", "fp8"):
        with pytest.raises(ValueError, match="needs a GPU"):
            OnnxTextEmbedder(model=str(model_dir), precision=precision).warm_up()


def test_query_path_runs_without_torch(model_dir: Path) -> None:
    # Haystack imports torch opportunistically when it is installed; blocking it proves our query path never needs it.
    code = (
        "import sys\n"
        "sys.modules['torch'] = None\n"
        "from adaptive_retrieval.components.models.text_embedder import OnnxTextEmbedder\n"
        "from adaptive_retrieval.components.routing.intent_router import IntentRouter\n"
        f"e = OnnxTextEmbedder(model={str(model_dir)!r}); e.warm_up()\n"
        "v = e.run('hello')['embedding']\n"
        f"r = IntentRouter(model={str(model_dir)!r}); r.warm_up(); r.run(query='hello', query_embedding=v)\n"
        "print(len(v), sys.modules['torch'] is None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "384 True"


def test_a_long_query_is_embedded_whole_in_windows(model_dir: Path) -> None:
    embedder = OnnxTextEmbedder(model=str(model_dir))
    head = " ".join(["the court heard evidence about the contract and its clauses"] * 40)  # ~400 words
    one, two = head + " volcano eruption lava", head + " banking interest mortgage"
    a, b = embedder.run(one), embedder.run(two)
    assert a["meta"]["windows"] > 1 and a["meta"]["truncated"] is False
    assert all(not embedder._encoder.is_truncated(w) for w in embedder.windows(one))
    assert " ".join(embedder.windows(one)).split() == one.split()  # every word, once, in order
    assert not np.allclose(a["vector"], b["vector"])  # words past token 256 change the embedding
    assert np.linalg.norm(a["vector"]) == pytest.approx(1.0, abs=1e-5)
    assert embedder.run("Who built the tower?")["meta"]["windows"] == 1
