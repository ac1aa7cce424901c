"""LTM_SNAPSHOT.json: format 2 (rows as arrays) round-trips every item exactly,
format 1 (rows as objects, written before 2026-11-28) is still read, and a
damaged row is ``Corrupt``, never a half-built item."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Item, Memory, Source
from memstrata.errors import Corrupt
from memstrata.model import new_item_id
from memstrata.stores.longterm import (
    ROW_FIELDS,
    SNAPSHOT_FORMAT,
    Fingerprint,
    Snapshot,
    snapshot_row,
)
from strategies import texts

EPOCH = datetime(2026, 1, 1, tzinfo=UTC)
ZONES = st.sampled_from(
    [UTC, timezone(timedelta(hours=5)), timezone(timedelta(hours=-3, minutes=-30))]
)
FINGERPRINT = Fingerprint(10, 20, 30, "0" * 64, 40)


@st.composite
def items(draw: st.DrawFn) -> Item:
    """Items with every field varied: times equal to created_at or not (and the
    same instant in another zone), optional fields set or not."""
    created = (EPOCH + timedelta(microseconds=draw(st.integers(0, 10**14)))).astimezone(draw(ZONES))

    def time_or_same(optional: bool) -> datetime | None:
        kind = draw(
            st.sampled_from(["same", "other zone", "later"] + (["none"] if optional else []))
        )
        if kind == "same":
            return created
        if kind == "other zone":
            return created.astimezone(draw(ZONES))
        if kind == "later":
            return created + timedelta(seconds=draw(st.integers(1, 10**8)))
        return None

    valid_to = draw(st.none() | st.just(created + timedelta(days=3)))
    return Item(
        id=new_item_id(),
        text=draw(texts),
        category=draw(st.sampled_from(["fact", "preference", "infra", "лично"])),
        source=draw(st.sampled_from(list(Source))),
        session=draw(st.none() | st.sampled_from(["s1", "tg:42", "会话"])),
        created_at=created,
        updated_at=time_or_same(optional=False) or created,
        hits=draw(st.integers(0, 10**6)),
        valid_from=time_or_same(optional=True),
        valid_to=valid_to,
        superseded_by=new_item_id() if valid_to is not None and draw(st.booleans()) else None,
        user=draw(st.none() | st.sampled_from(["alice", "bob"])),
    )


def _encode(facts: list[Item]) -> bytes:
    rows = [snapshot_row(item, item.key if item.is_live else None) for item in facts]
    return Snapshot.encode(7, FINGERPRINT, rows)


def _same(a: Item, b: Item) -> bool:
    """Equal, and every time written the same way (zone included)."""
    return a == b and json.dumps(a.to_dict()) == json.dumps(b.to_dict())


@settings(max_examples=200)
@given(st.lists(items(), max_size=20, unique_by=lambda item: item.id))
def test_every_item_comes_back_exactly(facts: list[Item]) -> None:
    snapshot = Snapshot.decode(_encode(facts))
    assert snapshot.lsn == 7 and snapshot.markdown == FINGERPRINT
    assert list(snapshot.items) == [item.id for item in facts]
    for item in facts:
        assert _same(snapshot.items[item.id], item)
    assert snapshot.keys == {item.key: item.id for item in facts if item.is_live}


def test_rows_are_arrays_of_the_named_fields() -> None:
    item = Item(
        id="a1",
        text="The staging database listens on port 5433",
        created_at=EPOCH,
        updated_at=EPOCH,
        valid_from=EPOCH,
    )
    data = json.loads(_encode([item]))
    assert data["format"] == SNAPSHOT_FORMAT == 2
    assert data["fields"] == list(ROW_FIELDS)
    stamp = EPOCH.isoformat()
    assert data["items"] == [
        ["a1", item.text, "fact", "user", stamp, 0, 0, 0, item.key] + [None] * 4
    ]


def _format_1(facts: list[Item]) -> bytes:
    """A snapshot as memstrata wrote it before format 2 (rows are objects)."""
    rows = []
    for item in facts:
        row = {k: v for k, v in item.to_dict().items() if v is not None}
        if item.is_live:
            row["key"] = item.key
        rows.append(row)
    head = {
        "format": 1,
        "lsn": 3,
        "markdown": FINGERPRINT.to_dict(),
        "key_version": 1,
        "forgotten": [],
        "items": rows,
    }
    return json.dumps(head).encode()


@settings(max_examples=50)
@given(st.lists(items(), max_size=10, unique_by=lambda item: item.id))
def test_a_format_1_snapshot_is_still_read(facts: list[Item]) -> None:
    snapshot = Snapshot.decode(_format_1(facts))
    assert snapshot.lsn == 3
    for item in facts:
        assert _same(snapshot.items[item.id], item)


def test_a_workspace_with_a_format_1_snapshot_opens_and_is_rewritten_in_format_2(tmp_path) -> None:
    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none") as memory:
        kept = memory.remember("Alice leads the billing team", category="people")
        memory.flush()
    path = ws / "memory" / "LTM_SNAPSHOT.json"
    current = Snapshot.load(path)
    old = json.loads(_format_1(list(current.items.values())))
    old["lsn"], old["markdown"] = current.lsn, current.markdown.to_dict()
    path.write_text(json.dumps(old))
    with Memory.open(ws, embedder="none") as memory:
        assert memory.get(kept.id).text == "Alice leads the billing team"
        memory.remember("Bob runs the deploys")
        memory.flush()
    assert json.loads(path.read_bytes())["format"] == 2
    with Memory.open(ws, embedder="none") as memory:
        assert {item.text for item in memory.list()} >= {
            "Alice leads the billing team",
            "Bob runs the deploys",
        }


GOOD = ["a1", "text", "fact", "user", EPOCH.isoformat(), 0, 0, 0, "text", None, None, None, None]


@pytest.mark.parametrize(
    "row",
    [
        pytest.param({"id": "a1"}, id="an object in a format-2 file"),
        pytest.param(GOOD[:9], id="too short"),
        pytest.param([*GOOD, "one too many"], id="too long"),
        pytest.param([1, *GOOD[1:]], id="id not a string"),
        pytest.param([GOOD[0], None, *GOOD[2:]], id="text null"),
        pytest.param([*GOOD[:3], "robot", *GOOD[4:]], id="unknown source"),
        pytest.param([*GOOD[:4], "yesterday", *GOOD[5:]], id="created_at not a time"),
        pytest.param([*GOOD[:4], 17, *GOOD[5:]], id="created_at a number"),
        pytest.param([*GOOD[:5], "soon", *GOOD[6:]], id="updated_at not a time"),
        pytest.param([*GOOD[:7], "3", *GOOD[8:]], id="hits a string"),
        pytest.param([*GOOD[:8], 5, *GOOD[9:]], id="key a number"),
        pytest.param([*GOOD[:9], ["s"], *GOOD[10:]], id="session a list"),
        pytest.param([*GOOD[:10], "never", *GOOD[11:]], id="valid_to not a time"),
    ],
)
def test_a_damaged_row_is_corrupt(row: object) -> None:
    data = json.loads(_encode([]))
    data["items"] = [row]
    with pytest.raises(Corrupt):
        Snapshot.decode(json.dumps(data).encode())


def test_an_id_twice_is_corrupt_and_unknown_fields_or_formats_are_refused() -> None:
    data = json.loads(_encode([]))
    data["items"] = [GOOD, GOOD]
    with pytest.raises(Corrupt, match="twice"):
        Snapshot.decode(json.dumps(data).encode())
    data["items"] = [GOOD]
    data["fields"] = list(reversed(ROW_FIELDS))
    with pytest.raises(Corrupt, match="fields"):
        Snapshot.decode(json.dumps(data).encode())
    data["format"] = 3
    with pytest.raises(Corrupt, match="format"):
        Snapshot.decode(json.dumps(data).encode())
