"""The layout of the manifest records an index keeps about itself, one per source (level -1 in the collection):
their level, kind and states. Indexing writes them (:mod:`.indexing.manifest`); the store's damage checks
(:mod:`.stores.documents.edge_checks`) read them, so the layout lives below both."""

from __future__ import annotations

#: The records' level in the collection (chunks are 0, summaries 1 and 2).
MANIFEST_LEVEL = -1
MANIFEST_KIND = "manifest"
#: A record's states: being indexed, complete, failed, being deleted.
STATE_INDEXING = "indexing"
STATE_COMPLETE = "complete"
STATE_FAILED = "failed"
STATE_DELETING = "deleting"
#: Shown by ``index_stats`` (never stored): a complete record whose file's new content was refused.
STATE_KEPT = "kept"
#: Filter selecting the manifest records.
MANIFEST_FILTER = {"field": "meta.level", "operator": "==", "value": MANIFEST_LEVEL}
#: Count fields a record carries, in ``stats`` order.
COUNT_FIELDS = ("chunks", "summaries", "graph_chunks")
