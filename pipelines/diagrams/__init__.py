"""Diagrams of the pipelines: mermaid text from the YAML (:mod:`~adaptive_retrieval.pipelines.diagrams.mermaid`) and
its rendering to SVG, PNG and HTML (:mod:`~adaptive_retrieval.pipelines.diagrams.drawing`)."""
