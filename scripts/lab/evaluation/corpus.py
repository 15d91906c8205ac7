"""The lab's corpus of real documents: the Python language reference topics that ship with CPython (``pydoc_data``),
written by the demo's own :func:`write_pydoc_topics` (``scripts/demo.py``, the product tool one floor below the lab),
so the lab and the demo index the same files."""

from __future__ import annotations

import importlib.util
from pathlib import Path

_DEMO = Path(__file__).resolve().parents[2] / "demo.py"
_spec = importlib.util.spec_from_file_location("adaptive_retrieval_demo", _DEMO)
assert _spec is not None and _spec.loader is not None
_demo = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_demo)

write_pydoc_topics = _demo.write_pydoc_topics

__all__ = ["write_pydoc_topics"]
