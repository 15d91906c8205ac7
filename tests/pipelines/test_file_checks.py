"""One content check for every way in: binary, NUL-holding, control-heavy, non-UTF-8 and empty files are refused
by ``content_problem``, which REST uploads (``save_upload``) and ``index_paths`` (CLI, Python) both call."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from adaptive_retrieval.pipelines.file_checks import MAX_CONTROL_SHARE, content_problem
from adaptive_retrieval.pipelines.serving.wrapper_support import UploadRejectedError, save_upload

ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(8) + b"\x02\x00\x3e\x00\x01\x00\x00\x00" + bytes(range(256)) * 4

REFUSED = [
    ("random.md", random.Random(0).randbytes(20_000), "NUL bytes"),
    ("random-no-nul.md", bytes(b or 1 for b in random.Random(1).randbytes(20_000)), "not UTF-8"),
    ("ls.html", ELF, "NUL bytes"),
    ("nul.md", b"# Title\n\nsome\x00text\n", "NUL bytes"),
    ("controls.txt", ("text " + "\x01\x02\x1b" * 20).encode(), "control characters"),
    ("latin.txt", "café crème".encode("latin-1"), "not UTF-8"),
    ("empty.md", b"", "is empty"),
    ("blank.md", b"  \n\t\n", "is empty"),
    ("fake.pdf", b"hello", "not a PDF"),
    ("odd-utf16.txt", b"\xff\xfe" + "text".encode("utf-16-le") + b"\x00", "UTF-16 byte-order mark"),
    ("bom-only.md", b"\xff\xfe", "is empty"),
    ("utf16-controls.md", b"\xff\xfe" + "\x01\x02\x03".encode("utf-16-le") * 50, "control characters"),
]
ACCEPTED = [
    ("notes.md", b"# Notes\n\nPlain text, tabs\tand form feeds\f too.\r\n"),
    ("bom.md", "\ufeff# Title\n\ntext".encode()),
    ("escape.txt", ("word " * 400 + "\x1b[0m").encode()),  # one escape sequence in a long text
    ("cjk.md", "# 标题\n\n内容。Кириллица.".encode()),
    ("paper.pdf", b"%PDF-1.4\n%%EOF"),
    # Issue 41 #11: "Unicode" text from Windows editors was refused as binary (a NUL byte in every ASCII letter).
    ("utf16le.txt", "\ufeffNotes: café, 标题".encode("utf-16-le")),
    ("utf16be.md", "\ufeff# Notes\n\ncafé".encode("utf-16-be")),
    ("utf32.html", "<p>café</p>".encode("utf-32")),
]


@pytest.mark.parametrize(("name", "data", "reason"), REFUSED, ids=[c[0] for c in REFUSED])
def test_content_problem_refuses_what_is_not_text(name: str, data: bytes, reason: str) -> None:
    problem = content_problem(name, data)
    assert problem is not None and reason in problem and f"'{name}'" in problem


@pytest.mark.parametrize(("name", "data"), ACCEPTED, ids=[c[0] for c in ACCEPTED])
def test_content_problem_accepts_text(name: str, data: bytes) -> None:
    assert content_problem(name, data) is None


def test_the_control_share_is_a_share() -> None:
    text = "x" * 1000
    under = text + "\x01" * int(MAX_CONTROL_SHARE * 1000)
    assert content_problem("a.txt", under.encode()) is None
    assert content_problem("a.txt", (under + "\x01" * 5).encode()) is not None


@pytest.mark.parametrize(("name", "data", "reason"), REFUSED, ids=[c[0] for c in REFUSED])
def test_rest_uploads_refuse_the_same_files(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    with pytest.raises(UploadRejectedError, match=reason):
        save_upload(tmp_path, name, data)
    assert not (tmp_path / name).exists()
