"""Build the ONNX fp32 and INT8 variants of the packaged all-MiniLM-L6-v2 (idempotent).

python scripts/export_models.py [--models-dir DIR] [--source FOLDER --name NAME] [--force]
"""

from __future__ import annotations

import argparse
import logging

from adaptive_retrieval.components.models.export import export_model
from adaptive_retrieval.components.models.paths import DEFAULT_MODEL


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models-dir", default=None, help="parent folder (default: ./models or $ADAPTIVE_MODELS_DIR)")
    parser.add_argument("--source", default=None, help="local model folder (default: packaged all-MiniLM-L6-v2)")
    parser.add_argument("--name", default=DEFAULT_MODEL)
    parser.add_argument("--precisions", nargs="+", default=["fp32", "int8"])
    parser.add_argument("--force", action="store_true")
    parser.add_argument("--quiet", action="store_true", help="only log when something is built")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    # onnxruntime's quantiser logs every tensor at INFO on the root logger.
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger("adaptive_retrieval").setLevel(logging.WARNING if args.quiet else logging.INFO)
    out = export_model(args.source, args.models_dir, args.name, args.precisions, args.force)
    logging.getLogger("export_models").info("models ready in %s", out)


if __name__ == "__main__":
    main()
