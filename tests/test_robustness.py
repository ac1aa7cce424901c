"""Failures after the durable point, and inputs too big to do work in proportion to."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from memstrata import Memory

# -- a failure after the turn is durable is a notice, never an exception ----------------


def _transcript_ids(ws: Path, session: str) -> list[str]:
    lines = (ws / "sessions" / f"{session}.jsonl").read_text().splitlines()
    return [json.loads(line)["id"] for line in lines if '"kind":"meta"' not in line]


def test_a_summarizer_that_cannot_run_falls_back_to_the_extractive_one(
    ws: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MEMSTRATA_SUMMARIZER", "openai")  # and no MEMSTRATA_SUMMARY_MODEL
    monkeypatch.delenv("MEMSTRATA_SUMMARY_MODEL", raising=False)
    with Memory.open(ws, embedder="none", session_summary_tokens=10) as memory:
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


def test_a_failing_model_summary_falls_back_to_the_extractive_one(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memstrata.context import summarize

    class Broken:
        name = "openai:m"

        def summarize(self, turns: object) -> str:
            raise summarize.BackendUnavailable("the summary model failed: connection refused")

    monkeypatch.setattr("memstrata.prompting.summarizer_from_env", lambda: Broken())
    with Memory.open(ws, embedder="none", session_summary_tokens=10) as memory:
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

        monkeypatch.setattr(memory, "_append_note", refuse)
        turn = memory.record_turn("s", user="hello", assistant="hi")
        assert _transcript_ids(ws, "s") == [turn.id]
        assert any("disk full" in n for n in memory.notices)
