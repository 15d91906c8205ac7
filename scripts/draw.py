"""Write the mermaid text of the pipelines and render it offline to SVG and PNG (and an HTML page), or rewrite
the README's diagrams.

python scripts/draw.py [--out build/diagrams] [--format mmd svg png html] [--detail overview sockets haystack]
python scripts/draw.py --readme [PAGE.md ...]   # rewrite the docs' overview diagrams from the pipelines

The first form is ``adaptive-retrieval draw`` with every format and both the overview and the socket-level
diagram by default. The renderer (mermaid-cli with Debian's chromium) is installed by ``scripts/setup``; nothing is
fetched from the network. ``--readme`` needs no renderer: it replaces the ```mermaid block between each pipeline's
marker comments in every page of ``DOC_DIAGRAMS`` (README.md, pipelines/README.md), or in the pages given
(``tests/pipelines/test_drawing.py`` fails while a page's copy differs from the code's).
"""

from __future__ import annotations

import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def rewrite_readme(path: Path, names: tuple[str, ...] | None = None) -> bool:
    """Regenerate a page's diagrams in place (``names``: the pipelines it shows; default: those of
    ``DOC_DIAGRAMS``, else the README's); ``True`` when the file changed."""
    from adaptive_retrieval.pipelines.diagrams.drawing import DOC_DIAGRAMS, mermaid_texts, readme_with_diagrams

    if names is None:
        key = path.resolve().relative_to(REPO).as_posix() if path.resolve().is_relative_to(REPO) else "README.md"
        names = DOC_DIAGRAMS.get(key, DOC_DIAGRAMS["README.md"])
    old = path.read_text(encoding="utf-8")
    new = readme_with_diagrams(old, mermaid_texts(names))
    if new != old:
        path.write_text(new, encoding="utf-8")
    return new != old


if __name__ == "__main__":
    argv = sys.argv[1:]
    if argv[:1] == ["--readme"]:
        from adaptive_retrieval.pipelines.diagrams.drawing import DOC_DIAGRAMS

        pages = [Path(a) for a in argv[1:]] or [REPO / page for page in DOC_DIAGRAMS]
        for page in pages:
            print(f"{page}: {'updated' if rewrite_readme(page) else 'already current'}")
        sys.exit(0)
    from adaptive_retrieval.pipelines.cli.main import main

    if "--format" not in argv:
        argv += ["--format", "mmd", "svg", "png", "html"]
    if "--detail" not in argv:
        argv += ["--detail", "overview", "sockets"]
    sys.exit(main(["draw", *argv]))
