"""Write the mermaid text of both pipelines and render it offline to SVG and PNG (and an HTML page).

python scripts/draw.py [--out build/diagrams] [--format mmd svg png html] [--style compact|detailed]

Same as ``adaptive-retrieval draw`` with every format by default. The renderer (mermaid-cli with Debian's
chromium) is installed by ``scripts/setup``; nothing is fetched from the network.
"""

from __future__ import annotations

import sys

from adaptive_retrieval.pipelines.cli import main

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--format" not in argv:
        argv += ["--format", "mmd", "svg", "png", "html"]
    sys.exit(main(["draw", *argv]))
