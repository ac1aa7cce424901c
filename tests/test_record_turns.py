"""``record_turns``: many turns in one call (group commit) write what the same
turns recorded one at a time write, with one fsync per file touched."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory
from memstrata.errors import InvalidInput

AT = datetime(2026, 3, 1, 9, 30, tzinfo=UTC)


def _batch(count: int) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    for i in range(count):
        turn: dict[str, Any] = {
            "session": f"s{i % 3}",
            "user": f"question {i} about port {5000 + i}",
            "assistant": f"answer {i}",
            "at": AT + timedelta(hours=7 * i),  # several days, so several daily notes
        }
        if i % 4 == 1:
            turn["meta"] = {"speakers": {"user": "Ann"}, "n": i}
        if i % 5 == 2:
            turn["reasoning"] = "thinking"
            turn["tool_calls"] = [{"name": "lookup", "arguments": {"q": i}, "id": f"c{i}"}]
            turn["tool_results"] = [{"content": "found", "tool_call_id": f"c{i}"}]
        turns.append(turn)
    return turns


def _files(ws: Path) -> dict[str, bytes]:
    found = {}
    for folder in ("sessions", "memory"):
        for path in sorted((ws / folder).rglob("*")):
            if path.is_file() and not path.name.startswith("LTM"):
                found[path.relative_to(ws).as_posix()] = path.read_bytes()
    return found


def test_a_batch_writes_what_the_same_turns_one_at_a_time_write(tmp_path: Path) -> None:
    batch = _batch(30)
    with Memory.open(tmp_path / "one", embedder="none") as memory:
        singles = [memory.record_turn(**turn) for turn in batch]
    with Memory.open(tmp_path / "many", embedder="none") as memory:
        together = memory.record_turns(batch[:11]) + memory.record_turns(batch[11:])
        assert memory.sessions.turns("s1")[-1] == together[-2]
    assert together == singles
    assert [turn.seq for turn in together[:6]] == [1, 1, 1, 2, 2, 2]
    one, many = _files(tmp_path / "one"), _files(tmp_path / "many")
    assert len([rel for rel in one if rel.startswith("memory/2026-")]) > 3
    assert one == many


def test_a_batch_is_one_fsync_per_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        memory.record_turn("s", user="first", assistant="ok", at=AT)  # the files exist
        calls: list[int] = []
        real = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: calls.append(fd) or real(fd))
        memory.record_turn("s", user="one", assistant="ok", at=AT)
        assert len(calls) == 3  # audit log, transcript, daily note
        calls.clear()
        turns = memory.record_turns(
            [{"session": "s", "user": f"turn {i}", "assistant": "ok", "at": AT} for i in range(50)]
        )
        assert len(calls) == 3
        assert [turn.seq for turn in turns] == list(range(3, 53))


def test_a_bad_turn_anywhere_in_a_batch_writes_nothing(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        good = {"session": "s", "user": "hi", "assistant": "ok"}
        for bad in (
            {"session": "s", "user": "hi"},  # no assistant
            {**good, "user": 3},
            {**good, "speaker": "x"},  # no such argument
            {**good, "session": ""},
            {**good, "meta": ["not", "a", "mapping"]},
            {**good, "reasoning": 5},
            "not a mapping",
        ):
            with pytest.raises(InvalidInput):
                memory.record_turns([good, bad])  # type: ignore[list-item]
        with pytest.raises(InvalidInput):
            memory.record_turns(good)  # type: ignore[arg-type]
        assert memory.record_turns([]) == []
        assert memory.sessions.list() == []
        assert not (tmp_path / "ws" / "sessions" / "s.jsonl").exists()


def test_a_batch_redacts_and_is_searchable(tmp_path: Path) -> None:
    key = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8s9T0"
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        memory.record_turns(
            [
                {"session": "s", "user": f"my key is {key}", "assistant": "noted"},
                {"session": "s", "user": "the zebra lives on port 7001", "assistant": "ok"},
            ]
        )
        hits = memory.search("zebra port", k=3, layers=["transcripts"])
        assert hits and "7001" in hits[0].text
    for path in (tmp_path / "ws").rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path


def test_the_automatic_summary_counts_a_batch_once(tmp_path: Path) -> None:
    """A batch's turns count toward the session summary once: the summary that
    its count sets off covers the whole batch (it is in the transcript by then),
    and the batch's later turns are not counted again toward the next one."""
    text = "word " * 60  # 133 tokens a turn: a summary every 2 turns
    turn = {"session": "s", "user": text, "assistant": "ok", "at": AT}
    with Memory.open(tmp_path / "ws", embedder="none", session_summary_tokens=250) as memory:
        memory.record_turns([turn] * 9)
        memory.record_turn(**turn)  # type: ignore[arg-type]
        summaries = (tmp_path / "ws" / "summaries" / "s.md").read_text()
        assert "(turns 1-9," in summaries
        assert "(turns 10-" not in summaries
        memory.record_turn(**turn)  # type: ignore[arg-type]
        summaries = (tmp_path / "ws" / "summaries" / "s.md").read_text()
        assert "(turns 10-11," in summaries
        assert not memory.notices
