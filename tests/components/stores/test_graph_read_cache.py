"""The graph store's read cache: kept answers, absent keys, generations, copies; and on the real SQLite store, the
same answers as without it, writes of this process and of another process seen at once, nothing kept mid-write."""

from __future__ import annotations

import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from adaptive_retrieval.components.stores.graph.graph_read_cache import CAPACITY_ENV, GraphReadCache
from adaptive_retrieval.components.stores.graph.graph_store import ChunkEntities, EntityMention
from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore, release_all_connections


class Fetches:
    """A fetch that answers from a dict and records the keys it was asked."""

    def __init__(self, data: dict) -> None:
        self.data = data
        self.asked: list[list] = []

    def __call__(self, keys: list) -> dict:
        self.asked.append(list(keys))
        return {k: self.data[k] for k in keys if k in self.data}


def test_answers_absent_keys_included_are_kept_for_their_generation() -> None:
    cache = GraphReadCache(capacity=100)
    fetch = Fetches({"a": [("c1", 1.0)], "b": [("c2", 2.0)]})
    assert cache.read("chunks", 1, ["a", "b", "zzz"], fetch) == {"a": [("c1", 1.0)], "b": [("c2", 2.0)]}
    assert cache.read("chunks", 1, ["b", "zzz", "a"], fetch) == {"b": [("c2", 2.0)], "a": [("c1", 1.0)]}
    assert fetch.asked == [["a", "b", "zzz"]]  # the absent key was kept too
    # Another generation: everything is asked again.
    assert cache.read("chunks", 2, ["a"], fetch) == {"a": [("c1", 1.0)]}
    assert fetch.asked[-1] == ["a"]


def test_no_generation_keeps_nothing_and_kinds_and_extras_never_mix() -> None:
    cache = GraphReadCache(capacity=100)
    fetch = Fetches({"a": 1})
    cache.read("x", None, ["a"], fetch)
    cache.read("x", None, ["a"], fetch)
    assert len(fetch.asked) == 2
    cache.read("x", 1, ["a"], fetch, extra=(10,))
    cache.read("x", 1, ["a"], fetch, extra=(20,))
    cache.read("y", 1, ["a"], fetch, extra=(10,))
    assert len(fetch.asked) == 5
    cache.read("x", 1, ["a"], fetch, extra=(10,))
    assert len(fetch.asked) == 5


def test_the_caller_gets_its_own_containers() -> None:
    cache = GraphReadCache(capacity=100)
    fetch = Fetches({"a": [("c1", 1.0)], "b": {"k": 1.0}})
    first = cache.read("x", 1, ["a", "b"], fetch)
    first["a"].append(("changed", 0.0))
    first["b"]["changed"] = 0.0
    again = cache.read("x", 1, ["a", "b"], fetch)
    assert again == {"a": [("c1", 1.0)], "b": {"k": 1.0}}
    assert len(fetch.asked) == 1


def test_a_capacity_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        GraphReadCache(0)


# -- the SQLite store ------------------------------------------------------------------------------------------


def chunk(chunk_id: str, doc_id: str, *keys: tuple[str, float]) -> ChunkEntities:
    mentions = tuple(EntityMention(key=k, name=k.title(), kind="name", count=1, weight=w) for k, w in keys)
    return ChunkEntities(chunk_id=chunk_id, doc_id=doc_id, title=doc_id, text=chunk_id, mentions=mentions)


def random_chunks(seed: int, docs: int = 20) -> list[ChunkEntities]:
    rng = random.Random(seed)
    names = [f"entity {i}" for i in range(40)]
    return [
        chunk(f"c{d}-{j}", f"d{d}", *((n, float(rng.randint(1, 5))) for n in rng.sample(names, 4)))
        for d in range(docs)
        for j in range(3)
    ]


def reads(store: SQLiteGraphStore, keys: list[str], chunk_ids: list[str]) -> tuple:
    return (
        store.find_entities(keys),
        store.entity_chunks(keys, limit=3),
        store.neighbours(keys, limit=4),
        store.chunk_mentions(chunk_ids),
    )


@pytest.fixture
def graph_file(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "graph.sqlite"
    release_all_connections()


def test_answers_are_the_same_with_the_cache_as_without(graph_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    store = SQLiteGraphStore(path=str(graph_file))
    store.replace_chunks(random_chunks(0))
    assert store._conn().reads is not None
    keys = [f"entity {i}" for i in range(0, 45, 3)]  # 40+ are not in the graph
    ids = ["c1-0", "c2-1", "c9-2", "missing"]
    cached = [reads(store, keys, ids), reads(store, keys[::-1], ids[::-1])]
    release_all_connections()
    monkeypatch.setenv(CAPACITY_ENV, "0")
    plain = SQLiteGraphStore(path=str(graph_file))
    assert plain._conn().reads is None
    assert cached[0] == cached[1] == reads(plain, keys, ids)
    # Same order of keys as SQL returns them (a caller summing floats in that order gets the same sums).
    assert list(cached[1][1]) == list(reads(plain, keys, ids)[1])


def test_kept_answers_are_served_without_sql(graph_file: Path) -> None:
    store = SQLiteGraphStore(path=str(graph_file))
    store.replace_chunks(random_chunks(1))
    statements: list[str] = []
    store._conn().connection.set_trace_callback(statements.append)
    first = store.entity_chunks(["entity 1", "entity 2"], limit=5)
    asked = len(statements)
    assert store.entity_chunks(["entity 2", "entity 1"], limit=5) == first
    assert not any("mentions" in s for s in statements[asked:])  # only the generation check ran


def test_writes_of_this_process_are_seen_by_the_next_read(graph_file: Path) -> None:
    store = SQLiteGraphStore(path=str(graph_file))
    store.replace_chunks([chunk("c1", "d1", ("paris", 3.0), ("france", 1.0))])
    assert store.entity_chunks(["paris"]) == {"paris": [("c1", 3.0)]}
    assert store.find_entities(["berlin"]) == {}
    store.replace_chunks([chunk("c2", "d2", ("paris", 5.0), ("berlin", 1.0))])
    assert store.entity_chunks(["paris"]) == {"paris": [("c2", 5.0), ("c1", 3.0)]}
    assert set(store.find_entities(["berlin"])) == {"berlin"}
    store.delete_documents(["d1"])
    assert store.entity_chunks(["paris"]) == {"paris": [("c2", 5.0)]}


def test_a_write_by_another_process_is_seen_by_the_next_read(graph_file: Path) -> None:
    store = SQLiteGraphStore(path=str(graph_file))
    store.replace_chunks([chunk("c1", "d1", ("paris", 3.0), ("france", 1.0))])
    assert store.entity_chunks(["paris"]) == {"paris": [("c1", 3.0)]}
    assert store.neighbours(["paris"]) == {"paris": [("france", 1.0)]}
    writer = (
        "import sys\n"
        "from adaptive_retrieval.components.stores.graph.graph_store import ChunkEntities, EntityMention\n"
        "from adaptive_retrieval.components.stores.graph.sqlite_graph_store import SQLiteGraphStore\n"
        "pairs = (('paris', 5.0), ('rome', 1.0))\n"
        "m = [EntityMention(key=k, name=k, kind='name', count=1, weight=w) for k, w in pairs]\n"
        "SQLiteGraphStore(path=sys.argv[1]).replace_chunks([ChunkEntities('c2', 'd2', 'd2', 'c2', tuple(m))])\n"
    )
    subprocess.run([sys.executable, "-c", writer, str(graph_file)], check=True, timeout=60)
    assert store.entity_chunks(["paris"]) == {"paris": [("c2", 5.0), ("c1", 3.0)]}
    assert store.neighbours(["paris"]) == {"paris": [("france", 1.0), ("rome", 1.0)]}


def test_nothing_read_inside_an_open_write_is_kept(graph_file: Path) -> None:
    store = SQLiteGraphStore(path=str(graph_file))
    store.replace_chunks([chunk("c1", "d1", ("paris", 3.0))])
    shared = store._conn()
    with shared.lock:  # as the store's own writes do: the lock held from BEGIN to the end
        shared.connection.execute("BEGIN")
        shared.connection.execute("UPDATE mentions SET weight = 9.0")
        assert store.entity_chunks(["paris"]) == {"paris": [("c1", 9.0)]}  # the open write, as SQLite reads it
        shared.connection.execute("ROLLBACK")
    assert store.entity_chunks(["paris"]) == {"paris": [("c1", 3.0)]}
