"""Write the mermaid text of the pipelines and render it offline to SVG and PNG (and an HTML page), or rewrite
the README's diagrams.

python scripts/draw.py [--out build/diagrams] [--format mmd svg png html] [--detail overview sockets haystack]
python scripts/draw.py --readme [README.md]     # rewrite the README's overview diagrams from the pipelines

The first form is ``adaptive-retrieval draw`` with every format and both the overview and the socket-level
diagram by default. The renderer (mermaid-cli with Debian's chromium) is installed by ``scripts/setup``; nothing is
fetched from the network. ``--readme`` needs no renderer: it replaces the ```mermaid block between each pipeline's
marker comments (``tests/test_draw.py`` fails while the README's copy differs from the code's).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def rewrite_readme(path: Path) -> bool:
    """Regenerate the README's diagrams in place; ``True`` when the file changed."""
    from adaptive_retrieval.pipelines.drawing import README_PIPELINES, mermaid_texts, readme_with_diagrams

    old = path.read_text(encoding="utf-8")
    new = readme_with_diagrams(old, mermaid_texts(README_PIPELINES))
    if new != old:
        path.write_text(new, encoding="utf-8")
    return new != old


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--readme"]:
        readme = Path(argv[1]) if len(argv) > 1 else REPO / "README.md"
        print(f"{readme}: {'updated' if rewrite_readme(readme) else 'already current'}")
        sys.exit(0)
    from adaptive_retrieval.pipelines.cli import main

    if "--format" not in argv:
        argv += ["--format", "mmd", "svg", "png", "html"]
    if "--detail" not in argv:
        argv += ["--detail", "overview", "sockets"]
    sys.exit(main(["draw", *argv]))
