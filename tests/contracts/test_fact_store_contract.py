"""The ``FactStore`` contract (``memstrata.stores.protocol``): every long-term
store passes these. A new backend adds itself to ``BACKENDS``."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import postgres_server
from fakes import InMemoryFactStore
from memstrata.model import Item
from memstrata.postgres.facts import PostgresFactStore
from memstrata.storage.journal import Record
from memstrata.stores.longterm import OP_DELETE, OP_PUT, Forgotten, LongTermStore
from memstrata.stores.protocol import FactStore


def postgres() -> FactStore:
    """A store of a fresh tenant on the session's PostgreSQL (a skip without one)."""
    return PostgresFactStore(postgres_server.app_url(), postgres_server.tenant())


BACKENDS: dict[str, Callable[[], FactStore]] = {
    "longterm": LongTermStore,
    "memory": InMemoryFactStore,
    "postgres": postgres,
}
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(params=sorted(BACKENDS))
def store(request: pytest.FixtureRequest) -> FactStore:
    return BACKENDS[request.param]()


def item(item_id: str, text: str, minutes: int = 0, **more: Any) -> Item:
    at = T0 + timedelta(minutes=minutes)
    return Item(id=item_id, text=text, created_at=at, updated_at=at, valid_from=at, **more)


def put(lsn: int, *items: Item) -> Record:
    return Record(lsn, OP_PUT, {"items": [i.to_dict() for i in items]})


def delete(lsn: int, *ids: str, reason: str = "forget", minutes: int = 0) -> Record:
    at = (T0 + timedelta(minutes=minutes)).isoformat()
    return Record(lsn, OP_DELETE, {"ids": list(ids), "reason": reason, "at": at})


def visible(store: FactStore) -> dict[str, Any]:
    """What a caller can see of a store."""
    return {
        "items": dict(store.items),
        "order": list(store.items),
        "forgotten": dict(store.forgotten),
        "lsn": store.lsn,
        "live": {i.key: store.live_by_key(i.key) for i in store.items.values()},
        "newest": store.newest(lambda i: True, None),
    }


def test_it_is_a_fact_store(store: FactStore) -> None:
    assert isinstance(store, FactStore)
    assert (dict(store.items), dict(store.forgotten), store.lsn) == ({}, {}, 0)


def test_puts_and_deletes_apply_in_order(store: FactStore) -> None:
    store.apply(put(1, item("m1", "Alice lives in Lisbon"), item("m2", "Bob likes tea")))
    assert sorted(store.items) == ["m1", "m2"] and store.lsn == 1
    updated = item("m1", "Alice lives in Lisbon", hits=3)
    store.apply(put(2, updated))
    assert store.items["m1"] == updated and list(store.items) == ["m1", "m2"]  # keeps its place
    store.apply(delete(3, "m2", "nope", reason="compact"))
    assert list(store.items) == ["m1"] and store.lsn == 3
    assert not store.forgotten  # compaction is final


def test_old_and_repeated_records_change_nothing(store: FactStore) -> None:
    store.apply(put(5, item("m1", "one")))
    before = visible(store)
    store.apply(put(5, item("m2", "two")))
    store.apply(put(3, item("m3", "three")))
    store.apply(delete(4, "m1"))
    assert visible(store) == before
    store.apply(Record(9, "other.op", {}))  # another op: the lsn moves, nothing else
    assert store.lsn == 9 and dict(store.items) == before["items"]


def test_a_correction_supersedes_and_only_the_live_fact_is_found(store: FactStore) -> None:
    old = item("m1", "Alice lives in Lisbon")
    store.apply(put(1, old))
    assert store.find_live("  alice lives in LISBON ") == old  # by normalized text
    new = item("m2", "Alice lives in Porto", 1)
    gone = old.evolve(valid_to=new.created_at, superseded_by="m2")
    store.apply(put(2, gone, new))  # both together
    assert store.find_live("Alice lives in Lisbon") is None
    assert store.find_live("alice lives in porto") == new
    assert store.live_by_key(new.key) == new
    assert store.items["m1"].superseded_by == "m2"


def test_the_dedupe_key_is_per_user(store: FactStore) -> None:
    mine = item("m1", "I like tea", user="ann")
    store.apply(put(1, mine))
    assert store.find_live("I like tea", "ann") == mine
    assert store.find_live("I like tea") is None and store.find_live("I like tea", "bob") is None


def test_a_forgotten_fact_is_kept_with_its_reason_until_restored(store: FactStore) -> None:
    fact = item("m1", "Alice lives in Lisbon")
    store.apply(put(1, fact, item("m2", "Bob likes tea")))
    store.apply(delete(2, "m1", reason="forget", minutes=5))
    store.apply(delete(3, "m2", reason="hand_delete", minutes=6))
    assert not store.items
    assert store.forgotten["m1"] == Forgotten(fact, T0 + timedelta(minutes=5), "forget")
    assert store.forgotten["m2"].reason == "hand_delete"
    assert store.find_live(fact.text) is None
    store.apply(put(4, fact))  # restore: the same id again
    assert store.items["m1"] == fact and "m1" not in store.forgotten
    assert store.find_live(fact.text) == fact


def test_forgotten_facts_expire_after_their_retention(store: FactStore) -> None:
    store.apply(put(1, item("m1", "one"), item("m2", "two")))
    store.apply(delete(2, "m1", minutes=1))
    store.apply(delete(3, "m2", minutes=10))
    store.expire_forgotten(T0 + timedelta(minutes=5))
    assert list(store.forgotten) == ["m2"]


def test_unused_ids_are_neither_items_nor_forgotten(store: FactStore) -> None:
    store.apply(put(1, item("m1", "one")))
    store.apply(delete(2, "m1"))
    ids = {store.unused_id() for _ in range(50)}
    assert "m1" not in ids and not ids & set(store.items)
    assert all(i.startswith("m") and len(i) == 9 for i in ids)


def test_newest_first_with_a_filter_and_a_limit(store: FactStore) -> None:
    facts = [item(f"m{n}", f"fact {n}", minutes=(n * 7) % 5) for n in range(6)]
    store.apply(put(1, *facts))
    expected = sorted(facts, key=lambda i: (i.created_at, i.id), reverse=True)
    assert store.newest(lambda i: True, None) == expected
    assert store.newest(lambda i: i.id != "m0", 2) == [i for i in expected if i.id != "m0"][:2]


def test_reset_replaces_the_whole_state(store: FactStore) -> None:
    store.apply(put(7, item("m9", "old")))
    store.apply(delete(8, "m9"))
    fresh = {"m1": item("m1", "one"), "m2": item("m2", "two", superseded_by="m1")}
    lost = {"m3": Forgotten(item("m3", "three"), T0, "forget")}
    store.reset(dict(fresh), 3, None, lost)
    assert dict(store.items) == fresh and store.lsn == 3 and dict(store.forgotten) == lost
    assert store.find_live("one") == fresh["m1"] and store.find_live("old") is None
    keys = {fresh["m1"].key: "m1"}
    store.reset(dict(fresh), 4, keys)  # with the keys a snapshot stored
    assert store.find_live("one") == fresh["m1"] and not store.forgotten
    store.apply(put(4, item("m5", "ignored")))
    assert "m5" not in store.items


# -- random sequences: every backend shows the same state ------------------------------------


def usable(name: str) -> bool:
    """Whether backend ``name`` can run here (the others are compared without it)."""
    return name != "postgres" or postgres_server.available()


TEXTS = ("Alice lives in Lisbon", "alice lives in lisbon.", "Bob likes tea", "The car is blue")
IDS = ("m1", "m2", "m3", "m4")
steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("put"),
            st.lists(
                st.tuples(
                    st.sampled_from(IDS),
                    st.sampled_from(TEXTS),
                    st.integers(0, 3),
                    st.booleans(),
                    st.sampled_from([None, "ann"]),
                ),
                min_size=1,
                max_size=2,
            ),
        ),
        st.tuples(
            st.just("delete"),
            st.lists(st.sampled_from(IDS), max_size=2),
            st.sampled_from(["forget", "hand_delete", "compact", "dedupe"]),
            st.integers(0, 3),
        ),
        st.tuples(st.just("expire"), st.integers(0, 3)),
        st.tuples(st.just("stale")),
    ),
    max_size=15,
)


def record(lsn: int, step: tuple[Any, ...], live: dict[str, str]) -> Record | None:
    """The step as a record; a put that would make two live items share a key
    is left out (the engine de-duplicates before it writes: ``live`` maps each
    live key to its id)."""
    if step[0] == "delete":
        return delete(lsn, *step[1], reason=step[2], minutes=step[3])
    chosen = []
    for item_id, text, minutes, superseded, user in step[1]:
        fact = item(item_id, text, minutes, user=user)
        if superseded:
            fact = fact.evolve(valid_to=T0, superseded_by="m0")
        holder = live.get(fact.key)
        if fact.is_live and holder not in (None, item_id):
            continue
        if any(other.id == item_id or other.key == fact.key for other in chosen):
            continue
        chosen.append(fact)
    return put(lsn, *chosen) if chosen else None


@settings(max_examples=80)
@given(steps)
def test_a_random_sequence_leaves_every_backend_alike(sequence: list[tuple[Any, ...]]) -> None:
    stores = {name: make() for name, make in sorted(BACKENDS.items()) if usable(name)}
    reference = stores["longterm"]
    lsn = 0
    for step in sequence:
        if step[0] == "expire":
            for store in stores.values():
                store.expire_forgotten(T0 + timedelta(minutes=step[1]))
        elif step[0] == "stale":
            for store in stores.values():
                store.apply(put(max(lsn - 1, 0), item("m1", "a stale put")))
        else:
            live = {i.key: i.id for i in reference.items.values() if i.is_live}
            made = record(lsn + 1, step, live)
            if made is None:
                continue
            lsn += 1
            for store in stores.values():
                store.apply(made)
        views = [visible(store) for store in stores.values()]
        assert all(seen == views[0] for seen in views)
        for text in TEXTS:
            found = {repr(store.find_live(text, "ann")) for store in stores.values()}
            assert len(found) == 1
