"""scripts/lab/bench_gpu.py runs on the CPU (the smoke test of the GPU benchmark) and
scripts/lab/gpu_carry_bundle.py writes what a bare GPU machine needs: fp16 weights the encoder loads and a
reference the benchmark checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.script_modules import LAB, load_script

pytest.importorskip("torch")
pytest.importorskip("sentence_transformers")


def test_bench_runs_on_cpu_and_prints_every_row(model_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    args = ["--device", "cpu", "--passages", "24", "--queries", "4", "--query-runs", "2", "--batch-size", "8"]
    args += ["--large", "2x64", "--threads", "1", "--rounds", "1", "--model", str(model_dir), "--json", str(out)]
    run = subprocess.run([sys.executable, str(LAB / "bench_gpu.py"), *args], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    record = json.loads(out.read_text())
    rows = {(r["model"], r["name"]): r for r in record["rows"]}
    for name in (
        "package torch fp32",
        "old torch path fp32",
        "package onnx fp32",
        "package onnx int8",
        "sentence-transformers fp32",
        "bare forward + device pooling fp32",
    ):
        row = rows[("all-MiniLM-L6-v2", name)]
        assert row["passages_per_s"] > 0 and row["query_ms"] > 0, row
        assert row["top10"] is not None and row["cos_min"] is not None, row
    assert rows[("all-MiniLM-L6-v2", "package torch fp32")]["cos_min"] > 0.9999
    assert rows[("BERT 2x64 random", "package torch fp32")]["passages_per_s"] > 0
    assert all(t["verdict"].startswith("GPU target") for t in record["targets"][:6])
    assert "| package torch fp32 |" in run.stdout and "Targets of issue 43" in run.stdout


def test_reference_round_trip_and_mismatch(model_dir: Path, tmp_path: Path) -> None:
    bench = load_script("bench_gpu")
    texts, queries = bench.passages(12), bench.queries(3)
    assert texts == bench.passages(12) and len(set(texts)) == 12 and not set(queries) & set(texts)
    reference = bench.compute_reference(str(model_dir), texts, queries, batch_size=4)
    reference.save(tmp_path / "ref.npz")
    loaded = bench.Reference.load(tmp_path / "ref.npz")
    assert loaded.digest == reference.digest and np.array_equal(loaded.top10, reference.top10)
    assert np.allclose(loaded.passages, reference.passages, atol=1e-3)  # stored as float16
    args = ["--device", "cpu", "--passages", "13", "--queries", "3", "--reference", str(tmp_path / "ref.npz")]
    assert bench.main(args) == 2  # other passages than the reference's: refused, not compared


def test_carry_bundle_weights_load_as_the_model(model_dir: Path, tmp_path: Path) -> None:
    from adaptive_retrieval.components.models.encoder import get_encoder
    from adaptive_retrieval.components.models.torch_encoder import TorchEncoder

    bundle = load_script("gpu_carry_bundle")  # it imports bench_gpu as a sibling: the lab is on sys.path (pyproject)
    folder = bundle.write_weights(tmp_path)
    weights = folder / "model.safetensors"
    assert 40e6 < weights.stat().st_size < 50e6  # fp16: half the packaged 90 MB
    texts = ["The while statement repeats a suite.", "Names refer to objects."]
    half = TorchEncoder(str(folder), "fp32", "cpu").encode(texts)
    assert (half * get_encoder(str(model_dir), "fp32", "cpu").encode(texts)).sum(axis=1).min() > 0.9999
    assert {"tokenizers", "huggingface-hub"} <= bundle.closure(("tokenizers",))
