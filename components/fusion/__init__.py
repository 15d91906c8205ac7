"""Fusion of ranked lists from several retrieval channels."""
