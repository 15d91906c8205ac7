"""Uploads keep every file: distinct names stay distinct files (letters of every script kept, NFC, long UTF-8 names
under the file-system limit), a clash inside one request is a 400 with nothing written, the response says what each
file was stored as and what it replaced, and a source is deleted by the name it was uploaded with — over real HTTP
(uvicorn on loopback) and with the CLI.
"""

from __future__ import annotations

import io
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
from adaptive_retrieval.pipelines.upload_names import MAX_NAME_BYTES, UploadNameError, original_name, stored_name

NFD = unicodedata.normalize("NFD", "über.md")


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("über.md", "über.md"),
        (NFD, "über.md"),
        ("заметки.md", "заметки.md"),
        ("笔记.md", "笔记.md"),
        ("a b (1).md", "a b (1).md"),
        ("a?b.md", "a%3Fb.md"),
        ("100%.md", "100%25.md"),
        ("📝 notes.md", "%F0%9F%93%9D notes.md"),
        (".hidden.md", "%2Ehidden.md"),
        ("dir/sub/x.md", "x.md"),
        ("C:\\docs\\y.md", "y.md"),
        ("  spaced.md  ", "spaced.md"),
        ("REPORT.PDF", "REPORT.PDF"),
    ],
)
def test_stored_names(sent: str, stored: str) -> None:
    assert stored_name(sent) == stored
    assert (
        original_name(stored_name(sent)) == unicodedata.normalize("NFC", sent.replace("\\", "/")).split("/")[-1].strip()
    )


def test_distinct_names_stay_distinct_and_fit_the_file_system() -> None:
    names = ["über.md", "äber.md", "uber.md", "заметки.md", "записки.md", "笔记.md", "日记.md", "a?b.md", "a*b.md"]
    names += ["é" * 200 + "1.md", "é" * 200 + "2.md", "中" * 120 + ".md", "x" * 300 + ".md"]
    stored = [stored_name(n) for n in names]
    assert len(set(stored)) == len(names), stored
    assert all(len(s.encode()) <= MAX_NAME_BYTES for s in stored), [len(s.encode()) for s in stored]
    assert stored_name("é" * 200 + "1.md") == stored_name("é" * 200 + "1.md"), "stable"
    assert not any(s.startswith(".") or "/" in s for s in stored)


@pytest.mark.parametrize("sent", ["", None, "...", ".md", "  ", "a.exe", "notes", "dir/"])
def test_unusable_names_are_refused(sent: Any) -> None:
    with pytest.raises(UploadNameError):
        stored_name(sent)


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from hayhooks.server.pipelines.registry import registry

    from adaptive_retrieval.pipelines.serving.app import create_app, running_server

    registry.clear()
    folder = tmp_path_factory.mktemp("upload-names")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ADAPTIVE_QDRANT_PATH", str(folder / "qdrant"))
        for name in ("QDRANT_URL", "ADAPTIVE_UPLOAD_DIR", "ADAPTIVE_API_TOKEN", "ADAPTIVE_CORS_ORIGINS"):
            mp.delenv(name, raising=False)
        with running_server(create_app()) as url, httpx.Client(base_url=url, timeout=300) as client:
            yield {"client": client, "folder": folder}
    registry.clear()
    release_all_clients()


def _note(word: str, extra: str = "") -> str:
    return f"# Note\n\nThe {word} lives in this note. {word} is rare.\n{extra}"


def _top(client: httpx.Client, word: str) -> str:
    docs = client.post("/query/run", json={"query": word, "top_k": 1}).json()["result"]["documents"]
    return docs[0]["content"] if docs else ""


def test_unicode_names_keep_every_file(served: dict[str, Any]) -> None:
    client = served["client"]
    files = {"über.md": "quokka", "äber.md": "wombat", "заметки.md": "capybara", "笔记.md": "pangolin"}
    for name, word in files.items():
        response = client.post("/indexing/run", files=[("files", (name, _note(word)))])
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        assert result["uploads"] == [{"name": name, "stored_as": name, "source": result["sources"][0]}]
        assert result["replaced"] == []
    stored = sorted(p.name for p in (served["folder"] / "uploads").iterdir())
    assert stored == sorted(files), stored
    for word in files.values():
        assert word in _top(client, word), word


def test_a_clash_inside_one_request_is_refused_and_nothing_is_written(served: dict[str, Any]) -> None:
    client = served["client"]
    before = sorted(p.name for p in (served["folder"] / "uploads").iterdir())
    for pair in (
        [("twice.md", _note("sloth")), ("twice.md", _note("lemur"))],
        [("ü.md", "# a"), (unicodedata.normalize("NFD", "ü.md"), "# b")],
    ):
        response = client.post("/indexing/run", files=[("files", f) for f in pair])
        assert response.status_code == 400 and "same name" in response.json()["detail"], response.text
    assert sorted(p.name for p in (served["folder"] / "uploads").iterdir()) == before
    assert "sloth" not in _top(client, "sloth") and "lemur" not in _top(client, "lemur")


def test_a_re_upload_says_what_it_replaced(served: dict[str, Any]) -> None:
    client = served["client"]
    first = client.post("/indexing/run", files=[("files", ("versions.md", _note("otter")))]).json()["result"]
    again = client.post("/indexing/run", files=[("files", ("versions.md", _note("otter")))]).json()["result"]
    assert again["skipped"] == 1 and again["replaced"] == []
    longer = _note("otter", "\n".join(f"\n## Part {i}\n\n" + "word " * 200 for i in range(3)))
    second = client.post("/indexing/run", files=[("files", ("versions.md", longer))]).json()["result"]
    assert first["replaced"] == [] and len(second["replaced"]) == 1, second
    replaced = second["replaced"][0]
    assert (replaced["name"], replaced["stored_as"], replaced["chunks_before"]) == ("versions.md", "versions.md", 1)
    assert replaced["chunks_after"] >= 3, replaced  # three parts of 200 words: the new content's chunks


def test_sources_are_deleted_by_their_uploaded_names(served: dict[str, Any]) -> None:
    client = served["client"]
    response = client.delete("/sources", params={"source": "über.md"})
    assert response.status_code == 200, response.text
    assert response.json()["deleted"][0]["file_removed"] is True
    assert "quokka" not in _top(client, "quokka") and "wombat" in _top(client, "wombat")
    odd = client.post("/indexing/run", files=[("files", ("a?b.md", _note("ibex")))]).json()["result"]
    assert odd["uploads"][0]["stored_as"] == "a%3Fb.md"
    assert client.delete("/sources", params={"source": "a%3Fb.md"}).status_code == 200, "the stored name works too"
    for bad, status in (("n" * 300 + ".md", 404), ("m" * 5000, 400), ("", 400), ("a\x00b.md", 400)):
        response = client.delete("/sources", params={"source": bad})
        assert response.status_code == status, (bad[:20], response.status_code, response.text)


def test_the_cli_deletes_by_the_uploaded_name(tmp_path: Path) -> None:
    from adaptive_retrieval.pipelines.cli.main import main
    from adaptive_retrieval.pipelines.indexer import index_paths
    from adaptive_retrieval.pipelines.serving.wrapper_support import save_upload, uploads_dir
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    store = tmp_path / "qdrant"
    pipeline = load_pipeline("indexing", path=str(store))
    path = save_upload(uploads_dir(pipeline.get_component("writer").document_store), "äber.md", _note("heron").encode())
    assert index_paths(pipeline, [path])["indexed"] == 1
    release_all_clients()
    out = io.StringIO()
    assert main(["delete", "--store", str(store), "äber.md"], out=out) == 0
    assert "uploaded file removed" in out.getvalue() and not path.exists()
    release_all_clients()
