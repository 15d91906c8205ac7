"""ONNX Runtime back end of the text encoders: runs an exported model, no torch or transformers import.

Query-time processes stay small and start fast. Obtain instances through
:func:`adaptive_retrieval.components.models.encoder.get_encoder` so that embedders, router and rankers share one
session.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.models.ort_runtime import onnxruntime_quiet
from adaptive_retrieval.components.models.paths import build_hint, model_file, resolve_model_dir, weights_file
from adaptive_retrieval.components.models.token_encoder import (
    ONNX_PRECISIONS,
    EncoderDescription,
    TokenEncoder,
    normalise_numpy,
)

logger = logging.getLogger(__name__)


#: The pooled sentence output of a sentence-transformers export (optimum's name for it).
POOLED_OUTPUT = "sentence_embedding"
CUDA_PROVIDER = "CUDAExecutionProvider"
CPU_PROVIDER = "CPUExecutionProvider"


def providers_for(device: str, available: Sequence[str]) -> list[str]:
    """ONNX Runtime execution providers for ``device``, given the ones this ONNX Runtime build has.

    ``cuda`` puts the CUDA provider first and keeps the CPU one for the few operators CUDA lacks.

    :raises RuntimeError: for ``cuda`` without the CUDA provider (onnxruntime-gpu missing, or no CUDA device).
    :raises ValueError: for an unknown device.
    """
    if device == "cpu":
        return [CPU_PROVIDER]
    if device == "cuda":
        if CUDA_PROVIDER not in available:
            msg = (
                "device='cuda' needs onnxruntime-gpu and a CUDA device "
                f"(available providers: {list(available)}). Install the 'gpu' extra or use device='cpu'."
            )
            raise RuntimeError(msg)
        return [CUDA_PROVIDER, CPU_PROVIDER]
    msg = f"Unknown device '{device}'. Choose 'cpu' or 'cuda'."
    raise ValueError(msg)


def _providers(device: str) -> list[str]:
    return providers_for(device, onnxruntime_quiet().get_available_providers())


def open_session(path: Path, options: Any, device: str) -> Any:
    """An ONNX Runtime session of the graph at ``path`` on ``device`` (the encoders' and the rerankers' one way in).

    :raises FileNotFoundError: when the graph keeps its weights in a file beside it that is missing (a graph copied
        alone), naming that file rather than ONNX Runtime's "External data path validation failed".
    """
    ort = onnxruntime_quiet()
    try:
        return ort.InferenceSession(str(path), sess_options=options, providers=_providers(device))
    except Exception as err:
        weights = weights_file(path)
        if "external data" in str(err).lower() and not weights.is_file():
            msg = (
                f"{path} keeps its weights in a file beside it ({weights.name}), which is missing: copy the "
                f"whole model folder, or build it again. {build_hint()}"
            )
            raise FileNotFoundError(msg) from err
        raise


class OnnxEncoder(TokenEncoder):
    """Runs one exported ONNX model (``model.onnx``, ``model_int8.onnx``, or ``model_fp16.onnx`` on CUDA) with its
    ``tokenizer.json``.

    On CUDA the session runs through IO binding: the inputs are copied to the device once, the output stays there
    until it is read, and when the graph has a pooled output (``sentence_embedding``, the sentence-transformers
    pooling that optimum exports with the model) :meth:`encode` reads only that ``[batch, dim]``. On CPU the
    defaults keep the plain ``run`` and pooling in numpy (the path every measured figure was taken on).

    :param io_binding: run through IO binding (``None``: on CUDA).
    :param pooled_output: :meth:`encode` reads the graph's pooled output when it has one (``None``: on CUDA).
    """

    def __init__(
        self,
        model: str,
        precision: str = "int8",
        device: str = "cpu",
        max_length: int | None = None,
        io_binding: bool | None = None,
        pooled_output: bool | None = None,
    ):
        ort = onnxruntime_quiet()

        if precision not in (*ONNX_PRECISIONS, "fp16"):
            hint = "; bf16/fp8 run on a GPU through get_encoder(..., device='cuda')"
            msg = f"Unknown ONNX precision '{precision}'. Choose one of {[*ONNX_PRECISIONS, 'fp16']}{hint}."
            raise ValueError(msg)
        model_dir = resolve_model_dir(model)
        path = model_file(model_dir, precision)
        super().__init__(model_dir, precision, max_length)
        self.device = device
        options = ort.SessionOptions()
        threads = settings.whole("ADAPTIVE_ORT_THREADS")
        if threads:
            options.intra_op_num_threads = threads
        # ORT's intra-op threads busy-wait after every run by default. A query runs the model once on a few
        # tokens, then numpy and the store work: the spinning threads only take CPU from them and from
        # concurrent queries (CPU per query -35 % under load). ADAPTIVE_ORT_SPIN=1 restores ORT's default.
        if not settings.flag("ADAPTIVE_ORT_SPIN"):
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        self.session = open_session(path, options, device)
        self._input_names = {i.name for i in self.session.get_inputs()}
        outputs = {o.name: o for o in self.session.get_outputs()}
        # optimum names the token output after the sentence-transformers module or the HF model.
        token_output = next((n for n in ("token_embeddings", "last_hidden_state") if n in outputs), None)
        self._token_output = token_output or self.session.get_outputs()[0].name
        self.dimension = int(outputs[self._token_output].shape[-1])
        on_cuda = device == "cuda"
        self.io_binding = on_cuda if io_binding is None else io_binding
        wants_pooled = on_cuda if pooled_output is None else pooled_output
        self.pooled_output = POOLED_OUTPUT if wants_pooled and POOLED_OUTPUT in outputs else None
        logger.info("Loaded %s (%s, %s, dim=%d)", path, precision, device, self.dimension)

    def _feeds(self, texts: Sequence[str]) -> tuple[dict[str, np.ndarray], np.ndarray]:
        ids, mask = self.batch_ids(texts)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        return feeds, mask

    def _run(self, output: str, feeds: dict[str, np.ndarray]) -> np.ndarray:
        """One output of the graph for ``feeds``, as float32 on the host."""
        # InferenceSession.run is thread-safe, but serialising keeps CPU threads from oversubscribing.
        with self._lock:
            if not self.io_binding:
                result = self.session.run([output], feeds)[0]
            else:
                binding = self.session.io_binding()
                for name, array in feeds.items():
                    binding.bind_cpu_input(name, array)
                binding.bind_output(output, self.device)  # allocated by ORT on the device, read once below
                self.session.run_with_iobinding(binding)
                result = binding.copy_outputs_to_cpu()[0]
        return np.asarray(result).astype(np.float32, copy=False)

    def token_embeddings(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Contextual token embeddings ``[batch, tokens, dim]`` and the attention mask ``[batch, tokens]``."""
        feeds, mask = self._feeds(texts)
        return self._run(self._token_output, feeds), mask

    def encode(
        self,
        texts: Sequence[str],
        batch_size: int = 32,
        normalize: bool = True,
        progress: Callable[[int], None] | None = None,
    ) -> np.ndarray:
        """Sentence embeddings ``[len(texts), dim]`` in input order (see :meth:`TokenEncoder.encode`); with a pooled
        output only ``[batch, dim]`` leaves the session."""
        if self.pooled_output is None or not normalize:
            return super().encode(texts, batch_size, normalize, progress)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        order = np.argsort([len(t) for t in texts], kind="stable")
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            idx = order[start : start + batch_size]
            feeds, _ = self._feeds([texts[i] for i in idx])
            out[idx] = self._run(self.pooled_output, feeds)
            if progress is not None:
                progress(len(idx))
        return normalise_numpy(out)

    def describe(self) -> EncoderDescription:
        """Back end, device, precision, pooling; ``compiled`` is false, ``note`` names the IO binding."""
        note = f"IO binding, reads {self.pooled_output or self._token_output}" if self.io_binding else None
        return EncoderDescription("onnx", self.device, self.precision, self.precision, self.pooling, False, note)
