"""Files that a parser can read only in part, for the tests of partial sources (indexing, stats, uploads)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def pdf_with_a_lost_page() -> bytes:
    """Three pages of which pypdf finds two: the page tree's second entry is not a page (pypdf skips it with a log
    line). Built with the hand-made PDF writer of the structure parsers' tests."""
    path = Path(__file__).parent / "components" / "indexing" / "test_structured_converter.py"
    spec = importlib.util.spec_from_file_location("structured_converter_tests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    data = module._pdf([*module.PAGES, module.PAGES[1]])
    return data.replace(b"/Kids [3 0 R 5 0 R 7 0 R]", b"/Kids [3 0 R 42 7 0 R]")
