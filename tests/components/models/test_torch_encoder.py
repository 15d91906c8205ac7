"""The PyTorch back end: pooling on the device equals the numpy path, bucketing and prefetch change nothing, the fp8
policy, clear errors; fp16 / bf16 accuracy and the pinned copy where a CUDA GPU is present.

The device code runs here on torch's CPU device (no GPU in CI): the same functions, tensors and loop as on CUDA,
where only the pinned buffer and the non-blocking copies differ (the CUDA tests check those).
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from adaptive_retrieval.components.models.encoder import get_encoder
from adaptive_retrieval.components.models.token_encoder import (
    EncoderDescription,
    TokenEncoder,
    normalise_numpy,
    pool_numpy,
    pooling_mode,
)
from adaptive_retrieval.components.models.torch_encoder import TorchEncoder, weights_dir

torch = pytest.importorskip("torch")
from adaptive_retrieval.components.models.device_pooling import (  # noqa: E402 - needs torch
    HostStaging,
    maxsim,
    normalise,
    pool,
)
from adaptive_retrieval.components.models.torch_runner import (  # noqa: E402 - needs torch
    FP8_MEASURED,
    check_fp8_support,
    plan_precision,
)

HAS_CUDA = torch.cuda.is_available()
PASSAGES = [f"Passage {i} about loops, exceptions and names in the Python language reference." for i in range(64)]
MIXED = [
    "Short.",
    "The while statement is used for repeated execution as long as an expression is true.",
    " ".join(["A much longer passage about the try statement and its exception handlers."] * 6),
    "Names refer to objects.",
    " ".join(["Lists are mutable sequences of homogeneous items, with slicing and comprehension."] * 3),
    "Which river flows into the Mediterranean?",
    " ".join(["Words past the window are cut at the model's 256 tokens, the head is embedded."] * 20),
]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    # torch's OpenMP threads spin at their barriers: on a CPU shared with other work two threads ran a query 15x
    # slower than one. Restored afterwards: the rest of the suite keeps torch's default.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def cpu_encoder(model_dir: Path) -> TorchEncoder:
    return TorchEncoder(str(model_dir), "fp32", "cpu")


class TestDevicePooling:
    def test_pool_and_normalise_equal_numpy(self) -> None:
        rng = np.random.default_rng(0)
        hidden = rng.normal(size=(5, 9, 16)).astype(np.float32)
        mask = (np.arange(9)[None, :] < np.array([9, 1, 4, 7, 2])[:, None]).astype(np.int64)
        for mode in ("mean", "cls"):
            got = pool(torch.from_numpy(hidden), torch.from_numpy(mask), mode).numpy()
            assert np.allclose(got, pool_numpy(hidden, mask, mode), atol=1e-6)
        assert np.allclose(normalise(torch.from_numpy(hidden[:, 0])).numpy(), normalise_numpy(hidden[:, 0]), atol=1e-6)
        assert not normalise(torch.zeros(1, 4)).isnan().any()  # a zero row stays zero, as in numpy
        with pytest.raises(ValueError, match="pooling"):
            pool(torch.from_numpy(hidden), torch.from_numpy(mask), "max")

    def test_pooling_follows_the_model_config(self, model_dir: Path, tmp_path: Path) -> None:
        assert pooling_mode(model_dir) == "mean"
        (tmp_path / "1_Pooling").mkdir()
        (tmp_path / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
        assert pooling_mode(tmp_path) == "cls"
        (tmp_path / "1_Pooling" / "config.json").write_text(
            '{"pooling_mode_max_tokens": true, "pooling_mode_mean_tokens": false}'
        )
        with pytest.raises(ValueError, match="max_tokens"):
            pooling_mode(tmp_path)

    def test_device_path_equals_the_numpy_path(self, cpu_encoder: TorchEncoder, model_dir: Path) -> None:
        device = cpu_encoder.encode(MIXED, batch_size=3)
        host = TokenEncoder.encode(cpu_encoder, MIXED, batch_size=3)  # the path it replaced: host copy, numpy pooling
        assert device.shape == (len(MIXED), 384) and device.dtype == np.float32
        assert np.allclose(device, host, atol=1e-5)
        assert np.allclose(np.linalg.norm(device, axis=1), 1.0, atol=1e-5)
        onnx = get_encoder(str(model_dir), "fp32", "cpu").encode(MIXED)
        assert (onnx * device).sum(axis=1).min() > 0.9999

    def test_unnormalised_vectors_are_the_plain_mean(self, cpu_encoder: TorchEncoder) -> None:
        raw = cpu_encoder.encode(MIXED[:3], normalize=False)
        assert np.allclose(raw, TokenEncoder.encode(cpu_encoder, MIXED[:3], normalize=False), atol=1e-5)
        assert not np.allclose(np.linalg.norm(raw, axis=1), 1.0)

    def test_maxsim_on_the_device_equals_numpy(self, cpu_encoder: TorchEncoder, model_dir: Path) -> None:
        hidden, _ = cpu_encoder.token_embeddings(["highest mountain above sea level"])
        query = normalise_numpy(hidden[0][1:-1])  # the query's word tokens
        device = cpu_encoder.maxsim_scores(query, MIXED, batch_size=2)
        assert np.allclose(device, TokenEncoder.maxsim_scores(cpu_encoder, query, MIXED, batch_size=2), atol=1e-5)
        onnx = get_encoder(str(model_dir), "fp32", "cpu")
        assert np.allclose(device, onnx.maxsim_scores(query, MIXED, batch_size=2), atol=1e-4)
        scores = maxsim(torch.from_numpy(query), torch.from_numpy(hidden), torch.ones(1, hidden.shape[1]))
        assert scores.shape == (1,)

    def test_host_staging_on_cpu(self) -> None:
        staging = HostStaging((4, 2), "cpu")
        staging.put(0, torch.ones(3, 2))
        staging.put(3, torch.full((1, 2), 2.0))
        assert staging.numpy().tolist() == [[1, 1], [1, 1], [1, 1], [2, 2]]


class TestBatchingAndPrefetch:
    def test_length_bucketing_restores_input_order(self, cpu_encoder: TorchEncoder) -> None:
        together = cpu_encoder.encode(MIXED, batch_size=2)
        alone = np.vstack([cpu_encoder.encode([t]) for t in MIXED])
        assert np.allclose(together, alone, atol=1e-5)
        reordered = cpu_encoder.encode(MIXED[::-1], batch_size=2)
        assert np.allclose(reordered[::-1], together, atol=1e-5)

    def test_prefetch_gives_identical_results(self, model_dir: Path, cpu_encoder: TorchEncoder) -> None:
        inline = TorchEncoder(str(model_dir), "fp32", "cpu", prefetch=0)
        texts = MIXED * 3
        ahead = cpu_encoder.encode(texts, batch_size=4)  # prefetch=2: the batches are made by a thread
        assert np.array_equal(inline.encode(texts, batch_size=4), ahead)  # same batches, same arithmetic
        one_window = TorchEncoder(str(model_dir), "fp32", "cpu", window=1)
        assert np.allclose(one_window.encode(texts, batch_size=4), ahead, atol=1e-5)  # other batches, same vectors

    def test_progress_counts_every_text(self, cpu_encoder: TorchEncoder) -> None:
        seen: list[int] = []
        cpu_encoder.encode(PASSAGES, batch_size=16, progress=seen.append)
        assert sum(seen) == len(PASSAGES) and len(seen) == 4
        assert cpu_encoder.encode([]).shape == (0, 384)

    def test_static_shapes_give_the_same_vectors(self, model_dir: Path, cpu_encoder: TorchEncoder) -> None:
        # The compiled path's batching (widths, filled rows) without torch.compile itself (minutes on this CPU).
        static = TorchEncoder(str(model_dir), "fp32", "cpu", static_shapes=True)
        assert static.runner.widths == (32, 64, 128, 256)
        assert np.allclose(static.encode(MIXED, batch_size=4), cpu_encoder.encode(MIXED, batch_size=4), atol=1e-5)


class TestPrecisionPolicy:
    def test_fp8_runs_fp16_and_names_the_measurement(self) -> None:
        plan = plan_precision("fp8")
        assert (plan.requested, plan.runs, plan.compiled) == ("fp8", "fp16", False)
        assert "slower than fp16" in plan.note and "H200" in plan.note and "0.74x" in plan.note
        assert "BERT-large" in FP8_MEASURED and "all-MiniLM-L6-v2" in FP8_MEASURED
        assert plan_precision("fp16") == plan_precision("fp16", False) and plan_precision("fp16").note is None

    def test_fp8_compiled_is_an_explicit_opt_in(self, monkeypatch: pytest.MonkeyPatch) -> None:
        plan = plan_precision("fp8", compiled=True)
        assert (plan.runs, plan.compiled) == ("fp8", True) and "not measured faster" in plan.note
        with pytest.raises(ValueError, match="Unknown PyTorch precision"):
            plan_precision("int8")

    def test_fp8_encoder_warns_and_describes_what_runs(self, model_dir: Path, caplog: pytest.LogCaptureFixture) -> None:
        # On the CPU fp16 arithmetic is slow but real: the policy is the same as on a GPU.
        with caplog.at_level(logging.WARNING, logger="adaptive_retrieval.components.models.torch_encoder"):
            encoder = TorchEncoder(str(model_dir), "fp8", "cpu", compiled=False)
        assert any("runs as fp16" in r.getMessage() and "H200" in r.getMessage() for r in caplog.records)
        described = encoder.describe()
        assert described == EncoderDescription("torch", "cpu", "fp8", "fp16", "mean", False, encoder.plan.note)
        assert encoder.precision == "fp16" and encoder.model.dtype == torch.float16
        vectors = encoder.encode(MIXED[:3])
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)

    def test_fp8_arithmetic_needs_cuda(self, model_dir: Path) -> None:
        with pytest.raises(RuntimeError, match="CUDA GPU"):
            TorchEncoder(str(model_dir), "fp8", "cpu", compiled=True)

    def test_fp8_needs_ada_or_hopper(self) -> None:
        check_fp8_support((9, 0))
        check_fp8_support((8, 9))
        with pytest.raises(RuntimeError, match="compute capability"):
            check_fp8_support((8, 0))


class TestRegistry:
    def test_gpu_precisions_are_clear_errors_on_cpu(self, model_dir: Path) -> None:
        with pytest.raises(ValueError, match="needs a GPU"):
            get_encoder(str(model_dir), "fp8", "cpu")
        if not HAS_CUDA:
            with pytest.raises(RuntimeError, match="CUDA GPU"):
                TorchEncoder(str(model_dir), "fp16", "cuda")

    def test_backend_choice(self, model_dir: Path) -> None:
        torch_fp32 = get_encoder(str(model_dir), "fp32", "cpu", backend="torch")
        assert isinstance(torch_fp32, TorchEncoder) and torch_fp32.describe().backend == "torch"
        assert get_encoder(str(model_dir), "fp32", "cpu").describe().backend == "onnx"
        with pytest.raises(ValueError, match="ONNX Runtime only"):
            get_encoder(str(model_dir), "int8", "cpu", backend="torch")
        with pytest.raises(ValueError, match="Unknown back end"):
            get_encoder(str(model_dir), "fp32", "cpu", backend="tensorrt")

    def test_weights_of_the_exported_model_are_the_packaged_ones(self, model_dir: Path) -> None:
        assert (weights_dir(model_dir) / "model.safetensors").exists()


@pytest.mark.gpu
@pytest.mark.skipif(
    not HAS_CUDA, reason="needs a CUDA GPU (none here: the device code is tested on torch's CPU device)"
)
class TestOnCuda:
    @pytest.mark.parametrize("precision", ["fp16", "bf16"])
    def test_gpu_precision_stays_close_to_fp32(self, model_dir: Path, precision: str) -> None:
        reference = get_encoder(str(model_dir), "fp32", "cpu").encode(PASSAGES)
        got = get_encoder(str(model_dir), precision, "cuda").encode(PASSAGES)
        assert float(np.min((reference * got).sum(axis=1))) > 0.995

    def test_fp8_runs_fp16_on_cuda(self, model_dir: Path) -> None:
        encoder = get_encoder(str(model_dir), "fp8", "cuda")
        assert encoder.describe().precision == "fp16" and "slower than fp16" in encoder.describe().note

    def test_results_cross_through_a_pinned_buffer(self) -> None:
        staging = HostStaging((2, 3), "cuda")
        assert staging.buffer.is_pinned()
        staging.put(0, torch.ones(2, 3, device="cuda"))
        assert staging.numpy().sum() == 6

    def test_device_path_equals_the_numpy_path_on_cuda(self, model_dir: Path) -> None:
        encoder = TorchEncoder(str(model_dir), "fp32", "cuda")
        assert np.allclose(encoder.encode(MIXED), TokenEncoder.encode(encoder, MIXED), atol=1e-4)
