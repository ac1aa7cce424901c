"""Importers (issue 19 §1): each seed's documented format, written here as a
fixture, taken in with nothing lost (counted item by item), tool calls and
times kept, the source byte-identical afterwards and a second run adding 0."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory
from memstrata.importers import ImportReport, import_source
from memstrata.importers.apply import LEDGER

FAST = {"embedder": "none"}
SECRET = "sk-abcdefghijklmnopqrstuvwxyz123456"


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root``, by relative path, with its bytes."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(record) + "\n" for record in records)


def run_twice(
    kind: str, source: Path, target: Path, **kwargs: Any
) -> tuple[ImportReport, ImportReport]:
    """Import twice; the source is byte-identical after each, the second adds 0."""
    before = tree(source)
    with Memory.open(target, **FAST) as memory:
        first = import_source(kind, source, memory, **kwargs)
    assert tree(source) == before
    with Memory.open(target, **FAST) as memory:
        second = import_source(kind, source, memory, **kwargs)
    assert tree(source) == before
    assert second.taken == []
    assert len(second.skipped) == len(first.taken) + len(first.skipped)
    return first, second


def taken_refs(report: ImportReport, what: str) -> list[str]:
    return [entry["ref"] for entry in report.taken if entry["what"] == what]


def at(text: str) -> datetime:
    return (
        datetime.fromisoformat(text).replace(tzinfo=UTC)
        if "+" not in text
        else datetime.fromisoformat(text)
    )


# -- miqi -------------------------------------------------------------------------------


def miqi_source(root: Path) -> None:
    items = [
        {
            "id": f"ltm_17394432001{n:02d}_{n}",
            "text": text,
            "source": "explicit_user",
            "session_key": "telegram:12345",
            "created_at": f"2026-02-13T09:0{n}:10.223000",
            "updated_at": f"2026-02-13T09:0{n}:40.119000",
            "hits": n,
        }
        for n, text in enumerate(
            ["User prefers concise Chinese replies", "User lives in Lyon", f"token is {SECRET}"]
        )
    ]
    updated = "2026-02-13T09:05:40"
    write(
        root,
        "memory/LTM_SNAPSHOT.json",
        json.dumps({"version": 1, "updated_at": updated, "items": items}),
    )
    write(
        root,
        "memory/LTM_AUDIT.jsonl",
        jsonl({"op": "upsert", "id": "ltm_1", "ts": 1}, {"op": "flush", "ts": 2}),
    )
    lesson = {
        "id": "les_1",
        "text": "check the file exists before reading it",
        "created_at": "2026-02-12T08:00:00",
    }
    write(root, "memory/LESSONS.jsonl", jsonl(lesson))
    write(root, "memory/LESSONS_AUDIT.jsonl", jsonl({"op": "add", "id": "les_1"}))
    write(
        root,
        "memory/MEMORY.md",
        "# Notes\n\n- The user's cat is called Miso\n- Standup is at 9:30\n",
    )
    write(root, "memory/2026-02-13.md", "# 2026-02-13\n\nTalked about Lyon.\n")
    write(
        root,
        "sessions/telegram_12345.jsonl",
        jsonl(
            {"_type": "metadata", "key": "telegram:12345", "created_at": "2026-02-13T09:00:00"},
            {"role": "user", "content": "weather in Paris?", "timestamp": "2026-02-13T09:00:01"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                    }
                ],
                "timestamp": "2026-02-13T09:00:02",
            },
            {"role": "tool", "tool_call_id": "call_1", "name": "weather", "content": "sunny, 21C"},
            {"role": "assistant", "content": "Sunny, 21C.", "timestamp": "2026-02-13T09:00:04"},
            {"role": "user", "content": "thanks", "timestamp": "2026-02-13T09:01:00"},
            {"role": "assistant", "content": "You're welcome.", "timestamp": "2026-02-13T09:01:01"},
        ),
    )
    write(
        root,
        "sessions/cli_direct/conversation.jsonl",
        jsonl(
            {"_type": "metadata", "key": "cli:direct"},
            {"role": "user", "content": "hello", "timestamp": "2026-02-14T10:00:00"},
            {"role": "assistant", "content": "hi", "timestamp": "2026-02-14T10:00:01"},
        ),
    )


def test_miqi_workspace_is_taken_in_item_by_item(tmp_path: Path) -> None:
    source, target = tmp_path / "miqi", tmp_path / "ws"
    miqi_source(source)
    first, _ = run_twice("miqi", source, target)
    assert first.counts() == {"fact": 6, "turn": 3, "document": 1, "skipped": 3}
    assert sorted(taken_refs(first, "fact")) == [
        "memory/LESSONS.jsonl:1",
        "memory/LTM_SNAPSHOT.json#1",
        "memory/LTM_SNAPSHOT.json#2",
        "memory/LTM_SNAPSHOT.json#3",
        "memory/MEMORY.md:3",
        "memory/MEMORY.md:4",
    ]
    assert {entry["ref"] for entry in first.skipped} == {
        "memory/LTM_AUDIT.jsonl:1",
        "memory/LTM_AUDIT.jsonl:2",
        "memory/LESSONS_AUDIT.jsonl:1",
    }
    with Memory.open(target, **FAST) as memory:
        items = {item.text: item for item in memory.list()}
        assert all(item.source.value == "import" for item in items.values())
        concise = items["User prefers concise Chinese replies"]
        assert concise.session == "telegram:12345"
        assert concise.created_at == datetime(2026, 2, 13, 9, 0, 10, 223000, tzinfo=UTC)
        assert items["check the file exists before reading it"].category == "lesson"
        assert "token is [REDACTED" in " ".join(items)  # the secret never reached memory
        assert SECRET not in (target / "MEMORY.md").read_text()
        turns = memory.sessions.turns("telegram:12345")
        assert [t.text_of("user") for t in turns] == ["weather in Paris?", "thanks"]
        parts = [part for message in turns[0].messages for part in message["parts"]]
        call = next(p for p in parts if p["type"] == "tool_call")
        assert (call["name"], call["arguments"], call["id"]) == (
            "weather",
            {"city": "Paris"},
            "call_1",
        )
        result = next(p for p in parts if p["type"] == "tool_result")
        assert (result["content"], result["tool_call_id"]) == ("sunny, 21C", "call_1")
        assert turns[0].created_at == datetime(2026, 2, 13, 9, 0, 1, tzinfo=UTC)
        assert [t.text_of("user") for t in memory.sessions.turns("cli:direct")] == ["hello"]
    ledger = [json.loads(line) for line in (target / LEDGER).read_text().splitlines()]
    by_ref = {entry["ref"]: entry for entry in ledger}
    original = by_ref["memory/LTM_SNAPSHOT.json#1"]["original"]
    assert original["id"] == "ltm_1739443200100_0" and original["hits"] == 0
    assert original["updated_at"] == "2026-02-13T09:00:40.119000"
    # the daily note is taken as it was; the turns of that day were then noted on it
    daily = (target / "memory" / "2026-02-13.md").read_text()
    assert daily.startswith("# 2026-02-13\n\nTalked about Lyon.\n")
    assert "**User:** weather in Paris?" in daily


def test_a_dry_run_writes_nothing_and_reports_what_it_would_take(tmp_path: Path) -> None:
    source, target = tmp_path / "miqi", tmp_path / "ws"
    miqi_source(source)
    with Memory.open(target, **FAST) as memory:
        pass
    before = tree(target)
    with Memory.open(target, read_only=True, create=False, **FAST) as memory:
        report = import_source("miqi", source, memory, dry_run=True)
    assert report.counts() == {"fact": 6, "turn": 3, "document": 1, "skipped": 3}
    assert tree(target) == before
    report = import_source("miqi", source, None, dry_run=True)  # into a workspace not made yet
    assert report.counts()["fact"] == 6


# -- qracer -----------------------------------------------------------------------------


def test_qracer_audit_log_is_one_turn_per_turn_number_with_its_tools(tmp_path: Path) -> None:
    source, target = tmp_path / "qracer", tmp_path / "ws"
    write(
        source,
        "sessions/s-42.jsonl",
        jsonl(
            {
                "turn": 1,
                "role": "user",
                "content": "Why did AAPL spike?",
                "ts": "2026-01-05T14:00:00Z",
            },
            {
                "turn": 1,
                "role": "tool_call",
                "tool": "fetch_news",
                "args": {"ticker": "AAPL"},
                "ts": "2026-01-05T14:00:01Z",
            },
            {
                "turn": 1,
                "role": "tool_result",
                "tool": "fetch_news",
                "success": True,
                "source": "Finnhub",
                "content": "earnings beat",
                "ts": "2026-01-05T14:00:02Z",
            },
            {
                "turn": 1,
                "role": "tool_call",
                "tool": "price",
                "args": {"ticker": "AAPL"},
                "ts": "2026-01-05T14:00:03Z",
            },
            {
                "turn": 1,
                "role": "tool_result",
                "tool": "price",
                "success": False,
                "source": "Yahoo",
                "ts": "2026-01-05T14:00:04Z",
            },
            {
                "turn": 1,
                "role": "assistant",
                "content": "Earnings beat.",
                "conviction": 8,
                "ts": "2026-01-05T14:00:05Z",
            },
            {"turn": 2, "role": "user", "content": "And MSFT?", "ts": "2026-01-05T14:01:00Z"},
            {
                "turn": 2,
                "role": "assistant",
                "content": "Flat.",
                "conviction": 3,
                "ts": "2026-01-05T14:01:02Z",
            },
        ),
    )
    write(source, "summaries/s-42.md", "# Session s-42\n\n- AAPL spiked on earnings\n")
    write(source, "MEMORY.md", "## Theses\n- Long AAPL into earnings\n")
    first, _ = run_twice("qracer", source, target)
    assert first.counts() == {"fact": 1, "turn": 2, "document": 1, "skipped": 0}
    with Memory.open(target, **FAST) as memory:
        one, two = memory.sessions.turns("s-42")
        parts = [part for message in one.messages for part in message["parts"]]
        calls = [p for p in parts if p["type"] == "tool_call"]
        results = [p for p in parts if p["type"] == "tool_result"]
        assert [(c["name"], c["arguments"]) for c in calls] == [
            ("fetch_news", {"ticker": "AAPL"}),
            ("price", {"ticker": "AAPL"}),
        ]
        assert [(r["name"], r["success"], r.get("source")) for r in results] == [
            ("fetch_news", True, "Finnhub"),
            ("price", False, "Yahoo"),
        ]
        assert one.meta["qracer"]["fields"]["assistant"] == {"conviction": 8}
        assert two.meta["qracer"]["fields"]["assistant"] == {"conviction": 3}
        assert one.created_at == datetime(2026, 1, 5, 14, 0, tzinfo=UTC)
        assert two.text_of("assistant") == "Flat."
        [item] = memory.list()
        assert (item.text, item.category) == ("Long AAPL into earnings", "Theses")
    assert (target / "summaries" / "s-42.md").read_text().endswith("- AAPL spiked on earnings\n")


# -- q15 --------------------------------------------------------------------------------


def q15_source(root: Path) -> None:
    v3 = {
        "schema_version": 3,
        "id": "turn-3",
        "session": "web",
        "seq": 3,
        "created_at": "2026-03-01T10:02:00+00:00",
        "messages": [
            {"role": "user", "parts": [{"type": "text", "text": "look it up"}]},
            {
                "role": "assistant",
                "parts": [
                    {"type": "reasoning", "text": "I should search"},
                    {"type": "tool_call", "id": "c9", "name": "search", "arguments": {"q": "x"}},
                ],
            },
            {
                "role": "tool",
                "parts": [
                    {
                        "type": "tool_result",
                        "tool_call_id": "c9",
                        "name": "search",
                        "content": "found x",
                        "success": True,
                    }
                ],
            },
            {
                "role": "assistant",
                "parts": [
                    {"type": "text", "text": "x is found"},
                    {"type": "citation", "source": "https://example.org/x"},  # a later part type
                ],
            },
        ],
    }
    v2 = {
        "schema_version": 2,
        "id": "turn-2",
        "session": "web",
        "seq": 2,
        "created_at": "2026-03-01T10:01:00+00:00",
        "messages": [
            {"role": "user", "parts": [{"type": "text", "text": "hi"}]},
            {"role": "assistant", "parts": [{"type": "text", "text": "hello"}]},
        ],
    }
    v1 = {
        "session": "web",
        "created_at": "2026-03-01T10:00:00+00:00",
        "messages": [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"}],
    }
    for name, turn in (("0001", v1), ("0002", v2), ("0003", v3)):
        write(root, f"history/turns/2026/03/01/{name}.json", json.dumps(turn))
    write(root, "history/turns/2026/03/01/0004.json", "{not json")
    write(root, "history/state/head.json", '{"seq": 3}')
    write(root, "core/USER.md", "# User\nAda, a pilot.\n")
    write(root, "core/STYLE.md", "terse\n")
    write(root, "core/drafts/old.md", "not a core file: core/ has no folders\n")
    write(root, "working/WORKING_MEMORY.md", "# Working memory\n\n## Current priorities\n- ship\n")
    write(root, "semantic/facts.md", "- Ada flies a Cessna\n")
    write(root, "notes/zettel/cessna.md", "# Cessna\n\nA small plane.\n")


def test_q15_history_and_layers_are_copied_and_q15s_files_kept(tmp_path: Path) -> None:
    source, target = tmp_path / "q15", tmp_path / "ws"
    q15_source(source)
    first, _ = run_twice("q15", source, target)
    assert first.counts() == {"fact": 0, "turn": 3, "document": 5, "skipped": 3}
    assert {e["ref"] for e in first.skipped} == {
        "history/turns/2026/03/01/0004.json",
        "history/state/head.json",
        "core/drafts/old.md",
    }
    with Memory.open(target, **FAST) as memory:
        turns = memory.sessions.turns("web")
        assert [t.text_of("user") for t in turns] == ["first", "hi", "look it up"]
        assert [t.meta["q15"]["id"] for t in turns][1:] == ["turn-2", "turn-3"]
        parts = [part for message in turns[2].messages for part in message["parts"]]
        kinds = [p["type"] for p in parts]
        assert kinds == ["text", "reasoning", "tool_call", "tool_result", "text"]
        assert turns[2].created_at == datetime(2026, 3, 1, 10, 2, tzinfo=UTC)
        assert turns[2].meta["q15"]["schema_version"] == 3
        assert turns[2].meta["q15"]["other_parts"] == [
            {"type": "citation", "source": "https://example.org/x"}
        ]
        assert memory.core.read("user") == "# User\nAda, a pilot.\n"
        assert memory.core.read("STYLE.md") == "terse\n"  # q15 keeps more than three
        [core] = [
            s for s in memory.build_context("hi", budget_tokens=2000).sections if s.name == "Core"
        ]
        assert "core/STYLE.md" in core.sources and "terse" in core.text
    assert (target / "semantic" / "facts.md").read_text() == "- Ada flies a Cessna\n"
    assert (target / "notes" / "zettel" / "cessna.md").exists()


def test_q15_move_removes_only_the_turn_files_now_in_memory(tmp_path: Path) -> None:
    source, target = tmp_path / "q15", tmp_path / "ws"
    q15_source(source)
    with Memory.open(target, **FAST) as memory:
        report = import_source("q15", source, memory, move=True)
    assert sorted(report.moved) == [f"history/turns/2026/03/01/000{n}.json" for n in (1, 2, 3)]
    left = sorted(tree(source / "history"))
    assert left == ["state/head.json", "turns/2026/03/01/0004.json"]  # unreadable: kept
    assert (source / "core" / "USER.md").exists()


# -- qanot ------------------------------------------------------------------------------


def test_qanot_lines_keep_category_user_and_time(tmp_path: Path) -> None:
    source, target = tmp_path / "qanot", tmp_path / "ws"
    write(
        source,
        "MEMORY.md",
        "# MEMORY.md\n\n- **preference**: [user:42] I prefer dark mode\n"
        "- **proper_noun**: [user:7] My name is Bobur\n- The office is in Tashkent\n",
    )
    write(
        source,
        "SESSION-STATE.md",
        "# SESSION-STATE.md -- Active Working Memory\n\n"
        "- [2025-01-15T10:30:00+00:00] **proper_noun**: My name is Sardor\n"
        "- [2025-01-15T10:35:00+00:00] **decision**: let's use FastAPI for the backend\n",
    )
    daily = "# Daily Notes -- 2025-01-15\n\n## [10:30:00]\n**User:** Tell me about FastAPI...\n"
    write(source, "memory/2025-01-15.md", daily)
    write(source, "memory/working-buffer.md", "# Working Buffer (Danger Zone Log)\n")
    first, _ = run_twice("qanot", source, target)
    assert first.counts() == {"fact": 5, "turn": 0, "document": 1, "skipped": 1}
    with Memory.open(target, **FAST) as memory:
        items = {item.text: item for item in memory.list()}
    dark = items["I prefer dark mode"]
    assert (dark.category, dark.user) == ("preference", "42")
    assert (items["My name is Bobur"].category, items["My name is Bobur"].user) == (
        "proper_noun",
        "7",
    )
    sardor = items["My name is Sardor"]
    assert sardor.created_at == datetime(2025, 1, 15, 10, 30, tzinfo=UTC)
    assert items["let's use FastAPI for the backend"].category == "decision"
    assert items["The office is in Tashkent"].category == "fact"
    assert (target / "memory" / "2025-01-15.md").read_text() == daily


# -- nanoclaw ---------------------------------------------------------------------------


def test_nanoclaw_groups_global_and_the_soul_migration(tmp_path: Path) -> None:
    source, target = tmp_path / "nano", tmp_path / "ws"
    write(source, "MEMORY.md", "# Memory\n\n- The user is Ana\n")
    write(source, "memory/projects.md", "# Projects\n\n- memstrata\n")
    write(
        source,
        "CLAUDE.md",
        "# Identity\nYou are Andy.\n\n## Session Compaction 2026-01-02T03:04:05Z\n"
        "- Ana moved to Porto\n- Ana likes tea\n\n## Style\nBe brief.\n",
    )
    write(source, "groups/family/MEMORY.md", "- Grandma's birthday is May 3\n")
    write(source, "groups/family/SOUL.md", "You help the family.\n")
    write(source, "groups/family/CLAUDE.md", "legacy\n")
    write(source, "groups/global/MEMORY.md", "- Everyone uses UTC\n")
    write(source, "groups/global/memory/rules.md", "Be kind.\n")
    write(source, "groups/Bad Name/MEMORY.md", "- lost?\n")
    with Memory.open(target, **FAST) as main:
        pass

    def open_group(name: str) -> Memory:
        return Memory.open(target, name, **FAST)

    before = tree(source)
    with Memory.open(target, **FAST) as memory:
        report = import_source("nanoclaw", source, memory, open_group=open_group)
    assert tree(source) == before
    assert report.counts() == {"fact": 5, "turn": 0, "document": 4, "skipped": 2}
    assert {e["ref"] for e in report.skipped} == {"groups/Bad Name/", "groups/family/CLAUDE.md"}
    with Memory.open(target, **FAST) as main:
        texts = {item.text: item for item in main.list()}
        assert set(texts) == {"The user is Ana", "Ana moved to Porto", "Ana likes tea"}
        assert texts["Ana likes tea"].category == "compaction"
        assert texts["Ana likes tea"].created_at == datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
        soul = main.core.read("soul")
    assert "Session Compaction" not in soul and "Be brief." in soul and "You are Andy." in soul
    with Memory.open(target, "family", **FAST) as family:
        assert [i.text for i in family.list()] == ["Grandma's birthday is May 3"]
        assert family.core.read("soul") == "You help the family.\n"
    with Memory.open(target, "global", **FAST) as shared:
        assert [i.text for i in shared.list()] == ["Everyone uses UTC"]
    assert (target / "groups" / "global" / "memory" / "rules.md").read_text() == "Be kind.\n"
    with Memory.open(target, **FAST) as memory:
        again = import_source("nanoclaw", source, memory, open_group=open_group)
    assert again.taken == []


# -- openclaw / markdown ----------------------------------------------------------------


def test_openclaw_layout_claude_md_and_memories_dir_keep_their_lines(tmp_path: Path) -> None:
    source, target = tmp_path / "claw", tmp_path / "ws"
    write(
        source,
        "MEMORY.md",
        "# MEMORY\n\n<!-- kept\n by hand -->\n## Preferences\n- Dark mode\n* Vim keys\n"
        "1. Metric units\n\nPlain prose line.\n```\ncode line\n```\n",
    )
    notes = "# 2026-02-01\n\nline three\nline four\n"
    write(source, "memory/2026-02-01.md", notes)
    write(source, "CLAUDE.md", "# Project\n\n- run `make test`\n")
    write(source, "memories/project/acme.xml", "<notes>acme ships friday</notes>\n")
    (source / "memories" / "blob.bin").write_bytes(b"\x00\xff")
    first, _ = run_twice("openclaw", source, target)
    assert first.counts() == {"fact": 4, "turn": 0, "document": 3, "skipped": 2}
    facts = taken_refs(first, "fact")
    assert facts == ["MEMORY.md:6", "MEMORY.md:7", "MEMORY.md:8", "MEMORY.md:10"]
    with Memory.open(target, **FAST) as memory:
        items = {item.text: item.category for item in memory.list()}
    assert items == {
        "Dark mode": "preference",
        "Vim keys": "preference",
        "Metric units": "preference",
        "Plain prose line.": "preference",
    }
    # a file:line citation still finds its line
    assert (target / "memory" / "2026-02-01.md").read_text().split("\n")[2] == "line three"
    assert (target / "memory" / "CLAUDE.md").read_text() == "# Project\n\n- run `make test`\n"
    assert (target / "memory" / "memories-project-acme.xml.md").exists()


def test_an_existing_different_file_is_never_overwritten(tmp_path: Path) -> None:
    source, target = tmp_path / "claw", tmp_path / "ws"
    write(source, "memory/2026-02-01.md", "theirs\n")
    with Memory.open(target, **FAST) as memory:
        memory.documents.edit_file("memory/2026-02-01.md", lambda _: "ours\n")
        report = import_source("markdown", source, memory)
    assert report.taken == []
    [skip] = report.skipped
    assert "a different file is there" in skip["reason"]
    assert (target / "memory" / "2026-02-01.md").read_text() == "ours\n"


# -- jsonl / mem0 -----------------------------------------------------------------------


def test_generic_jsonl_and_mem0_exports(tmp_path: Path) -> None:
    generic = tmp_path / "facts.jsonl"
    generic.write_text(
        jsonl(
            {
                "text": "Ada likes tea",
                "created_at": "2024-05-01T08:00:00+00:00",
                "category": "preference",
                "user": "ada",
            },
            {"text": "The sky is blue"},
            {"text": ""},
            {"nope": 1},
        )
        + "not json\n",
        encoding="utf-8",
    )
    mem0 = tmp_path / "mem0.json"
    mem0.write_text(
        json.dumps(
            {
                "results": [
                    {
                        "id": "892db2ae-06d9-49e5-8b3e-585ef9b85b8e",
                        "memory": "Is a vegetarian",
                        "user_id": "alice",
                        "created_at": "2024-07-20T01:30:36.275141-07:00",
                        "updated_at": "2024-07-20T01:30:36.275172-07:00",
                        "metadata": {"category": "food"},
                        "hash": "3f7e",
                    },
                    {
                        "id": "x2",
                        "memory": "Allergic to nuts",
                        "categories": ["health"],
                        "created_at": None,
                    },
                    {"id": "x3", "memory": None},
                ]
            }
        ),
        encoding="utf-8",
    )
    first, _ = run_twice("jsonl", generic, tmp_path / "ws")
    assert first.counts() == {"fact": 2, "turn": 0, "document": 0, "skipped": 3}
    assert [e["ref"] for e in first.skipped] == ["facts.jsonl:3", "facts.jsonl:4", "facts.jsonl:5"]
    second, _ = run_twice("mem0", mem0, tmp_path / "ws")
    assert second.counts() == {"fact": 2, "turn": 0, "document": 0, "skipped": 1}
    with Memory.open(tmp_path / "ws", **FAST) as memory:
        items = {item.text: item for item in memory.list()}
    tea = items["Ada likes tea"]
    assert (tea.user, tea.category) == ("ada", "preference")
    assert tea.created_at == datetime(2024, 5, 1, 8, tzinfo=UTC)
    veg = items["Is a vegetarian"]
    assert (veg.user, veg.category) == ("alice", "food")
    assert veg.created_at == datetime.fromisoformat("2024-07-20T01:30:36.275141-07:00")
    assert items["Allergic to nuts"].category == "health"
    ledger = (tmp_path / "ws" / LEDGER).read_text()
    assert "892db2ae-06d9-49e5-8b3e-585ef9b85b8e" in ledger


def test_secrets_are_redacted_in_facts_turns_and_documents(tmp_path: Path) -> None:
    source, target = tmp_path / "miqi", tmp_path / "ws"
    write(
        source,
        "memory/LTM_SNAPSHOT.json",
        json.dumps({"items": [{"id": "a", "text": f"key {SECRET}"}]}),
    )
    write(source, "memory/notes.md", f"the key is {SECRET}\n")
    write(
        source,
        "sessions/s.jsonl",
        jsonl({"role": "user", "content": f"use {SECRET}"}, {"role": "assistant", "content": "ok"}),
    )
    run_twice("miqi", source, target)
    leaked = [rel for rel, data in tree(target).items() if SECRET.encode() in data]
    assert leaked == []


def test_an_unknown_kind_and_a_missing_source_are_one_line_errors(tmp_path: Path) -> None:
    from memstrata.errors import InvalidInput, NotFound

    with Memory.open(tmp_path / "ws", **FAST) as memory:
        with pytest.raises(InvalidInput, match="unknown import kind"):
            import_source("letta", tmp_path, memory)
        with pytest.raises(NotFound):
            import_source("jsonl", tmp_path / "nope.jsonl", memory)
        with pytest.raises(InvalidInput, match="--move"):
            import_source("jsonl", tmp_path, memory, move=True)


def test_a_folder_kind_given_a_file_says_so(tmp_path: Path) -> None:
    from memstrata.errors import InvalidInput

    (tmp_path / "snapshot.json").write_text("{}")
    with Memory.open(tmp_path / "ws", **FAST) as memory:
        for kind in ("miqi", "qracer", "q15", "qanot", "nanoclaw"):
            with pytest.raises(InvalidInput, match=f"{kind} reads a folder"):
                import_source(kind, tmp_path / "snapshot.json", memory)


def test_turns_compacted_into_the_archive_are_not_imported_again(tmp_path: Path) -> None:
    source, target = tmp_path / "qracer", tmp_path / "ws"
    lines = []
    for turn in range(1, 9):
        lines.append({"turn": turn, "role": "user", "content": f"question {turn}", "ts": turn})
        lines.append({"turn": turn, "role": "assistant", "content": f"answer {turn}", "ts": turn})
    write(source, "sessions/long.jsonl", jsonl(*lines))
    small = {"session_max_turns": 3, "session_keep_turns": 1, **FAST}
    with Memory.open(target, **small) as memory:
        first = import_source("qracer", source, memory)
        assert first.counts()["turn"] == 8
        assert len(memory.sessions.turns("long")) < 8  # compacted: the rest in the archive
        again = import_source("qracer", source, memory)
        assert again.taken == [] and len(again.skipped) == 8
        archived = memory.sessions.turns("long", archived=True)
        assert [t.text_of("user") for t in archived] == [f"question {n}" for n in range(1, 9)]
