"""A cross-encoder's PyTorch weights on a device: query–document pairs in, one relevance logit per pair out.

The GPU path of :class:`~adaptive_retrieval.components.ranking.cross_encoder_ranker.CrossEncoderRanker`
(``precision="fp16"``/``"bf16"`` on ``device="cuda"``), on the same engine as the text encoder
(:class:`~adaptive_retrieval.components.models.torch_runner.TorchRunner`): pairs bucketed by token length, the next
batch prepared while the device runs, and only the ``[batch]`` relevance crosses to the host. fp32 on the CPU is
what the tests compare with the ONNX export.

Usage::

    scorer = TorchCrossEncoder(model_dir, tokenizer, "fp16", "cuda")
    relevance = scorer.relevance("What is MMR?", passages, batch_size=64)   # logits, one per passage
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from haystack.lazy_imports import LazyImport

from adaptive_retrieval.components.extras import install_hint
from adaptive_retrieval.components.models.torch_encoder import import_torch, weights_dir
from adaptive_retrieval.components.ranking.base import relevance_logit


class TorchCrossEncoder:
    """Scores pairs with a sequence-classification model's weights; see the module docstring.

    :param model_dir: the model folder (its weights, or those of the folder it was exported from).
    :param tokenizer: a ``tokenizers`` tokenizer with truncation set and padding off (the batches pad themselves).
    :param pad_id: the padding token's id.
    """

    def __init__(
        self,
        model_dir: Path,
        tokenizer: Any,
        pad_id: int,
        precision: str = "fp16",
        device: str = "cuda",
        max_length: int = 512,
        compiled: bool = False,
    ) -> None:
        torch = import_torch()
        from adaptive_retrieval.components.models.torch_runner import (
            TORCH_DTYPES,
            TorchRunner,
            check_device,
            plan_precision,
        )

        plan = plan_precision(precision, compiled)
        if plan.runs != precision:
            msg = f"precision '{precision}' is not offered for a cross-encoder: {plan.note}"
            raise ValueError(msg)
        torch_device = check_device(device, plan)
        with LazyImport(install_hint("gpu")) as transformers_import:
            from transformers import AutoModelForSequenceClassification
        transformers_import.check()
        weights = AutoModelForSequenceClassification.from_pretrained(
            weights_dir(model_dir), dtype=getattr(torch, TORCH_DTYPES[plan.runs]), local_files_only=True
        )
        self.tokenizer = tokenizer
        self.pad_id = pad_id
        self.runner = TorchRunner(weights, plan, torch_device, max_length=max_length)

    def relevance(self, query: str, texts: Sequence[str], batch_size: int = 16) -> np.ndarray:
        """The relevance logit of each ``(query, text)`` pair, in the order of ``texts``."""
        if not texts:
            return np.zeros(0, dtype=np.float32)

        def head(output: Any, mask: Any) -> Any:
            return relevance_logit(output.logits.float())

        pairs = [(query, text) for text in texts]
        return self.runner.run(pairs, self.tokenizer.encode_batch, self.pad_id, batch_size, head)
