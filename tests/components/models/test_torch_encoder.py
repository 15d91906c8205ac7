"""GPU precisions: clear errors without CUDA; fp16 / bf16 / fp8 accuracy where a CUDA GPU is present."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.torch_encoder import TorchEncoder, check_fp8_support, weights_dir

torch = pytest.importorskip("torch")
HAS_CUDA = torch.cuda.is_available()
PASSAGES = [f"Passage {i} about loops, exceptions and names in the Python language reference." for i in range(64)]


def test_gpu_precisions_are_clear_errors_on_cpu(model_dir: Path) -> None:
    with pytest.raises(ValueError, match="needs a GPU"):
        get_encoder(str(model_dir), "fp8", "cpu")
    if not HAS_CUDA:
        with pytest.raises(RuntimeError, match="CUDA GPU"):
            TorchEncoder(str(model_dir), "fp16", "cuda")


def test_fp8_needs_ada_or_hopper() -> None:
    check_fp8_support((9, 0))
    check_fp8_support((8, 9))
    with pytest.raises(RuntimeError, match="compute capability"):
        check_fp8_support((8, 0))


def test_weights_of_the_exported_model_are_the_packaged_ones(model_dir: Path) -> None:
    assert (weights_dir(model_dir) / "model.safetensors").exists()


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU")
@pytest.mark.parametrize("precision", ["fp16", "bf16", "fp8"])
def test_gpu_precision_stays_close_to_fp32(model_dir: Path, precision: str) -> None:
    if precision == "fp8" and torch.cuda.get_device_capability() < (8, 9):
        pytest.skip("fp8 needs compute capability >= 8.9")
    reference = get_encoder(str(model_dir), "fp32", "cpu").encode(PASSAGES)
    got = get_encoder(str(model_dir), precision, "cuda").encode(PASSAGES)
    cosines = (reference * got).sum(axis=1)
    assert float(np.min(cosines)) > (0.97 if precision == "fp8" else 0.995)
