"""The gate's retry policy over the router's strategies: whether a retry would fetch anything new.

Kept apart from the gate's scoring model (``quality_gate.py``): the gate asks it before it spends a retry.
"""

from __future__ import annotations

from collections.abc import Mapping

from adaptive_retrieval.components.strategy import Strategy

#: Relative tolerance when comparing two strategies' weights (the router rounds them to 4 decimals).
_WEIGHT_TOLERANCE = 1e-3


def same_candidates(
    current: Strategy | None,
    following: Strategy | None,
    sizes: Mapping[str, int] | None,
    channels: set[str] | None = None,
) -> bool:
    """Whether a retry with strategy ``following`` would fetch the same candidates as ``current`` did.

    Same when the same channels run with the same weights, MMR λ and rerank flag, and every running channel either
    asks for the same depth (``fetch_k``) or already returned fewer documents than it was asked for (it had no
    more to give: a deeper search finds nothing new). ``top_k`` is left out: a longer cut of the same fused list
    is no new evidence. Without both strategies nothing is known, so the answer is ``False`` (retry).
    ``channels``: the channels the pipeline has (the joiner's); weights the router gives to others are ignored.
    """
    if current is None or following is None:
        return False
    if current.mmr_lambda != following.mmr_lambda or current.rerank != following.rerank:
        return False
    now, then = dict(current.weights), dict(following.weights)
    if channels is not None:
        now = {c: w for c, w in now.items() if c in channels}
        then = {c: w for c, w in then.items() if c in channels}
    for channel in set(now) | set(then):
        a, b = float(now.get(channel, 0.0)), float(then.get(channel, 0.0))
        if (a > 0) != (b > 0) or abs(a - b) > _WEIGHT_TOLERANCE:
            return False
    if current.fetch_k == following.fetch_k:
        return True
    sizes = sizes or {}
    running = [c for c, w in now.items() if float(w) > 0]
    # A channel absent from sizes did not deliver (failed or not run): nothing says it is exhausted.
    return all(c in sizes and sizes[c] < current.fetch_k for c in running)
