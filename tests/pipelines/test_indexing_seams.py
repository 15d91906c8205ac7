"""Where indexing meets the files a user points at (issue 41): files edited while they are indexed, text with a
byte-order mark, symlinks that leave the folder, markup nested past the parser's limit, two indexers on one new
store. Real parts: the YAML indexing pipeline over a Qdrant Edge folder and the SQLite graph, and the CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from broken_files import pdf_with_a_lost_page

from adaptive_retrieval.components.indexing.manifest import index_stats, read_manifests
from adaptive_retrieval.pipelines.indexer import index_paths
from adaptive_retrieval.pipelines.indexing_pipeline import graph_store_of, store_of


@pytest.fixture
def indexing(store_path: str) -> Any:
    from adaptive_retrieval.pipelines.yaml_io import load_pipeline

    pipeline = load_pipeline("indexing", path=store_path)
    for _, instance in pipeline.walk():
        if hasattr(instance, "progress_bar"):
            instance.progress_bar = False
    return pipeline


def _contents(pipeline: Any, source: Path) -> str:
    docs = store_of(pipeline).filter_documents({"field": "meta.source", "operator": "==", "value": str(source)})
    return " ".join(d.content or "" for d in docs)


def test_a_file_edited_while_indexed_and_reverted_is_indexed_again(indexing: Any, tmp_path: Path) -> None:
    """Issue 41 #7: the file was hashed, then edited before the pipeline read it, then reverted: the index kept the
    edited text under the original hash, and the next run called it unchanged. The bytes indexed are the bytes
    hashed, so the reverted file differs from the record and is indexed again."""
    docs = tmp_path / "docs"
    docs.mkdir()
    note = docs / "note.md"
    original = "# Note\n\nThe walrus rests on the ice floe all afternoon.\n"
    note.write_text(original, encoding="utf-8")

    def edit_before_the_batch_runs(batch: list[Path]) -> None:
        note.write_text("# Note\n\nThe narwhal dives under the pack ice at dawn.\n", encoding="utf-8")

    assert index_paths(indexing, [docs], check=edit_before_the_batch_runs)["indexed"] == 1
    assert "narwhal" in _contents(indexing, note)
    note.write_text(original, encoding="utf-8")  # reverted afterwards

    again = index_paths(indexing, [docs])
    assert again["indexed"] == 1 and again["skipped"] == 0, again
    assert "walrus" in _contents(indexing, note) and "narwhal" not in _contents(indexing, note)
    stats = index_stats(store_of(indexing), graph_store_of(indexing))["sources"][str(note)]
    assert stats["state"] == "complete"


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-8-sig"])
def test_text_with_a_byte_order_mark_is_decoded(indexing: Any, tmp_path: Path, encoding: str) -> None:
    """Issue 41 #11: UTF-16 text with a BOM (what Windows editors save as "Unicode") was refused as binary."""
    docs = tmp_path / "docs"
    docs.mkdir()
    text = "# Ünïcode note\n\nThe quokka smiles at the camera on Rottnest Island.\n"
    data = text.encode(encoding)
    if encoding == "utf-16-be":
        data = b"\xfe\xff" + data
    for suffix in (".md", ".txt", ".html"):
        html = '<html><head><meta charset="utf-16"></head><body><h1>Ünïcode</h1><p>The quokka smiles.</p></body></html>'
        body = text if suffix != ".html" else html
        payload = body.encode(encoding) if encoding != "utf-16-be" else b"\xfe\xff" + body.encode(encoding)
        (docs / f"note{suffix}").write_bytes(payload if suffix != ".md" else data)
    counts = index_paths(indexing, [docs])
    assert counts["failed"] == [] and counts["indexed"] == 3, counts
    for suffix in (".md", ".txt", ".html"):
        contents = _contents(indexing, (docs / f"note{suffix}").resolve())
        assert "quokka smiles" in contents and "\ufeff" not in contents and "\x00" not in contents, contents
    records = read_manifests(store_of(indexing))
    assert all(r["state"] == "complete" for r in records.values())


def test_deep_legacy_html_is_indexed_whole(indexing: Any, tmp_path: Path) -> None:
    """Issue 41 #5: 400 unclosed ``<p><font>``: everything after ~127 paragraphs was lost, and indexing said success."""
    docs = tmp_path / "docs"
    docs.mkdir()
    page = docs / "legacy.html"
    page.write_text("".join(f"<p><font>Paragraph {i} about the tern colony word{i}." for i in range(400)))
    counts = index_paths(indexing, [docs])
    assert counts["indexed"] == 1 and counts["partial"] == [] and counts["failed"] == [], counts
    contents = _contents(indexing, page)
    assert all(f"word{i}." in contents for i in (0, 127, 128, 250, 399))
    assert index_stats(store_of(indexing), graph_store_of(indexing))["sources"][str(page)]["state"] == "complete"


def test_a_file_read_in_part_is_partial_in_the_result_and_in_stats(
    indexing: Any, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose extractor kept less of its text than it holds is indexed (what was read is searchable) but
    never passed off as whole: ``index_paths`` lists it in ``partial``, ``stats`` shows it ``partial`` with why."""
    docs = tmp_path / "docs"
    docs.mkdir()
    paper = docs / "paper.pdf"
    paper.write_bytes(pdf_with_a_lost_page())
    (docs / "whole.md").write_text("# Whole\n\nEvery word of this note is read.\n", encoding="utf-8")
    counts = index_paths(indexing, [docs])
    assert counts["indexed"] == 2, counts
    assert [p["source"] for p in counts["partial"]] == [str(paper)]
    assert "kept 2 of 3 pages" in counts["partial"][0]["reason"]
    rows = index_stats(store_of(indexing), graph_store_of(indexing))["sources"]
    assert rows[str(paper)]["state"] == "partial" and "kept 2 of 3 pages" in rows[str(paper)]["reason"]
    assert rows[str(docs / "whole.md")]["state"] == "complete"
    # Unchanged, it stays partial (the next run cannot read more of it) and is not indexed again.
    again = index_paths(indexing, [docs])
    assert again["skipped"] == 2 and again["partial"] == []
    assert index_stats(store_of(indexing), graph_store_of(indexing))["sources"][str(paper)]["state"] == "partial"


def test_the_cli_says_which_files_were_indexed_in_part(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import io

    from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
    from adaptive_retrieval.components.stores.graph.sqlite_graph_store import release_all_connections
    from adaptive_retrieval.pipelines.cli.main import main

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "paper.pdf").write_bytes(pdf_with_a_lost_page())
    store = str(tmp_path / "index" / "qdrant")
    assert main(["index", "--store", store, str(docs)], out=io.StringIO()) == 0
    release_all_clients()
    release_all_connections()
    err = capsys.readouterr().err
    assert f"partial: {docs / 'paper.pdf'}: kept 2 of 3 pages" in err and "1 file(s) indexed in part" in err
    out = io.StringIO()
    assert main(["stats", "--store", store], out=out) == 1
    release_all_clients()
    release_all_connections()
    assert "partial" in out.getvalue()


@pytest.fixture
def linked_folder(tmp_path: Path) -> Path:
    """``docs/`` with a note, a link to a file outside, a link to a folder outside, a link inside and a loop."""
    outside = tmp_path / "outside"
    (outside / "dir").mkdir(parents=True)
    (outside / "secret.md").write_text("# Secret\n\nThe vault combination is kestrel-4471.\n", encoding="utf-8")
    (outside / "dir" / "other.md").write_text("# Other\n\nThe heron ledger is private.\n", encoding="utf-8")
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "note.md").write_text("# Note\n\nThe puffin nests on the cliff.\n", encoding="utf-8")
    (docs / "secret.md").symlink_to(outside / "secret.md")
    (docs / "elsewhere").symlink_to(outside / "dir")
    (docs / "sub" / "again.md").symlink_to(docs / "note.md")
    (docs / "sub" / "loop").symlink_to(docs)
    return docs


def test_links_out_of_the_folder_are_not_followed_and_are_listed(indexing: Any, linked_folder: Path) -> None:
    """Issue 41 #4: ``index docs/`` followed a link inside the folder to a file outside it and indexed it. The
    folder is not left unless asked; each link not followed is in the result, with where it points."""
    counts = index_paths(indexing, [linked_folder])
    assert counts["indexed"] == 1 and counts["files"] == 1, counts
    skipped = {Path(link["path"]).name: link for link in counts["links_skipped"]}
    assert set(skipped) == {"secret.md", "elsewhere", "again.md", "loop"}
    assert "outside the folder" in skipped["secret.md"]["reason"] and skipped["secret.md"]["target"].endswith(
        "outside/secret.md"
    )
    assert "outside the folder" in skipped["elsewhere"]["reason"]
    assert "inside the folder" in skipped["again.md"]["reason"]
    sources = set(read_manifests(store_of(indexing)))
    assert sources == {str(linked_folder / "note.md")}
    assert "kestrel" not in " ".join(d.content or "" for d in store_of(indexing).filter_documents())


def test_links_are_followed_when_asked(indexing: Any, linked_folder: Path) -> None:
    counts = index_paths(indexing, [linked_folder], follow_symlinks=True)
    assert counts["indexed"] == 3, counts
    sources = set(read_manifests(store_of(indexing)))
    # Under the names the user sees in the folder; the link inside and the loop still count once.
    assert sources == {str(linked_folder / n) for n in ("note.md", "secret.md", "elsewhere/other.md")}


def test_the_cli_says_which_links_it_did_not_follow(
    linked_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import io

    from adaptive_retrieval.components.stores.documents.edge_document_store import release_all_clients
    from adaptive_retrieval.components.stores.graph.sqlite_graph_store import release_all_connections
    from adaptive_retrieval.pipelines.cli.main import main

    out = io.StringIO()
    assert main(["index", "--store", str(tmp_path / "index" / "qdrant"), str(linked_folder)], out=out) == 0
    release_all_clients()
    release_all_connections()
    err = capsys.readouterr().err
    assert f"skipped: {linked_folder / 'secret.md'} -> {tmp_path / 'outside' / 'secret.md'}: it points outside" in err
    assert "1 files: 1 indexed" in out.getvalue() and "4 link(s) not followed" in out.getvalue()


@pytest.mark.slow  # six indexing processes
def test_two_indexers_creating_one_new_store_leave_one_winner_and_a_valid_store(tmp_path: Path) -> None:
    """Issue 41 #10: two ``index`` processes creating the same new store wrote its first files over each other:
    one died with a traceback, or both failed. One wins; the other finds the store open and says so (no traceback);
    the store is valid. Several rounds, since the window is the first moments of both runs."""
    import os
    import subprocess
    import sys
    import time

    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a", "b"):
        (docs / f"{name}.md").write_text(f"# Note {name}\n\nThe {name} note names Ada Lovelace.\n", encoding="utf-8")
    cli = [sys.executable, "-m", "adaptive_retrieval.pipelines.cli"]
    env = {**os.environ, "HAYSTACK_TELEMETRY_ENABLED": "False"}
    # Each process loads the libraries and the pipeline, then waits for the go file: both then open the new store
    # within moments of each other, which is where the two used to collide.
    starter = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from adaptive_retrieval.pipelines.cli.main import main\n"
        "from adaptive_retrieval.pipelines.yaml_io import load_pipeline\n"
        "load_pipeline('indexing', path=sys.argv[2])\n"
        "Path(sys.argv[4]).touch()\n"
        "go = Path(sys.argv[1])\n"
        "while not go.exists():\n"
        "    time.sleep(0.005)\n"
        "sys.exit(main(['index', '--store', sys.argv[2], sys.argv[3]]))\n"
    )
    for round_ in range(3):
        store, go, ready = tmp_path / f"store{round_}", tmp_path / f"go{round_}", tmp_path / f"ready{round_}"
        ready.mkdir()
        runs = [
            subprocess.Popen(
                [sys.executable, "-c", starter, str(go), str(store), str(docs / f"{name}.md"), str(ready / name)],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for name in ("a", "b")
        ]
        # Both loaded (loading creates nothing: the stores open on first use); a process that died is reported below.
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not all(
            (ready / n).exists() or r.poll() is not None for n, r in zip("ab", runs, strict=True)
        ):
            time.sleep(0.05)
        go.touch()
        outcomes = [(run.wait(timeout=600), run.stderr.read() if run.stderr else "") for run in runs]
        for code, err in outcomes:
            assert "Traceback" not in err, err[-3000:]
            assert code == 0 or "open in another process" in err, err[-3000:]
        assert any(code == 0 for code, _ in outcomes), outcomes
        stats = subprocess.run([*cli, "stats", "--store", str(store)], capture_output=True, text=True, env=env)
        assert stats.returncode == 0, stats.stdout + stats.stderr


def test_an_indexer_waits_while_another_creates_the_store(tmp_path: Path) -> None:
    """The deterministic half of the race above: while one process is creating a new store (it holds the store
    folder's lock), another indexer opening it waits rather than writing the same first files."""
    import fcntl
    import os
    import subprocess
    import sys
    import time

    note = tmp_path / "note.md"
    note.write_text("# Note\n\nThe gannet dives for fish.\n", encoding="utf-8")
    store = tmp_path / "store"
    store.mkdir()
    held = os.open(store, os.O_RDONLY)
    fcntl.flock(held, fcntl.LOCK_EX)  # as a process creating the store holds it
    try:
        run = subprocess.Popen(
            [sys.executable, "-m", "adaptive_retrieval.pipelines.cli", "index", "--store", str(store), str(note)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        inode = f":{store.stat().st_ino} "
        deadline = time.monotonic() + 300
        waiting = False
        while time.monotonic() < deadline and run.poll() is None and not any(store.iterdir()) and not waiting:
            # The kernel lists a process blocked on a lock with "->" (/proc/locks): the indexer waits on ours.
            waiting = any("->" in line and inode in line for line in Path("/proc/locks").read_text().splitlines())
            time.sleep(0.1)
        assert waiting and not any(store.iterdir()), "the indexer did not wait for the store's creator"
    finally:
        os.close(held)
    code = run.wait(timeout=600)
    assert code == 0, run.stderr.read() if run.stderr else ""
