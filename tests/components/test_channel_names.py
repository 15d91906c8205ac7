"""components/channel_names.py: the one table of channel names, and that routing needs nothing else."""

from __future__ import annotations

import subprocess
import sys

import pytest

from adaptive_retrieval.components.channel_names import (
    CHANNEL_NAMES,
    channel_name,
    check_channel_set,
    default_weight,
    pipeline_channels,
)


def test_default_and_opt_in_channels() -> None:
    assert pipeline_channels() == ["dense", "sparse", "section", "graph_local", "bridge"]
    every = ["graph_ppr", "graph_global", "sparse_prf", "dense_prf"]
    assert pipeline_channels(opt_in=every) == list(CHANNEL_NAMES)
    assert all(CHANNEL_NAMES[name].opt_in for name in every)
    assert default_weight("dense") == 0.0 and default_weight("not_a_channel") == 0.0
    with pytest.raises(ValueError, match="Unknown retrieval channel 'graph_remote'"):
        channel_name("graph_remote")


def test_a_channel_set_needs_the_channels_it_reads() -> None:
    assert check_channel_set(["dense", "sparse", "bridge"]) == ["dense", "sparse", "bridge"]
    with pytest.raises(ValueError, match="'bridge' takes its documents from channel 'sparse'"):
        check_channel_set(["dense", "bridge"])
    with pytest.raises(ValueError, match="distinct"):
        check_channel_set([])


def test_the_retrieval_registry_agrees_with_the_names() -> None:
    from adaptive_retrieval.components.retrieval.channels import CHANNELS

    assert list(CHANNELS) == list(CHANNEL_NAMES)
    for name, spec in CHANNELS.items():
        reads = tuple(s.removesuffix(".hits") for s in spec.inputs.values() if s.endswith(".hits"))
        assert reads == CHANNEL_NAMES[name].reads
        assert (spec.default_weight, spec.opt_in) == (CHANNEL_NAMES[name].default_weight, CHANNEL_NAMES[name].opt_in)


def test_routing_imports_no_retriever() -> None:
    code = (
        "import sys, adaptive_retrieval.components.routing.intent_router; "
        "print(any(m.startswith('adaptive_retrieval.components.retrieval') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
