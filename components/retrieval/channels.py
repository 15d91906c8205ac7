"""The retrieval channels' components, each registered once: its component (whose ``channel`` class attribute is the
channel's name), the query inputs it takes and the stores it needs.

The channels' names, their order, default weights and which are opt-in live apart, in the pure
:mod:`adaptive_retrieval.components.channel_names` (what the router and the profiles import), the one registry that
names each channel; this module adds each named channel's class and wiring, takes the order from there, and checks
at import that every named channel has one component and every component a name. The query
pipeline's wiring (``build_query_pipeline`` adds and connects every channel it lists), the joiner's channel
sockets and the tests that check every channel against :class:`RetrievalChannel` are derived from :data:`CHANNELS`.

**What a channel component looks like** (:class:`RetrievalChannel`, checked by :func:`check_channel_sockets`):

- a Haystack ``@component`` whose class attribute ``channel`` is its registered name;
- ``run`` takes ``weights: WeightsInput = None`` (the router's read-only channel weights, or a plain dict) and
  ``top_k: int | None = None`` (the router's ``fetch_k``), plus the sockets its :class:`ChannelSpec` lists in
  ``inputs``; a ``query`` or ``text`` socket gets the query text from the pipeline's entry;
- it returns ``documents: list[Document] | None``: ``[]`` when the router gave it no weight
  (:func:`~adaptive_retrieval.components.retrieval.channel.channel_enabled`) and ``None`` when its store failed,
  which the joiner skips, with ``failure: str | None`` saying why
  (:func:`~adaptive_retrieval.components.retrieval.channel.search_or_failure`), which the joiner reports. The
  documents travel without their vectors (MMR reads them from the store by id);
- a channel whose list other channels read (``reads`` in ``channel_names``) also returns that list as ``hits:
  RankedHits`` (:mod:`~adaptive_retrieval.components.retrieval.ranked_hits`: ids and texts, one immutable value
  that Haystack's copy of every input does not walk document by document), and the reading channel's socket for
  it takes ``HitsInput`` (the hits, or documents from a Python caller).

Usage::

    from adaptive_retrieval.components.retrieval.channels import CHANNELS, pipeline_channels

    pipeline_channels()                     # ['dense', 'sparse', 'section', 'graph_local', 'bridge']
    pipeline_channels(opt_in=["graph_ppr"])  # ... + 'graph_ppr'
    CHANNELS["dense"].inputs                 # {'query_embedding': 'query_embedding'}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Protocol, runtime_checkable

from haystack import Document

from adaptive_retrieval.components.channel_names import (
    CHANNEL_NAMES,
    channel_name,
)
from adaptive_retrieval.components.channel_names import check_channel_set as check_channel_set
from adaptive_retrieval.components.channel_names import pipeline_channels as pipeline_channels
from adaptive_retrieval.components.retrieval.bridge_retriever import BridgeRetriever
from adaptive_retrieval.components.retrieval.dense_feedback_retriever import DenseFeedbackRetriever
from adaptive_retrieval.components.retrieval.graph_global_retriever import GraphGlobalRetriever
from adaptive_retrieval.components.retrieval.graph_local_retriever import GraphLocalRetriever
from adaptive_retrieval.components.retrieval.graph_ppr_retriever import GraphPPRRetriever
from adaptive_retrieval.components.retrieval.ranked_hits import HitsInput, RankedHits
from adaptive_retrieval.components.retrieval.section_tree_retriever import SectionTreeRetriever
from adaptive_retrieval.components.retrieval.sparse_feedback_retriever import SparseFeedbackRetriever
from adaptive_retrieval.components.retrieval.vector_retrievers import DenseRetriever, SparseRetriever
from adaptive_retrieval.components.shared_documents import RankedDocuments
from adaptive_retrieval.components.strategy import WeightsInput

# The query-side sources a channel may take (the values of ChannelSpec.inputs), besides another channel's
# hits ("<channel>.hits"). The query pipeline maps each to the output that provides it.
#: The dense query vector (the query embedder's ``embedding``).
QUERY_EMBEDDING = "query_embedding"
#: The sparse (BM25) query vector (the sparse embedder's ``sparse_embedding``).
SPARSE_EMBEDDING = "sparse_embedding"
#: The section or table reference the router found in the query (``router.structural``).
STRUCTURAL = "structural"
SOURCES: tuple[str, ...] = (QUERY_EMBEDDING, SPARSE_EMBEDDING, STRUCTURAL)
#: Inputs every channel takes from the router (not listed in ``inputs``): its weights and the depth to fetch.
ROUTER_INPUTS = {"weights": "weights", "top_k": "fetch_k"}
#: Inputs the pipeline's entry feeds with the query text (``connect_query_entry``).
TEXT_INPUTS = ("query", "text")

#: The dense and sparse channels search chunks only: the section tree's summary nodes share the collection.
CHUNKS_ONLY = {"field": "meta.level", "operator": "==", "value": 0}


#: The output a channel that other channels read sends its list on.
HITS = "hits"


def hits_of(channel: str) -> str:
    """The source name of another channel's ranked list (its ``hits`` output), for :attr:`ChannelSpec.inputs`."""
    return f"{channel}.{HITS}"


@runtime_checkable
class RetrievalChannel(Protocol):
    """What a channel component provides (see the module docstring for the sockets' contract)."""

    channel: ClassVar[str]

    def run(
        self, *, weights: WeightsInput = None, top_k: int | None = None, **inputs: Any
    ) -> dict[str, list[Document] | None]:
        """Documents for the query; ``[]`` at zero weight, ``None`` when the store failed."""
        ...


@dataclass(frozen=True)
class ChannelSpec:
    """One retrieval channel.

    :param component: the component class (follows :class:`RetrievalChannel`); its class attribute ``channel`` is
        the channel's :attr:`name`.
    :param inputs: ``{run socket: source}``, the source one of :data:`SOURCES` or :func:`hits_of` another
        channel (which must then be in the pipeline too).
    :param stores: the stores the component takes at init, by parameter name (``document_store``,
        ``graph_store``).
    :param init_parameters: further init parameters the query pipeline gives it.

    Its default weight and whether it is opt-in come from its name's entry in
    :data:`~adaptive_retrieval.components.channel_names.CHANNEL_NAMES`.
    """

    component: type
    inputs: Mapping[str, str]
    stores: tuple[str, ...] = ("document_store",)
    init_parameters: Mapping[str, Any] = field(default_factory=dict)

    @property
    def default_weight(self) -> float:
        """The weight of this channel in a profile that does not name it."""
        return CHANNEL_NAMES[self.name].default_weight

    @property
    def opt_in(self) -> bool:
        """``True``: a pipeline has the channel only when asked (``build_query_pipeline(opt_in=(name,))``)."""
        return CHANNEL_NAMES[self.name].opt_in

    @property
    def name(self) -> str:
        """The channel's name (its component's ``channel``): its component's name in the pipeline, its joiner
        socket and its key in the router's weights and the profiles."""
        return self.component.channel

    def build(self, stores: Mapping[str, Any], share_documents: bool = False) -> Any:
        """A new instance of the channel's component over ``stores`` (``{parameter name: store}``); with
        ``share_documents`` it hands its documents on as one shared value (the query pipeline's channels)."""
        parameters = {**self.init_parameters, "share_documents": share_documents}
        return self.component(**{s: stores[s] for s in self.stores}, **parameters)


#: The feedback channels' inputs: both query vectors (to search the first hits themselves when the dense or BM25
#: channel has no weight) and those channels' ranked hits.
_FEEDBACK_INPUTS = MappingProxyType(
    {
        "query_embedding": QUERY_EMBEDDING,
        "query_sparse_embedding": SPARSE_EMBEDDING,
        "nearest": hits_of("dense"),
        "lexical": hits_of("sparse"),
    }
)

_SPECS = (
    ChannelSpec(
        DenseRetriever,
        inputs={"query_embedding": QUERY_EMBEDDING},
        init_parameters=MappingProxyType({"filters": CHUNKS_ONLY}),
    ),
    ChannelSpec(
        SparseRetriever,
        inputs={"query_sparse_embedding": SPARSE_EMBEDDING},
        init_parameters=MappingProxyType({"filters": CHUNKS_ONLY}),
    ),
    ChannelSpec(SectionTreeRetriever, inputs={"query_embedding": QUERY_EMBEDDING, "structural": STRUCTURAL}),
    ChannelSpec(
        GraphLocalRetriever,
        inputs={"query_embedding": QUERY_EMBEDDING, "nearest": hits_of("dense")},
        stores=("graph_store", "document_store"),
    ),
    ChannelSpec(
        GraphGlobalRetriever,
        inputs={"query_embedding": QUERY_EMBEDDING},
        stores=("graph_store", "document_store"),
    ),
    ChannelSpec(
        GraphPPRRetriever,
        # graph_ppr restarts its walk at the dense and sparse channels' top hits (and the query's entities).
        inputs={
            "query_embedding": QUERY_EMBEDDING,
            "nearest": hits_of("dense"),
            "lexical": hits_of("sparse"),
        },
        stores=("graph_store", "document_store"),
    ),
    ChannelSpec(
        BridgeRetriever,
        inputs={"nearest": hits_of("dense"), "lexical": hits_of("sparse")},
        init_parameters=MappingProxyType({"filters": CHUNKS_ONLY}),
    ),
    ChannelSpec(
        SparseFeedbackRetriever, inputs=_FEEDBACK_INPUTS, init_parameters=MappingProxyType({"filters": CHUNKS_ONLY})
    ),
    ChannelSpec(
        DenseFeedbackRetriever, inputs=_FEEDBACK_INPUTS, init_parameters=MappingProxyType({"filters": CHUNKS_ONLY})
    ),
)


def _check_registry() -> None:
    """Every channel that ``channel_names`` names has exactly one component here and no component names another
    channel, and each component reads the documents of exactly the channels its name says it reads."""
    names = [spec.name for spec in _SPECS]
    if sorted(names) != sorted(CHANNEL_NAMES):
        msg = f"Channel components {names} do not match the channel names {list(CHANNEL_NAMES)} (channel_names.py)"
        raise RuntimeError(msg)
    for spec in _SPECS:
        reads = tuple(s.removesuffix(f".{HITS}") for s in spec.inputs.values() if s.endswith(f".{HITS}"))
        if reads != CHANNEL_NAMES[spec.name].reads:
            said = CHANNEL_NAMES[spec.name].reads
            msg = f"Channel '{spec.name}' takes documents of {reads}; channel_names.py says it reads {said}"
            raise RuntimeError(msg)


_check_registry()

#: Every registered channel by name, in the order of :data:`~adaptive_retrieval.components.channel_names.CHANNEL_NAMES`
#: (the one registry of the channels' names and order: ``_SPECS`` only adds each one's component and wiring).
CHANNELS: Mapping[str, ChannelSpec] = MappingProxyType(
    {name: next(spec for spec in _SPECS if spec.name == name) for name in CHANNEL_NAMES}
)


def channel_spec(name: str) -> ChannelSpec:
    """The registered channel ``name``.

    :raises ValueError: naming the registered channels when ``name`` is not one.
    """
    return CHANNELS[channel_name(name).name]


def check_channel_sockets(
    name: str, instance: Any, inputs: Mapping[str, Mapping[str, Any]], outputs: Mapping[str, Any]
) -> None:
    """Check a channel component against :class:`RetrievalChannel` and its registration.

    ``inputs`` and ``outputs`` are the component's sockets as ``Pipeline.inputs()`` / ``Pipeline.outputs()``
    describe them (``{socket: {"type": ..., "is_mandatory": ...}}``).

    :raises TypeError: naming the socket or attribute that does not follow the contract.
    """
    spec = channel_spec(name)
    problems = []
    if not isinstance(instance, spec.component):
        problems.append(f"is a {type(instance).__name__}, registered as {spec.component.__name__}")
    if getattr(instance, "channel", None) != name:
        problems.append(f"has channel = {getattr(instance, 'channel', None)!r}, not {name!r}")
    for socket in (*ROUTER_INPUTS, *spec.inputs):
        if socket not in inputs:
            problems.append(f"has no input '{socket}'")
    for socket in ROUTER_INPUTS:
        if inputs.get(socket, {}).get("is_mandatory", False):
            problems.append(f"input '{socket}' must be optional (default None)")
    if "weights" in inputs and inputs["weights"].get("type") != WeightsInput:
        problems.append("input 'weights' takes the router's weights: its type must be WeightsInput")
    unfed = [s for s, d in inputs.items() if d.get("is_mandatory") and s not in (*spec.inputs, *TEXT_INPUTS)]
    if unfed:
        problems.append(f"mandatory input(s) {unfed} that the registration does not feed")
    if outputs.get("documents", {}).get("type") not in (list[Document] | None, RankedDocuments | None):
        problems.append("must output documents: list[Document] | None (or RankedDocuments | None when shared)")
    if outputs.get("failure", {}).get("type") != str | None:
        problems.append("must output failure: str | None")
    if any(name in c.reads for c in CHANNEL_NAMES.values()) and outputs.get(HITS, {}).get("type") != RankedHits:
        problems.append(f"is read by other channels: must output {HITS}: RankedHits")
    for socket, source in spec.inputs.items():
        if source.endswith(f".{HITS}") and inputs.get(socket, {}).get("type") != HitsInput:
            problems.append(f"input '{socket}' takes another channel's hits: its type must be HitsInput")
    if problems:
        msg = f"Channel '{name}' ({spec.component.__name__}) " + "; ".join(problems)
        raise TypeError(msg)
