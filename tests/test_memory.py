"""The Memory facade: remember, forget, list, compact, status, settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstrata import CompactResult, Conflict, InvalidInput, Memory, NotFound, Source
from memstrata.stores import markdown


def test_open_creates_the_layered_layout(ws: Path) -> None:
    with Memory.open(ws):
        pass
    for name in (
        "core/AGENT.md",
        "core/USER.md",
        "core/SOUL.md",
        "working/WORKING_MEMORY.md",
        "MEMORY.md",
        "memory",
        "semantic/facts.md",
        "notes/inbox",
        "notes/zettel",
        "notes/maps",
        "sessions",
        "summaries",
        ".memstrata/journal.wal",
        "memstrata.toml",
    ):
        assert (ws / name).exists(), name


def test_open_without_create_needs_an_initialised_workspace(ws: Path) -> None:
    with pytest.raises(NotFound, match="memstrata init"):
        Memory.open(ws, create=False)


def test_open_on_a_file_is_invalid_input(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    with pytest.raises(InvalidInput, match="not a folder"):
        Memory.open(target)


def test_groups_live_under_the_root(ws: Path) -> None:
    with Memory.open(ws, group="team-a") as memory:
        memory.remember("team fact")
    assert (ws / "groups" / "team-a" / "MEMORY.md").read_text().count("team fact") == 1
    with pytest.raises(InvalidInput, match="group name"):
        Memory.open(ws, group="../escape")


def test_unknown_setting_is_named(ws: Path) -> None:
    with pytest.raises(InvalidInput, match="unknown setting flush_evry"):
        Memory.open(ws, flush_evry=3)
    with pytest.raises(InvalidInput, match="must be a whole number"):
        Memory.open(ws, flush_every_updates=2.5)


def test_remember_is_visible_to_another_open_before_any_checkpoint(ws: Path) -> None:
    with Memory.open(ws) as writer:
        item = writer.remember("I prefer dark mode", category="preference", session="s1")
        assert "dark mode" not in (ws / "MEMORY.md").read_text()  # not checkpointed yet
        with Memory.open(ws) as reader:
            assert reader.get(item.id) == item
    assert f"- I prefer dark mode ^{item.id}" in (ws / "MEMORY.md").read_text()


def test_duplicates_are_stored_once_and_counted(memory: Memory) -> None:
    first = memory.remember("I prefer dark mode")
    again = memory.remember("  i PREFER dark mode. ")
    assert again.id == first.id
    assert again.hits == 1
    assert again.text == first.text
    assert [item.id for item in memory.list()] == [first.id]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"text": ""}, "empty"),
        ({"text": "x", "source": "robot"}, "source must be one of"),
        ({"text": "x", "category": "Superseded"}, "reserved"),
        ({"text": "x", "session": 7}, "session must be a string"),
    ],
)
def test_remember_rejects_bad_input(
    memory: Memory, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        memory.remember(**kwargs)  # type: ignore[arg-type]


def test_forget_deletes_for_good(ws: Path) -> None:
    with Memory.open(ws) as memory:
        keep = memory.remember("keep me")
        drop = memory.remember("drop me")
        assert memory.forget(drop.id) == drop
        with pytest.raises(NotFound, match=drop.id):
            memory.get(drop.id)
        with pytest.raises(NotFound):
            memory.forget(drop.id)
    with Memory.open(ws) as memory:
        assert [item.id for item in memory.list()] == [keep.id]
    assert "drop me" not in (ws / "MEMORY.md").read_text()


def test_get_accepts_the_block_id_form(memory: Memory) -> None:
    item = memory.remember("fact")
    assert memory.get(f"^{item.id}") == item
    with pytest.raises(InvalidInput):
        memory.get("  ")


def test_list_filters_and_orders_newest_first(memory: Memory) -> None:
    a = memory.remember("a", category="preference", session="s1")
    b = memory.remember("b", category="decision", session="s2", source=Source.AGENT)
    c = memory.remember("c", category="preference", session="s1")
    assert [i.id for i in memory.list()] == [c.id, b.id, a.id]
    assert [i.id for i in memory.list(category="Preferences")] == [c.id, a.id]
    assert [i.id for i in memory.list(session="s2")] == [b.id]
    assert [i.id for i in memory.list(source="agent")] == [b.id]
    assert [i.id for i in memory.list(limit=1)] == [c.id]
    with pytest.raises(InvalidInput):
        memory.list(limit=-1)


def test_compact_dedupes_and_keeps_the_newest(ws: Path) -> None:
    with Memory.open(ws) as memory:
        items = [memory.remember(f"fact number {n}") for n in range(10)]
    text = (ws / "MEMORY.md").read_text()
    (ws / "MEMORY.md").write_text(text + "- FACT NUMBER 3\n")  # a hand-added duplicate
    with Memory.open(ws) as memory:
        assert len(memory.list()) == 10  # the duplicate line was not taken as new
        result = memory.compact(max_items=4)
        assert result == CompactResult(removed=6, kept=4)
        assert [i.id for i in memory.list()] == [i.id for i in reversed(items[-4:])]
        with pytest.raises(InvalidInput):
            memory.compact(max_items=-1)
    assert len(markdown.parse((ws / "MEMORY.md").read_bytes()).lines) == 4


def test_the_item_cap_is_enforced_at_checkpoints(ws: Path) -> None:
    with Memory.open(ws, max_items=5) as memory:
        for n in range(20):
            memory.remember(f"fact {n}")
    with Memory.open(ws) as memory:
        assert [i.text for i in memory.list()] == [f"fact {n}" for n in range(19, 14, -1)]


def test_checkpoint_after_n_updates_empties_the_journal(ws: Path) -> None:
    with Memory.open(ws, checkpoint_every_updates=3) as memory:
        for n in range(3):
            memory.remember(f"fact {n}")
        assert memory.status().journal_records == 0
        assert "fact 2" in (ws / "MEMORY.md").read_text()


def test_timed_checkpoint_renders_memory_md_without_a_flush(ws: Path) -> None:
    with Memory.open(ws, checkpoint_interval_seconds=0.05) as memory:
        memory.remember("rendered by the timer")
        deadline = time.monotonic() + 5
        while "rendered by the timer" not in (ws / "MEMORY.md").read_text():
            assert time.monotonic() < deadline, "timer checkpoint did not run"
            time.sleep(0.01)


def test_status_counts(memory: Memory) -> None:
    memory.remember("one")
    memory.remember("two", sync=False)
    report = memory.status()
    assert report.items == 2
    assert report.superseded == 0
    assert report.lsn == 2
    assert report.journal_records == 2
    assert report.unsynced == 1
    assert report.notices == ()
    assert json.loads(json.dumps(report.to_dict()))["items"] == 2


def test_audit_log_records_every_change_once(ws: Path) -> None:
    with Memory.open(ws) as memory:
        item = memory.remember("audited")
        memory.remember("audited")
        memory.flush()
        memory.forget(item.id)
    with Memory.open(ws):
        pass
    audit = (ws / "memory" / "LTM_AUDIT.jsonl").read_text().splitlines()
    lines = [json.loads(line) for line in audit]
    assert [(line["lsn"], line["op"], line["reason"]) for line in lines] == [
        (1, "ltm.put", "remember"),
        (2, "ltm.put", "duplicate"),
        (3, "ltm.del", "forget"),
    ]


def test_a_closed_memory_refuses_calls(ws: Path) -> None:
    memory = Memory.open(ws)
    memory.close()
    memory.close()  # idempotent
    with pytest.raises(InvalidInput, match="closed"):
        memory.remember("late")
    with pytest.raises(InvalidInput, match="closed"):
        memory.list()


def test_temp_files_of_an_interrupted_write_are_swept(ws: Path) -> None:
    with Memory.open(ws):
        pass
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    leftover = ws / f"MEMORY.md.tmp-{dead}-abcd"
    leftover.write_text("half")
    in_flight = ws / f"USER.md.tmp-{os.getpid()}-beef"  # a live writer's file: kept
    in_flight.write_text("being written")
    with Memory.open(ws):
        assert not leftover.exists()
        assert in_flight.exists()


def test_a_reader_that_missed_two_checkpoints_loses_nothing(ws: Path) -> None:
    with Memory.open(ws) as reader, Memory.open(ws) as writer:
        x = writer.remember("in the first journal file")
        writer.flush()
        y = writer.remember("in the second journal file")
        writer.flush()  # the second file is gone: only the snapshot has y now
        assert {i.id for i in reader.list()} == {x.id, y.id}
        z = reader.remember("written by the reader afterwards")
        reader.flush()
    with Memory.open(ws) as memory:
        assert {i.id for i in memory.list()} == {x.id, y.id, z.id}


def test_the_last_jsonl_record_is_found_behind_a_very_long_last_line(tmp_path: Path) -> None:
    from memstrata.storage.files import last_jsonl_record

    audit = tmp_path / "LTM_AUDIT.jsonl"
    ids = [f"m{n:08d}" for n in range(8000)]  # one compaction record of ~100 KB
    lines = [{"lsn": 7, "op": "ltm.put"}, {"lsn": 8, "op": "ltm.del", "ids": ids}]
    audit.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert last_jsonl_record(audit, lambda torn: None) == lines[1]
    with open(audit, "a") as handle:
        handle.write('{"lsn": 9, "op": "ltm.put", "te')  # torn
    kept: list[bytes] = []
    assert last_jsonl_record(audit, kept.append) == lines[1]
    assert kept == [b'{"lsn": 9, "op": "ltm.put", "te']
    assert audit.read_text().endswith("]}\n")
    assert last_jsonl_record(tmp_path / "missing.jsonl", kept.append) is None


def test_init_never_overwrites_a_file_a_person_wrote(ws: Path) -> None:
    (ws / "core").mkdir(parents=True)
    (ws / "core" / "USER.md").write_text("# Me\n- Name: Dilnoza\n")
    with Memory.open(ws):
        pass
    assert (ws / "core" / "USER.md").read_text() == "# Me\n- Name: Dilnoza\n"
    assert "Role" in (ws / "core" / "AGENT.md").read_text()
    assert not [p for p in (ws / "core").iterdir() if ".tmp-" in p.name]


def test_newest_first_holds_when_items_arrive_out_of_order() -> None:
    from datetime import UTC, datetime, timedelta

    from memstrata import Item
    from memstrata.storage.journal import Record
    from memstrata.stores.longterm import OP_PUT, LongTermStore

    base = datetime(2026, 1, 1, tzinfo=UTC)
    store = LongTermStore()
    for lsn, (item_id, minutes) in enumerate([("ma", 1), ("mb", 3), ("mc", 2), ("md", 5)], 1):
        at = base + timedelta(minutes=minutes)
        item = Item(id=item_id, text=item_id, created_at=at, updated_at=at)
        store.apply(Record(lsn, OP_PUT, {"items": [item.to_dict()]}))
    everything = [i.id for i in store.newest(lambda item: True, None)]
    assert everything == ["md", "mb", "mc", "ma"]
    assert [i.id for i in store.newest(lambda item: True, 2)] == ["md", "mb"]
    assert [i.id for i in store.newest(lambda item: item.id != "md", 1)] == ["mb"]


def test_a_correction_supersedes_the_fact_with_validity(ws: Path) -> None:
    with Memory.open(ws) as memory:
        old = memory.remember("My name is Sarvar", category="proper_noun", session="s1")
        new = memory.supersede(old.id, "My name is Sardor", session="s1")
        assert new.category == "proper_noun" and new.is_live
        retired = memory.get(old.id)
        assert retired.valid_to is not None and retired.superseded_by == new.id
        assert [i.id for i in memory.list()] == [new.id]
        assert {i.id for i in memory.list(include_superseded=True)} == {old.id, new.id}
        with pytest.raises(Conflict, match="already superseded"):
            memory.supersede(old.id, "My name is Bob")
        with pytest.raises(InvalidInput, match="already says"):
            memory.supersede(new.id, "my name is sardor.")
    text = (ws / "MEMORY.md").read_text()
    live, archive = text.split("## Superseded")
    assert f"- My name is Sardor ^{new.id}" in live
    when = retired.valid_to.strftime("%Y-%m-%d %H:%M UTC")
    assert f"- ~~My name is Sarvar~~ (superseded {when} by {new.id}) ^{old.id}" in archive
    with Memory.open(ws) as memory:  # validity survives a restart
        assert memory.get(old.id).superseded_by == new.id
    audit = (ws / "memory" / "LTM_AUDIT.jsonl").read_text().splitlines()
    [record] = [json.loads(line) for line in audit if '"supersede"' in line]
    assert [item["id"] for item in record["items"]] == [old.id, new.id]


def test_a_correction_to_an_existing_fact_reuses_it(memory: Memory) -> None:
    old = memory.remember("The meeting is on Monday")
    other = memory.remember("The meeting is on Tuesday")
    new = memory.supersede(old.id, "the meeting is on tuesday")
    assert new.id == other.id and new.hits == 1
    assert memory.get(old.id).superseded_by == other.id


SECRETS = [
    ("my password is Tr0ub4dor&3", "Tr0ub4dor&3"),
    (
        "the deploy key is sk-proj-4f9aQ2xL7mN8pR3sT6vW1yZ0bC5dE",
        "sk-proj-4f9aQ2xL7mN8pR3sT6vW1yZ0bC5dE",
    ),
    ("card 4111 1111 1111 1111 for the hotel", "4111 1111 1111 1111"),
]


def _workspace_bytes(ws: Path) -> bytes:
    return b"".join(path.read_bytes() for path in ws.rglob("*") if path.is_file())


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_a_secret_reaches_no_file_of_the_workspace(ws: Path, text: str, secret: str) -> None:
    with Memory.open(ws) as memory:
        item = memory.remember(text)
        assert secret not in item.text and "[REDACTED:" in item.text
        assert secret.encode() not in _workspace_bytes(ws)  # journal included, before checkpoint
        fixed = memory.supersede(item.id, f"{text} (updated)")
        assert secret not in fixed.text
    assert secret.encode() not in _workspace_bytes(ws)


def test_a_secret_typed_into_memory_md_by_hand_is_not_kept(ws: Path) -> None:
    with Memory.open(ws):
        pass
    path = ws / "MEMORY.md"
    path.write_text(path.read_text() + "\n## Facts\n- my password is Tr0ub4dor&3\n")
    with Memory.open(ws) as memory:
        [item] = memory.list()
        assert item.text == "my password is [REDACTED:password]"
        assert any("redacted" in notice for notice in memory.notices)
    assert b"Tr0ub4dor&3" not in _workspace_bytes(ws)


def test_a_secret_in_a_hand_written_memory_md_without_snapshot_is_not_kept(ws: Path) -> None:
    ws.mkdir()
    (ws / "MEMORY.md").write_text("## Facts\n- wifi password: hunter2hunter2\n")
    with Memory.open(ws) as memory:
        assert [i.text for i in memory.list()] == ["wifi password: [REDACTED:password]"]
    assert b"hunter2hunter2" not in _workspace_bytes(ws)


def test_a_workspace_from_before_the_lock_turnstile_gets_it_ignored(ws: Path) -> None:
    Memory.open(ws).close()
    ignore = ws / ".memstrata" / ".gitignore"
    assert "lock.gate" in ignore.read_text().split()
    old = "# machine-local files of memstrata\nlock\n*.tmp-*\nindex.sqlite*"  # no final newline
    ignore.write_text(old)
    (ws / ".memstrata" / "lock.gate").unlink()
    with Memory.open(ws) as memory:
        memory.remember("the lock takes turns")
    assert ignore.read_text() == old + "\nlock.gate\n"
    Memory.open(ws).close()
    assert ignore.read_text().count("lock.gate") == 1
