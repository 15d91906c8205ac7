"""Builders and runners of the indexing and query pipelines, YAML loading, store configuration, calibration,
validation and limits; the rooms above them, each importing only rooms below it: ``processes/`` (store ownership,
workers), ``serving/`` (the app and its Hayhooks wrappers), ``cli/`` (the command); ``diagrams/`` (mermaid) imports
only this floor."""

import adaptive_retrieval.components  # noqa: F401  (sets the offline defaults before Haystack is imported)
