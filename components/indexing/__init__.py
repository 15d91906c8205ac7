"""Indexing components: section-aware splitting, replacing writer."""
