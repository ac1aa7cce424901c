"""The shared suite of ``Memory`` (issue 15), part 3: what open repairs,
upgrades and migrates, on a folder and on PostgreSQL alike (``places.place``).
Damage is made through the workspace's volume (a person's save, a writer
killed mid-append), never on the disk; what is set aside is read back from the
quarantine through the volume."""

from __future__ import annotations

import json

from memstrata.storage.quarantine import QUARANTINE, list_quarantine
from memstrata.storage.workspace import session_stem
from places import Place

SOUL = """# SOUL.md

Warm and brief.

## Session Compaction 2025-01-15 10:00
- The user is migrating the billing service to Go
- Staging database port is 5433

## Voice
Plain words.
"""


def transcript(session: str) -> str:
    return f"sessions/{session_stem(session)}.jsonl"


def test_a_torn_transcript_tail_is_set_aside_and_the_next_turn_starts_clean(place: Place) -> None:
    with place.open() as memory:
        memory.record_turn("s", user="a", assistant="b")
        memory.workspace.volume.append(transcript("s"), b'{"schema_version": 2, "id": "half')
    with place.open() as memory:
        assert memory.record_turn("s", user="c", assistant="d").seq == 2
        assert [t.text_of("user") for t in memory.sessions.turns("s")] == ["a", "c"]
        [entry] = list_quarantine(memory.workspace.volume)
        assert entry.original == transcript("s")
        assert memory.workspace.volume.read(QUARANTINE + entry.stored) == (
            b'{"schema_version": 2, "id": "half'
        )


def test_unreadable_lines_are_kept_aside_and_the_rest_is_read(place: Place) -> None:
    with place.open() as memory:
        memory.remember("I prefer dark mode")
        memory.record_turn("s", user="first", assistant="one")
        memory.record_turn("s", user="second", assistant="two")
        volume = memory.workspace.volume
        good = (volume.read(transcript("s")) or b"").splitlines(keepends=True)
        garbage, bad_utf8 = b"}}garbage{{ not json\n", b'{"text": "caf\xe9 \xff"}\n'
        volume.write(transcript("s"), good[0] + garbage + bad_utf8 + good[1])
    with place.open() as memory:
        volume = memory.workspace.volume
        volume.write("MEMORY.md", (volume.read("MEMORY.md") or b"") + b"- broken \xff\xfe line\n")
    with place.open() as memory:
        assert [t.text_of("user") for t in memory.sessions.turns("s")] == ["first", "second"]
        assert [item.text for item in memory.list()] == ["I prefer dark mode"]
        [turn] = memory.search("second", k=1, layers=["transcripts"])
        assert turn.text == "second" and turn.line_start == 2
        assert memory.record_turn("s", user="third", assistant="three").seq == 3
        kept = {
            memory.workspace.volume.read(QUARANTINE + entry.stored): entry.reason
            for entry in list_quarantine(memory.workspace.volume)
        }
    assert "not JSON" in kept[garbage.rstrip(b"\n")]
    assert "not valid UTF-8" in kept[bad_utf8.rstrip(b"\n")]
    assert any(data is not None and b"\xff\xfe" in data for data in kept)  # the MEMORY.md line


def test_version_1_transcripts_are_upgraded_once(place: Place) -> None:
    messages = [
        {"role": "user", "content": "hello", "ts": 1_700_000_000},
        {"role": "assistant", "content": "hi"},
        {"role": "user", "content": "how are you?"},
        {"role": "assistant", "content": "fine"},
    ]
    with place.open() as memory:  # a transcript of an older memstrata: the next open upgrades it
        memory.workspace.volume.write(
            transcript("legacy"), b"".join(json.dumps(m).encode() + b"\n" for m in messages)
        )
    with place.open() as memory:
        turns = memory.sessions.turns("legacy")
        assert any("upgraded" in notice for notice in memory.notices)
        upgraded = memory.workspace.volume.read(transcript("legacy"))
    assert [t.seq for t in turns] == [1, 2]
    assert [(t.text_of("user"), t.text_of("assistant")) for t in turns] == [
        ("hello", "hi"),
        ("how are you?", "fine"),
    ]
    with place.open() as memory:  # the second open does nothing
        assert memory.notices == ()
        assert memory.workspace.volume.read(transcript("legacy")) == upgraded


def test_open_migrates_claude_md_and_soul_compaction_sections(place: Place) -> None:
    with place.open() as memory:
        memory.workspace.volume.write("core/SOUL.md", SOUL.encode())
        memory.workspace.volume.write("CLAUDE.md", b"Always answer in English.\n")
    with place.open() as memory:
        live = {(item.category, item.text) for item in memory.list()}
        notices = " ".join(memory.notices)
        soul = memory.core.read("soul")
        volume = memory.workspace.volume
        assert volume.read("CLAUDE.md") is None
        assert volume.read(".memstrata/migrated/CLAUDE.md") == b"Always answer in English.\n"
    assert live == {
        ("Session Compaction 2025-01-15 10:00", "The user is migrating the billing service to Go"),
        ("Session Compaction 2025-01-15 10:00", "Staging database port is 5433"),
    }
    assert "CLAUDE.md" in notices and "1 Session Compaction section(s)" in notices
    assert "Session Compaction" not in soul and "## Voice\nPlain words." in soul
    assert "Always answer in English." in soul
    with place.open() as memory:  # idempotent
        assert memory.notices == ()
        assert len(memory.list()) == 2
