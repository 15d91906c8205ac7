"""The lab's corpus of real documents: the Python language reference topics that ship with CPython (``pydoc_data``),
the same that ``scripts/demo.py`` indexes by default."""

from __future__ import annotations

import logging
import re
from pathlib import Path

logger = logging.getLogger(__name__)


def write_pydoc_topics(folder: str | Path) -> list[Path]:
    """Write each ``pydoc_data.topics`` entry (about 80 reference chapters with reST headings) to
    ``folder/<topic>.txt``; files whose text is unchanged are left alone so re-indexing can skip them."""
    from pydoc_data.topics import topics

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, text in sorted(topics.items()):
        path = folder / (re.sub(r"[^\w.-]", "_", name) + ".txt")
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        paths.append(path)
    logger.info("Python reference topics in %s: %d files", folder, len(paths))
    return paths
