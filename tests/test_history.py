"""Transcripts, audit log, upgrades, quarantine and session compaction (issue 7)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import InvalidInput, Memory, NotFound
from memstrata.doctor import diagnose
from memstrata.model import WriteEvent
from memstrata.storage.workspace import Workspace, session_stem
from memstrata.stores.transcripts import SCHEMA_VERSION, Turn

SESSION = "tg:42"
AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def transcript(ws: Path, session: str = SESSION) -> Path:
    return ws / "sessions" / f"{session_stem(session)}.jsonl"


def records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def quarantined(ws: Path) -> list[dict[str, object]]:
    index = ws / ".memstrata" / "quarantine" / "INDEX.jsonl"
    if not index.exists():
        return []
    return [json.loads(line) for line in index.read_text(encoding="utf-8").splitlines()]


# -- record_turn ---------------------------------------------------------------------


def test_a_turn_is_one_versioned_line_with_its_parts_in_order(memory: Memory) -> None:
    turn = memory.record_turn(
        SESSION,
        user="What's the weather in Tashkent?",
        assistant="Sunny, 21 °C.",
        reasoning="I should call the weather tool.",
        tool_calls=[{"name": "weather", "arguments": {"city": "Tashkent"}}],
        tool_results=[{"content": "21 C, clear", "source": "openweather"}],
        meta={"model": "scripted"},
        at=AT,
    )
    [line] = records(transcript(memory.workspace.path))
    assert line == turn.to_dict()
    assert line["schema_version"] == SCHEMA_VERSION and line["seq"] == 1
    assert line["session"] == SESSION and line["meta"] == {"model": "scripted"}
    shape = [
        (message["role"], [part["type"] for part in message["parts"]])  # type: ignore[index]
        for message in line["messages"]  # type: ignore[attr-defined]
    ]
    assert shape == [
        ("user", ["text"]),
        ("assistant", ["reasoning", "tool_call"]),
        ("tool", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    call = line["messages"][1]["parts"][1]  # type: ignore[index]
    result = line["messages"][2]["parts"][0]  # type: ignore[index]
    assert call["name"] == "weather" and call["arguments"] == {"city": "Tashkent"}
    assert result["tool_call_id"] == call["id"] and result["success"] is True
    assert Turn.from_dict(line) == turn


def test_seq_counts_on_across_reopen_and_other_processes(ws: Path) -> None:
    with Memory.open(ws) as first:
        assert first.record_turn(SESSION, user="a", assistant="b").seq == 1
        with Memory.open(ws) as second:  # another writer on the same workspace
            assert second.record_turn(SESSION, user="c", assistant="d").seq == 2
        assert first.record_turn(SESSION, user="e", assistant="f").seq == 3
        assert first.record_turn("other", user="g", assistant="h").seq == 1
    with Memory.open(ws) as again:
        assert again.record_turn(SESSION, user="i", assistant="j").seq == 4
        assert [t.seq for t in again.sessions.turns(SESSION)] == [1, 2, 3, 4]
        assert [t.text_of("user") for t in again.sessions.turns(SESSION, last=2)] == ["e", "i"]


def test_the_audit_log_reconstructs_every_event_of_a_turn(memory: Memory) -> None:
    memory.record_turn(
        SESSION,
        user="Book it",
        assistant="Booked.",
        tool_calls=[{"name": "book", "args": {"room": 4}, "id": "c1"}],
        tool_results=[{"tool_call_id": "c1", "content": "no such room", "success": False}],
    )
    events = memory.sessions.audit(SESSION)
    assert [(e["turn"], e["role"]) for e in events] == [
        (1, "user"),
        (1, "tool_call"),
        (1, "tool_result"),
        (1, "assistant"),
    ]
    assert events[1]["tool"] == "book" and events[1]["args"] == {"room": 4}
    assert events[2]["success"] is False and events[2]["tool"] == "book"
    assert events[0]["content"] == "Book it" and events[3]["content"] == "Booked."


def test_a_turn_also_writes_the_daily_note_through_the_exchange_path(memory: Memory) -> None:
    seen: list[WriteEvent] = []
    memory.add_write_hook(seen.append)
    memory.record_turn(SESSION, user="hello there", assistant="hi", at=AT)
    path = memory.record_exchange("second", "reply", at=AT)
    note = path.read_text(encoding="utf-8")
    assert note.count("## [") == 2 and "**User:** hello there" in note
    assert [event.kind for event in seen] == ["turn", "note", "note"]
    assert seen[0].path == f"sessions/{session_stem(SESSION)}.jsonl"


def test_no_secret_of_a_turn_reaches_any_file(ws: Path) -> None:
    key = "sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk"
    with Memory.open(ws) as memory:
        memory.record_turn(
            SESSION,
            user=f"use my key {key}",
            assistant=f"Done with {key}",
            reasoning=f"the key is {key}",
            tool_calls=[{"name": "login", "arguments": {"api_key": key, "password": "hunter2!x"}}],
            tool_results=[{"content": {"echo": key}}],
            meta={"note": key},
        )
    for path in ws.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            assert key.encode() not in data and b"hunter2!x" not in data, path


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"user": 3, "assistant": "x"}, "user must be a string"),
        ({"user": "x", "assistant": "y", "tool_calls": "weather"}, "tool_calls must be a list"),
        ({"user": "x", "assistant": "y", "tool_calls": [{"arguments": {}}]}, "has no name"),
        ({"user": "x", "assistant": "y", "tool_results": [{"success": True}]}, "has no content"),
        ({"user": "x", "assistant": "y", "at": "today"}, "at must be a datetime"),
    ],
)
def test_record_turn_says_what_is_wrong(
    memory: Memory, kwargs: dict[str, object], message: str
) -> None:
    with pytest.raises(InvalidInput, match=message):
        memory.record_turn(SESSION, **kwargs)  # type: ignore[arg-type]
    assert not transcript(memory.workspace.path).exists()


def test_a_torn_last_line_is_set_aside_and_the_next_turn_starts_clean(ws: Path) -> None:
    with Memory.open(ws) as memory:
        memory.record_turn(SESSION, user="a", assistant="b")
    with open(transcript(ws), "ab") as handle:
        handle.write(b'{"schema_version": 2, "id": "half')  # a writer killed mid-append
    with Memory.open(ws) as memory:
        assert memory.record_turn(SESSION, user="c", assistant="d").seq == 2
        assert [t.text_of("user") for t in memory.sessions.turns(SESSION)] == ["a", "c"]
    [entry] = quarantined(ws)
    assert entry["original"] == f"sessions/{session_stem(SESSION)}.jsonl"


# -- corrupt input (the bar) -------------------------------------------------


def test_corrupt_transcript_and_memory_md_open_and_every_bad_byte_is_kept(ws: Path) -> None:
    with Memory.open(ws, embedder="hash") as memory:
        memory.remember("I prefer dark mode")
        memory.record_turn(SESSION, user="first", assistant="one")
        memory.record_turn(SESSION, user="second", assistant="two")
    path = transcript(ws)
    good = path.read_bytes().splitlines(keepends=True)
    garbage, bad_utf8 = b"}}garbage{{ not json\n", b'{"text": "caf\xe9 \xff"}\n'
    path.write_bytes(good[0] + garbage + bad_utf8 + good[1])
    md = ws / "MEMORY.md"
    md.write_bytes(md.read_bytes() + b"- broken \xff\xfe line\n")

    with Memory.open(ws, embedder="hash") as memory:
        assert [t.text_of("user") for t in memory.sessions.turns(SESSION)] == ["first", "second"]
        assert [item.text for item in memory.list()] == ["I prefer dark mode"]
        assert memory.search("dark mode", k=1)[0].text == "I prefer dark mode"
        [turn] = memory.search("second", k=1, layers=["transcripts"])
        assert turn.text == "second" and turn.line_start == 2
        assert memory.record_turn(SESSION, user="third", assistant="three").seq == 3
        notices = " ".join(memory.status().notices)
    assert "quarantined 2 unreadable line(s)" in notices

    stored = {entry["stored"]: entry for entry in quarantined(ws)}
    kept = {
        (ws / ".memstrata" / "quarantine" / name).read_bytes(): entry
        for name, entry in stored.items()
    }
    assert garbage.rstrip(b"\n") in kept and bad_utf8.rstrip(b"\n") in kept
    assert "not JSON" in str(kept[garbage.rstrip(b"\n")]["reason"])
    assert "not valid UTF-8" in str(kept[bad_utf8.rstrip(b"\n")]["reason"])
    assert any(b"\xff\xfe" in data for data in kept)  # the MEMORY.md line
    backups = list((ws / ".memstrata" / "backup").iterdir())
    assert [b.read_bytes() for b in backups] == [good[0] + garbage + bad_utf8 + good[1]]

    findings = [f.message for f in diagnose(Workspace.locate(ws))]
    said = "\n".join(findings)
    assert "quarantined" in said
    assert f"sessions/{session_stem(SESSION)}.jsonl" in said and "not valid UTF-8" in said
    assert "MEMORY.md" in said


# -- upgrades ------------------------------------------------------------------------

v1_message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant", "tool"]),
        "content": st.text(min_size=0, max_size=40),
    },
    optional={"ts": st.integers(min_value=1_600_000_000, max_value=1_900_000_000)},
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(st.lists(v1_message, min_size=1, max_size=25))
def test_v1_records_are_upgraded_with_nothing_lost_and_once(
    tmp_path_factory: pytest.TempPathFactory, messages: list[dict[str, object]]
) -> None:
    ws = tmp_path_factory.mktemp("v1") / "ws"
    Memory.open(ws).close()
    path = transcript(ws, "legacy")
    original = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    path.write_bytes(original)

    with Memory.open(ws) as memory:
        turns = memory.sessions.turns("legacy")
        assert any("upgraded" in n for n in memory.status().notices)
    flat = [
        (m["role"], part.get("text", part.get("content")))
        for turn in turns
        for m in turn.messages
        for part in m["parts"]
    ]
    assert flat == [(m["role"], m["content"]) for m in messages]
    assert [t.seq for t in turns] == list(range(1, len(turns) + 1))
    assert all(t.messages[0]["role"] == "user" for t in turns[1:])
    upgraded = path.read_bytes()
    [backup] = (ws / ".memstrata" / "backup").iterdir()
    assert backup.read_bytes() == original

    with Memory.open(ws) as memory:  # the second open is a no-op
        assert memory.status().notices == ()
    assert path.read_bytes() == upgraded


def test_q15_turn_files_are_copied_once_and_q15s_files_are_kept(
    ws: Path,
) -> None:
    Memory.open(ws).close()
    day = ws / "history" / "turns" / "2025" / "01" / "15"
    day.mkdir(parents=True)
    turn = {
        "schema_version": 2,
        "id": "q-1",
        "session": "web",
        "created_at": "2025-01-15T10:00:00+00:00",
        "messages": [
            {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "parts": [{"type": "text", "text": "hello"}]},
        ],
    }
    older = {  # the flat layout q15 wrote before schema 2
        "session": "web",
        "created_at": "2025-01-15T09:00:00+00:00",
        "messages": [
            {"role": "user", "content": "earlier"},
            {"role": "assistant", "content": "ok"},
        ],
    }
    (day / "0002.json").write_text(json.dumps(turn), encoding="utf-8")
    (day / "0001.json").write_text(json.dumps(older), encoding="utf-8")
    (day / "0003.json").write_bytes(b'{"messages": [\xff')
    (ws / "history" / "state").mkdir()
    (ws / "history" / "state" / "head.json").write_text('{"seq": 2}')
    q15_files = {p: p.read_bytes() for p in (ws / "history").rglob("*") if p.is_file()}

    with Memory.open(ws) as memory:
        turns = memory.sessions.turns("web")
    assert [(t.seq, t.text_of("user")) for t in turns] == [(1, "earlier"), (2, "hi")]
    # q15 can go on using its folder: every file of it is as it was, none added
    assert {p: p.read_bytes() for p in (ws / "history").rglob("*") if p.is_file()} == q15_files
    [entry] = quarantined(ws)  # a copy of the unreadable one, with the reason
    assert entry["original"] == "history/turns/2025/01/15/0003.json"
    assert not (ws / ".memstrata" / "backup").exists()

    before = transcript(ws, "web").read_bytes()
    with Memory.open(ws) as memory:
        assert memory.status().notices == ()
    assert transcript(ws, "web").read_bytes() == before


# -- compaction ----------------------------------------------------------------------


def test_compaction_keeps_the_metadata_and_the_last_n_turns_exactly(memory: Memory) -> None:
    for n in range(10):
        memory.record_turn(SESSION, user=f"question {n}", assistant=f"answer {n}")
    path = transcript(memory.workspace.path)
    lines = path.read_bytes().splitlines(keepends=True)
    audit_before = (path.parent / f"{session_stem(SESSION)}.audit.jsonl").read_bytes()

    done = memory.sessions.compact(SESSION, keep=3)
    assert (done.kept, done.archived) == (3, 7)
    after = path.read_bytes().splitlines(keepends=True)
    assert after[1:] == lines[-3:]  # the kept turns, byte for byte
    meta = json.loads(after[0])
    assert meta["kind"] == "meta" and meta["session"] == SESSION
    [entry] = meta["compactions"]
    assert entry["archived"] == 7 and entry["seq_range"] == [1, 7]
    assert "#1" in entry["summary"] and "question 0" in entry["summary"]
    archive = memory.workspace.path / entry["archive"]
    assert archive.read_bytes().splitlines(keepends=True) == lines[:7]
    assert (path.parent / f"{session_stem(SESSION)}.audit.jsonl").read_bytes() == audit_before

    assert memory.record_turn(SESSION, user="q", assistant="a").seq == 11
    memory.sessions.compact(SESSION, keep=1)
    meta = records(path)[0]
    assert len(meta["compactions"]) == 2  # type: ignore[arg-type]
    assert len(records(archive)) == 10
    assert [t.seq for t in memory.sessions.turns(SESSION)] == [11]
    [info] = memory.sessions.list()
    assert (info.turns, info.last_seq, info.archived) == (1, 11, 10)


def test_seqs_go_on_after_a_compaction_that_archived_every_turn(ws: Path) -> None:
    with Memory.open(ws) as memory:
        for n in range(3):
            memory.record_turn(SESSION, user=f"u{n}", assistant="a")
        assert memory.sessions.compact(SESSION, keep=0).archived == 3
        [info] = memory.sessions.list()
        assert (info.turns, info.last_seq) == (0, 3)
        assert memory.record_turn(SESSION, user="u3", assistant="a").seq == 4
        memory.sessions.compact(SESSION, keep=0)
    with Memory.open(ws) as memory:  # a process that never saw the transcript
        assert memory.record_turn(SESSION, user="u4", assistant="a").seq == 5
        seqs = [t.seq for t in memory.sessions.turns(SESSION, archived=True)]
    assert seqs == [1, 2, 3, 4, 5]


def test_a_compaction_killed_before_its_rewrite_shows_each_turn_once(ws: Path) -> None:
    """The archive is appended before the transcript is rewritten: a kill in
    between leaves turns in both, each read once; the next compaction ends it."""
    with Memory.open(ws) as memory:
        for n in range(6):
            memory.record_turn(SESSION, user=f"u{n}", assistant="a")
    path = transcript(ws)
    archive = path.parent / "archive" / path.name
    archive.parent.mkdir()
    archive.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:4]))
    with Memory.open(ws) as memory:
        assert [t.seq for t in memory.sessions.turns(SESSION)] == [1, 2, 3, 4, 5, 6]
        assert [t.seq for t in memory.sessions.turns(SESSION, archived=True)] == [1, 2, 3, 4, 5, 6]
        assert memory.record_turn(SESSION, user="u6", assistant="a").seq == 7
        memory.sessions.compact(SESSION, keep=2)
        assert [t.seq for t in memory.sessions.turns(SESSION, archived=True)] == list(range(1, 8))
        assert [t.seq for t in memory.sessions.turns(SESSION)] == [6, 7]
    assert [r["seq"] for r in records(archive)] == [1, 2, 3, 4, 5]  # none twice


def test_a_transcript_past_its_limit_is_compacted_after_the_turn(ws: Path) -> None:
    with Memory.open(ws, session_max_turns=5, session_keep_turns=2) as memory:
        for n in range(6):
            memory.record_turn(SESSION, user=f"u{n}", assistant=f"a{n}")
        assert [t.text_of("user") for t in memory.sessions.turns(SESSION)] == ["u4", "u5"]
        memory.record_turn(SESSION, user="u6", assistant="a6")
        assert len(memory.sessions.turns(SESSION)) == 3  # under the limit again: not compacted
        assert any("moved to sessions/archive" in n for n in memory.status().notices)


def test_compaction_checks_its_arguments(memory: Memory) -> None:
    with pytest.raises(NotFound, match="no transcript"):
        memory.sessions.compact("nobody")
    memory.record_turn(SESSION, user="a", assistant="b")
    with pytest.raises(InvalidInput, match="keep must be"):
        memory.sessions.compact(SESSION, keep=-1)
    assert memory.sessions.compact(SESSION, keep=5).archived == 0
    assert memory.sessions.compact_all(keep=0)[0].archived == 1


q15_part = st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=30)})
q15_turn = st.fixed_dictionaries(
    {
        "schema_version": st.just(2),
        "session": st.sampled_from(["web", "cli"]),
        "minute": st.integers(min_value=0, max_value=59),
        "messages": st.lists(
            st.fixed_dictionaries(
                {
                    "role": st.sampled_from(["user", "assistant", "tool"]),
                    "parts": st.lists(q15_part, min_size=1, max_size=3),
                }
            ),
            min_size=1,
            max_size=4,
        ),
    }
)


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(st.lists(q15_turn, min_size=1, max_size=12))
def test_q15_turn_files_are_imported_with_nothing_lost_and_once(
    tmp_path_factory: pytest.TempPathFactory, turns: list[dict[str, object]]
) -> None:
    ws = tmp_path_factory.mktemp("q15") / "ws"
    Memory.open(ws).close()
    day = ws / "history" / "turns" / "2025" / "02" / "03"
    day.mkdir(parents=True)
    expected: dict[str, list[object]] = {}
    for number, turn in enumerate(turns):
        minute = turn.pop("minute")
        turn["created_at"] = f"2025-02-03T10:{minute:02d}:{number % 60:02d}+00:00"
        turn["id"] = f"q15-{number}"
        (day / f"{number:04d}.json").write_text(json.dumps(turn), encoding="utf-8")
    order = sorted(range(len(turns)), key=lambda n: (turns[n]["created_at"], n))
    for n in order:
        expected.setdefault(str(turns[n]["session"]), []).append(turns[n]["messages"])

    with Memory.open(ws) as memory:
        for session, messages in expected.items():
            got = memory.sessions.turns(session)
            assert [list(t.messages) for t in got] == messages
            assert [t.seq for t in got] == list(range(1, len(messages) + 1))
    files = {p: p.read_bytes() for p in (ws / "sessions").glob("*.jsonl")}
    with Memory.open(ws) as memory:
        assert memory.status().notices == ()
    assert {p: p.read_bytes() for p in (ws / "sessions").glob("*.jsonl")} == files


def test_a_transcript_known_good_is_not_read_again_at_open(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata.migrations import transcripts as history

    with Memory.open(ws, embedder="none") as memory:
        memory.record_turn(SESSION, user="first", assistant="one")
    with Memory.open(ws, embedder="none") as memory:
        memory.record_turn(SESSION, user="second", assistant="two")  # appended here: still good
    read: list[str] = []
    real = history._upgrade_file  # noqa: SLF001

    def counting(workspace: Workspace, where: str, quarantine: object) -> list[str]:
        read.append(where)
        return real(workspace, where, quarantine)  # type: ignore[arg-type]

    monkeypatch.setattr(history, "_upgrade_file", counting)
    with Memory.open(ws, embedder="none") as memory:
        assert [t.text_of("user") for t in memory.sessions.turns(SESSION)] == ["first", "second"]
    assert read == []
    with open(transcript(ws), "ab") as handle:  # changed behind memstrata's back: read again
        handle.write(b"{garbage\n")
    with Memory.open(ws, embedder="none") as memory:
        assert "quarantined 1 unreadable line(s)" in " ".join(memory.status().notices)
    assert read == [transcript(ws).relative_to(ws).as_posix()]
