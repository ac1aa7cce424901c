"""The layers through ``Memory``: locking, hooks, the working-memory cap, and
the migrations run at open (issue 7)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memstrata import InvalidInput, Memory
from memstrata.model import WriteEvent


def test_core_files_round_trip_and_tell_the_hooks(memory: Memory) -> None:
    seen: list[WriteEvent] = []
    memory.add_write_hook(seen.append)
    memory.core.write("user", "# USER.md\n\nName: Dilnoza. Prefers short answers.")
    assert memory.core.read("USER.md") == "# USER.md\n\nName: Dilnoza. Prefers short answers.\n"
    assert [(e.kind, e.path) for e in seen] == [("layer", "core/USER.md")]
    with pytest.raises(InvalidInput, match="core file must be one of"):
        memory.core.read("../MEMORY.md")


def test_working_memory_keeps_its_cap_and_what_leaves_goes_to_the_daily_note(ws: Path) -> None:
    with Memory.open(ws, working_max_chars=420) as memory:
        memory.working.add("priorities", "ship the capture issue")
        for n in range(8):
            memory.working.progress(f"step {n} of the migration is done")
        text = (ws / "working" / "WORKING_MEMORY.md").read_text(encoding="utf-8")
        assert len(text) <= 420
        progress = memory.working.read().items("recent_progress")
        assert progress[-1].endswith("step 7 of the migration is done")
        assert memory.working.read().items("priorities") == ("ship the capture issue",)
    [note] = (ws / "memory").glob("????-??-??.md")
    kept = note.read_text(encoding="utf-8")
    assert "Left working memory" in kept and "step 0 of the migration is done" in kept
    gone = [n for n in range(8) if f"step {n} of" not in text]
    assert gone and all(f"step {n} of the migration is done" in kept for n in gone)


def test_semantic_items_are_added_once_and_removed(memory: Memory) -> None:
    added = memory.semantic.add("preferences", "Prefers metric units")
    assert added is not None and memory.semantic.add("preferences", "prefers metric units.") is None
    assert [i.text for i in memory.semantic.read("preferences")] == ["Prefers metric units"]
    assert [i.text for i in memory.semantic.remove("preferences", added.line)] == [
        "Prefers metric units"
    ]
    assert memory.semantic.read("preferences") == []


def test_notes_link_and_find_their_backlinks(memory: Memory) -> None:
    bm25 = memory.notes.create("BM25", "Lexical ranking.")
    dense = memory.notes.create("Dense retrieval", "Embeddings.")
    assert memory.notes.link(dense.name, bm25.name) is True
    assert memory.notes.link(dense.name, bm25.name) is False
    assert [n.name for n in memory.notes.backlinks(bm25.name)] == [dense.name]
    kept = memory.notes.move(bm25.name, "zettel")
    assert kept.folder == "zettel" and [n.name for n in memory.notes.list("zettel")] == [bm25.name]
    assert "Lexical ranking." in memory.notes.read(bm25.name)


SOUL = """# SOUL.md

Warm and brief.

## Session Compaction 2025-01-15 10:00
- The user is migrating the billing service to Go
- Staging database port is 5433

## Voice
Plain words.

## Session Compaction 2025-01-20 18:30
- Decided to ship on Fridays only
"""


def test_open_migrates_claude_md_and_moves_compaction_sections_to_memory_md(ws: Path) -> None:
    Memory.open(ws).close()
    (ws / "core" / "SOUL.md").write_text(SOUL, encoding="utf-8")
    (ws / "CLAUDE.md").write_text("Always answer in English.\n", encoding="utf-8")
    with Memory.open(ws) as memory:
        live = {(item.category, item.text) for item in memory.list()}
        notices = " ".join(memory.status().notices)
    assert live == {
        ("Session Compaction 2025-01-15 10:00", "The user is migrating the billing service to Go"),
        ("Session Compaction 2025-01-15 10:00", "Staging database port is 5433"),
        ("Session Compaction 2025-01-20 18:30", "Decided to ship on Fridays only"),
    }
    assert "CLAUDE.md" in notices and "2 Session Compaction section(s)" in notices
    soul = (ws / "core" / "SOUL.md").read_text(encoding="utf-8")
    assert "Session Compaction" not in soul and "## Voice\nPlain words." in soul
    assert "Always answer in English." in soul and not (ws / "CLAUDE.md").exists()
    assert (ws / ".memstrata" / "migrated" / "CLAUDE.md").exists()
    memory_md = (ws / "MEMORY.md").read_text(encoding="utf-8")
    assert "## Session Compaction 2025-01-15 10:00" in memory_md

    files = {p: p.read_bytes() for p in [ws / "core" / "SOUL.md", ws / "MEMORY.md"]}
    with Memory.open(ws) as memory:  # idempotent: the second open does nothing
        assert memory.status().notices == ()
        assert len(memory.list()) == 3
    assert {p: p.read_bytes() for p in files} == files


def test_a_soul_md_that_is_not_utf8_is_left_alone_and_reported(ws: Path) -> None:
    Memory.open(ws).close()
    broken = b"# SOUL\n## Session Compaction x\n- caf\xe9\n"
    (ws / "core" / "SOUL.md").write_bytes(broken)
    with Memory.open(ws) as memory:
        assert "migration skipped" in " ".join(memory.status().notices)
        assert memory.list() == []
    assert (ws / "core" / "SOUL.md").read_bytes() == broken
