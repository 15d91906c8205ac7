"""Retrieval channels: dense and sparse (Qdrant), section tree, graph local and graph global."""
