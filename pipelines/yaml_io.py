"""Load and save the pipelines' YAML, with Haystack 3's module allow-list handled in one place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.core.serialization import DeserializationCallbacks
from haystack.marshal import YamlMarshaller

import yaml
from adaptive_retrieval.components import settings
from adaptive_retrieval.components.errors import InputError
from adaptive_retrieval.pipelines.store_config import (
    NEO4J_URI_ENV,
    QDRANT_URL_ENV,
    STORE_SOCKET_ENV,
    default_graph_path,
    make_graph_store,
    make_store,
    shared_in_process_store,
)
from adaptive_retrieval.pipelines.yaml_types import registered_types
from adaptive_retrieval.pipelines.yaml_upgrade import upgrade_lean_documents, upgrade_moved_types

#: Modules outside ``haystack*`` the YAML may name (Haystack 3 refuses others unless allow-listed). Plain Haystack:
#: ``Pipeline.loads(text, allowed_modules=ALLOWED_MODULES)``; a server (``hayhooks run``) that loads the YAML
#: itself: ``HAYSTACK_DESERIALIZATION_ALLOWLIST="adaptive_retrieval.*"`` in its environment.
ALLOWED_MODULES = ["adaptive_retrieval"]
#: What ``hayhooks pipeline deploy-yaml`` exposes: the declared ``inputs``/``outputs`` of each pipeline YAML
#: (flat request field -> ``component.socket``). :func:`dumps_pipeline` writes the first entry whose sockets the
#: pipeline has, so the declaration follows the pipeline rather than its file name. The indexing pipeline declares
#: none on purpose: its entry (``file_router.sources``) takes paths on the server, and a request naming
#: ``/etc/...`` would index that file; Hayhooks refuses to deploy a YAML without ``inputs``, and files reach the
#: index over the network only as uploads (``POST /indexing/run`` of ``adaptive-retrieval serve``).
HAYHOOKS_IO: list[dict[str, dict[str, str]]] = [
    {  # the query pipelines: the query enters at the retry loop; the answer component holds the gate's list without
        # its vectors (Hayhooks answers with every output of the components named here, and every unconnected one).
        # Vectors on request: `include_embeddings: true` in the answer's init_parameters (Hayhooks makes every
        # declared input required, so a per-request flag here would be one every request must send).
        "inputs": {"query": "loop.query"},
        "outputs": {
            "documents": "answer.documents",
            "decision": "answer.decision",
            "quality": "answer.quality",
            "query_embedding": "answer.query_embedding",
            "intent": "router.intent",
            "confidence": "router.confidence",
        },
    },
    {  # a query pipeline without the answer component (built before it existed): the gate's list, with vectors
        "inputs": {"query": "loop.query"},
        "outputs": {
            "documents": "gate.documents",
            "decision": "gate.decision",
            "quality": "gate.quality",
            "intent": "router.intent",
            "confidence": "router.confidence",
        },
    },
]
#: ``yaml/`` beside ``pipelines/``: the checkout's (or an editable install's), or the installed wheel's
#: ``adaptive_retrieval/yaml`` (not inside ``pipelines/``, whose every folder Hayhooks serves as a pipeline).
YAML_DIR = Path(__file__).resolve().parents[1] / "yaml"


class PipelineLoadError(InputError):
    """The YAML could not be parsed or does not describe a pipeline this package can build."""


def _override_stores(node: Any, overrides: dict[str, Any]) -> None:
    """Point every document store in the YAML tree where ``overrides`` say (``url``: a Qdrant server; ``path``: an
    embedded Edge folder). A store of the same kind keeps its other YAML settings; a store of the other kind is
    replaced, keeping its collection name and dimension."""
    if isinstance(node, dict):
        store = node.get("document_store")
        if isinstance(store, dict) and "init_parameters" in store:
            params = store["init_parameters"]
            kept = {k: params[k] for k in ("index", "embedding_dim") if params.get(k) is not None}
            if overrides.get("socket") and str(store.get("type", "")).endswith("EdgeDocumentStore"):
                kept = dict(params)  # a worker's RemoteDocumentStore keeps every setting of the Edge store
            kept.update({k: v for k, v in overrides.items() if v is not None})
            target = make_store(**kept).to_dict()
            if target["type"] == store.get("type"):
                params.update({k: v for k, v in overrides.items() if v is not None})
            else:
                node["document_store"] = target
        for value in node.values():
            _override_stores(value, overrides)
    elif isinstance(node, list):
        for value in node:
            _override_stores(value, overrides)


#: Overrides that address the graph store rather than the document store.
GRAPH_OVERRIDES = ("graph_path", "graph_url")


def _override_graph_stores(node: Any, overrides: dict[str, Any]) -> None:
    """Point graph stores at ``graph_url`` (Neo4j) or ``graph_path`` (SQLite); given only a Qdrant ``path``, an
    embedded graph moves into that folder, so two indexes never share one graph file."""
    if isinstance(node, dict):
        store = node.get("graph_store")
        if isinstance(store, dict) and "init_parameters" in store:
            if overrides.get("graph_url") or overrides.get("graph_path"):
                url, path = overrides.get("graph_url"), overrides.get("graph_path")
                # A query-side store (create: false) stays one when it moves to another file.
                kept = {"create": store["init_parameters"]["create"]} if "create" in store["init_parameters"] else {}
                node["graph_store"] = make_graph_store(url=url, path=None if url else path, **kept).to_dict()
            elif overrides.get("path") and str(store.get("type", "")).endswith("SQLiteGraphStore"):
                store["init_parameters"]["path"] = default_graph_path(overrides["path"])
        for value in node.values():
            _override_graph_stores(value, overrides)
    elif isinstance(node, list):
        for value in node:
            _override_graph_stores(value, overrides)


#: Overrides for every model component (embedders, router, rankers) rather than for a store.
RUNTIME_OVERRIDES = ("device", "precision", "model")
QDRANT_SHARDS_ENV, QDRANT_REPLICATION_ENV = "ADAPTIVE_QDRANT_SHARDS", "ADAPTIVE_QDRANT_REPLICATION"


def _override_runtime(data: dict[str, Any], overrides: dict[str, Any]) -> None:
    """Set ``device``/``precision`` on every component that has those init parameters (models run where told)."""
    for component in data["components"].values():
        params = component.get("init_parameters") if isinstance(component, dict) else None
        if isinstance(params, dict):
            for key, value in overrides.items():
                if key in params and value is not None:
                    params[key] = value


def resolve_yaml(name_or_path: str | Path) -> Path:
    """``"query"``/``"indexing"`` name the packaged files in ``yaml/``; anything else is a path."""
    candidate = Path(name_or_path)
    if candidate.suffix not in (".yaml", ".yml"):
        candidate = YAML_DIR / f"{name_or_path}.yaml"
    if not candidate.exists():
        msg = f"Pipeline YAML '{candidate}' not found (run `python scripts/build_yaml.py` to write yaml/)."
        raise FileNotFoundError(msg)
    return candidate


#: Most ``*alias`` references a pipeline YAML may hold. The files this package writes hold none; nested
#: anchors ("billion laughs") expand exponentially in any code that walks the loaded data.
MAX_YAML_ALIASES = 64
#: Most nodes a pipeline YAML may expand to, an alias counting the size of what it refers to (the shipped
#: query.yaml has about 1,000): three aliases per level pass an alias count, not this.
MAX_YAML_NODES = 100_000
#: Deepest nesting of collections (the shipped files nest 7 deep); PyYAML composes recursively, so a file nested
#: 20,000 deep would end in a RecursionError.
MAX_YAML_DEPTH = 100
#: libyaml's event parser where PyYAML has it (its wheels do). The pure-Python scanner looks up to 1,024 characters
#: ahead for a flow key over every open level: about a second of CPU on "[[[[..." before the depth bound stops it,
#: against microseconds in C (which refuses flow nesting past 1,000 levels itself, as malformed YAML).
_EVENT_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refuse_alias_bombs(text: str) -> None:
    """Refuse YAML over :data:`MAX_YAML_ALIASES` aliases, :data:`MAX_YAML_NODES` expanded nodes or
    :data:`MAX_YAML_DEPTH` levels, from PyYAML's event stream (``yaml.parse`` is iterative and builds nothing):
    the work is linear in the text and stops at the first limit crossed."""
    aliases = nodes = 0
    # One frame per open collection: [anchor, expanded nodes (itself included), height of its highest child].
    frames: list[list[Any]] = []
    anchored: dict[str, tuple[int, int]] = {}  # anchor -> (expanded nodes, height in collection levels)

    def count(size: int, height: int) -> None:
        nonlocal nodes
        nodes += size
        if nodes > MAX_YAML_NODES:
            msg = (
                f"Pipeline YAML expands to more than {MAX_YAML_NODES} nodes (aliases count what they refer to): "
                "refused, as nested anchors expand exponentially; write the values out instead"
            )
            raise PipelineLoadError(msg)
        if len(frames) + height > MAX_YAML_DEPTH:
            msg = f"Pipeline YAML nests deeper than {MAX_YAML_DEPTH} levels: refused (pipelines nest a few levels)"
            raise PipelineLoadError(msg)

    def close(size: int, height: int) -> None:
        if frames:
            frames[-1][1] += size
            frames[-1][2] = max(frames[-1][2], height)

    for event in yaml.parse(text, Loader=_EVENT_LOADER):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_YAML_ALIASES:
                msg = (
                    f"Pipeline YAML holds more than {MAX_YAML_ALIASES} aliases (*name): refused, as nested "
                    "anchors expand exponentially; write the values out instead"
                )
                raise PipelineLoadError(msg)
            size, height = anchored.get(str(event.anchor), (1, 0))  # an unknown anchor: the composer reports it
            count(size, height)
            close(size, height)
        elif isinstance(event, yaml.ScalarEvent):
            count(1, 0)
            close(1, 0)
            if event.anchor is not None:
                anchored[str(event.anchor)] = (1, 0)
        elif isinstance(event, yaml.CollectionStartEvent):
            count(1, 1)
            frames.append([event.anchor, 1, 0])
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, size, child_height = frames.pop()
            if anchor is not None:
                anchored[str(anchor)] = (size, child_height + 1)
            close(size, child_height + 1)


def _share_in_process_stores(name: str, cls: type, init_params: dict[str, Any]) -> None:
    """Haystack's pre-init callback: a component's in-process ``QdrantDocumentStore`` becomes the process's shared
    one (:func:`~adaptive_retrieval.pipelines.store_config.shared_in_process_store`)."""
    for key, value in init_params.items():
        if key == "document_store":
            init_params[key] = shared_in_process_store(value)


def loads_pipeline(text: str, **store_overrides: Any) -> Pipeline:
    """Build a pipeline from YAML text.

    :param store_overrides: document-store init parameters to set on every store in the YAML, e.g.
        ``path="/data/qdrant"`` or ``url="http://qdrant:6333"`` (the other one is cleared); ``graph_path`` /
        ``graph_url`` set the graph store (SQLite file / Neo4j URI); with only ``path`` an embedded graph store
        moves next to that folder; ``device`` (cpu/cuda), ``precision`` (fp32/int8/fp16/bf16/fp8) and ``model`` (a
        model folder, or a name in the models folder) go to every model component.
    :raises PipelineLoadError: for malformed YAML or a YAML that is not a pipeline.
    """
    try:
        _refuse_alias_bombs(text)
        # Haystack's marshaller: safe loading plus the tuple tag its own dumps emit.
        data = YamlMarshaller().unmarshal(text)
    except (yaml.YAMLError, TypeError, RecursionError) as err:
        # TypeError: Haystack's marshaller refusing a tag it has no safe constructor for (``!!python/...``).
        msg = f"Malformed pipeline YAML: {err}"
        raise PipelineLoadError(msg) from err
    if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
        msg = "Pipeline YAML must be a mapping with a 'components' section"
        raise PipelineLoadError(msg)
    # Stores named by the module paths they had before stores/ got its rooms, then types named by their family's
    # public path (fusion.WeightedRRFJoiner), as Haystack registers them.
    registered_types(upgrade_moved_types(data))
    # A query pipeline saved before the channels dropped their documents' vectors answers as it did.
    upgrade_lean_documents(data)
    runtime = {k: store_overrides.pop(k) for k in RUNTIME_OVERRIDES if k in store_overrides}
    if runtime:
        _override_runtime(data, runtime)
    if store_overrides:
        graph_overrides = {k: store_overrides.pop(k) for k in GRAPH_OVERRIDES if k in store_overrides}
        _override_graph_stores(data, {**graph_overrides, "path": store_overrides.get("path")})
        if store_overrides:
            _override_stores(data, store_overrides)
    try:
        # Components that name one in-process Qdrant database get one store object (store_config).
        callbacks = DeserializationCallbacks(component_pre_init=_share_in_process_stores)
        return Pipeline.from_dict(data, callbacks=callbacks, allowed_modules=ALLOWED_MODULES)
    except Exception as err:
        msg = f"Could not build the pipeline from YAML: {err}"
        raise PipelineLoadError(msg) from err


def env_store_overrides() -> dict[str, Any]:
    """The environment settings that change a store's *class*, which a component cannot do for itself:
    ``$QDRANT_URL`` (qdrant-haystack's ``QdrantDocumentStore`` instead of the embedded store;
    ``$ADAPTIVE_QDRANT_SHARDS`` and ``$ADAPTIVE_QDRANT_REPLICATION`` for a cluster) and ``$NEO4J_URI`` (the Neo4j
    graph store). Folders, device and precision are not here: the components read ``$ADAPTIVE_QDRANT_PATH``,
    ``$ADAPTIVE_GRAPH_PATH``, ``$ADAPTIVE_DEVICE`` and ``$ADAPTIVE_PRECISION`` themselves (README, "Configuration")."""
    overrides: dict[str, Any] = {}
    if url := settings.text(QDRANT_URL_ENV):
        overrides["url"] = url
        # Cluster layout of a collection the server creates (ignored for an existing collection).
        if settings.is_set(QDRANT_SHARDS_ENV):
            overrides["shard_number"] = settings.whole(QDRANT_SHARDS_ENV, minimum=1)
        if settings.is_set(QDRANT_REPLICATION_ENV):
            overrides["replication_factor"] = settings.whole(QDRANT_REPLICATION_ENV, minimum=1)
    elif socket := settings.text(STORE_SOCKET_ENV):
        overrides["socket"] = socket  # a worker of `serve --workers N`: the index is open in the store host
    if graph_url := settings.text(NEO4J_URI_ENV):
        overrides["graph_url"] = graph_url
    return overrides


def load_pipeline(name_or_path: str | Path, **store_overrides: Any) -> Pipeline:
    """Load ``yaml/<name>.yaml`` (``"query"`` or ``"indexing"``) or any pipeline YAML file.

    A convenience over plain ``Pipeline.loads(text, allowed_modules=["adaptive_retrieval"])``, which works as well
    (the components read ``$ADAPTIVE_QDRANT_PATH`` & co. themselves): this one adds keyword overrides, and without
    them switches the stores to a server when ``$QDRANT_URL`` / ``$NEO4J_URI`` are set (a different store class,
    which a component cannot choose for itself).

    Usage::

        pipeline = load_pipeline("query")                        # $ADAPTIVE_QDRANT_PATH, else the per-user folder
        pipeline = load_pipeline("query", path="/data/qdrant")
        pipeline = load_pipeline("query", url="http://qdrant:6333")
    """
    # The environment chooses the stores unless the caller does; device, precision and model are not store settings.
    runtime = {k: store_overrides.pop(k) for k in RUNTIME_OVERRIDES if k in store_overrides}
    overrides = {**(store_overrides or env_store_overrides()), **runtime}
    return loads_pipeline(resolve_yaml(name_or_path).read_text(encoding="utf-8"), **overrides)


def _plain(node: Any) -> Any:
    """``node`` with tuples as lists: a ``!!python/tuple`` tag is not plain data (``yaml.safe_load`` refuses it)."""
    if isinstance(node, dict):
        return {k: _plain(v) for k, v in node.items()}
    if isinstance(node, (list, tuple)):
        return [_plain(v) for v in node]
    return node


def _unshared(node: Any) -> Any:
    """Copy without shared sub-objects, which YAML would write as ``&id001`` anchors that do not survive a load."""
    if isinstance(node, dict):
        return {k: _unshared(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_unshared(v) for v in node]
    if isinstance(node, tuple):
        return tuple(_unshared(v) for v in node)
    return node


def declared_io(pipeline: Pipeline) -> dict[str, dict[str, str]]:
    """The Hayhooks ``inputs``/``outputs`` for ``pipeline``: the first of :data:`HAYHOOKS_IO` whose sockets it has
    (``{}`` when none fits: such a YAML still loads in Haystack, only ``deploy-yaml`` needs the declaration)."""
    inputs, outputs = pipeline.inputs(), pipeline.outputs()

    def has(sockets: dict[str, dict[str, Any]], path: str) -> bool:
        component, socket = path.split(".", 1)
        return socket in sockets.get(component, {})

    for io in HAYHOOKS_IO:
        if all(has(inputs, p) for p in io["inputs"].values()) and all(has(outputs, p) for p in io["outputs"].values()):
            return io
    return {}


def dumps_pipeline(pipeline: Pipeline) -> str:
    """YAML text of ``pipeline`` with connections in a canonical order and the Hayhooks ``inputs``/``outputs``
    (:func:`declared_io`); plain data only (``yaml.safe_load`` reads it).

    Haystack emits connections in its graph's internal order, which changes after a load; sorting them makes
    ``dumps_pipeline(loads_pipeline(text)) == text`` hold for any text this function wrote.
    """
    data = _plain(_unshared(pipeline.to_dict()))
    data["connections"] = sorted(data["connections"], key=lambda c: (c["sender"], c["receiver"]))
    data.update(declared_io(pipeline))
    return yaml.safe_dump(data, sort_keys=True, allow_unicode=True)


def dump_pipeline(pipeline: Pipeline, path: str | Path) -> Path:
    """Write ``pipeline`` as canonical YAML (see :func:`dumps_pipeline`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_pipeline(pipeline), encoding="utf-8")
    return path
