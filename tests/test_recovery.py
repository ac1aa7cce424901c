"""Bad files never crash open: they are quarantined, reported and repaired."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

from memstrata import Corrupt, Item, Memory, Source
from memstrata.doctor import Level, diagnose
from memstrata.model import new_item_id
from memstrata.storage.files import atomic_write
from memstrata.storage.quarantine import list_quarantine
from memstrata.storage.volume import DiskVolume
from memstrata.storage.workspace import Workspace
from memstrata.stores import markdown
from memstrata.stores.longterm import Fingerprint, Snapshot, snapshot_row
from strategies import item_lists


def _seed(ws: Path, count: int = 3) -> list[Item]:
    with Memory.open(ws) as memory:
        return [memory.remember(f"fact {n}", session="s1") for n in range(count)]


def test_a_corrupt_snapshot_is_quarantined_and_rebuilt_from_memory_md(ws: Path) -> None:
    items = _seed(ws)
    snapshot = ws / "memory" / "LTM_SNAPSHOT.json"
    garbage = b'{"format": 1, "lsn": 3, "items": [{"id": '
    snapshot.write_bytes(garbage)
    with Memory.open(ws) as memory:
        assert {i.id: i.text for i in memory.list()} == {i.id: i.text for i in items}
        assert any("quarantine" in notice for notice in memory.notices)
        assert memory.status().quarantined == 1
    [entry] = list_quarantine(ws / ".memstrata" / "quarantine")
    assert (ws / ".memstrata" / "quarantine" / entry.stored).read_bytes() == garbage
    assert Snapshot.load(snapshot).lsn >= 3  # a good snapshot was written again


@pytest.mark.parametrize("damage", ["deleted", "garbage"])
def test_a_lost_snapshot_keeps_forgotten_items_and_provenance_from_the_audit_log(
    ws: Path, damage: str
) -> None:
    with Memory.open(ws) as memory:
        kept = memory.remember("I drink green tea", category="preference", session="s1")
        gone = memory.remember("My old address is 1 Elm Street", session="s2")
        memory.forget(gone.id)
    edited = (ws / "MEMORY.md").read_text().replace("green tea", "black tea")
    (ws / "MEMORY.md").write_text(edited)
    with (ws / "memory" / "LTM_AUDIT.jsonl").open("a") as audit:
        audit.write('{"torn": \n')  # salvage skips it
    snapshot = ws / "memory" / "LTM_SNAPSHOT.json"
    if damage == "deleted":
        snapshot.unlink()
    else:
        snapshot.write_bytes(b"\x00garbage")
    with Memory.open(ws) as memory:
        [item] = memory.list()
        assert (item.id, item.text) == (kept.id, "I drink black tea")  # MEMORY.md's text
        assert (item.session, item.source, item.created_at) == ("s1", Source.USER, kept.created_at)
        assert [f.item.id for f in memory.forgotten()] == [gone.id]
        assert memory.restore(gone.id).text == gone.text
    with Memory.open(ws) as memory:  # and it was all saved in the new snapshot
        assert {i.id for i in memory.list()} == {kept.id, gone.id}


@pytest.mark.parametrize(
    "content", [b"[1, 2]", b'{"format": 99}', b'{"format": 1, "lsn": 1, "items": [{}]}', b"\xff"]
)
def test_any_unreadable_snapshot_is_corrupt(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "LTM_SNAPSHOT.json"
    path.write_bytes(content)
    with pytest.raises(Corrupt, match="not a readable snapshot"):
        Snapshot.load(path)


def test_a_corrupt_snapshot_keeps_journal_writes_made_after_the_checkpoint(ws: Path) -> None:
    _seed(ws)
    with Memory.open(ws) as memory:
        late = memory.remember("written after the checkpoint")
        (ws / "memory" / "LTM_SNAPSHOT.json").write_text("not json")
        with Memory.open(ws) as other:
            assert other.get(late.id).text == late.text


def test_a_torn_journal_tail_is_quarantined_and_reported(ws: Path) -> None:
    with Memory.open(ws) as memory:
        kept = memory.remember("acknowledged")
        with open(ws / ".memstrata" / "journal.wal", "ab") as journal:
            journal.write(b'0badc0de {"lsn": 2, "op": "ltm.put", "item": {"te')
        findings = diagnose(Workspace.locate(ws))
        assert any(f.check == "journal" and "incomplete" in f.message for f in findings)
        with Memory.open(ws) as other:
            assert [i.id for i in other.list()] == [kept.id]
            assert any("torn" in notice for notice in other.notices)
    entries = list_quarantine(ws / ".memstrata" / "quarantine")
    assert [e.original for e in entries] == ["journal.wal"]


def test_invalid_utf8_in_memory_md_is_kept_in_quarantine_and_loses_no_item(ws: Path) -> None:
    items = _seed(ws)
    path = ws / "MEMORY.md"
    data = path.read_bytes().replace(b"fact 1", b"fact \xff\xfe 1")
    path.write_bytes(data)
    with Memory.open(ws) as memory:
        assert {i.id for i in memory.list()} == {i.id for i in items}
    [entry] = list_quarantine(ws / ".memstrata" / "quarantine")
    stored = (ws / ".memstrata" / "quarantine" / entry.stored).read_bytes()
    assert b"\xff\xfe" in stored
    assert "not valid UTF-8" in entry.reason
    findings = diagnose(Workspace.locate(ws))
    assert any(f.level is Level.WARN and "quarantined" in f.message for f in findings)
    assert markdown.parse(path.read_bytes()).bad == []  # rendered clean again


def test_invalid_utf8_in_a_memory_md_without_snapshot_is_quarantined_too(ws: Path) -> None:
    ws.mkdir()
    (ws / "MEMORY.md").write_bytes(b"## Facts\n- good fact\n- bad \xff fact\n")
    with Memory.open(ws) as memory:
        assert [i.text for i in memory.list()] == ["good fact"]
    [entry] = list_quarantine(ws / ".memstrata" / "quarantine")
    stored = (ws / ".memstrata" / "quarantine" / entry.stored).read_bytes()
    assert stored == b"- bad \xff fact"


def test_a_missing_memory_md_is_rendered_again(ws: Path) -> None:
    items = _seed(ws)
    (ws / "MEMORY.md").unlink()
    with Memory.open(ws) as memory:
        assert len(memory.list()) == len(items)
        assert any("missing" in notice for notice in memory.notices)
    assert "fact 2" in (ws / "MEMORY.md").read_text()


def test_a_hand_written_memory_md_without_snapshot_is_imported(ws: Path) -> None:
    ws.mkdir()
    (ws / "MEMORY.md").write_text("# Notes\n## Preferences\n- likes tea\n- likes tea\n")
    with Memory.open(ws) as memory:
        [item] = memory.list()
    assert (item.text, item.category, item.source) == ("likes tea", "preference", Source.IMPORT)


def test_doctor_on_a_healthy_workspace_reports_no_problem(ws: Path) -> None:
    _seed(ws)
    findings = diagnose(Workspace.locate(ws))
    assert {f.level for f in findings} <= {Level.OK, Level.INFO}


def test_doctor_names_a_bad_settings_file(ws: Path) -> None:
    _seed(ws)
    (ws / "memstrata.toml").write_text("[memory]\nflush_every = 3\n")
    findings = diagnose(Workspace.locate(ws))
    [bad] = [f for f in findings if f.level is Level.ERROR]
    assert bad.check == "settings" and "unknown setting flush_every" in bad.message


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(item_lists)
def test_items_round_trip_through_memory_md_and_snapshot(tmp_path: Path, items: list[Item]) -> None:
    ws = tmp_path / f"ws-{new_item_id()}"
    with Memory.open(ws):
        pass
    md = ws / "MEMORY.md"
    rendered = markdown.render(items).encode()
    atomic_write(md, rendered)
    stat = DiskVolume(ws).stat("MEMORY.md")
    assert stat is not None
    fingerprint = Fingerprint.of(stat, rendered)
    atomic_write(
        ws / "memory" / "LTM_SNAPSHOT.json",
        Snapshot.encode(0, fingerprint, [snapshot_row(i, None) for i in items]),
    )
    expected = {item.id: item for item in items}
    for _ in range(2):  # as written, then after memstrata's own checkpoint
        with Memory.open(ws) as memory:
            found = {i.id: i for i in memory.list(include_superseded=True)}
            assert found == expected
            assert memory.notices == ()
            memory.flush()
    data = json.loads((ws / "memory" / "LTM_SNAPSHOT.json").read_text())
    assert len(data["items"]) == len(items)
