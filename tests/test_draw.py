"""Offline diagrams: mermaid text of both pipelines rendered for real to SVG/PNG by mermaid-cli and chromium."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from adaptive_retrieval.pipelines.drawing import (
    PIPELINE_NAMES,
    RendererNotInstalledError,
    draw_pipelines,
    find_renderer,
    mermaid_texts,
    pipeline_for_drawing,
    render,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def renderer() -> None:
    """Skip where the renderer is missing on a developer machine; in CI (which runs scripts/setup) fail."""
    try:
        find_renderer()
    except RendererNotInstalledError as err:
        if os.environ.get("CI"):
            raise
        pytest.skip(f"offline renderer missing: {err}")


def _components(name: str) -> list[str]:
    return list(pipeline_for_drawing(name).graph.nodes)


def test_draw_script_renders_both_pipelines_naming_every_component(renderer: None, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "draw.py"), "--out", str(tmp_path), "--format", "mmd", "svg", "png"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    texts = mermaid_texts()
    for name in PIPELINE_NAMES:
        assert (tmp_path / f"{name}.mmd").read_text(encoding="utf-8") == texts[name]
        svg = (tmp_path / f"{name}.svg").read_text(encoding="utf-8")
        assert svg.lstrip().startswith("<svg") and "flowchart" in svg
        components = _components(name)
        assert len(components) >= 5
        missing = [c for c in components if f">{c}<" not in svg]
        assert not missing, f"{name}.svg does not name {missing}"
        png = (tmp_path / f"{name}.png").read_bytes()
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 10_000
    assert {p.name for p in tmp_path.iterdir()} == {f"{n}.{f}" for n in PIPELINE_NAMES for f in ("mmd", "svg", "png")}


def test_detailed_style_renders_socket_types(renderer: None, tmp_path: Path) -> None:
    text = mermaid_texts(["query"], style="detailed")["query"]
    svg = render(text, tmp_path / "query.svg").read_text(encoding="utf-8")
    assert all(c in svg for c in _components("query"))
    assert "List[Document]" in svg or "list[Document]" in svg


def test_html_file_is_self_contained(renderer: None, tmp_path: Path) -> None:
    (page,) = draw_pipelines(tmp_path, formats=["html"])
    html = page.read_text(encoding="utf-8")
    assert html.count('<pre class="mermaid">') == 2 and "<script src=" not in html
    assert "mermaid.initialize" in html and len(html) > 100_000
    for name in PIPELINE_NAMES:
        assert all(f"{c}[&quot;{c}" in html for c in _components(name))


def test_renderer_failure_is_reported(renderer: None, tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="mermaid-cli failed"):
        render("flowchart TD\n  a -->", tmp_path / "broken.svg")
    assert not (tmp_path / "broken.svg").exists()


def test_bad_formats_and_missing_renderer_are_clear(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match=r"\.svg, \.png or \.pdf"):
        render("flowchart TD\n  a --> b", tmp_path / "x.gif")
    with pytest.raises(ValueError, match="Unknown diagram format"):
        draw_pipelines(tmp_path, formats=["gif"])
    monkeypatch.setenv("ADAPTIVE_NODE_MODULES", str(tmp_path / "empty"))
    with pytest.raises(RendererNotInstalledError, match="scripts/setup"):
        render("flowchart TD\n  a --> b", tmp_path / "x.svg")
