"""MemstrataStore against LangGraph's own BaseStore contract.

The behaviours are those LangGraph's store test suites check for its in-memory
and PostgreSQL stores (ops in a batch, get/put/delete, search with filters and
pagination, list_namespaces with prefix/suffix/wildcards/depth, namespace
validation, the async methods), run against a memstrata workspace, plus what
memstrata adds: items are files that survive a reopen, a hand edit is read,
secrets never reach disk, and a query ranks by hybrid search.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("langgraph.store.base", reason="needs memstrata[integrations]")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchOp,
)

from memstrata import Memory  # noqa: E402
from memstrata.errors import InvalidInput  # noqa: E402
from memstrata.integrations.langgraph import MemstrataStore  # noqa: E402

SECRET = "sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk"


@pytest.fixture(params=["workspace", "groups"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemstrataStore]:
    """Every behaviour holds on one workspace and with a group per first label."""
    with MemstrataStore.open(tmp_path / "ws", groups=request.param == "groups") as opened:
        yield opened


def _fill(store: BaseStore, namespaces: list[tuple[str, ...]]) -> None:
    for number, namespace in enumerate(namespaces):
        store.put(namespace, f"k{number}", {"n": number})


def test_it_is_a_langgraph_base_store(store: MemstrataStore) -> None:
    assert isinstance(store, BaseStore)
    assert store.supports_ttl is False


def test_a_batch_answers_each_op_in_order(store: MemstrataStore) -> None:
    store.put(("docs", "a"), "one", {"text": "first"})
    store.put(("docs", "b"), "two", {"text": "second"})
    results = store.batch(
        [
            GetOp(("docs", "a"), "one"),
            PutOp(("docs", "b"), "two", {"text": "second again"}),
            SearchOp(("docs",), filter={"text": "first"}),
            ListNamespacesOp(limit=10),
            GetOp(("docs",), "missing"),
            GetOp(("docs", "b"), "two"),
        ]
    )
    assert len(results) == 6
    assert isinstance(results[0], Item) and results[0].value == {"text": "first"}
    assert results[1] is None
    assert [item.key for item in results[2]] == ["one"]  # type: ignore[union-attr]
    assert results[3] == [("docs", "a"), ("docs", "b")]
    assert results[4] is None
    assert isinstance(results[5], Item) and results[5].value == {"text": "second again"}


def test_batched_puts_and_deletes(store: MemstrataStore) -> None:
    results = store.batch(
        [
            PutOp(("t",), "k1", {"v": 1}),
            PutOp(("t",), "k2", {"v": 2}),
            PutOp(("t",), "k3", None),
            PutOp(("u",), "gone", None),
        ]
    )
    assert results == [None, None, None, None]
    assert store.get(("t",), "k1").value == {"v": 1}  # type: ignore[union-attr]
    assert store.get(("t",), "k2").value == {"v": 2}  # type: ignore[union-attr]
    assert store.get(("t",), "k3") is None
    assert store.list_namespaces() == [("t",)]


def test_put_get_update_delete(store: MemstrataStore) -> None:
    namespace = ("test", "documents")
    store.put(namespace, "doc1", {"title": "Test", "content": "Hello"})
    item = store.get(namespace, "doc1")
    assert item is not None
    assert (item.namespace, item.key, item.value) == (
        namespace,
        "doc1",
        {"title": "Test", "content": "Hello"},
    )
    store.put(namespace, "doc1", {"title": "Updated"})
    updated = store.get(namespace, "doc1")
    assert updated is not None and updated.value == {"title": "Updated"}
    assert updated.updated_at > item.updated_at
    assert updated.created_at == item.created_at
    assert store.get(("test", "other"), "doc1") is None
    store.delete(namespace, "doc1")
    assert store.get(namespace, "doc1") is None
    assert store.list_namespaces() == []


def test_search_filters_and_pages(store: MemstrataStore) -> None:
    store.put(("test", "docs"), "doc1", {"title": "First", "author": "Alice", "tag": "a"})
    store.put(("test", "docs"), "doc2", {"title": "Second", "author": "Bob", "tag": "a"})
    store.put(("test", "images"), "img1", {"title": "Image", "author": "Alice", "tag": "b"})
    assert len(store.search(("test",))) == 3
    docs = store.search(("test", "docs"))
    assert [item.namespace for item in docs] == [("test", "docs")] * 2
    alice = store.search(("test",), filter={"author": "Alice"})
    assert sorted(item.key for item in alice) == ["doc1", "img1"]
    assert len(store.search(("test",), limit=2)) == 2
    assert len(store.search(("test",), offset=2)) == 1
    assert store.search(("nothing",)) == []
    assert store.search((), filter={"tag": "b"})[0].key == "img1"


def test_comparison_filters_compare_numbers_as_numbers(store: MemstrataStore) -> None:
    for key, score in [("a", 2), ("b", 9), ("c", 10), ("d", 11), ("e", 9.5)]:
        store.put(("scores",), key, {"score": score, "name": key})

    def found(test: dict[str, object]) -> list[object]:
        return sorted(item.value["score"] for item in store.search(("scores",), filter=test))

    assert found({"score": {"$gte": 10}}) == [10, 11]
    assert found({"score": {"$gt": 9}}) == [9.5, 10, 11]
    assert found({"score": {"$lt": 10}}) == [2, 9, 9.5]
    assert found({"score": {"$lte": 9}}) == [2, 9]
    assert found({"score": {"$ne": 2}}) == [9, 9.5, 10, 11]
    assert found({"score": {"$eq": 11}}) == [11]
    names = store.search(("scores",), filter={"name": {"$gt": "c"}})
    assert sorted(item.key for item in names) == ["d", "e"]


def test_list_namespaces_prefix_suffix_wildcards_depth_and_pages(store: MemstrataStore) -> None:
    _fill(
        store,
        [
            ("a", "b", "c"),
            ("a", "b", "d", "e"),
            ("a", "b", "d", "i"),
            ("a", "b", "f"),
            ("a", "c", "f"),
            ("b", "a", "f"),
            ("users", "123"),
            ("users", "456", "settings"),
            ("admin", "users", "789"),
        ],
    )
    assert store.list_namespaces(prefix=("a", "b")) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("a",), suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), limit=2) == [
        ("a", "b", "c"),
        ("a", "b", "d", "e"),
    ]
    assert store.list_namespaces(prefix=("a", "b"), offset=2) == [
        ("a", "b", "d", "i"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(suffix=("*", "f")) == [
        ("a", "b", "f"),
        ("a", "c", "f"),
        ("b", "a", "f"),
    ]
    assert store.list_namespaces(prefix=("nonexistent",)) == []
    assert store.list_namespaces(prefix=("users", "123")) == [("users", "123")]
    assert store.list_namespaces(prefix=("*", "users"), suffix=("*", "settings")) == []
    assert store.list_namespaces(max_depth=2) == [
        ("a", "b"),
        ("a", "c"),
        ("admin", "users"),
        ("b", "a"),
        ("users", "123"),
        ("users", "456"),
    ]
    listed = store.batch(
        [ListNamespacesOp(match_conditions=(MatchCondition("suffix", ("settings",)),))]
    )
    assert listed == [[("users", "456", "settings")]]


def test_list_namespaces_pagination_and_empty(store: MemstrataStore) -> None:
    assert store.list_namespaces() == []
    _fill(store, [("namespace", f"sub_{i:02d}") for i in range(12)])
    assert store.list_namespaces(prefix=("namespace",), limit=5) == [
        ("namespace", f"sub_{i:02d}") for i in range(5)
    ]
    assert store.list_namespaces(prefix=("namespace",), limit=5, offset=10) == [
        ("namespace", f"sub_{i:02d}") for i in range(10, 12)
    ]


@pytest.mark.parametrize(
    "namespace", [(), ("the", "thing.about"), ("some", "fun", ""), ("langgraph", "foo")]
)
def test_bad_namespaces_are_refused(store: MemstrataStore, namespace: tuple[str, ...]) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.put(namespace, "key", {"x": 1})
    with pytest.raises(InvalidNamespaceError):
        asyncio.run(store.aput(namespace, "key", {"x": 1}))


def test_a_dot_label_cannot_reach_another_namespace_through_batch(store: MemstrataStore) -> None:
    with pytest.raises(InvalidNamespaceError):
        store.batch([PutOp(("foo.bar",), "k", {"x": 1})])
    assert store.list_namespaces() == []


def test_langgraph_label_below_the_root_is_fine(store: MemstrataStore) -> None:
    namespace = ("foo", "langgraph", "foo")
    store.put(namespace, "bar", {"foo": "bar"})
    assert store.get(namespace, "bar").value == {"foo": "bar"}  # type: ignore[union-attr]
    assert store.search(namespace)[0].value == {"foo": "bar"}
    store.delete(namespace, "bar")
    assert store.get(namespace, "bar") is None


def test_async_methods(store: MemstrataStore) -> None:
    async def run() -> None:
        await asyncio.gather(
            store.aput(("a",), "one", {"v": 1}),
            store.aput(("a",), "two", {"v": 2}),
            store.aput(("b",), "three", {"v": 3}),
        )
        got = await asyncio.gather(store.aget(("a",), "one"), store.aget(("b",), "three"))
        assert [item.value for item in got if item] == [{"v": 1}, {"v": 3}]
        assert len(await store.asearch(("a",))) == 2
        assert await store.alist_namespaces() == [("a",), ("b",)]
        await store.adelete(("a",), "one")
        assert await store.aget(("a",), "one") is None

    asyncio.run(run())


def test_items_are_files_that_survive_a_reopen(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with MemstrataStore.open(ws) as store:
        store.put(("users", "u/1"), "prefs", {"food": "pizza", "nested": {"list": [1, 2]}})
    files = list((ws / "semantic").glob("langgraph.*.md"))
    assert len(files) == 1
    text = files[0].read_text()
    assert '"food": "pizza"' in text and "# users / u/1" in text
    with MemstrataStore.open(ws) as store:
        item = store.get(("users", "u/1"), "prefs")
        assert item is not None and item.value == {"food": "pizza", "nested": {"list": [1, 2]}}


def test_a_hand_edit_is_read_and_a_broken_item_is_left_out(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with MemstrataStore.open(ws) as store:
        store.put(("n",), "good", {"city": "Lisbon"})
        store.put(("n",), "bad", {"city": "Porto"})
    path = next((ws / "semantic").glob("langgraph.*.md"))
    text = path.read_text().replace('"Lisbon"', '"Madrid"').replace('"Porto"', '"Porto", oops')
    path.write_text(text)
    with MemstrataStore.open(ws) as store:
        assert store.get(("n",), "good").value == {"city": "Madrid"}  # type: ignore[union-attr]
        assert store.get(("n",), "bad") is None
        assert [item.key for item in store.search(("n",))] == ["good"]


def test_secrets_in_values_never_reach_disk(store: MemstrataStore, tmp_path: Path) -> None:
    store.put(("creds",), "openai", {"note": f"my key is {SECRET}", "list": [SECRET]})
    item = store.get(("creds",), "openai")
    assert item is not None and SECRET not in repr(item.value)
    for path in (tmp_path / "ws").rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert list((tmp_path / "ws").rglob("langgraph.creds.*.md"))


def test_keys_that_look_like_markup_round_trip(store: MemstrataStore) -> None:
    keys = ["-->", "## heading", "line\nbreak", "```", " spaced ", "ключ", ""]
    for number, key in enumerate(keys):
        store.put(("odd",), key, {"n": number, "text": "```\n-->"})
    for number, key in enumerate(keys):
        item = store.get(("odd",), key)
        assert item is not None and item.value == {"n": number, "text": "```\n-->"}, key
    assert sorted(item.key for item in store.search(("odd",), limit=20)) == sorted(keys)


def test_a_query_ranks_by_hybrid_search(store: MemstrataStore) -> None:
    store.put(("memories", "u1"), "food", {"text": "The user loves Neapolitan pizza"})
    store.put(("memories", "u1"), "pet", {"text": "The user has a cat named Miso"})
    store.put(("memories", "u1"), "quiet", {"text": "pizza pizza pizza"}, index=False)
    store.put(("memories", "u2"), "food", {"text": "Another user likes pizza too"})
    found = store.search(("memories", "u1"), query="which pizza does the user like?")
    assert found[0].key == "food" and found[0].score is not None
    assert {item.key for item in found} == {"food", "pet", "quiet"}
    assert next(item for item in found if item.key == "quiet").score is None
    assert all(item.namespace == ("memories", "u1") for item in found)
    first = store.search(("memories",), query="cat", limit=1)
    assert [(item.namespace, item.key) for item in first] == [(("memories", "u1"), "pet")]


def test_with_groups_each_first_label_is_a_group_of_its_own(tmp_path: Path) -> None:
    root = tmp_path / "ws"
    with MemstrataStore.open(root, groups=True) as store:
        store.put(("alice", "memories"), "food", {"text": "Alice loves ramen"})
        store.put(("bob", "memories"), "food", {"text": "Bob loves ramen too"})
        assert store.list_namespaces() == [("alice", "memories"), ("bob", "memories")]
        assert [i.namespace for i in store.search(("alice",))] == [("alice", "memories")]
        both = store.search((), query="who loves ramen?")
        assert {item.namespace[0] for item in both} == {"alice", "bob"}
        assert all(item.score is not None for item in both)
        assert store.get(("carol", "memories"), "food") is None
        assert store.search(("carol",)) == []
        store.delete(("carol", "memories"), "food")
        with pytest.raises(InvalidInput):
            store.put(("Alice Smith", "memories"), "food", {"text": "x"})
    assert list((root / "groups" / "alice" / "semantic").glob("langgraph.alice.memories.*.md"))
    assert not list((root / "groups" / "alice").rglob("langgraph.bob.*"))
    assert not (root / "groups" / "carol").exists()
    with Memory.open(root, "bob") as memory:  # the group's own workspace, as memstrata sees it
        hits = memory.search("ramen", layers=["semantic"])
        assert hits and "Bob loves ramen too" in hits[0].text


def test_groups_and_group_are_exclusive(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput):
        MemstrataStore.open(tmp_path / "ws", "alice", groups=True)


def test_a_hand_edit_under_an_open_store_is_read(store: MemstrataStore, tmp_path: Path) -> None:
    store.put(("live",), "city", {"name": "Lisbon"})
    assert store.get(("live",), "city").value == {"name": "Lisbon"}  # type: ignore[union-attr]
    assert [item.value for item in store.search(("live",))] == [{"name": "Lisbon"}]
    path = next((tmp_path / "ws").rglob("langgraph.live.*.md"))
    path.write_text(path.read_text().replace('"Lisbon"', '"Porto, by hand"'))
    assert store.get(("live",), "city").value == {"name": "Porto, by hand"}  # type: ignore[union-attr]
    assert [item.value for item in store.search(("live",))] == [{"name": "Porto, by hand"}]


CHILD = r"""
import sys
from memstrata.integrations.langgraph import MemstrataStore

store = MemstrataStore.open(sys.argv[1], embedder="none")
print("open", flush=True)
for i in range(100_000):
    store.put(("crash", f"ns{i % 3}"), f"k{i}", {"n": i, "pad": "x" * (i % 50)})
    print(i, flush=True)
"""


@pytest.mark.slow
@pytest.mark.parametrize("acks", [1, 7, 40])
def test_every_acknowledged_put_survives_sigkill(tmp_path: Path, acks: int) -> None:
    import signal
    import subprocess
    import sys

    ws = tmp_path / "ws"
    with subprocess.Popen(
        [sys.executable, "-c", CHILD, str(ws)], stdout=subprocess.PIPE, text=True
    ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "open"
        acked = [int(child.stdout.readline()) for _ in range(acks)]
        child.send_signal(signal.SIGKILL)
        child.wait()
    with MemstrataStore.open(ws, embedder="none") as store:
        for i in acked:
            item = store.get(("crash", f"ns{i % 3}"), f"k{i}")
            assert item is not None and item.value["n"] == i, i
        found = store.search(("crash",), limit=100_000)
        assert {item.key for item in found} >= {f"k{i}" for i in acked}


def test_the_store_on_a_postgresql_workspace() -> None:
    import postgres_server

    url, tenant = postgres_server.app_url(), postgres_server.tenant("lg")
    with MemstrataStore.open(url, tenant) as store:
        store.put(("users", "ana"), "food", {"text": "Ana loves Neapolitan pizza", "n": 1})
        store.put(("users", "ana"), "pet", {"text": "Ana's cat is called Miso", "n": 2})
        store.put(("users", "bob"), "food", {"text": "Bob eats ramen", "n": 3})
        assert store.get(("users", "ana"), "pet").value["n"] == 2  # type: ignore[union-attr]
        assert store.list_namespaces() == [("users", "ana"), ("users", "bob")]
        assert [i.key for i in store.search(("users",), filter={"n": {"$gte": 3}})] == ["food"]
        ranked = store.search(("users", "ana"), query="what is the cat's name?")
        assert ranked[0].key == "pet"
        store.delete(("users", "bob"), "food")
        assert store.list_namespaces() == [("users", "ana")]
    with pytest.raises(InvalidInput):
        MemstrataStore.open(url, groups=True)


def test_changing_a_returned_value_changes_nothing_stored(store: MemstrataStore) -> None:
    store.put(("mut",), "k", {"list": [1], "nested": {"a": 1}})
    got = store.get(("mut",), "k")
    assert got is not None
    got.value["list"].append(2)
    got.value["nested"]["a"] = 99
    store.search(("mut",))[0].value["new"] = True
    again = store.get(("mut",), "k")
    assert again is not None and again.value == {"list": [1], "nested": {"a": 1}}
    assert store.search(("mut",))[0].value == {"list": [1], "nested": {"a": 1}}
