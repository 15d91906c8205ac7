"""ONNX Runtime on CUDA: provider choice, IO binding and the pooled output, tested on the CPU provider (ONNX Runtime
binds on CPU too); the CUDA runs skip where the CUDA execution provider is missing (onnxruntime-gpu and a GPU)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adaptive_retrieval.components.models.onnx_encoder import (
    CPU_PROVIDER,
    CUDA_PROVIDER,
    POOLED_OUTPUT,
    OnnxEncoder,
    providers_for,
)
from adaptive_retrieval.components.models.ort_runtime import onnxruntime_quiet

TEXTS = [
    "The while statement is used for repeated execution as long as an expression is true.",
    "Names refer to objects.",
    " ".join(["A break statement executed in the first suite terminates the loop."] * 8),
    "Lists are mutable sequences.",
]
HAS_CUDA_EP = CUDA_PROVIDER in onnxruntime_quiet().get_available_providers()


class TestProviders:
    def test_cpu_and_cuda_provider_lists(self) -> None:
        assert providers_for("cpu", [CPU_PROVIDER]) == [CPU_PROVIDER]
        assert providers_for("cpu", [CUDA_PROVIDER, CPU_PROVIDER]) == [CPU_PROVIDER]
        # CUDA first, the CPU provider kept for operators CUDA lacks.
        assert providers_for("cuda", ["TensorrtExecutionProvider", CUDA_PROVIDER, CPU_PROVIDER]) == [
            CUDA_PROVIDER,
            CPU_PROVIDER,
        ]

    def test_cuda_without_its_provider_names_the_package(self) -> None:
        with pytest.raises(RuntimeError, match="onnxruntime-gpu"):
            providers_for("cuda", [CPU_PROVIDER])
        with pytest.raises(ValueError, match="Unknown device"):
            providers_for("tpu", [CPU_PROVIDER])


class TestIoBinding:
    @pytest.mark.parametrize("precision", ["fp32", "int8"])
    def test_io_binding_gives_the_same_vectors(self, model_dir: Path, precision: str) -> None:
        plain = OnnxEncoder(str(model_dir), precision, "cpu")
        bound = OnnxEncoder(str(model_dir), precision, "cpu", io_binding=True)
        assert not plain.io_binding and bound.io_binding
        assert np.allclose(bound.encode(TEXTS, batch_size=2), plain.encode(TEXTS, batch_size=2), atol=1e-6)
        hidden, mask = bound.token_embeddings(TEXTS[:2])
        assert hidden.shape == (2, mask.shape[1], 384) and hidden.dtype == np.float32
        assert "IO binding" in bound.describe().note and plain.describe().note is None

    def test_pooled_output_equals_numpy_pooling(self, model_dir: Path) -> None:
        # The graph's sentence_embedding: only [batch, dim] leaves the session (what runs on CUDA by default).
        plain = OnnxEncoder(str(model_dir), "fp32", "cpu")
        if POOLED_OUTPUT not in {o.name for o in plain.session.get_outputs()}:
            pytest.skip(f"this export has no {POOLED_OUTPUT} output")
        pooled = OnnxEncoder(str(model_dir), "fp32", "cpu", io_binding=True, pooled_output=True)
        assert plain.pooled_output is None and pooled.pooled_output == POOLED_OUTPUT
        vectors = pooled.encode(TEXTS, batch_size=3)
        assert np.allclose(vectors, plain.encode(TEXTS, batch_size=3), atol=1e-5)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
        # normalize=False keeps the numpy mean (the graph's output may be normalised already).
        assert np.allclose(pooled.encode(TEXTS, normalize=False), plain.encode(TEXTS, normalize=False), atol=1e-5)


@pytest.mark.gpu
@pytest.mark.skipif(
    not HAS_CUDA_EP,
    reason="needs ONNX Runtime's CUDA execution provider (onnxruntime-gpu and a CUDA GPU); this build has "
    f"{onnxruntime_quiet().get_available_providers()}",
)
class TestOnCuda:
    @pytest.mark.parametrize("precision", ["fp32", "int8"])
    def test_cuda_provider_with_io_binding_matches_cpu(self, model_dir: Path, precision: str) -> None:
        cpu = OnnxEncoder(str(model_dir), precision, "cpu").encode(TEXTS)
        cuda = OnnxEncoder(str(model_dir), precision, "cuda")
        assert cuda.io_binding and cuda.session.get_providers()[0] == CUDA_PROVIDER
        assert (cuda.encode(TEXTS) * cpu).sum(axis=1).min() > 0.999


def test_fp16_graph_for_the_cuda_provider(model_dir: Path, tmp_path: Path) -> None:
    # Built on request (models build --precisions fp16); ONNX Runtime's CPU provider runs it too, which checks it
    # here: the same vectors as fp32, inputs and outputs in the usual types.
    import shutil

    from adaptive_retrieval.components.models.encoder import get_encoder
    from adaptive_retrieval.components.models.export import export_model

    copy = tmp_path / model_dir.name
    shutil.copytree(model_dir, copy)
    export_model(models_dir=tmp_path, name=model_dir.name, precisions=("fp16",))
    assert (copy / "model_fp16.onnx").is_file() and (copy / "model_fp16.onnx.data").is_file()
    fp16 = OnnxEncoder(str(copy), "fp16", "cpu", io_binding=True).encode(TEXTS)
    assert (fp16 * OnnxEncoder(str(copy), "fp32", "cpu").encode(TEXTS)).sum(axis=1).min() > 0.999
    if not HAS_CUDA_EP:
        with pytest.raises(RuntimeError, match="onnxruntime-gpu"):
            get_encoder(str(copy), "fp16", "cuda", backend="onnx")
