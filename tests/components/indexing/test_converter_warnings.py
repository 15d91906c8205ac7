"""pypdf's warnings stay inside the converter: counted per file and summarised in one INFO line, never passed to
the application's handlers, and only while the converter reads (nothing is filtered at import or afterwards).

pypdf logs on its modules' loggers (``pypdf._reader``, ``pypdf._cmap`` …), so a filter on the ``pypdf`` logger
alone lets them all through: the PDF here has a broken cross-reference offset, which pypdf repairs with warnings
from ``pypdf._reader``; an ARAGOG paper (when the shared data is present) pours ~50 KB of font warnings.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest

from adaptive_retrieval.components.indexing.structured_converter import StructuredConverter, _quiet
from tests.components.indexing.test_structured_converter import PAGES, _pdf

CONVERTER_LOGGER = "adaptive_retrieval.components.indexing.structured_converter"
ROBERTA = Path("/work/shared/data/aragog/papers/roberta.pdf")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def root_handler() -> logging.Handler:
    """A handler on the root logger, as an application's logging set-up would install."""
    handler = _Collect()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    yield handler
    root.removeHandler(handler)
    root.setLevel(level)


def _repaired_pdf() -> bytes:
    """A readable PDF whose ``startxref`` points to the wrong offset: pypdf rebuilds the table, warning twice."""
    data = _pdf(PAGES)
    return data[: data.rindex(b"startxref\n")] + b"startxref\n12\n%%EOF\n"


def _pypdf_records(handler: _Collect) -> list[logging.LogRecord]:
    return [r for r in handler.records if r.name.split(".")[0] == "pypdf"]


def test_pypdf_warnings_are_summarised_per_file(tmp_path: Path, root_handler: _Collect) -> None:
    from pypdf import PdfReader

    path = tmp_path / "repaired.pdf"
    path.write_bytes(_repaired_pdf())
    # Without the converter the same file does warn through the module loggers (what the filter must catch).
    PdfReader(str(path)).pages[0].extract_text()
    raw = _pypdf_records(root_handler)
    assert raw and {r.name for r in raw} == {"pypdf._reader"}
    root_handler.records.clear()

    docs = StructuredConverter().run(sources=[path, path])["documents"]
    assert len(docs) == 2 and docs[0].meta["title"] == "Structure of Documents"
    assert not _pypdf_records(root_handler)
    summaries = [r for r in root_handler.records if r.name == CONVERTER_LOGGER]
    assert len(summaries) == 2  # one line per file
    assert all(r.levelno == logging.INFO and "pypdf warning(s)" in r.getMessage() for r in summaries)
    assert f"{len(raw)} pypdf warning(s)" in summaries[0].getMessage()
    # Nothing stays installed: after the converter, pypdf's warnings reach the handlers again.
    assert not any(logging.getLogger(r.name).filters for r in raw)
    root_handler.records.clear()
    PdfReader(str(path)).pages[0].extract_text()
    assert len(_pypdf_records(root_handler)) == len(raw)


def test_other_threads_warnings_pass(root_handler: _Collect) -> None:
    def warn_elsewhere() -> None:
        logging.getLogger("pypdf._cmap").warning("from another thread")

    with _quiet("pypdf", "this file"):
        logging.getLogger("pypdf._cmap").warning("from this thread")
        other = threading.Thread(target=warn_elsewhere)
        other.start()
        other.join()
    assert [r.getMessage() for r in _pypdf_records(root_handler)] == ["from another thread"]


@pytest.mark.skipif(not ROBERTA.is_file(), reason="the shared ARAGOG papers are not on this machine")
def test_a_paper_with_odd_fonts_stays_quiet(root_handler: _Collect) -> None:
    StructuredConverter().run(sources=[ROBERTA])
    assert not _pypdf_records(root_handler)
    (summary,) = [r for r in root_handler.records if r.name == CONVERTER_LOGGER]
    assert "pypdf warning(s)" in summary.getMessage() and len(summary.getMessage()) < 500
