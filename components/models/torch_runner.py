"""One PyTorch model on one device, fed at the device's pace: the engine under the encoder and the rerankers.

What it does for every call (:meth:`TorchRunner.run`):

- batches bucketed by token length (:func:`.batching.token_length_batches`), results put back in input order;
- the next batch tokenised, padded and (on CUDA) pinned by a thread while the device runs the current one
  (:func:`.batching.prefetched`);
- a *head* that reduces the model's output on the device (pooling and L2 norm for sentence vectors, MaxSim for
  late interaction, the relevance logit for a cross-encoder), so that only ``[batch, …]`` results cross to the
  host, into one pinned buffer without waiting (:class:`.device_pooling.HostStaging`).

Precision is a :class:`PrecisionPlan` (:func:`plan_precision`). FP8 pays only where the benchmark shows it: torchao's
dynamic FP8 in eager mode was measured *slower* than fp16 (:data:`FP8_MEASURED`), so ``fp8`` runs fp16 and says so,
unless the caller opts in to the compiled, static-shape path (``compiled=True`` or ``$ADAPTIVE_FP8_COMPILED``),
which ``scripts/lab/bench_gpu.py`` measures against compiled fp16 on the same GPU in the same run.
"""

from __future__ import annotations

import inspect
import logging
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from haystack.lazy_imports import LazyImport

from adaptive_retrieval.components.extras import install_hint
from adaptive_retrieval.components.models.batching import DEFAULT_WINDOW, TokenBatch, prefetched, token_length_batches
from adaptive_retrieval.components.models.device_pooling import HostStaging

with LazyImport(install_hint("gpu")) as torch_import:
    import torch

logger = logging.getLogger(__name__)

#: The torch dtype (its name in ``torch``) each precision loads the weights in; fp8 quantises from bf16.
TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp8": "bfloat16"}
#: FP8 tensor cores: Ada (8.9) and Hopper (9.0) or newer.
FP8_MIN_CAPABILITY = (8, 9)
#: The measurement behind the fp8 policy (issue 43; scripts/lab/README.md, bench_gpu.py).
FP8_MEASURED = (
    "torchao's dynamic FP8 (eager) was measured slower than fp16 on one H200 (torch 2.11, torchao 0.18): 0.74x fp16 "
    "on all-MiniLM-L6-v2 (6 layers x 384, 22M parameters) and 0.46-0.75x on a BERT-large shape (24 layers x 1024, "
    "335M), with a single query 3.6x slower and 6% of top-10 neighbours lost"
)
#: Token widths of the static-shape (compiled) path: each batch is padded to the smallest that holds it.
STATIC_WIDTHS = (32, 64, 128, 256, 512)


@dataclass(frozen=True)
class PrecisionPlan:
    """What a requested precision runs as: ``runs`` is the arithmetic used, ``compiled`` the static-shape
    ``torch.compile`` path, ``note`` says why ``runs`` differs from ``requested`` (or what is unmeasured)."""

    requested: str
    runs: str
    compiled: bool = False
    note: str | None = None


def plan_precision(precision: str, compiled: bool = False) -> PrecisionPlan:
    """The plan for ``precision``: ``fp8`` runs as fp16 (with the measurement as its note) unless ``compiled``.

    :raises ValueError: for a precision PyTorch does not run here.
    """
    if precision not in TORCH_DTYPES:
        msg = f"Unknown PyTorch precision '{precision}'. Choose one of {sorted(TORCH_DTYPES)}."
        raise ValueError(msg)
    if precision == "fp8" and not compiled:
        note = (
            f"precision 'fp8' runs as fp16: {FP8_MEASURED}. The compiled static-shape FP8 path is an explicit opt-in "
            "(compiled=True or ADAPTIVE_FP8_COMPILED=1) until scripts/lab/bench_gpu.py shows it >= 1.3x compiled fp16 "
            "on the GPU it runs on."
        )
        return PrecisionPlan("fp8", "fp16", False, note)
    if precision == "fp8":
        note = (
            "precision 'fp8' on the compiled static-shape path (opt-in): not measured faster than fp16 yet "
            f"({FP8_MEASURED} in eager mode); scripts/lab/bench_gpu.py --compiled compares the two on this GPU."
        )
        return PrecisionPlan("fp8", "fp8", True, note)
    return PrecisionPlan(precision, precision, compiled)


def check_fp8_support(capability: tuple[int, int]) -> None:
    """Raise a clear error when the GPU cannot run FP8 matrix multiplies."""
    if capability < FP8_MIN_CAPABILITY:
        msg = (
            f"precision 'fp8' needs a GPU with compute capability >= {FP8_MIN_CAPABILITY} (Ada or Hopper); "
            f"this one has {capability}. Use 'fp16' or 'bf16'."
        )
        raise RuntimeError(msg)


def check_device(device: str, plan: PrecisionPlan) -> torch.device:
    """The torch device for ``device``, with a clear error when it cannot run ``plan``.

    The CPU runs fp32, fp16 and bf16 (slowly: the tests' and the CPU benchmark's device; the package's CPU path is
    ONNX Runtime); FP8 arithmetic needs CUDA.
    """
    torch_import.check()
    if device not in ("cpu", "cuda"):
        msg = f"Unknown device '{device}'. Choose 'cpu' or 'cuda'."
        raise ValueError(msg)
    if device == "cuda" and not torch.cuda.is_available():
        msg = f"precision '{plan.requested}' runs on a CUDA GPU and none is available here; use fp32 or int8 on CPU."
        raise RuntimeError(msg)
    if device == "cpu" and plan.runs == "fp8":
        msg = "FP8 arithmetic runs on a CUDA GPU (Ada or Hopper); on CPU choose 'fp32'."
        raise RuntimeError(msg)
    return torch.device(device)


class TorchRunner:
    """Runs ``model`` (loaded by the caller in the plan's dtype) on ``device``; see the module docstring.

    :param model: a Hugging Face model (``AutoModel``, ``AutoModelForSequenceClassification``), already in its dtype.
    :param prefetch: batches prepared ahead by a thread (0: none, everything in the caller's thread).
    :param window: batches tokenised together and sorted by token count.
    :param static_shapes: pad batches to :data:`STATIC_WIDTHS` and fill them to the batch size (``None``: when
        compiled).
    """

    def __init__(
        self,
        model: Any,
        plan: PrecisionPlan,
        device: torch.device,
        prefetch: int = 2,
        window: int = DEFAULT_WINDOW,
        max_length: int = 512,
        static_shapes: bool | None = None,
    ) -> None:
        self.plan = plan
        self.device = device
        self.prefetch = prefetch
        self.window = window
        model = model.to(device).eval()
        if plan.runs == "fp8":
            check_fp8_support(torch.cuda.get_device_capability(device))
            from haystack.lazy_imports import LazyImport

            with LazyImport(install_hint("gpu")) as torchao_import:
                from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, quantize_
            torchao_import.check()
            quantize_(model, Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()))
        self.model = model
        self.accepts_token_types = "token_type_ids" in inspect.signature(model.forward).parameters
        # Static shapes: every batch padded to one of a few widths and filled to the batch size, so the compiled
        # graph is traced once per width instead of once per (rows, tokens).
        self.static_shapes = plan.compiled if static_shapes is None else static_shapes
        self.widths = (*(w for w in STATIC_WIDTHS if w < max_length), max_length) if self.static_shapes else None
        self._forward = torch.compile(model, dynamic=False) if plan.compiled else model
        self.lock = threading.Lock()

    def _host_inputs(self, batch: TokenBatch) -> tuple[TokenBatch, dict[str, torch.Tensor]]:
        """The batch's arrays as tensors on the host, pinned on CUDA (runs in the prefetch thread)."""
        arrays = {"input_ids": batch.input_ids, "attention_mask": batch.attention_mask}
        if self.accepts_token_types:
            arrays["token_type_ids"] = batch.token_type_ids
        tensors = {name: torch.from_numpy(a) for name, a in arrays.items()}
        if self.device.type == "cuda":
            tensors = {name: t.pin_memory() for name, t in tensors.items()}
        return batch, tensors

    def batches(
        self, items: Sequence[Any], encode: Callable[[list[Any]], Sequence[Any]], batch_size: int, pad_id: int
    ) -> Iterator[tuple[TokenBatch, dict[str, torch.Tensor]]]:
        """Host-side batches of ``items``, prepared ahead by a thread when there is more than one."""
        planned = token_length_batches(
            items, encode, batch_size, pad_id, self.window, widths=self.widths, fill_rows=self.static_shapes
        )
        prepared = map(self._host_inputs, planned)
        if self.prefetch and len(items) > batch_size:
            return prefetched(prepared, self.prefetch)
        return prepared  # one batch (a query): a thread would only add its start-up to the latency

    def forward(self, host: dict[str, torch.Tensor]) -> tuple[Any, torch.Tensor]:
        """The model's output for one batch and its attention mask, both on the device."""
        inputs = {name: t.to(self.device, non_blocking=True) for name, t in host.items()}
        return self._forward(**inputs), inputs["attention_mask"]

    def run(
        self,
        items: Sequence[Any],
        encode: Callable[[list[Any]], Sequence[Any]],
        pad_id: int,
        batch_size: int,
        head: Callable[[Any, torch.Tensor], torch.Tensor],
        tail: tuple[int, ...] = (),
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """``head(output, mask)`` of every item, ``[len(items), *tail]`` float32 on the host, in input order.

        ``head`` reduces one batch's model output on the device to ``[batch, *tail]``; only that crosses.
        """
        staging = HostStaging((len(items), *tail), self.device)
        rows: list[np.ndarray] = []
        done = 0
        for batch, host in self.batches(items, encode, batch_size, pad_id):
            with self.lock, torch.inference_mode():
                output, mask = self.forward(host)
                staging.put(done, head(output, mask)[: batch.real])
            rows.append(batch.rows)
            done += batch.real
            if progress is not None:
                progress(batch.real)
        out = np.empty((len(items), *tail), dtype=np.float32)
        if rows:
            out[np.concatenate(rows)] = staging.numpy()
        return out
