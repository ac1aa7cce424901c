"""Seed behaviours that were partial (issue 19 section 2): each test failed on
the main before its fix."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memstrata import BackendUnavailable, InvalidInput, Memory
from memstrata.stores.compaction import MAX_COMPACTIONS
from memstrata.stores.transcripts import read_meta


def test_a_groups_context_and_gate_take_global_memory_labelled(tmp_path: Path) -> None:
    with Memory.open(tmp_path, "global", embedder="none") as shared:
        shared.remember("The office wifi password rotates every Monday")
        shared.flush()
    with Memory.open(tmp_path, "team", embedder="none") as team:
        team.remember("Alice prefers short standups")
        context = team.build_context("when does the wifi password rotate?", budget_tokens=2000)
        names = [section.name for section in context.sections]
        assert "Global memory" in names
        section = context.sections[names.index("Global memory")]
        assert section.sources == ("groups/global/MEMORY.md",)
        assert "wifi password rotates" in section.text
        hits = team.gate("when does the wifi password rotate?", 500)
        assert any(hit.layer == "global" and "wifi" in hit.text for hit in hits)
        assert hits[0].citation.startswith("groups/global/MEMORY.md:")
    with Memory.open(tmp_path, "global", embedder="none") as shared:  # not its own global
        names = [s.name for s in shared.build_context("wifi", budget_tokens=2000).sections]
        assert "Global memory" not in names


def test_a_group_without_global_memory_has_no_global_section(tmp_path: Path) -> None:
    with Memory.open(tmp_path, "team", embedder="none") as team:
        team.remember("Alice prefers short standups")
        context = team.build_context("standups", budget_tokens=2000)
        assert "Global memory" not in [s.name for s in context.sections]
        assert not (tmp_path / "groups" / "global").exists()


def test_compaction_by_size_leaves_room_and_bounds_the_meta_line_and_notices(
    tmp_path: Path,
) -> None:
    limit = 30_000
    with Memory.open(
        tmp_path, embedder="none", session_max_bytes=limit, session_summary_tokens=0
    ) as memory:
        turns = 400
        for number in range(turns):
            memory.record_turn("s1", user=f"turn {number} " + "word " * 200, assistant="ok")
        transcript = tmp_path / "sessions" / "s1.jsonl"
        assert transcript.stat().st_size <= limit
        meta = read_meta(memory.engine.workspace, "s1")
        entries = meta["compactions"]
        assert len(entries) <= MAX_COMPACTIONS
        done = sum(entry.get("merged", 1) for entry in entries)
        assert done <= turns // 4  # not one compaction per turn: hysteresis
        assert (
            sum(entry["archived"] for entry in entries) + len(memory.sessions.turns("s1")) == turns
        )
        assert meta["compactions"][0]["seq_range"][0] == 1
        assert len([n for n in memory.status().notices if "moved to" in n]) <= 1
        assert [t.seq for t in memory.sessions.turns("s1", archived=True)] == list(
            range(1, turns + 1)
        )


class _Letters:
    """An embedder of the caller's own: counts of a-z (not normalised)."""

    name = "letters-26"
    dim = 26

    def __init__(self) -> None:
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        self.calls += 1
        out = np.zeros((len(texts), 26), dtype=np.float64)
        for row, text in enumerate(texts):
            for char in text.lower():
                if "a" <= char <= "z":
                    out[row, ord(char) - 97] += 1.0
            out[row, 0] += 0.5
        return out


def test_an_embedder_object_is_used_for_search(tmp_path: Path) -> None:
    mine = _Letters()
    with Memory.open(tmp_path, embedder=mine) as memory:
        memory.remember("The deploy key lives in the blue vault")
        hits = memory.search("blue vault deploy key")
        assert hits and "blue vault" in hits[0].text
        assert mine.calls >= 2  # the fact and the query
        assert memory.index_status()["embedder"] == "letters-26"


def test_a_broken_embedder_object_is_a_memstrata_error(tmp_path: Path) -> None:
    class Wrong(_Letters):
        def embed(self, texts: Sequence[str]) -> Any:
            raise RuntimeError("model server down")

    class NoDim:
        name = "x"

        def embed(self, texts: Sequence[str]) -> Any:
            return []

    with pytest.raises(InvalidInput, match="dim"):
        Memory.open(tmp_path, embedder=NoDim())  # type: ignore[arg-type]
    with Memory.open(tmp_path, embedder=Wrong()) as memory:
        memory.remember("A fact to embed")
        with pytest.raises(BackendUnavailable, match="model server down"):
            memory.search("fact")


def test_pending_checks_and_temporary_context_are_writable_and_injected(tmp_path: Path) -> None:
    with Memory.open(tmp_path, embedder="none") as memory:
        memory.working.add("pending checks", "Verify the backup restored cleanly")
        memory.working.add("temporary_context", "The user is on a train until 18:00")
        assert memory.working.read().items("Pending checks") == (
            "Verify the backup restored cleanly",
        )
        text = memory.build_context("hi", budget_tokens=2000).text
        assert "Verify the backup restored cleanly" in text
        assert "on a train" in text


def test_a_full_working_memory_drops_temporary_context_before_open_threads(
    tmp_path: Path,
) -> None:
    with Memory.open(tmp_path, embedder="none", working_max_chars=600) as memory:
        memory.working.add("open_threads", "Ask Bob about the invoice")
        memory.working.add("pending_checks", "Check the nightly build")
        dropped = []
        for number in range(30):
            dropped += memory.working.add("temporary context", f"context note number {number}")
        assert dropped and all(d.section == "Temporary context" for d in dropped)
        kept = memory.working.read()
        assert kept.items("open_threads") == ("Ask Bob about the invoice",)
        assert kept.items("pending_checks") == ("Check the nightly build",)


def test_every_file_in_core_is_injected(tmp_path: Path) -> None:
    with Memory.open(tmp_path, embedder="none") as memory:
        memory.core.write("agent", "You are a careful assistant.")
        (tmp_path / "core" / "STYLE.md").write_text("Answer in short sentences.\n")
        (tmp_path / "core" / "notes.txt").write_text("not markdown\n")
        context = memory.build_context("hi", budget_tokens=2000)
        [core] = [section for section in context.sections if section.name == "Core"]
        assert core.sources[0] == "core/AGENT.md" and "core/STYLE.md" in core.sources
        assert "Answer in short sentences." in core.text
        assert "not markdown" not in core.text


def test_tool_calls_and_results_count_toward_the_automatic_summary(tmp_path: Path) -> None:
    with Memory.open(tmp_path, embedder="none", session_summary_tokens=3000) as memory:
        for number in range(4):
            memory.record_turn(
                "tools",
                user=f"fetch page {number}",
                assistant="done",
                tool_calls=[{"name": "fetch", "arguments": {"url": f"https://x.test/{number}"}}],
                tool_results=[{"content": "<html>" + "row " * 1000 + "</html>"}],
            )
        assert (tmp_path / "summaries" / "tools.md").exists()


class _Headline:
    name = "headline"

    def __init__(self, fail: bool = False) -> None:
        self.fail = fail

    def summarize(self, turns: Sequence[Any]) -> str:
        if self.fail:
            raise RuntimeError("model timed out")
        return f"The team chose Redis ({len(turns)} turns)."


def test_a_summarizer_object_in_code_writes_the_automatic_summary(tmp_path: Path) -> None:
    with Memory.open(
        tmp_path, embedder="none", session_summary_tokens=50, summarizer=_Headline()
    ) as memory:
        memory.record_turn("s", user="Let's go with Redis for caching. " * 10, assistant="ok")
        summary = (tmp_path / "summaries" / "s.md").read_text()
        assert "The team chose Redis (1 turns)." in summary and "headline" in summary
        memory.flush()
        assert "The team chose Redis (1 turns)." in (tmp_path / "MEMORY.md").read_text()


def test_a_failing_summarizer_object_falls_back_to_the_extractive_summary(
    tmp_path: Path,
) -> None:
    with Memory.open(
        tmp_path, embedder="none", session_summary_tokens=50, summarizer=_Headline(fail=True)
    ) as memory:
        memory.record_turn("s", user="Let's go with Redis for caching. " * 10, assistant="ok")
        summary = (tmp_path / "summaries" / "s.md").read_text()
        assert "extractive" in summary
        assert any("model timed out" in notice for notice in memory.status().notices)
    with Memory.open(
        tmp_path / "b", embedder="none", session_summary_tokens=0, summarizer=_Headline(fail=True)
    ) as memory:
        memory.record_turn("s", user="more", assistant="ok")
        with pytest.raises(BackendUnavailable, match="model timed out"):
            memory.compact_session("s")  # asked for: the error, not a raw exception


@pytest.mark.parametrize(
    "summary",
    [
        "- Use Redis for caching\n- Deploy on Fridays",
        "* Use Redis for caching\n* Deploy on Fridays",
        "1. Use Redis for caching\n2) Deploy on Fridays",
        "## Decisions\n\nUse Redis for caching. Deploy on Fridays.",
    ],
)
def test_compact_takes_every_summary_form_into_memory_md(tmp_path: Path, summary: str) -> None:
    class Fixed:
        name = "fixed"

        def summarize(self, turns: Sequence[Any]) -> str:
            return summary

    with Memory.open(tmp_path, embedder="none", session_summary_tokens=0) as memory:
        memory.record_turn("s", user="what did we decide?", assistant="Redis, Fridays")
        done = memory.compact_session("s", summarizer=Fixed())
        texts = [memory.get(item_id).text for item_id in done.items]
        assert texts == ["Use Redis for caching", "Deploy on Fridays"] or texts == [
            "Use Redis for caching.",
            "Deploy on Fridays.",
        ]


def test_the_prompt_tail_drops_speaker_names_and_nanoclaw_message_tags() -> None:
    from memstrata.memory.search import prompt_tail

    log = (
        '<messages>\n<message sender="Alice" time="2026-01-15T10:00:00Z">hi all</message>\n'
        '<message sender="Bob" time="2026-01-15T10:01:00Z">which port does staging use?'
        "</message>\n</messages>\n"
        "[10:02] Alice Smith: and the wifi password?\n"
    )
    tail = prompt_tail(log)
    assert tail == "hi all which port does staging use? and the wifi password?"
    assert "sender" not in tail and "Alice" not in tail


def test_lowercase_memory_md_names_memory_md(tmp_path: Path) -> None:
    from memstrata.storage.access import resolve, resolve_rel

    with Memory.open(tmp_path, embedder="none") as memory:
        memory.remember("Kites fly best in April")
        memory.flush()
        rel = resolve_rel(memory.workspace.volume, "memory.md", write=False)
        assert rel == "MEMORY.md"
        assert resolve(tmp_path, "memory.md", write=False).name == "MEMORY.md"


def test_an_old_transcript_keeps_openai_tool_calls_as_parts(tmp_path: Path) -> None:
    import json

    Memory.open(tmp_path, embedder="none").close()
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Riga"}'},
    }
    lines = [
        {"role": "user", "content": "Weather in Riga?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "name": "get_weather", "content": "4 C"},
        {"role": "assistant", "content": "It is 4 C in Riga."},
    ]
    (tmp_path / "sessions" / "old.jsonl").write_text(
        "".join(json.dumps(line) + "\n" for line in lines)
    )
    with Memory.open(tmp_path, embedder="none") as memory:
        [turn] = memory.sessions.turns("old")
        parts = [part for message in turn.messages for part in message["parts"]]
        calls = [part for part in parts if part["type"] == "tool_call"]
        assert calls == [
            {
                "type": "tool_call",
                "id": "call_1",
                "name": "get_weather",
                "arguments": {"city": "Riga"},
            }
        ]
        assert not any(part["type"] == "text" and not part["text"] for part in parts)
        assert [p["content"] for p in parts if p["type"] == "tool_result"] == ["4 C"]


def test_transcript_search_over_a_list_of_sessions(tmp_path: Path) -> None:
    with Memory.open(tmp_path, embedder="none", session_summary_tokens=0) as memory:
        memory.record_turn("chat-a", user="kite kite festival in April", assistant="ok")
        memory.record_turn("chat-b", user="the kite shop closes early today", assistant="ok")
        memory.record_turn("chat-c", user="kite kite kite strings", assistant="ok")
        hits = memory.search("kite", sessions=["chat-a", "chat-b"])
        found = {hit.session for hit in hits}
        assert "chat-a" in found and found <= {"chat-a", "chat-b"}  # never chat-c
        with pytest.raises(InvalidInput, match="list"):
            memory.search("kite", sessions="chat-a")


@pytest.mark.parametrize(
    ("text", "category"),
    [
        ("Use PostgreSQL for this.", "decision"),
        ("go with PostgreSQL", "decision"),
        ("Use tabs, not spaces", "decision"),
        ("I want a weekly report", "preference"),
        ("Use Google to find the answer", None),
        ("use the search tool", None),
        ("I want a sandwich", None),
    ],
)
def test_bare_imperatives_of_qanots_decision_family_are_captured(
    text: str, category: str | None
) -> None:
    from memstrata.capture.scan import scan

    found = {entry.category for entry in scan(text)}
    assert found == ({category} if category else set())


def test_search_and_context_share_one_reading_of_global_memory(tmp_path: Path) -> None:
    """Global's file is parsed and ranked once per change for both the gate
    and build_context, not once by each."""
    with Memory.open(tmp_path, "team", embedder="none") as memory:
        assert memory._search._global is memory._prompts.global_memory  # noqa: SLF001
