"""Failures after the durable point, and inputs too big to do work in proportion to."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest

from memstrata import InvalidInput, Memory, StorageError
from memstrata.tools.memory_tool import MemoryToolHandler

# -- a failure after the turn is durable is a notice, never an exception ----------------


def _transcript_ids(ws: Path, session: str) -> list[str]:
    lines = (ws / "sessions" / f"{session}.jsonl").read_text().splitlines()
    return [json.loads(line)["id"] for line in lines if '"kind":"meta"' not in line]


def test_a_summarizer_that_cannot_run_falls_back_to_the_extractive_one(
    ws: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = {"embedder": "none", "session_summary_tokens": 10}
    with Memory.open(ws, summarizer="openai", **settings) as memory:  # and no summary_model
        with caplog.at_level(logging.WARNING, logger="memstrata"):
            turn = memory.record_turn(
                "s", user="Let's go with Postgres 16 for the ledger.", assistant="OK"
            )
        assert _transcript_ids(ws, "s") == [turn.id]  # on disk once
        [notice] = [n for n in memory.status().notices if "summary" in n]
        assert "MEMSTRATA_SUMMARY_MODEL" in notice and "extractive" in notice
        assert "MEMSTRATA_SUMMARY_MODEL" in caplog.text
        summary = (ws / "summaries" / "s.md").read_text()
        assert "extractive" in summary and "Postgres 16" in summary


def test_the_library_reads_no_summarizer_from_the_environment(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMSTRATA_SUMMARIZER", "openai")  # only the entry points read it
    monkeypatch.setenv("MEMSTRATA_EMBED_MODEL", str(ws / "no-such-model.onnx"))
    with Memory.open(ws, embedder="none", session_summary_tokens=10) as memory:
        memory.record_turn("s", user="Let's go with Postgres 16 for the ledger.", assistant="OK")
        assert not [n for n in memory.status().notices if "summary" in n]
        assert memory.settings.summarizer == "extractive" and memory.settings.embed_model is None
    assert "extractive" in (ws / "summaries" / "s.md").read_text()


def test_a_failing_model_summary_falls_back_to_the_extractive_one(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata.context import summarize

    class Broken:
        name = "openai:m"

        def summarize(self, turns: object) -> str:
            raise summarize.BackendUnavailable("the summary model failed: connection refused")

    monkeypatch.setattr("memstrata.memory.context.make_summarizer", lambda *_: Broken())
    settings = {"embedder": "none", "session_summary_tokens": 10, "summarizer": "openai"}
    with Memory.open(ws, **settings) as memory:
        said = "I decided to use Redis for the cache of the ledger service."
        turn = memory.record_turn("s", user=said, assistant="OK")
        assert _transcript_ids(ws, "s") == [turn.id]
        assert any("connection refused" in n for n in memory.notices)
        assert "Redis" in (ws / "summaries" / "s.md").read_text()


def test_a_daily_note_that_cannot_be_written_does_not_undo_the_turn(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata import StorageError

    with Memory.open(ws, embedder="none") as memory:

        def refuse(*_: object) -> object:
            raise StorageError("cannot write the daily note: disk full")

        monkeypatch.setattr(memory.engine, "note_exchanges", refuse)
        turn = memory.record_turn("s", user="hello", assistant="hi")
        assert _transcript_ids(ws, "s") == [turn.id]
        assert any("disk full" in n for n in memory.notices)


# -- resource limits ----------------------------------------------------------------------


def test_search_k_must_be_a_whole_number_and_a_huge_one_is_clamped(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata.memory import search as searching

    asked: list[int] = []
    real = searching.hybrid

    def spy(index: object, query: str, k: int, *args: object, **kwargs: object) -> object:
        asked.append(k)
        return real(index, query, k, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(searching, "hybrid", spy)
    with Memory.open(ws, embedder="none") as memory:
        memory.remember("the blue bicycle")
        for bad in (0, -1, 1.5, "3", True, None):
            with pytest.raises(InvalidInput, match="k must be"):
                memory.search("bicycle", k=bad)  # type: ignore[arg-type]
        assert len(memory.search("bicycle", k=10**9)) == 1
        assert asked == [searching.MAX_K]


def test_a_huge_query_is_refused(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="the query is 100000 characters"):
        memory.search("word " * 20_000)


def test_observe_scans_a_huge_message_in_part_and_says_so(ws: Path) -> None:
    from memstrata.memory import capture as memory_module

    limit = memory_module.SCAN_CHARS
    filler = "Nothing to see in this sentence at all. " * (limit // 20)
    message = "My name is Aziz. " + filler + "I decided to use Postgres 16. " + filler
    message += "Remember that the deploy key rotates every 30 days."
    with Memory.open(ws, embedder="none") as memory:
        captured = memory.observe(message)
        kinds = {c.category for c in captured}
        assert "proper_noun" in kinds and "remember" in kinds  # the head and the tail
        assert "decision" not in kinds  # in the middle: not scanned
        [notice] = [n for n in memory.notices if "scanned" in n]
        assert f"{len(message)} characters" in notice


def test_observe_cuts_between_words(memory: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from memstrata.memory import capture as memory_module

    monkeypatch.setattr(memory_module, "SCAN_CHARS", 40)
    head, tail = memory_module._scanned("aaaa bbbb cccc dddd eeee ffff gggg hhhh iiii jjjj kkkk")
    assert head == "aaaa bbbb cccc dddd" and tail == "hhhh iiii jjjj kkkk"
    head, tail = memory_module._scanned("aaaa bbbb cccc dddd eeeeeeee ffff ggggggggggg hhhh")
    assert head == "aaaa bbbb cccc dddd" and tail == "ggggggggggg hhhh"  # "ffff" was cut
    assert memory_module._scanned("x" * 100) == ("", "")  # no place to cut: nothing
    assert memory_module._scanned("short text") == ("short text", "")


def test_a_huge_document_is_refused_before_it_is_written(memory: Memory) -> None:
    from memstrata.model import MAX_DOCUMENT_BYTES

    big = "line of text\n" * (MAX_DOCUMENT_BYTES // 13 + 1)
    with pytest.raises(InvalidInput, match="memory/big.md would be"):
        memory.documents.edit_file("memory/big.md", lambda _: big)
    assert not (memory.workspace.path / "memory" / "big.md").exists()
    assert memory.status().journal_bytes < 10_000  # nothing of it journaled
    answer = MemoryToolHandler(memory).handle(
        {"command": "create", "path": "/memories/memory/big.md", "file_text": big}
    )
    assert answer.startswith("Error: memory/big.md would be"), answer[:100]
    with pytest.raises(InvalidInput, match="limit"):
        memory.core.write("user", big)
    with pytest.raises(InvalidInput, match="limit"):
        memory.notes.create("big", big)


def test_a_long_session_name_names_the_session_in_the_error(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="session id is longer than 200"):
        memory.remember("x", session="s" * 10_000)
    with pytest.raises(InvalidInput, match="user id is longer than 200"):
        memory.remember("x", user="u" * 10_000)


def test_recovery_context_chars_must_be_a_positive_whole_number(memory: Memory) -> None:
    memory.working.progress("shipped the parser")
    (memory.workspace.path / "memory" / "working-buffer.md").write_text("x" * 10_000)
    for bad in (0, -5, 2.5, "10"):
        with pytest.raises(InvalidInput, match="chars must be"):
            memory.recovery_context(chars=bad)  # type: ignore[arg-type]
    assert len(memory.recovery_context(chars=300)) < 600
    assert len(memory.recovery_context(chars=1)) < 300  # not the whole buffer


def test_gate_wants_a_string_prompt(memory: Memory) -> None:
    with pytest.raises(InvalidInput, match="prompt must be a string"):
        memory.gate(42, 100)  # type: ignore[arg-type]


def test_a_close_refused_by_a_full_disk_still_releases_the_index_and_the_lock(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a full disk a file deleted while still open keeps its space: a close
    that failed must not keep the index (and its WAL) open, nor the lock."""
    memory = Memory.open(ws, embedder="none")
    memory.remember("a fact to flush")
    assert memory.search("fact")
    index = memory._search._search_state.index  # type: ignore[union-attr]

    def full(*_: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(memory.engine, "flush_locked", full)
    with pytest.raises(StorageError, match="No space left"):
        memory.close()
    with pytest.raises(sqlite3.ProgrammingError):  # the connection is closed
        index._db.execute("SELECT 1")
    monkeypatch.undo()
    with Memory.open(ws, embedder="none") as again:  # the lock was released
        assert [i.text for i in again.list()] == ["a fact to flush"]
