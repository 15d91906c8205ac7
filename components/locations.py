"""Where the embedded stores live when no path is given: environment variables, then a per-user data folder.

The stores resolve these themselves when they first open (never at import or in YAML), so a pipeline loaded with
plain ``Pipeline.loads`` follows ``$ADAPTIVE_QDRANT_PATH`` / ``$ADAPTIVE_GRAPH_PATH``, and nothing lands in the
caller's working directory: the fallback is ``$XDG_DATA_HOME/adaptive-retrieval`` (``~/.local/share/...``).

Usage::

    qdrant_folder()                       # Path($ADAPTIVE_QDRANT_PATH) or ~/.local/share/adaptive-retrieval/qdrant
    graph_file()                          # $ADAPTIVE_GRAPH_PATH, else graph.sqlite in the Qdrant folder

Each index keeps its graph in its own folder (``/data/idx/qdrant/graph.sqlite``). Earlier versions kept it beside
the folder (``/data/idx/graph.sqlite``), where two index folders side by side shared one graph;
:mod:`~adaptive_retrieval.components.stores.graph.graph_location` moves such a graph into the one folder it belongs to.
"""

from __future__ import annotations

import os
from pathlib import Path

from adaptive_retrieval.components import settings

#: The embedded Qdrant Edge index folder.
QDRANT_PATH_ENV = "ADAPTIVE_QDRANT_PATH"
#: The embedded graph store's SQLite file (default: ``graph.sqlite`` in the Qdrant folder).
GRAPH_PATH_ENV = "ADAPTIVE_GRAPH_PATH"
GRAPH_FILE = "graph.sqlite"
#: A Qdrant server or cluster instead of the embedded index; a Neo4j server instead of the SQLite graph.
QDRANT_URL_ENV = "QDRANT_URL"
#: Set in the workers of ``serve --workers N``: the store host's socket (a RemoteDocumentStore instead of Edge).
STORE_SOCKET_ENV = "ADAPTIVE_STORE_SOCKET"
NEO4J_URI_ENV = "NEO4J_URI"
NEO4J_DATABASE_ENV = "NEO4J_DATABASE"
NEO4J_LABEL_PREFIX_ENV = "ADAPTIVE_NEO4J_LABEL_PREFIX"
APP_NAME = "adaptive-retrieval"
#: The command that creates an index, quoted in "index not found" errors.
INDEX_COMMAND = "adaptive-retrieval index --store FOLDER FILES..."


def data_dir() -> Path:
    """The per-user data folder: ``$XDG_DATA_HOME/adaptive-retrieval``, else ``~/.local/share/adaptive-retrieval``."""
    base = settings.text("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base).expanduser() / APP_NAME


def qdrant_folder(path: str | os.PathLike[str] | None = None) -> Path:
    """The index folder: ``path``, else ``$ADAPTIVE_QDRANT_PATH``, else ``<data_dir>/qdrant``."""
    return Path(path or settings.text(QDRANT_PATH_ENV) or data_dir() / "qdrant").expanduser()


def graph_file(path: str | os.PathLike[str] | None = None, qdrant_path: str | os.PathLike[str] | None = None) -> Path:
    """The graph file: ``path``, else ``$ADAPTIVE_GRAPH_PATH``, else ``graph.sqlite`` in the Qdrant folder
    (``qdrant_path`` resolved as :func:`qdrant_folder` does), so two indexes never share one graph."""
    if path or settings.is_set(GRAPH_PATH_ENV):
        return Path(path or settings.text(GRAPH_PATH_ENV) or "").expanduser()
    return qdrant_folder(qdrant_path) / GRAPH_FILE


def legacy_graph_file(graph: Path) -> Path:
    """Where versions before each index kept its own graph put the graph of the index whose own graph is ``graph``:
    beside the index folder (``/data/idx/qdrant/graph.sqlite`` → ``/data/idx/graph.sqlite``)."""
    return graph.parent.parent / GRAPH_FILE
