"""Mermaid diagrams of the two pipelines, rendered offline to SVG/PNG (mermaid-cli driving Debian's chromium)
or to a self-contained HTML page (mermaid.js from ``node_modules``).

Haystack's ``Pipeline.draw``/``show`` post the graph to mermaid.ink, which fails offline; everything here runs
locally. ``scripts/setup`` installs the renderer: ``apt-get install chromium`` and ``npm ci`` in ``scripts/renderer/``
(its ``package.json`` pins ``@mermaid-js/mermaid-cli`` and ``mermaid``).

Usage::

    from adaptive_retrieval.pipelines.diagrams.drawing import draw_pipelines, mermaid_texts

    texts = mermaid_texts()                                  # {"indexing": "flowchart TD ...", "query": ...}
    sockets = mermaid_texts(detail="sockets")                # every socket-level connection
    paths = draw_pipelines("build/diagrams", formats=("mmd", "svg", "png"), details=("overview", "sockets"))
"""

from __future__ import annotations

import html
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from adaptive_retrieval.components import settings
from adaptive_retrieval.components.errors import AdaptiveRetrievalError

if TYPE_CHECKING:
    from haystack import Pipeline

logger = logging.getLogger(__name__)

PIPELINE_NAMES = ("indexing", "query")
REPO_ROOT = Path(__file__).resolve().parents[2]
#: Where ``npm ci`` puts the renderer; ``$ADAPTIVE_NODE_MODULES`` points elsewhere.
NODE_MODULES_ENV = "ADAPTIVE_NODE_MODULES"
#: Chromium binary for mermaid-cli (the variable puppeteer itself reads); default: ``chromium`` on ``$PATH``.
CHROMIUM_ENV = "PUPPETEER_EXECUTABLE_PATH"
FORMATS = ("mmd", "svg", "png", "pdf", "html")
#: Page width (CSS px) mermaid-cli renders on; wider diagrams would be scaled down (the query pipeline's socket
#: diagram, six channels side by side, is about 4,200 px).
PAGE_WIDTH = 6144
#: Levels of detail (see :mod:`~adaptive_retrieval.pipelines.diagrams.mermaid`); kept here so ``--help`` needs no
#: Haystack.
DETAILS = ("overview", "sockets", "haystack")
Detail = Literal["overview", "sockets", "haystack"]
#: Chromium flags for mermaid-cli: offline. ``--no-sandbox``: CI and containers run as root, where chromium refuses
#: its sandbox. The rest keep the browser from calling out (measured with strace: without them it looked up Google
#: update, account and sync hosts): no background networking, component updates, sync, first-run or domain
#: reliability reports, every host name resolving to nothing, and a proxy on a closed loopback port for anything
#: else. The page is a local file; nothing needs the network. Each render also gets a fresh profile folder.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--host-resolver-rules=MAP * ~NOTFOUND",
    "--proxy-server=http://127.0.0.1:9",
    "--proxy-bypass-list=<-loopback>",
]
#: Rendered SVGs kept in memory by :func:`rendered_svg` (each is 30–150 KB).
SVG_CACHE_SIZE = 16
_SVG_CACHE: OrderedDict[str, bytes] = OrderedDict()
_RENDER_LOCK = threading.Lock()


#: The renderer's npm packages (``scripts/renderer/package.json`` pins the same; a test checks they agree): what a
#: pip install, which has no ``scripts/``, installs itself.
RENDERER_PACKAGES = ("@mermaid-js/mermaid-cli@11.17.0", "mermaid@11.14.0")


class RendererNotInstalledError(AdaptiveRetrievalError, RuntimeError):
    """mermaid-cli or chromium is missing; the message says how to install them (``scripts/setup`` in a checkout,
    ``npm`` and ``$ADAPTIVE_NODE_MODULES`` after a pip install)."""


def in_checkout() -> bool:
    """Whether this package runs from a source checkout (which has ``scripts/setup``), not from a pip install."""
    return (REPO_ROOT / "scripts" / "setup").is_file()


def node_modules() -> Path:
    """The ``node_modules`` folder holding mermaid-cli and mermaid.js."""
    return Path(settings.text(NODE_MODULES_ENV) or REPO_ROOT / "scripts" / "renderer" / "node_modules")


def renderer_install_hint(checkout: bool | None = None) -> str:
    """How to install the renderer: ``scripts/setup`` in a checkout; after a pip install (no ``scripts/``), ``npm``
    into a folder of one's choice named by ``$ADAPTIVE_NODE_MODULES``."""
    if checkout if checkout is not None else in_checkout():
        return "run scripts/setup (it runs `npm ci` in scripts/renderer/ for the offline diagram renderer)"
    return (
        "install it with npm into a folder of your choice, e.g. `PUPPETEER_SKIP_DOWNLOAD=1 npm install --prefix "
        f"~/.local/share/adaptive-retrieval/renderer {' '.join(RENDERER_PACKAGES)}`, then set "
        f"{NODE_MODULES_ENV}=~/.local/share/adaptive-retrieval/renderer/node_modules (`draw --format mmd` needs "
        "no renderer)"
    )


def pipeline_for_drawing(name_or_path: str | Path) -> Pipeline:
    """Build ``yaml/<name>.yaml`` (or a YAML path) without connecting to its store: only the graph is needed."""
    # Imported here: the CLI reads this module's constants for --help, which must not wait for Haystack.
    from adaptive_retrieval.pipelines.yaml_io import loads_pipeline, resolve_yaml

    return loads_pipeline(resolve_yaml(name_or_path).read_text(encoding="utf-8"))


def mermaid_texts(names: Iterable[str] = PIPELINE_NAMES, detail: Detail = "overview") -> dict[str, str]:
    """``{name: mermaid text}`` for the packaged pipelines (or YAML paths), built from the pipeline objects.

    :param detail: ``overview`` (grouped, for reading at a glance), ``sockets`` (every connection) or ``haystack``
        (every connection with its type).
    """
    from adaptive_retrieval.pipelines.diagrams.mermaid import pipeline_to_mermaid

    return {Path(str(n)).stem: pipeline_to_mermaid(pipeline_for_drawing(n), detail=detail) for n in names}


def mermaid_js() -> Path:
    """mermaid.js for browsers (served by the REST app, inlined into the HTML file)."""
    path = node_modules() / "mermaid" / "dist" / "mermaid.min.js"
    if not path.is_file():
        msg = f"mermaid.js is not installed ({path} is missing): {renderer_install_hint()}"
        raise RendererNotInstalledError(msg)
    return path


def find_renderer() -> tuple[Path, Path]:
    """Paths of the ``mmdc`` command and the chromium it drives."""
    mmdc = node_modules() / ".bin" / "mmdc"
    if not mmdc.exists():
        msg = f"mermaid-cli is not installed ({mmdc} is missing): {renderer_install_hint()}"
        raise RendererNotInstalledError(msg)
    chromium = settings.text(CHROMIUM_ENV) or shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium or not Path(chromium).exists():
        how = "install it (e.g. apt-get install chromium)"
        how = "run scripts/setup (apt-get install chromium)" if in_checkout() else how
        msg = f"chromium is not installed: {how} or set {CHROMIUM_ENV} to a Chromium binary"
        raise RendererNotInstalledError(msg)
    if shutil.which("node") is None:
        msg = "node is not on PATH: mermaid-cli needs Node.js"
        raise RendererNotInstalledError(msg)
    return mmdc, Path(chromium)


def html_page(texts: dict[str, str], script_src: str | None = None, title: str = "Adaptive retrieval pipelines") -> str:
    """An HTML page that renders each mermaid text in the browser with mermaid.js.

    :param script_src: URL of mermaid.js (the REST app serves it); ``None`` inlines the local copy so the file
        opens offline anywhere.
    """
    if script_src is None:
        script = f"<script>{mermaid_js().read_text(encoding='utf-8')}</script>"
    else:
        script = f'<script src="{html.escape(script_src)}"></script>'
    sections = "\n".join(
        f'<section id="{html.escape(name)}"><h2>{html.escape(name)}</h2>\n'
        # Escaped: the labels hold <br/> and <i>, which mermaid reads back from the element's text.
        f'<pre class="mermaid">\n{html.escape(text)}</pre></section>'
        for name, text in texts.items()
    )
    return (
        "<!doctype html>\n"
        f'<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>\n'
        "<style>body{font-family:sans-serif;margin:2em}pre.mermaid{background:#fff}</style>\n"
        f"{script}\n"
        "</head><body>\n"
        f"<h1>{html.escape(title)}</h1>\n{sections}\n"
        "<script>mermaid.initialize({startOnLoad: true, securityLevel: 'strict'});</script>\n"
        "</body></html>\n"
    )


def render(text: str, out: str | Path, timeout: float = 120.0) -> Path:
    """Render mermaid ``text`` to ``out`` (``.svg``, ``.png`` or ``.pdf``) with mermaid-cli, offline.

    :raises RendererNotInstalledError: when mermaid-cli or chromium is missing.
    :raises RuntimeError: when mermaid-cli fails (its message is included).
    """
    out = Path(out)
    if out.suffix not in (".svg", ".png", ".pdf"):
        msg = f"Cannot render to '{out.suffix}': use .svg, .png or .pdf"
        raise ValueError(msg)
    mmdc, chromium = find_renderer()
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mmdc-") as tmp:
        source = Path(tmp) / "diagram.mmd"
        source.write_text(text, encoding="utf-8")
        config = Path(tmp) / "puppeteer.json"
        profile = {"executablePath": str(chromium), "args": CHROMIUM_ARGS, "userDataDir": str(Path(tmp) / "profile")}
        config.write_text(json.dumps(profile))
        # A page wider than any diagram: mermaid-cli shrinks a diagram wider than the page, text and all, so a
        # PNG keeps the diagram's own size (16 px text) instead of squeezing it into the default 800 px.
        command = [str(mmdc), "-q", "-i", str(source), "-o", str(out), "-p", str(config), "-b", "white"]
        command += ["-w", str(PAGE_WIDTH)]
        env = {**os.environ, "PUPPETEER_SKIP_DOWNLOAD": "1", CHROMIUM_ENV: str(chromium)}
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, check=False)
        except subprocess.TimeoutExpired as err:
            msg = f"mermaid-cli did not finish rendering {out.name} within {timeout:.0f} s"
            raise RuntimeError(msg) from err
    if done.returncode != 0 or not out.exists() or out.stat().st_size == 0:
        msg = f"mermaid-cli failed to render {out.name} (exit {done.returncode}): {done.stderr.strip()[-2000:]}"
        raise RuntimeError(msg)
    logger.info("Rendered %s", out)
    return out


def rendered_svg(text: str) -> bytes:
    """The SVG of mermaid ``text``, rendered once per distinct text and kept in this process's memory (the last
    :data:`SVG_CACHE_SIZE`); nothing is written outside a private temporary folder that is removed at once.

    Rendering starts chromium (~2 s): one render at a time.
    """
    with _RENDER_LOCK:
        if text in _SVG_CACHE:
            _SVG_CACHE.move_to_end(text)
            return _SVG_CACHE[text]
        with tempfile.TemporaryDirectory(prefix="adaptive-svg-") as tmp:
            svg = render(text, Path(tmp) / "diagram.svg").read_bytes()
        _SVG_CACHE[text] = svg
        while len(_SVG_CACHE) > SVG_CACHE_SIZE:
            _SVG_CACHE.popitem(last=False)
        return svg


def draw_pipelines(
    out_dir: str | Path,
    names: Iterable[str] = PIPELINE_NAMES,
    formats: Iterable[str] = ("mmd", "svg"),
    details: Iterable[Detail] = ("overview",),
) -> list[Path]:
    """Write ``<name>.<format>`` (the overview) and ``<name>.<detail>.<format>`` (other details) for each pipeline
    into ``out_dir``; ``html`` writes one ``pipelines.html`` holding them all.

    :returns: the files written, in order.
    """
    formats, details = list(formats), list(details)
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        msg = f"Unknown diagram format(s) {unknown}: choose from {list(FORMATS)}"
        raise ValueError(msg)
    unknown = sorted(set(details) - set(DETAILS))
    if unknown:
        msg = f"Unknown diagram detail(s) {unknown}: choose from {list(DETAILS)}"
        raise ValueError(msg)
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = list(names)
    page: dict[str, str] = {}
    written: list[Path] = []
    for detail in details:
        for name, text in mermaid_texts(names, detail=detail).items():
            stem = name if detail == "overview" else f"{name}.{detail}"
            page[name if detail == "overview" else f"{name} ({detail})"] = text
            for fmt in formats:
                if fmt == "mmd":
                    path = out_dir / f"{stem}.mmd"
                    path.write_text(text, encoding="utf-8")
                    written.append(path)
                elif fmt != "html":
                    written.append(render(text, out_dir / f"{stem}.{fmt}"))
    if "html" in formats:
        path = out_dir / "pipelines.html"
        path.write_text(html_page(page), encoding="utf-8")
        written.append(path)
    return written


#: Pipelines whose overview the README embeds.
#: The documentation pages that carry pipeline diagrams, relative to the repository root, and the pipelines each
#: one shows (``scripts/draw.py --readme`` rewrites them; ``tests/pipelines/test_drawing.py`` fails while one is stale).
DOC_DIAGRAMS: dict[str, tuple[str, ...]] = {"README.md": ("query",), "pipelines/README.md": ("query", "indexing")}
#: Every pipeline some page draws.
README_PIPELINES = ("query", "indexing")
#: A page holds each pipeline's overview between these two lines.
README_BEGIN = "<!-- diagram:{name} begins: generated from the pipeline by `python scripts/draw.py --readme` -->"
README_END = "<!-- diagram:{name} ends -->"


def readme_with_diagrams(readme: str, texts: dict[str, str]) -> str:
    """``readme`` (a documentation page) with the block between each named pipeline's markers replaced by its
    mermaid text (a ```mermaid fence).

    :raises ValueError: when the page lacks a pipeline's markers.
    """
    for name, text in texts.items():
        begin, end = README_BEGIN.format(name=name), README_END.format(name=name)
        pattern = re.compile(re.escape(begin) + r"\n.*?" + re.escape(end), re.DOTALL)
        match = pattern.search(readme)
        if match is None:
            msg = f"The page has no block for the {name} diagram: add the two lines\n{begin}\n{end}"
            raise ValueError(msg)
        block = f"{begin}\n```mermaid\n{text}```\n{end}"
        readme = readme[: match.start()] + block + readme[match.end() :]
    return readme
