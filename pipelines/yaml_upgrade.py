"""Pipeline YAML saved by an earlier version, read as it answered: the store classes under the module paths they had
before ``components/stores/`` got rooms by role, and a query pipeline saved before the channels handed on their
documents without vectors.

Haystack imports a store by the module path its ``type`` names, so :func:`upgrade_moved_types` rewrites the paths
of :data:`MOVED_MODULES` (``stores.edge_document_store.EdgeDocumentStore`` is now
``stores.documents.edge_document_store.EdgeDocumentStore``); the YAML this package writes names the new ones.

Until issue 44 every channel's documents carried their dense vectors: ``MMRSelector`` had no store and read them off
the documents, and ``StructuralFirst`` read the section channel's whole list. The channels now drop the vectors,
so such a YAML would run MMR without its diversity term and give the gate structural matches without vectors.
:func:`upgrade_lean_documents` gives that MMR the channels' document store and ``StructuralFirst`` the section
channel's ``structural_hits``; a YAML written since is left as it is. ``load_pipeline`` and ``loads_pipeline`` apply
both (a plain ``Pipeline.loads`` does neither).

Usage::

    data = upgrade_lean_documents(upgrade_moved_types(YamlMarshaller().unmarshal(old_yaml_text)))
"""

from __future__ import annotations

import copy
from typing import Any

_STORES = "adaptive_retrieval.components.stores"
#: The modules of the store classes a saved YAML names, before ``components/stores/`` got its rooms -> now.
MOVED_MODULES = {
    f"{_STORES}.edge_document_store": f"{_STORES}.documents.edge_document_store",
    f"{_STORES}.remote_document_store": f"{_STORES}.documents.remote_document_store",
    f"{_STORES}.sqlite_graph_store": f"{_STORES}.graph.sqlite_graph_store",
    f"{_STORES}.neo4j_graph_store": f"{_STORES}.graph.neo4j_graph_store",
}


def upgrade_moved_types(node: Any) -> Any:
    """``node`` (a pipeline's YAML as plain data, changed in place) with every ``type`` in a module of
    :data:`MOVED_MODULES` named by the module the class lives in now; any other ``type`` unchanged."""
    if isinstance(node, dict):
        kind = node.get("type")
        if isinstance(kind, str):
            module, _, name = kind.rpartition(".")
            if module in MOVED_MODULES:
                node["type"] = f"{MOVED_MODULES[module]}.{name}"
        for value in node.values():
            upgrade_moved_types(value)
    elif isinstance(node, list):
        for value in node:
            upgrade_moved_types(value)
    return node


#: Components whose document store the channels search (the store MMR reads the vectors from).
_CHANNEL_TYPES = (".DenseRetriever", ".SparseRetriever", ".SectionTreeRetriever")


def _type(component: Any) -> str:
    return str(component.get("type", "")) if isinstance(component, dict) else ""


def upgrade_lean_documents(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` (a pipeline's YAML as a dict, changed in place) with an ``MMRSelector`` without ``document_store``
    given the channels' store, and a section channel's ``documents`` sent to ``StructuralFirst`` replaced by its
    ``structural_hits``. A pipeline without such channels is returned unchanged."""
    components = data.get("components") or {}
    store = next(
        (
            c.get("init_parameters", {}).get("document_store")
            for c in components.values()
            if _type(c).endswith(_CHANNEL_TYPES) and c.get("init_parameters", {}).get("document_store")
        ),
        None,
    )
    if store is None:
        return data
    for component in components.values():
        if _type(component).endswith(".MMRSelector"):
            params = component.setdefault("init_parameters", {})
            if params.get("document_store") is None:
                params["document_store"] = copy.deepcopy(store)
    sections = {name for name, c in components.items() if _type(c).endswith(".SectionTreeRetriever")}
    for connection in data.get("connections") or []:
        sender, _, socket = str(connection.get("sender", "")).partition(".")
        receiver = str(connection.get("receiver", "")).partition(".")[0]
        if (
            sender in sections
            and socket == "documents"
            and _type(components.get(receiver)).endswith(".StructuralFirst")
        ):
            connection["sender"] = f"{sender}.structural_hits"
    return data
