"""The folder of wrapper links every process of ``serve --workers N`` makes for its Hayhooks app."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from adaptive_retrieval.pipelines.processes.process_group import private_pipelines_dir


def _wrappers(root: Path) -> Path:
    source = root / "wrappers"
    for name in ("query", "indexing"):
        (source / name).mkdir(parents=True)
    return source


def test_workers_making_the_links_at_once_all_succeed(tmp_path: Path) -> None:
    """Two workers of one `serve` made the same link at once and one failed with FileExistsError (a configuration
    matrix run): each now makes its link beside the folder and renames it over."""
    source = _wrappers(tmp_path)
    failures: list[BaseException] = []

    def make(runtime: Path, start: threading.Barrier) -> None:
        start.wait()
        try:
            private_pipelines_dir(runtime, ["query", "indexing"], source)
        except BaseException as err:
            failures.append(err)

    for round_ in range(40):
        runtime = tmp_path / f"run-{round_}"
        runtime.mkdir()
        start = threading.Barrier(4)
        threads = [threading.Thread(target=make, args=(runtime, start)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        folder = runtime / "pipelines-query-indexing"
        assert sorted(p.name for p in folder.iterdir()) == ["indexing", "query"]
        assert not [p for p in runtime.iterdir() if p.name.startswith(".link-")]
    assert not failures, failures[:3]


def test_a_link_to_another_install_is_pointed_at_this_one(tmp_path: Path) -> None:
    """A link an earlier install left (another checkout or virtual environment) was kept, serving its wrappers."""
    source = _wrappers(tmp_path)
    folder = tmp_path / "pipelines-query"
    folder.mkdir()
    (folder / "query").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    assert private_pipelines_dir(tmp_path, ["query"], source) == folder
    assert os.readlink(folder / "query") == str(source / "query")
