"""Builders for the indexing and query pipelines, YAML loading, timings and mermaid diagrams."""

import adaptive_retrieval.components  # noqa: F401  (sets the offline defaults before Haystack is imported)
