"""Transcripts, session state, compaction, their upgrades and the search's file
scan on a workspace whose volume is not the disk (``InMemoryVolume``): each reads
and writes only through ``workspace.volume``, by relative path.

The stores run on a workspace with no folder at all (its ``path`` is never
created). ``Memory`` itself still keeps its journal, lock and MEMORY.md in a
folder (the engine is converted separately), so the ``Memory`` tests open one
on a folder whose ``Workspace`` carries a ``InMemoryVolume``: everything of the
parts converted here (``Sessions``, ``Observer.session_state``, the
``Searcher``'s file scan, ``PromptBuilder``'s transcript and session state)
must then be in the volume and nothing of it in the folder.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fakes import InMemoryIndex, InMemoryVolume
from memstrata import Memory
from memstrata.errors import BackendUnavailable
from memstrata.index.chunks import searchable_files
from memstrata.migrations import transcripts as migrate
from memstrata.storage.workspace import Workspace, session_stem
from memstrata.stores import transcripts as history
from memstrata.stores.compaction import compact, update_meta
from memstrata.stores.session_state import HEADER, StateEntry, append_entries, parse_state

SESSION = "tg:42"
STEM = session_stem(SESSION)
AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)

Set = list[tuple[str, bytes, str]]


@pytest.fixture
def volume() -> InMemoryVolume:
    return InMemoryVolume()


@pytest.fixture
def nowhere(tmp_path: Path) -> Iterator[Path]:
    """A folder that must never be made: the stores have no business on disk."""
    folder = tmp_path / "nowhere"
    yield folder
    assert not folder.exists(), "a store touched the disk"


@pytest.fixture
def workspace(volume: InMemoryVolume, nowhere: Path) -> Workspace:
    return Workspace(nowhere, nowhere, None, volume=volume)


def _turn(seq: int, user: str = "", session: str = SESSION) -> history.Turn:
    return history.build_turn(
        session,
        seq,
        AT + timedelta(minutes=seq),
        user=user or f"question {seq}",
        assistant=f"answer {seq}",
        tool_calls=[{"name": "lookup", "arguments": {"n": seq}}],
        tool_results=[{"content": f"result {seq}"}],
    )


def _record(workspace: Workspace, count: int, quarantine: Set | None = None) -> None:
    aside: Set = [] if quarantine is None else quarantine
    for _ in range(count):
        seq = history.last_seq(workspace, SESSION, lambda *item: aside.append(item)) + 1
        history.append_turn(workspace, _turn(seq))


# -- transcripts -----------------------------------------------------------------------


def test_turns_and_audit_events_go_to_the_volume(
    workspace: Workspace, volume: InMemoryVolume
) -> None:
    transcript, audit = history.append_turn(workspace, _turn(1))
    history.append_turn(workspace, _turn(2))
    assert (transcript, audit) == (f"sessions/{STEM}.jsonl", f"sessions/{STEM}.audit.jsonl")
    assert sorted(volume.files) == [audit, transcript]
    lines = (volume.read(transcript) or b"").splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2]
    assert [turn.seq for turn in history.read_turns(workspace, SESSION)] == [1, 2]
    assert history.last_seq(workspace, SESSION, lambda *_: None) == 2
    events = history.read_audit(workspace, SESSION)
    assert [event["role"] for event in events[:4]] == [
        "user",
        "tool_call",
        "tool_result",
        "assistant",
    ]
    [info] = history.list_sessions(workspace)
    assert (info.session, info.path, info.turns, info.last_seq) == (SESSION, transcript, 2, 2)
    assert info.size == len(volume.read(transcript) or b"")


def test_a_torn_tail_is_set_aside_and_cut_and_the_next_turn_starts_clean(
    workspace: Workspace, volume: InMemoryVolume
) -> None:
    _record(workspace, 1)
    rel = history.transcript_rel(SESSION)
    volume.append(rel, b'{"schema_version": 2, "id": "half')  # a writer killed mid-append
    aside: Set = []
    _record(workspace, 1, aside)
    assert aside == [(rel, b'{"schema_version": 2, "id": "half', "torn last line")]
    lines = (volume.read(rel) or b"").splitlines()
    assert [json.loads(line)["seq"] for line in lines] == [1, 2]


def test_compaction_archives_in_the_volume_and_seqs_go_on(
    workspace: Workspace, volume: InMemoryVolume
) -> None:
    _record(workspace, 5)
    rel = history.transcript_rel(SESSION)
    done = compact(workspace, SESSION, keep_last=2)
    assert (done.kept, done.archived, done.archive) == (2, 3, f"sessions/archive/{STEM}.jsonl")
    assert [t.seq for t in history.read_turns_at(volume, done.archive)] == [1, 2, 3]
    assert [t.seq for t in history.read_turns(workspace, SESSION)] == [4, 5]
    assert [t.seq for t in history.read_turns(workspace, SESSION, archived=True)] == [1, 2, 3, 4, 5]
    compact(workspace, SESSION, keep_last=0)  # all archived: the transcript ends in its meta
    assert history.read_meta(workspace, SESSION)["kind"] == "meta"
    assert history.last_seq(workspace, SESSION, lambda *_: None) == 5
    [info] = history.list_sessions(workspace)
    assert (info.turns, info.last_seq, info.archived) == (0, 5, 5)
    before = (volume.read(rel) or b"").splitlines()[1:]
    update_meta(workspace, SESSION, {"fresh_after_seq": 5})
    assert (volume.read(rel) or b"").splitlines()[1:] == before  # turn lines kept byte for byte
    assert history.turns_since_summary(volume, rel) == []


# -- upgrades at open ------------------------------------------------------------------


def test_version_1_lines_and_q15_files_are_upgraded_in_the_volume(
    workspace: Workspace, volume: InMemoryVolume
) -> None:
    old = f"sessions/{session_stem('old')}.jsonl"
    volume.write(
        old, b'{"role": "user", "content": "hi"}\n{"role": "assistant", "content": "yo"}\n'
    )
    volume.append(old, b"}}not json\n")
    q15 = {"session": "q", "id": "qid", "seq": 1, "messages": [{"role": "user", "content": "x"}]}
    volume.write("history/turns/2025/01/15/0001.json", json.dumps(q15).encode())
    volume.write("history/state/head.json", b'{"seq": 1}')
    aside: Set = []
    verified: migrate.Verified = {}
    notices = migrate.upgrade(workspace, lambda *item: aside.append(item), verified)
    assert len(notices) == 2, notices
    assert [(where, reason[:7]) for where, _, reason in aside] == [(old, "line 3 ")]
    [turn] = history.read_turns(workspace, "old")
    assert turn.text_of("user") == "hi" and turn.text_of("assistant") == "yo"
    [imported] = history.read_turns(workspace, "q")
    assert imported.id == "qid"
    assert volume.read("history/turns/2025/01/15/0001.json") == json.dumps(q15).encode()
    assert volume.read("history/state/head.json") == b'{"seq": 1}'  # q15's files are kept
    backups = [rel for rel, _ in volume.list(".memstrata/backup/")]
    assert len(backups) == 1  # the v1 transcript
    stat = volume.stat(old)
    assert stat is not None and verified[old] == (stat.size, stat.mtime_ns)
    assert migrate.upgrade(workspace, lambda *item: aside.append(item), verified) == []


# -- session state ---------------------------------------------------------------------


def test_session_state_appends_and_trims_in_the_volume(
    workspace: Workspace, volume: InMemoryVolume
) -> None:
    rel = workspace.session_state_rel(SESSION)
    assert rel == f"sessions/{STEM}/SESSION-STATE.md"
    assert workspace.session_state_rel(None) == "SESSION-STATE.md"
    entries = [StateEntry(AT + timedelta(minutes=n), "remember", f"entry {n}") for n in range(4)]
    append_entries(volume, rel, entries[:2], 8000)
    append_entries(volume, rel, entries[2:3], 8000)
    data = volume.read(rel) or b""
    assert data == (HEADER + "".join(e.render() for e in entries[:3])).encode()
    line = len(entries[0].render().encode())
    append_entries(volume, rel, entries[3:], len(HEADER) + 2 * line)  # room for two
    assert parse_state((volume.read(rel) or b"").decode()) == entries[2:]


# -- the search's file scan ------------------------------------------------------------


def test_the_searchable_files_are_listed_with_the_volume_stats(
    workspace: Workspace, volume: InMemoryVolume
) -> None:
    for rel in [
        "MEMORY.md",
        "SESSION-STATE.md",
        "core/AGENT.md",
        "memory/2026-03-01.md",
        "memory/LESSONS.jsonl",
        "memory/LTM_SNAPSHOT.json",
        "notes/inbox/a.md",
        "sessions/a.jsonl",
        "sessions/a.audit.jsonl",
        "sessions/archive/a.jsonl",
        "sessions/a/SESSION-STATE.md",
        ".memstrata/journal.wal",
        "groups/g/semantic/facts.md",
    ]:
        volume.write(rel, b"- x\n")
    listed = searchable_files(workspace)
    assert [rel for rel, _ in listed] == [
        "SESSION-STATE.md",
        "core/AGENT.md",
        "memory/2026-03-01.md",
        "memory/LESSONS.jsonl",
        "notes/inbox/a.md",
        "sessions/a.jsonl",
        "sessions/a/SESSION-STATE.md",
        "sessions/archive/a.jsonl",
    ]
    assert all(stat == volume.stat(rel) for rel, stat in listed)


# -- Memory's parts on the volume ------------------------------------------------------


def _locate_on(volume: InMemoryVolume, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every workspace ``Memory.open`` locates has ``volume`` for its files."""

    def locate(cls: type[Workspace], root: Path, group: str | None = None) -> Workspace:
        return cls(root, root, None, volume)

    monkeypatch.setattr(Workspace, "locate", classmethod(locate))


@pytest.fixture
def on_volume(
    tmp_path: Path, volume: InMemoryVolume, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Memory, Path]]:
    """A ``Memory`` whose workspace's volume is ``volume`` (the engine's own
    files in a folder), searching an in-memory index."""
    folder = tmp_path / "ws"
    (folder / ".memstrata").mkdir(parents=True)  # the engine's lock and journal files
    _locate_on(volume, monkeypatch)
    with Memory.open(folder, embedder="none", open_index=lambda _: InMemoryIndex()) as memory:
        yield memory, folder


def test_sessions_and_search_run_on_the_volume(
    on_volume: tuple[Memory, Path], volume: InMemoryVolume
) -> None:
    memory, folder = on_volume
    assert memory.workspace.volume is volume
    transcript = f"sessions/{STEM}.jsonl"
    for n in range(2):
        memory.record_turn(SESSION, user=f"the heron flies at dawn {n}", assistant=f"noted {n}")
    assert len((volume.read(transcript) or b"").splitlines()) == 2
    # another writer's turn, in the volume: the head is read from there
    volume.append(
        transcript, history.jsonl_lines([_turn(3, "the heron flies at dawn 2").to_dict()])
    )
    assert memory.record_turn(SESSION, user="and at dusk", assistant="noted").seq == 4
    memory.observe("Remember that the heron nests by the river.", session=SESSION)
    assert volume.stat(f"sessions/{STEM}/SESSION-STATE.md") is not None
    assert [t.seq for t in memory.sessions.turns(SESSION)] == [1, 2, 3, 4]
    assert [info.session for info in memory.sessions.list()] == [SESSION]
    assert [e.category for e in memory.session_state(SESSION)] == ["remember"]
    done = memory.sessions.compact(SESSION, keep=2)
    assert done.archived == 2 and volume.stat(f"sessions/archive/{STEM}.jsonl") is not None
    hits = memory.search("heron dawn", layers=["transcripts"])
    assert {hit.path for hit in hits} == {transcript, f"sessions/archive/{STEM}.jsonl"}
    context = memory.build_context("heron", session=SESSION, budget_tokens=2000)
    assert "the heron flies at dawn 2" in context.text
    assert "the heron nests by the river" in context.text
    summary = memory.compact_session(SESSION)
    assert volume.read(summary.path) is not None
    on_disk = [p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file()]
    assert not [rel for rel in on_disk if rel.startswith(("sessions/", "summaries/"))], on_disk


def test_a_volume_with_no_folder_needs_an_index_opener(
    tmp_path: Path, volume: InMemoryVolume, monkeypatch: pytest.MonkeyPatch
) -> None:
    _locate_on(volume, monkeypatch)
    (tmp_path / "ws" / ".memstrata").mkdir(parents=True)  # the engine's lock and journal files
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        memory.record_turn(SESSION, user="hello", assistant="hi")
        with pytest.raises(BackendUnavailable, match="open_index"):
            memory.search("hello")


# -- on disk ---------------------------------------------------------------------------


def test_nothing_linked_out_of_the_workspace_is_indexed(tmp_path: Path) -> None:
    """The scan lists the folder through its volume: a symbolic link (to a file
    or to a folder) is not followed, so no text from outside reaches a search."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("# leak\nthe outside canary speaks\n", encoding="utf-8")
    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none") as memory:
        (ws / "summaries").rmdir()
        (ws / "summaries").symlink_to(outside, target_is_directory=True)
        (ws / "semantic" / "evil.md").symlink_to(outside / "leak.md")
        memory.record_turn(SESSION, user="the inside canary sings", assistant="ok")
        memory.reindex()
        hits = memory.search("canary", layers=["daily_notes", "semantic", "transcripts"])
    assert {hit.path for hit in hits} == {f"sessions/{STEM}.jsonl"}
