"""Load and save the pipelines' YAML, with Haystack 3's module allow-list handled in one place."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from haystack import Pipeline
from haystack.marshal import YamlMarshaller

import yaml

#: Modules outside ``haystack*`` the YAML may name (Haystack 3 refuses others unless allow-listed).
ALLOWED_MODULES = ["components", "pipelines", "haystack_integrations"]
YAML_DIR = Path(__file__).resolve().parents[1] / "yaml"


class PipelineLoadError(ValueError):
    """The YAML could not be parsed or does not describe a pipeline this package can build."""


def _override_stores(node: Any, overrides: dict[str, Any]) -> None:
    if isinstance(node, dict):
        store = node.get("document_store")
        if isinstance(store, dict) and "init_parameters" in store:
            params = store["init_parameters"]
            if overrides.get("url"):
                params["path"] = None
                params["location"] = None
            elif overrides.get("path"):
                params["url"] = None
                params["api_key"] = None
            params.update({k: v for k, v in overrides.items() if v is not None})
        for value in node.values():
            _override_stores(value, overrides)
    elif isinstance(node, list):
        for value in node:
            _override_stores(value, overrides)


def resolve_yaml(name_or_path: str | Path) -> Path:
    """``"query"``/``"indexing"`` name the packaged files in ``yaml/``; anything else is a path."""
    candidate = Path(name_or_path)
    if candidate.suffix not in (".yaml", ".yml"):
        candidate = YAML_DIR / f"{name_or_path}.yaml"
    if not candidate.exists():
        msg = f"Pipeline YAML '{candidate}' not found (run `python scripts/build_yaml.py` to write yaml/)."
        raise FileNotFoundError(msg)
    return candidate


def loads_pipeline(text: str, **store_overrides: Any) -> Pipeline:
    """Build a pipeline from YAML text.

    :param store_overrides: document-store init parameters to set on every store in the YAML, e.g.
        ``path="/data/qdrant"`` or ``url="http://qdrant:6333"`` (the other one is cleared).
    :raises PipelineLoadError: for malformed YAML or a YAML that is not a pipeline.
    """
    try:
        # Haystack's marshaller: safe loading plus the tuple tag its own dumps emit.
        data = YamlMarshaller().unmarshal(text)
    except yaml.YAMLError as err:
        msg = f"Malformed pipeline YAML: {err}"
        raise PipelineLoadError(msg) from err
    if not isinstance(data, dict) or not isinstance(data.get("components"), dict):
        msg = "Pipeline YAML must be a mapping with a 'components' section"
        raise PipelineLoadError(msg)
    if store_overrides:
        _override_stores(data, store_overrides)
    try:
        return Pipeline.from_dict(data, allowed_modules=ALLOWED_MODULES)
    except Exception as err:
        msg = f"Could not build the pipeline from YAML: {err}"
        raise PipelineLoadError(msg) from err


def load_pipeline(name_or_path: str | Path, **store_overrides: Any) -> Pipeline:
    """Load ``yaml/<name>.yaml`` (``"query"`` or ``"indexing"``) or any pipeline YAML file.

    Usage::

        pipeline = load_pipeline("query")                        # local Qdrant at .adaptive/qdrant
        pipeline = load_pipeline("query", url="http://qdrant:6333")
    """
    return loads_pipeline(resolve_yaml(name_or_path).read_text(encoding="utf-8"), **store_overrides)


def _unshared(node: Any) -> Any:
    """Copy without shared sub-objects, which YAML would write as ``&id001`` anchors that do not survive a load."""
    if isinstance(node, dict):
        return {k: _unshared(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_unshared(v) for v in node]
    if isinstance(node, tuple):
        return tuple(_unshared(v) for v in node)
    return node


def dumps_pipeline(pipeline: Pipeline) -> str:
    """YAML text of ``pipeline`` with connections in a canonical order.

    Haystack emits connections in its graph's internal order, which changes after a load; sorting them makes
    ``dumps_pipeline(loads_pipeline(text)) == text`` hold for any text this function wrote.
    """
    data = _unshared(pipeline.to_dict())
    data["connections"] = sorted(data["connections"], key=lambda c: (c["sender"], c["receiver"]))
    return YamlMarshaller().marshal(data)


def dump_pipeline(pipeline: Pipeline, path: str | Path) -> Path:
    """Write ``pipeline`` as canonical YAML (see :func:`dumps_pipeline`)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps_pipeline(pipeline), encoding="utf-8")
    return path
