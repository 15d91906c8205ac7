"""Build the ONNX fp32 and INT8 variants of the packaged all-MiniLM-L6-v2 (idempotent): the same as
``adaptive-retrieval models build``, whose options it takes.

python scripts/export_models.py [--models-dir DIR] [--source FOLDER --name NAME] [--force] [--quiet]
"""

from __future__ import annotations

import sys

from adaptive_retrieval.pipelines.cli.main import main

if __name__ == "__main__":
    sys.exit(main(["models", "build", *sys.argv[1:]]))
