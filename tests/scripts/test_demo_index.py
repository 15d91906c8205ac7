"""scripts/demo: your own folders get an index of their own, never the reference corpus's."""

from __future__ import annotations

from pathlib import Path

from script_modules import load_script


def test_each_set_of_paths_has_its_own_index(tmp_path: Path) -> None:
    demo = load_script("demo")
    mine, other = tmp_path / "my docs", tmp_path / "other"
    mine.mkdir()
    other.mkdir()
    store = demo.own_store([str(mine)])
    assert store.startswith(".adaptive/stores/my_docs-") and store.endswith("/qdrant")
    assert store != demo.REFERENCE_STORE and not store.startswith(demo.REFERENCE_STORE)
    assert demo.own_store([str(mine)]) == store, "the same folder reuses its index"
    assert demo.own_store([str(other)]) != store
    assert demo.own_store([str(mine), str(other)]) == demo.own_store([str(other), str(mine)])
    assert demo.own_store([str(mine), str(other)]) not in (store, demo.own_store([str(other)]))
