"""Mermaid text of a pipeline, produced offline (Haystack's ``draw``/``show`` call a web service)."""

from __future__ import annotations

from haystack import Pipeline
from haystack.core.pipeline.draw import _to_mermaid_text


def pipeline_to_mermaid(pipeline: Pipeline, direction: str = "TD") -> str:
    """The mermaid flowchart Haystack would send to mermaid.ink, built locally from the pipeline graph."""
    text = _to_mermaid_text(pipeline.graph, init_params="%%{ init: {'theme': 'neutral' } }%%")
    return text.replace("graph TD;", f"graph {direction};", 1)
