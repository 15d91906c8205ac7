"""What the PyTorch back end computes on the device after the model: pooling, L2 norm, MaxSim, and the host copy.

Only the small result leaves the device: ``[batch, dim]`` sentence vectors, or one score per document. The host
side is :class:`HostStaging`, one buffer per call that every batch's result is copied into without waiting
(pinned memory and ``non_blocking`` on CUDA), read once at the end. The numpy twins of :func:`pool` and
:func:`normalise` are in :mod:`.token_encoder`; the tests hold the two to the same vectors.

Usage::

    vectors = normalise(pool(hidden, mask, "mean"))        # on the device
    staging = HostStaging((n, dim), device)
    staging.put(0, vectors)                               # copy, no wait
    host = staging.numpy()                                 # one wait, for every batch
"""

from __future__ import annotations

from typing import Any

import numpy as np
from haystack.lazy_imports import LazyImport

from adaptive_retrieval.components.extras import install_hint

with LazyImport(install_hint("gpu")) as torch_import:
    import torch

POOLING_MODES = ("mean", "cls")


def pool(hidden: torch.Tensor, mask: torch.Tensor, mode: str = "mean") -> torch.Tensor:
    """Sentence vectors ``[batch, dim]`` (float32) from token vectors ``[batch, tokens, dim]`` and the mask.

    ``mean``: the average of the real tokens (padding excluded), summed in float32 whatever the model's dtype;
    ``cls``: the first token's vector.
    """
    if mode == "cls":
        return hidden[:, 0].float()
    if mode != "mean":
        msg = f"Unknown pooling '{mode}'. Choose one of {POOLING_MODES}."
        raise ValueError(msg)
    weights = mask.unsqueeze(-1).to(torch.float32)
    return (hidden.float() * weights).sum(dim=1) / weights.sum(dim=1).clamp_min(1e-9)


def normalise(vectors: torch.Tensor) -> torch.Tensor:
    """Rows scaled to unit length (a zero row stays zero), as numpy's ``x / max(|x|, 1e-12)``."""
    return vectors / vectors.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def maxsim(query: torch.Tensor, hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Late-interaction score per document: ``mean_i max_j cos(q_i, d_j)`` over the real tokens of each document.

    :param query: unit-length query token vectors ``[query_tokens, dim]`` (float32).
    :param hidden: document token vectors ``[batch, tokens, dim]`` (any dtype; normalised here in float32).
    :param mask: ``[batch, tokens]``, 1 for real tokens.
    :returns: ``[batch]`` float32.
    """
    tokens = normalise(hidden.float())
    sims = torch.einsum("qd,btd->bqt", query, tokens)
    sims = sims.masked_fill(~mask.bool().unsqueeze(1), float("-inf"))
    return sims.amax(dim=2).mean(dim=1)


class HostStaging:
    """The host buffer one call's results are copied into, batch by batch, without waiting for the device.

    On CUDA the buffer is pinned and each copy is ``non_blocking``: the device queues the copy after the batch's
    kernels and the host goes on preparing the next batch. :meth:`numpy` waits once, for all of them.
    """

    def __init__(self, shape: tuple[int, ...], device: Any) -> None:
        torch_import.check()
        self.device = torch.device(device)
        self._cuda = self.device.type == "cuda"
        self.buffer = torch.empty(shape, dtype=torch.float32, pin_memory=self._cuda)

    def put(self, start: int, values: torch.Tensor) -> None:
        """Copy ``values`` into rows ``start:start+len(values)`` (queued on CUDA; at once on CPU)."""
        self.buffer[start : start + values.shape[0]].copy_(values, non_blocking=self._cuda)

    def numpy(self) -> np.ndarray:
        """The buffer as numpy, after every queued copy has landed (a copy the caller owns)."""
        if self._cuda:
            torch.cuda.current_stream(self.device).synchronize()
        return self.buffer.numpy().copy()
