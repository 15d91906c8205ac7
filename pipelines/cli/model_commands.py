"""``adaptive-retrieval models build | list | verify``: the ONNX models the pipelines run, built by the package.

Usage::

    adaptive-retrieval models build    # packaged all-MiniLM-L6-v2 -> fp32 + INT8 + manifest.json ([models] extra)
    adaptive-retrieval models list     # the models folder, and what each model in it holds
    adaptive-retrieval models verify   # files, checksums, dimension, embeddings vs the shipped reference
    adaptive-retrieval models verify --model ~/fastembed/all-MiniLM-L6-v2-onnx   # a folder built elsewhere
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, TextIO

from adaptive_retrieval.components.errors import AdaptiveRetrievalError
from adaptive_retrieval.components.models.paths import (
    DEFAULT_MODEL,
    PRECISION_FILES,
    build_hint,
    default_models_dir,
    model_bytes,
    models_dir_origin,
)

EXIT_ERROR = 1


class ModelCommandError(AdaptiveRetrievalError):
    """A user-facing error of a models command (printed as ``error: <message>``)."""


def _models_dir(args: argparse.Namespace) -> tuple[Path, str]:
    if args.models_dir:
        return Path(args.models_dir).expanduser().resolve(), "--models-dir"
    return models_dir_origin()


def _model_folder(args: argparse.Namespace) -> Path:
    """``--model`` as a folder (a path, or a name in the models folder)."""
    candidate = Path(args.model).expanduser()
    if candidate.is_dir():
        return candidate.resolve()
    return _models_dir(args)[0] / args.model


def _mb(path: Path) -> str:
    return f"{model_bytes(path) / 1e6:.1f} MB"


def _summary(report: dict[str, Any]) -> str:
    parts = []
    source = report.get("source") or {}
    origin = f" ({source.get('package')} {source.get('version')})" if source.get("package") else ""
    parts.append(
        {"matches": f"manifest matches{origin}", "absent": "no manifest (built elsewhere)"}.get(
            report.get("manifest", ""), "manifest differs"
        )
    )
    for precision, checked in report["precisions"].items():
        cosine = f", cosine {checked['min_cosine']:.4f} to the reference" if "min_cosine" in checked else ""
        parts.append(f"{precision}: dimension {checked.get('dimension')}{cosine}")
    return "; ".join(parts)


def cmd_build(args: argparse.Namespace, out: TextIO) -> int:
    """Build the ONNX fp32 and INT8 files of the packaged all-MiniLM-L6-v2 (or ``--source``) and their manifest,
    then verify them."""
    import sys

    from tqdm import tqdm

    from adaptive_retrieval.components.models.export import PACKAGED_SOURCE, export_model
    from adaptive_retrieval.components.models.verify import verify_model

    models_dir, why = _models_dir(args)
    bar = None

    def progress(step: str, done: int, total: int) -> None:
        nonlocal bar
        if bar is None:
            bar = tqdm(total=total, desc=f"building {args.name}", unit="step", file=sys.stderr, leave=False)
        bar.update(done - bar.n)
        bar.set_postfix_str(step)

    target = models_dir / args.name
    already = all((target / PRECISION_FILES[p]).exists() for p in args.precisions) and not args.force
    if not (args.quiet and already):
        print(f"building {args.name} from {args.source or PACKAGED_SOURCE} in {target} ({why})", file=out)
    try:
        folder = export_model(args.source, models_dir, args.name, args.precisions, args.force, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    use_reference = args.name == DEFAULT_MODEL and args.source is None
    report = verify_model(folder, use_reference=use_reference) if not (args.quiet and already) else None
    if report is not None:
        if not report["ok"]:
            raise ModelCommandError(f"{folder} was built but does not verify: {'; '.join(report['problems'])}")
        print(f"ready: {folder} ({_summary(report)})", file=out)
    return 0


def cmd_list(args: argparse.Namespace, out: TextIO) -> int:
    """Show the models folder (and why it is that one) and, per model, its ONNX files and manifest."""
    from adaptive_retrieval.components.models.manifest import read_manifest

    models_dir, why = _models_dir(args)
    rows = []
    for folder in sorted(p for p in models_dir.iterdir() if p.is_dir()) if models_dir.is_dir() else []:
        files = {p: folder / name for p, name in PRECISION_FILES.items() if (folder / name).is_file()}
        try:
            manifest = read_manifest(folder)
        except ValueError:
            manifest = {"source": "unreadable manifest"}
        rows.append(
            {
                "name": folder.name,
                "folder": str(folder),
                "precisions": {p: _mb(f) for p, f in files.items()},
                "source": (manifest or {}).get("source"),
                "built": (manifest or {}).get("built"),
            }
        )
    if args.json:
        print(json.dumps({"models_dir": str(models_dir), "origin": why, "models": rows}, indent=2), file=out)
        return 0
    print(f"models folder: {models_dir} ({why})", file=out)
    for row in rows:
        files = ", ".join(f"{p} {size}" for p, size in row["precisions"].items()) or "no ONNX file"
        source = row["source"] or "no manifest"
        if isinstance(source, dict):
            source = " ".join(str(source[k]) for k in ("package", "version", "folder") if source.get(k))
        print(
            f"  {row['name']}: {files}; from {source}" + (f", built {row['built']}" if row["built"] else ""), file=out
        )
    if not rows:
        print(f"  no models yet. {build_hint()}.", file=out)
    return 0


def cmd_verify(args: argparse.Namespace, out: TextIO) -> int:
    """Check a model folder: tokenizer and ONNX files, checksums against its manifest, dimension, and the embeddings
    of reference sentences against the shipped all-MiniLM-L6-v2 vectors (exits 1 when something is wrong)."""
    from adaptive_retrieval.components.models.verify import verify_model

    folder = _model_folder(args)
    if not folder.is_dir():
        raise ModelCommandError(f"Model folder '{folder}' not found. {build_hint()}.")
    report = verify_model(folder, use_reference=not args.no_reference)
    if args.json:
        print(json.dumps(report, indent=2), file=out)
    elif report["ok"]:
        print(f"ok: {folder} ({_summary(report)})", file=out)
    if not report["ok"]:
        raise ModelCommandError(f"{folder}: {'; '.join(report['problems'])}")
    return 0


def add_models_parser(sub: Any) -> None:
    """Register ``models build | list | verify`` on the CLI's subcommands."""
    models = sub.add_parser(
        "models",
        help="build, list and verify the ONNX models",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = models.add_subparsers(dest="models_command", required=True, metavar="{build,list,verify}")
    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--models-dir",
        default=None,
        metavar="DIR",
        help=f"models folder (default: $ADAPTIVE_MODELS_DIR, else {default_models_dir()})",
    )

    p = actions.add_parser(
        "build", parents=[where], help="build the ONNX models (needs the 'models' extra)", description=cmd_build.__doc__
    )
    p.add_argument(
        "--source",
        default=None,
        metavar="FOLDER",
        help="a sentence-transformers folder (default: the packaged all-MiniLM-L6-v2)",
    )
    p.add_argument("--name", default=DEFAULT_MODEL, help=f"model folder name (default {DEFAULT_MODEL})")
    p.add_argument("--precisions", nargs="+", choices=["fp32", "int8", "fp16"], default=["fp32", "int8"])
    p.add_argument("--force", action="store_true", help="rebuild even when the files exist")
    p.add_argument("--quiet", action="store_true", help="print nothing when the models are already built")
    p.set_defaults(func=cmd_build)

    p = actions.add_parser(
        "list", parents=[where], help="the models folder and its models", description=cmd_list.__doc__
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_list)

    p = actions.add_parser("verify", parents=[where], help="check a model folder", description=cmd_verify.__doc__)
    p.add_argument(
        "--model",
        default=DEFAULT_MODEL,
        metavar="DIR|NAME",
        help=f"a model folder, or a name in the models folder (default {DEFAULT_MODEL})",
    )
    p.add_argument("--no-reference", action="store_true", help="skip the embedding check (a model of your own)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)
