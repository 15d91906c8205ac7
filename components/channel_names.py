"""The retrieval channels by name: the one place that names each channel, with its default weight, whether a
pipeline has it by default, and which other channels' documents it reads. Pure data, no retriever imported.

The router, the profiles and the joiner need only this; the component class of each channel and how it is wired
(its query inputs, stores and init parameters) stay with retrieval, in
:mod:`adaptive_retrieval.components.retrieval.channels`, whose ``CHANNELS`` follows this table's order and which
checks at import that every channel named here has one component there and no component lacks a name here.

Usage::

    from adaptive_retrieval.components.channel_names import CHANNEL_NAMES, pipeline_channels

    pipeline_channels()                      # ['dense', 'sparse', 'section', 'graph_local', 'bridge']
    pipeline_channels(opt_in=["graph_ppr"])  # ... + 'graph_ppr', in registry order
    CHANNEL_NAMES["bridge"].reads            # ('dense', 'sparse')
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType


@dataclass(frozen=True)
class ChannelName:
    """One retrieval channel as the router and the profiles see it.

    :param name: its name: its component's ``channel`` attribute and name in the pipeline, its joiner socket and
        its key in the router's weights and the profiles.
    :param default_weight: the weight of this channel in a profile that does not name it.
    :param opt_in: ``True``: a pipeline has the channel only when asked (``build_query_pipeline(opt_in=...)``).
    :param reads: the channels whose documents it takes (they must be in the pipeline too).
    """

    name: str
    default_weight: float = 0.0
    opt_in: bool = False
    reads: tuple[str, ...] = ()


_NAMES = (
    ChannelName("dense"),
    ChannelName("sparse"),
    ChannelName("section"),
    # graph_local seeds entities from the nearest chunks: the dense channel's list, not a second vector search.
    ChannelName("graph_local", reads=("dense",)),
    # Opt-in: without it the pipeline scored the same full@10 on every development set while it searched on most
    # queries (routing/data/profiles.json, channel_shares.graph_global; scripts/lab/README.md, "graph_global").
    ChannelName("graph_global", opt_in=True),
    # Opt-in: through the whole pipeline it lowered full@10 on MuSiQue (scripts/lab/README.md, "with the walk").
    ChannelName("graph_ppr", opt_in=True, reads=("dense", "sparse")),
    # bridge expands the dense and sparse channels' top hits with the names they write.
    ChannelName("bridge", reads=("dense", "sparse")),
    # Pseudo-relevance feedback from the dense and sparse channels' top hits: BM25 with the query widened by their
    # words (RM3), and the dense search with the query vector moved toward theirs (Rocchio). Opt-in until a
    # leave-one-set-out fit over every development set gives them weight (scripts/lab/calibrate_profiles.py --all-dev).
    ChannelName("sparse_prf", opt_in=True, reads=("dense", "sparse")),
    ChannelName("dense_prf", opt_in=True, reads=("dense", "sparse")),
)

#: Every channel by name, in the order pipelines list them.
CHANNEL_NAMES: Mapping[str, ChannelName] = MappingProxyType({c.name: c for c in _NAMES})
if len(CHANNEL_NAMES) != len(_NAMES) or not all(CHANNEL_NAMES):
    _msg = f"Channel names must be distinct and non-empty: {[c.name for c in _NAMES]}"
    raise RuntimeError(_msg)


def channel_name(name: str) -> ChannelName:
    """The channel ``name``.

    :raises ValueError: naming the registered channels when ``name`` is not one.
    """
    if name not in CHANNEL_NAMES:
        msg = f"Unknown retrieval channel '{name}'; the registered channels are {list(CHANNEL_NAMES)}"
        raise ValueError(msg)
    return CHANNEL_NAMES[name]


def default_weight(name: str) -> float:
    """The weight of channel ``name`` in a profile that does not name it (0 for a name that is not a channel)."""
    return CHANNEL_NAMES[name].default_weight if name in CHANNEL_NAMES else 0.0


def pipeline_channels(opt_in: Iterable[str] = ()) -> list[str]:
    """The channels of a query pipeline, in registry order: every channel that is not opt-in, plus ``opt_in``.

    :raises ValueError: for an unknown name in ``opt_in``.
    """
    chosen = {channel_name(name).name for name in opt_in}
    return [name for name, c in CHANNEL_NAMES.items() if not c.opt_in or name in chosen]


def check_channel_set(channels: Iterable[str]) -> list[str]:
    """``channels`` as a list, checked: registered, distinct, non-empty, and every channel whose documents one of
    them reads is there too.

    :raises ValueError: naming what is wrong.
    """
    names = list(channels)
    if not names or len(set(names)) != len(names):
        msg = f"channels must be distinct, non-empty names; got {names}"
        raise ValueError(msg)
    for name in names:
        for needed in channel_name(name).reads:
            if needed not in names:
                msg = f"Channel '{name}' takes its documents from channel '{needed}', which is not among {names}"
                raise ValueError(msg)
    return names
