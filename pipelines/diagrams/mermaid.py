"""Mermaid text of a pipeline, built offline from its graph (Haystack's ``draw``/``show`` call a web service).

Three levels of detail, all read from ``pipeline.graph`` (nothing about a pipeline is written here by hand):

- ``overview`` (default) is the one a person reads at a glance: top to bottom from the pipeline's input; the
  components that feed one joining component in parallel (the query pipeline's retrieval channels, the indexing
  pipeline's converters) drawn as one group; the edges between a component and two or more members of the group
  folded into one edge to or from the group, and the parallel edges between two components bundled into one,
  labelled with the output names; an output that several components read (the query text, its embedding) drawn
  to its first readers only; settings (numbers, flags, dicts: weights, fetch_k, λ …) drawn as dotted edges, data
  (documents, embeddings, text) as solid ones; an edge that closes a cycle (the gate's ``retry`` back to the
  loop) drawn thick, dashed and red.
- ``sockets`` keeps every socket-level connection (``output → input``), with the same order and edge styles.
- ``haystack`` is ``sockets`` with each connection's type, as Haystack's own diagrams show them (``documents →
  documents (list[Document])``), built here from the same public graph (Haystack writes that text only in a
  private helper of ``draw``).

Usage::

    from adaptive_retrieval.pipelines.diagrams.mermaid import pipeline_to_mermaid

    print(pipeline_to_mermaid(pipeline))                      # overview
    print(pipeline_to_mermaid(pipeline, detail="sockets"))    # every connection
"""

from __future__ import annotations

import re
import types
import typing
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

from haystack import Pipeline

from adaptive_retrieval.components.frozen_mapping import FrozenMapping
from adaptive_retrieval.components.gating.attempts import RetryState
from adaptive_retrieval.components.strategy import Strategy

Detail = Literal["overview", "sockets", "haystack"]
DETAILS: tuple[str, ...] = typing.get_args(Detail)
#: Fewest components feeding one component through same-named outputs that are drawn as a group.
MIN_GROUP = 3
#: Fewest components reading one output for it to be drawn to its first readers only (overview).
MIN_BROADCAST = 3
#: Output names listed on a pipeline's result node; the rest are summarised as "…".
MAX_RESULT_NAMES = 3
_RESERVED = {"end", "graph", "subgraph", "flowchart", "style", "class", "classdef", "click", "linkstyle", "direction"}
#: What a dotted edge carries: settings (numbers, flags, dicts, read-only mappings such as the router's weights, its
#: strategy) and the loop's state, not data.
_CONTROL_TYPES = (int, float, bool, dict, FrozenMapping, Strategy, RetryState)
#: Link styles: settings are grey and dotted; the edge that closes a cycle is thick, dashed and red.
_CONTROL_STYLE = "stroke:#888,stroke-width:1px"
_BACK_STYLE = "stroke:#c0392b,stroke-width:3px,stroke-dasharray:8 5,color:#c0392b"


@dataclass(frozen=True)
class _Connection:
    sender: str
    receiver: str
    output: str
    input: str
    control: bool
    #: The sending socket's type as a person reads it (``list[Document]``).
    type_label: str = ""


@dataclass
class _Link:
    """One drawn edge (possibly several connections bundled)."""

    sender: str
    receiver: str
    labels: list[str] = field(default_factory=list)
    control: bool = True
    back: bool = False
    #: The component pairs folded into an edge to or from a group.
    folded: list[tuple[str, str]] = field(default_factory=list)

    def add(self, label: str, control: bool) -> None:
        if label not in self.labels:
            self.labels.append(label)
        self.control = self.control and control


@dataclass
class _Group:
    key: str  # "group:<receiver>", never a component name
    title: str
    members: list[str]


def _is_control(socket_type: Any) -> bool:
    """A setting (number, flag, dict), as opposed to data (documents, embeddings, text, files)."""
    if typing.get_origin(socket_type) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(socket_type) if a is not type(None)]
        return bool(args) and all(_is_control(a) for a in args)
    kind = typing.get_origin(socket_type) or socket_type
    return isinstance(kind, type) and issubclass(kind, _CONTROL_TYPES)


def _type_label(socket_type: Any) -> str:
    """``socket_type`` without module paths: ``list[Document]``, ``Iterable[Document]``, ``dict[str, Any]``."""
    text = socket_type.__name__ if isinstance(socket_type, type) else str(socket_type)
    return re.sub(r"\b(?:[A-Za-z_]\w*\.)+([A-Za-z_]\w*)", r"\1", text)


def _connections(pipeline: Pipeline) -> list[_Connection]:
    return [
        _Connection(
            s,
            r,
            d["from_socket"].name,
            d["to_socket"].name,
            _is_control(d["from_socket"].type),
            _type_label(d["from_socket"].type),
        )
        for s, r, d in pipeline.graph.edges(data=True)
    ]


def _entries(pipeline: Pipeline) -> dict[str, list[str]]:
    """``{component: [mandatory input fed by the caller]}``: where the pipeline starts."""
    return {
        name: [s for s, info in sockets.items() if info.get("is_mandatory")]
        for name, sockets in pipeline.inputs().items()
        if any(info.get("is_mandatory") for info in sockets.values())
    }


def _order(pipeline: Pipeline, connections: list[_Connection]) -> tuple[list[str], set[_Connection]]:
    """Components in drawing order (a topological order of the graph without its back edges) and the back edges.

    A depth-first walk from the entries finds the edges that close a cycle; the layout engine (dagre) places
    nodes in declaration order and reverses the edges its own walk finds closing cycles, so declaring the
    components in this order keeps the flow top to bottom and makes it reverse exactly the back edges.
    """
    nodes = list(pipeline.graph.nodes)
    outgoing: dict[str, list[_Connection]] = defaultdict(list)
    for c in connections:
        outgoing[c.sender].append(c)
    has_incoming = {c.receiver for c in connections}
    roots = list(_entries(pipeline)) + [n for n in nodes if n not in has_incoming] + nodes
    state: dict[str, int] = {}  # 1: on the walk's stack, 2: done
    back: set[_Connection] = set()
    for root in roots:
        if root in state:
            continue
        stack = [(root, iter(outgoing[root]))]
        state[root] = 1
        while stack:
            node, edges = stack[-1]
            edge = next(edges, None)
            if edge is None:
                state[node] = 2
                stack.pop()
            elif state.get(edge.receiver) == 1:
                back.add(edge)
            elif edge.receiver not in state:
                state[edge.receiver] = 1
                stack.append((edge.receiver, iter(outgoing[edge.receiver])))
    # Ready nodes are taken in the walk's root order, so the order is stable.
    rank = {n: i for i, n in enumerate(dict.fromkeys(roots))}
    forward = [(c.sender, c.receiver) for c in connections if c not in back]
    return _stable_topological_order(nodes, forward, rank), back


def _stable_topological_order(units: list[str], edges: list[tuple[str, str]], rank: dict[str, int]) -> list[str]:
    """Kahn's algorithm over the acyclic ``edges`` (sender, receiver), taking ready units in ``rank`` order."""
    indegree = dict.fromkeys(units, 0)
    after: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        after[a].append(b)
        indegree[b] += 1
    ready = sorted((u for u in units if indegree[u] == 0), key=rank.__getitem__)
    order: list[str] = []
    while ready:
        current = ready.pop(0)
        order.append(current)
        for b in after[current]:
            indegree[b] -= 1
            if indegree[b] == 0:
                ready.append(b)
        ready.sort(key=rank.__getitem__)
    return order


def _camel_words(name: str) -> list[str]:
    return re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+", name)


def _group_title(pipeline: Pipeline, members: list[str], receiver: str) -> str:
    """``"5 retrievers → joiner"``, ``"4 converters → joiner"``: the last word the members' names share, else the
    last word their classes share, else ``"branches"``."""
    for words in (
        [m.split("_")[-1] for m in members],
        [(_camel_words(type(pipeline.get_component(m)).__name__) or [""])[-1].lower() for m in members],
    ):
        if len(set(words)) == 1 and words[0] and words[0] not in members:
            return f"{len(members)} {words[0]}s → {receiver}"
    return f"{len(members)} branches → {receiver}"


def _groups(pipeline: Pipeline, connections: list[_Connection], back: set[_Connection]) -> list[_Group]:
    """Components that feed one component in parallel through same-named data outputs (the retrieval channels
    into the joiner, the converters into the document joiner)."""
    feeding: dict[tuple[str, str], list[str]] = defaultdict(list)
    for c in connections:
        if c not in back and not c.control and c.sender not in feeding[(c.receiver, c.output)]:
            feeding[(c.receiver, c.output)].append(c.sender)
    groups: list[_Group] = []
    grouped: set[str] = set()
    for (receiver, _), senders in sorted(feeding.items(), key=lambda item: -len(item[1])):
        members = [s for s in senders if s not in grouped and s != receiver]
        if len(members) < MIN_GROUP:
            continue
        grouped.update(members)
        groups.append(_Group(f"group:{receiver}", _group_title(pipeline, members, receiver), members))
    return groups


def _node_id(name: str) -> str:
    node_id = re.sub(r"\W", "_", name)
    return f"n_{node_id}" if node_id.lower() in _RESERVED or not node_id[:1].isalpha() else node_id


def _quote(text: str) -> str:
    return text.replace('"', "#quot;")


def _node_line(node_id: str, pipeline: Pipeline, name: str, indent: str) -> str:
    cls = type(pipeline.get_component(name)).__name__
    return f'{indent}{node_id}["{_quote(name)}<br/><i>{cls}</i>"]'


def _link_line(link: _Link, ids: dict[str, str]) -> str:
    label = _quote(", ".join(link.labels))
    sender, receiver = ids[link.sender], ids[link.receiver]
    if not label:
        return f"    {sender} --> {receiver}"
    if link.back:
        return f'    {sender} == "{label}" ==> {receiver}'
    if link.control:
        return f'    {sender} -. "{label}" .-> {receiver}'
    return f'    {sender} -- "{label}" --> {receiver}'


def _io_nodes(
    pipeline: Pipeline, order: list[str], links: list[_Link], ids: dict[str, str]
) -> tuple[list[str], list[str], list[_Link]]:
    """Rounded nodes for what the caller feeds and for the result (the outputs of the components that feed
    nothing further), and their edges."""
    inputs, results, io_links = [], [], []
    for name, sockets in _entries(pipeline).items():
        node_id = ids[f"in:{name}"] = _unique(f"input_{ids[name]}", ids)
        inputs.append(f'    {node_id}(["{_quote(", ".join(sockets))}"])')
        io_links.append(_Link(f"in:{name}", name, list(sockets), control=False))
    senders = {link.sender for link in links if not link.back}
    outputs = pipeline.outputs()
    for name in (n for n in order if n not in senders and outputs.get(n)):
        names = list(outputs[name])
        shown = ", ".join(names[:MAX_RESULT_NAMES]) + (", …" if len(names) > MAX_RESULT_NAMES else "")
        node_id = ids[f"out:{name}"] = _unique(f"result_{ids[name]}", ids)
        results.append(f'    {node_id}(["{_quote(shown)}"])')
        io_links.append(_Link(name, f"out:{name}", [], control=False))
    return inputs, results, io_links


def _unique(node_id: str, ids: dict[str, str]) -> str:
    taken = set(ids.values())
    while node_id in taken:
        node_id += "_"
    return node_id


def _anchor_first(group: _Group, links: list[_Link]) -> list[str]:
    """The group's members, the one deepest inside the group first.

    Mermaid attaches the edges drawn to or from a group to its first member: the deepest one keeps the
    component the group feeds below every member, and the group below what feeds it.
    """
    inside = [link for link in links if link.sender in group.members and link.receiver in group.members]
    depth = dict.fromkeys(group.members, 0)
    for _ in group.members:
        for link in inside:
            depth[link.receiver] = max(depth[link.receiver], depth[link.sender] + 1)
    return sorted(group.members, key=lambda m: -depth[m])


def _rank_hints(groups: list[_Group], links: list[_Link], position: dict[str, int]) -> list[tuple[str, str]]:
    """Invisible links that keep each group below what feeds it.

    Mermaid lays out an edge to a group as an edge to one member (the first declared, see :func:`_anchor_first`),
    so a member that no drawn edge reaches would float up to the top: it gets an invisible link from each
    component whose edge to it was folded into the group's.
    """
    hints = []
    fed = {link.receiver for link in links if not link.back}
    for group in groups:
        for member in (m for m in group.members if m not in fed):
            senders = {a for link in links for a, b in link.folded if b == member and a not in group.members}
            hints += [(sender, member) for sender in sorted(senders, key=lambda n: position.get(n, -1))]
    return hints


def _declaration_order(order: list[str], group_of: dict[str, _Group], links: list[_Link]) -> list[str]:
    """Components and group keys in a topological order of the drawn forward edges, each group as one unit (so
    whatever feeds any member is declared before the group), ties kept in ``order``."""
    units = list(dict.fromkeys(group_of[n].key if n in group_of else n for n in order))
    rank = {u: i for i, u in enumerate(units)}

    def unit(node: str) -> str:
        return group_of[node].key if node in group_of else node

    edges = [(unit(link.sender), unit(link.receiver)) for link in links if not link.back]
    return _stable_topological_order(units, [(a, b) for a, b in edges if a != b and a in rank and b in rank], rank)


def _flowchart(pipeline: Pipeline, direction: str, order: list[str], groups: list[_Group], links: list[_Link]) -> str:
    ids: dict[str, str] = {}
    for name in order:
        ids[name] = _unique(_node_id(name), ids)
    for group in groups:
        ids[group.key] = _unique(_node_id(group.key.removeprefix("group:") + "_inputs"), ids)
    group_of = {m: g for g in groups for m in g.members}
    inputs, results, io_links = _io_nodes(pipeline, order, links, ids)
    lines = [f"flowchart {direction}", *inputs]
    units = _declaration_order(order, group_of, links)
    for unit in units:
        group = next((g for g in groups if g.key == unit), None)
        if group is None:
            lines.append(_node_line(ids[unit], pipeline, unit, "    "))
        else:
            lines.append(f'    subgraph {ids[group.key]}["{_quote(group.title)}"]')
            lines += [_node_line(ids[m], pipeline, m, "        ") for m in _anchor_first(group, links)]
            lines.append("    end")
    lines += results
    # In drawing order, back edges last: the layout then meets every forward edge first.
    position = {unit: i for i, unit in enumerate(units)}
    position.update({m: position[g.key] for m, g in group_of.items()})

    def key(link: _Link) -> tuple[bool, int, int]:
        return (link.back, position.get(link.sender, -1), position.get(link.receiver, len(position)))

    links = sorted(links + io_links, key=key)
    lines += [_link_line(link, ids) for link in links]
    lines += [f"    {ids[a]} ~~~ {ids[b]}" for a, b in _rank_hints(groups, links, position)]
    for style, wanted in ((_CONTROL_STYLE, lambda k: k.control and not k.back), (_BACK_STYLE, lambda k: k.back)):
        indices = [str(i) for i, link in enumerate(links) if wanted(link)]
        if indices:
            lines.append(f"    linkStyle {','.join(indices)} {style}")
    return "\n".join(lines) + "\n"


def _first_readers(connections: list[_Connection], back: set[_Connection]) -> list[_Connection]:
    """``connections`` without those of a broadcast output (read by ≥ ``MIN_BROADCAST`` components) to a reader
    that data flows to from another reader of it: the query text and its embedding are drawn to their first
    readers on each path, not to every later stage."""
    data_next: dict[str, set[str]] = defaultdict(set)
    for c in connections:
        if not c.control and c not in back:
            data_next[c.sender].add(c.receiver)

    def downstream(start: str) -> set[str]:
        seen, todo = set(), [start]
        while todo:
            for node in data_next[todo.pop()] - seen:
                seen.add(node)
                todo.append(node)
        return seen

    readers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for c in connections:
        if c not in back:
            readers[(c.sender, c.output)].add(c.receiver)
    later: set[tuple[str, str, str]] = set()
    for (sender, output), receivers in readers.items():
        if len(receivers) >= MIN_BROADCAST:
            reached = set().union(*(downstream(r) for r in receivers))
            later.update((sender, output, r) for r in receivers & reached)
    return [c for c in connections if (c.sender, c.output, c.receiver) not in later]


def _overview_links(connections: list[_Connection], back: set[_Connection], groups: list[_Group]) -> list[_Link]:
    """Fold the edges between a component and ≥ 2 members of a group into one edge to/from the group, and bundle
    the parallel edges between two drawn nodes into one, labelled with the output names."""
    connections = _first_readers(connections, back)
    group_of = {m: g for g in groups for m in g.members}
    touching: dict[tuple[str, str], set[str]] = defaultdict(set)  # (outside node, group id) -> members it touches
    for c in connections:
        for outside, member in ((c.sender, c.receiver), (c.receiver, c.sender)):
            group = group_of.get(member)
            if group is not None and group_of.get(outside) is not group and c not in back:
                touching[(outside, group.key)].add(member)

    def end(node: str, other: str, connection: _Connection) -> str:
        group = group_of.get(node)
        if group is None or connection in back or group_of.get(other) is group:
            return node
        return group.key if len(touching[(other, group.key)]) >= 2 else node

    links: dict[tuple[str, str, bool], _Link] = {}
    for c in connections:
        is_back = c in back
        key = (end(c.sender, c.receiver, c), end(c.receiver, c.sender, c), is_back)
        link = links.setdefault(key, _Link(key[0], key[1], back=is_back))
        link.add(c.output, c.control)
        if key[:2] != (c.sender, c.receiver) and (c.sender, c.receiver) not in link.folded:
            link.folded.append((c.sender, c.receiver))
    return list(links.values())


def _socket_links(connections: list[_Connection], back: set[_Connection], typed: bool = False) -> list[_Link]:
    links = []
    for c in connections:
        label = c.output if c.output == c.input else f"{c.output} → {c.input}"
        links.append(
            _Link(c.sender, c.receiver, [f"{label} ({c.type_label})" if typed else label], c.control, c in back)
        )
    return links


def pipeline_to_mermaid(pipeline: Pipeline, detail: Detail = "overview", direction: str = "TD") -> str:
    """Mermaid flowchart of ``pipeline`` built locally from its graph (no network).

    :param detail: ``overview`` (grouped and bundled, for reading at a glance), ``sockets`` (every connection) or
        ``haystack`` (every connection with its type, as Haystack's diagrams show them).
    :param direction: ``TD`` (top to bottom) or ``LR``.
    """
    if detail not in DETAILS:
        msg = f"detail must be one of {list(DETAILS)}, got {detail!r}"
        raise ValueError(msg)
    connections = _connections(pipeline)
    order, back = _order(pipeline, connections)
    if detail in ("sockets", "haystack"):
        links = _socket_links(connections, back, typed=detail == "haystack")
        return _flowchart(pipeline, direction, order, [], links)
    groups = _groups(pipeline, connections, back)
    return _flowchart(pipeline, direction, order, groups, _overview_links(connections, back, groups))


def diagram_counts(text: str) -> dict[str, int]:
    """``{"nodes": …, "edges": …, "groups": …}`` of a flowchart written by :func:`pipeline_to_mermaid`."""
    lines = [line.strip() for line in text.splitlines()]
    return {
        "nodes": sum(1 for line in lines if re.match(r"^\w+(\[|\(\[)", line)),
        "edges": sum(1 for line in lines if re.match(r"^\w+ (--|-\.|==)", line)),
        "groups": sum(1 for line in lines if line.startswith("subgraph ")),
    }
