"""Mermaid text of a pipeline, produced offline (Haystack's ``draw``/``show`` call a web service).

Two styles: ``detailed`` is exactly what Haystack would send to mermaid.ink (HTML labels with socket types and
optional inputs); ``compact`` is a plain flowchart (component name and class, edges labelled with the sockets)
that reads well in a README.
"""

from __future__ import annotations

from typing import Literal

from haystack import Pipeline
from haystack.core.pipeline.draw import _to_mermaid_text


def _compact(pipeline: Pipeline, direction: str) -> str:
    lines = [f"flowchart {direction}"]
    for name, data in pipeline.graph.nodes(data=True):
        lines.append(f'    {name}["{name}<br/><i>{type(data["instance"]).__name__}</i>"]')
    for sender, receiver, data in pipeline.graph.edges(data=True):
        out, inp = data.get("from_socket"), data.get("to_socket")
        label = (
            out.name
            if out is not None and inp is not None and out.name == inp.name
            else (f"{out.name if out else '?'} → {inp.name if inp else '?'}")
        )
        lines.append(f'    {sender} -- "{label}" --> {receiver}')
    return "\n".join(lines) + "\n"


def pipeline_to_mermaid(
    pipeline: Pipeline, direction: str = "TD", style: Literal["detailed", "compact"] = "detailed"
) -> str:
    """Mermaid flowchart of ``pipeline`` built locally from its graph (no network)."""
    if style == "compact":
        return _compact(pipeline, direction)
    if style != "detailed":
        msg = f"style must be 'detailed' or 'compact', got {style!r}"
        raise ValueError(msg)
    text = _to_mermaid_text(pipeline.graph, init_params="{'theme': 'neutral'}")
    return text.strip().replace("graph TD;", f"graph {direction};", 1) + "\n"
