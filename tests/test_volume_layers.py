"""The layer and document stores on a volume that is not a folder: every file
they read or write goes through ``workspace.volume`` (here ``fakes.InMemoryVolume``),
none through the workspace folder.

The engine (journal, lock, MEMORY.md, its snapshot and the audits) still
lives in the folder and ``Memory.open`` takes a folder, so these tests build
an ``Engine`` on a ``Workspace`` carrying the in-memory volume and a ``Memory``
on that engine (with ``fakes.InMemoryIndex``), run the layers, the documents,
the memory tools, the daily note and the migrations at open on it, and check
that the folder holds nothing but the engine's own files.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fakes import InMemoryIndex, InMemoryVolume
from memstrata import AccessDenied, Conflict, Memory, NotFound
from memstrata.config import Settings
from memstrata.memory.engine import Engine
from memstrata.memory.layers import migrate_at_open
from memstrata.storage.journal import Record
from memstrata.storage.workspace import Workspace
from memstrata.stores import docs
from memstrata.tools import dispatch
from memstrata.tools.memory_tool import MemoryToolHandler

# The engine's files, in the folder for now (its checkpoint writes the audits).
ENGINE_FILES = {
    "MEMORY.md",
    "memory/LTM_SNAPSHOT.json",
    "memory/LTM_AUDIT.jsonl",
    "memory/LESSONS.jsonl",
    "memory/LESSONS_AUDIT.jsonl",
    "memory/DOCS_AUDIT.jsonl",
}


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of ``folder`` but the engine's own (.memstrata/, MEMORY.md...)."""
    found = {path.relative_to(folder).as_posix(): path for path in folder.rglob("*")}
    return {
        rel: path.read_bytes()
        for rel, path in found.items()
        if path.is_file() and not rel.startswith(".memstrata/") and rel not in ENGINE_FILES
    }


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[Memory]:
    root = tmp_path / "ws"
    for folder in (".memstrata", "memory"):  # where the engine keeps its files for now
        (root / folder).mkdir(parents=True)
    workspace = Workspace(root, root, None, volume=InMemoryVolume())
    settings = Settings.from_mapping(
        {"working_max_chars": 400, "embedder": "none", "checkpoint_every_updates": 10_000}
    )
    engine = Engine(workspace, settings, None)
    with engine.lock:
        engine.load()
    opened = Memory(engine, open_index=lambda engine: InMemoryIndex())
    yield opened
    opened.close()
    assert _files(root) == {}


def _volume(memory: Memory) -> InMemoryVolume:
    volume = memory.workspace.volume
    assert isinstance(volume, InMemoryVolume)
    return volume


def _text(memory: Memory, rel: str) -> str:
    data = _volume(memory).read(rel)
    assert data is not None, rel
    return data.decode()


def test_core_working_and_semantic_live_in_the_volume(memory: Memory) -> None:
    assert memory.core.write("user", "Prefers tea.") == "Prefers tea.\n"
    assert memory.core.read("USER.md") == "Prefers tea.\n"
    assert _text(memory, "core/USER.md") == "Prefers tea.\n"
    with pytest.raises(NotFound, match=r"core/AGENT.md does not exist \(core/AGENT.md in memory:"):
        memory.core.read("agent")

    memory.working.add("priorities", "ship the volume seam")
    memory.working.set("active_tasks", ["convert the stores", "write the test"])
    at = datetime(2026, 3, 1, 12, tzinfo=UTC)
    for n in range(12):  # past the 400-character cap: progress leaves for the daily note
        memory.working.progress(f"step {n} of the conversion is done", at=at)
    working = memory.working.read()
    assert working.items("priorities") == ("ship the volume seam",)
    assert working.items("active_tasks") == ("convert the stores", "write the test")
    assert "step 11" in _text(memory, "working/WORKING_MEMORY.md")
    daily = [rel for rel, _ in _volume(memory).list("memory/") if rel[7:9] == "20"]
    assert len(daily) == 1 and "Left working memory" in _text(memory, daily[0])

    added = memory.semantic.add("facts", "The volume is in memory.")
    assert added is not None and memory.semantic.add("facts", "the volume is in memory") is None
    assert [item.text for item in memory.semantic.read("facts")] == ["The volume is in memory."]
    assert memory.semantic.remove("facts", added.line) == [added]
    assert memory.semantic.read("facts") == []
    assert "- The" not in _text(memory, "semantic/facts.md")
    assert _files(memory.workspace.path) == {}


def test_the_notebook_lives_in_the_volume(memory: Memory) -> None:
    notes = memory.notes
    alpha = notes.create("Alpha", "See [[beta]].")
    beta = notes.create("Beta")
    assert alpha.rel == "notes/inbox/alpha.md" and beta.rel == "notes/inbox/beta.md"
    assert notes.create("Alpha").name.startswith("alpha-")
    assert notes.link("beta", "alpha") is True and notes.link("beta", "alpha") is False
    assert _text(memory, beta.rel) == "# Beta\n\n- [[alpha]]\n"
    kept = notes.move("alpha", "zettel")
    assert kept.rel == "notes/zettel/alpha.md" and _volume(memory).read(alpha.rel) is None
    assert notes.read("alpha") == "# Alpha\n\nSee [[beta]].\n"
    assert [n.name for n in notes.backlinks("alpha")] == ["beta"]
    assert [n.name for n in notes.backlinks("beta")] == ["alpha"]
    assert [n.folder for n in notes.list()] == ["inbox", "inbox", "zettel"]
    _volume(memory).write("notes/maps/alpha.md", b"# Someone else's\n")
    with pytest.raises(Conflict, match="exists already"):
        notes.move("alpha", "maps")
    assert _files(memory.workspace.path) == {}


def test_documents_tools_and_the_daily_note_live_in_the_volume(memory: Memory) -> None:
    documents = memory.documents
    assert documents.edit_file("memory/plan.md", lambda old: "one\n") == "one\n"
    documents.edit_file("memory/plan.md", lambda old: f"{old}two\n")
    assert _text(memory, "memory/plan.md") == "one\ntwo\n"
    documents.rename_file("memory/plan.md", "semantic/plan.md")
    assert _volume(memory).read("memory/plan.md") is None
    assert _text(memory, "semantic/plan.md") == "one\ntwo\n"
    documents.edit_file("notes/inbox/x.md", lambda old: "x\n")
    with pytest.raises(Conflict):
        documents.rename_file("semantic/plan.md", "notes/inbox/x.md")
    documents.edit_file("notes/inbox/x.md", lambda old: None)
    assert _volume(memory).read("notes/inbox/x.md") is None
    with pytest.raises(AccessDenied):
        documents.edit_file("../outside.md", lambda old: "no")

    at = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
    (event,) = memory.engine.note_exchanges([("hello", "hi there", None, at)])
    assert event.path == f"memory/{at.astimezone().date().isoformat()}.md"
    assert "**User:** hello" in _text(memory, event.path)

    tool = MemoryToolHandler(memory)
    create = {"command": "create", "path": "/memories/memory/t.md", "file_text": "a\nb\n"}
    assert tool.handle(create).startswith("File created")
    assert tool.handle(
        {"command": "insert", "path": "/memories/memory/t.md", "insert_line": 1, "insert_text": "c"}
    ).endswith("edited.")
    assert _text(memory, "memory/t.md") == "a\nc\nb\n"
    listing = tool.handle({"command": "view", "path": "/memories"})
    assert "6B\t/memories/memory/t.md" in listing and "/memories/semantic/plan.md" in listing
    assert "     2\tc" in tool.handle({"command": "view", "path": "/memories/memory/t.md"})
    assert tool.handle(
        {
            "command": "rename",
            "old_path": "/memories/memory/t.md",
            "new_path": "/memories/notes/zettel/t.md",
        }
    ).startswith("Success")
    got = json.loads(dispatch(memory, "memory_get", {"path": "notes/zettel/t.md"}))
    assert got["text"] == "a\nc\nb" and got["total_lines"] == 3
    assert dispatch(memory, "memory_get", {"path": "memory/none.md"}).startswith("Error:")
    assert _files(memory.workspace.path) == {}


def test_a_logged_change_is_redone_on_the_volume(memory: Memory) -> None:
    volume = _volume(memory)
    volume.write("memory/a.md", b"old\n")
    volume.write("memory/b.md", b"moved\n")
    records = [
        Record(1, docs.OP_DOC_PUT, _put("memory/a.md", b"old\n", "new\n")),
        Record(
            2,
            docs.OP_DOC_RENAME,
            {"path": "memory/b.md", "to": "memory/c.md", "before": docs.digest(b"moved\n")},
        ),
        Record(3, docs.OP_DOC_PUT, _put("../escape.md", None, "no\n")),
    ]
    assert docs.redo_latest(volume, records) == 2
    assert volume.read("memory/a.md") == b"new\n"
    assert volume.read("memory/b.md") is None and volume.read("memory/c.md") == b"moved\n"
    assert docs.redo_latest(volume, records) == 0  # safe to repeat


def test_migrations_at_open_run_on_the_volume(memory: Memory) -> None:
    volume = _volume(memory)
    volume.write("CLAUDE.md", b"Answer in Uzbek.\n")
    volume.write("core/SOUL.md", b"# SOUL\n\n## Session Compaction 1\n- decided on PostgreSQL\n")
    engine: Engine = memory.engine
    with engine.lock:
        migrate_at_open(engine)
    assert volume.read("CLAUDE.md") is None
    assert volume.read(".memstrata/migrated/CLAUDE.md") == b"Answer in Uzbek.\n"
    soul = _text(memory, "core/SOUL.md")
    assert "Session Compaction" not in soul and "Answer in Uzbek." in soul
    assert [item.text for item in memory.list()] == ["decided on PostgreSQL"]


def _put(path: str, before: bytes | None, text: str) -> dict[str, object]:
    return {
        "path": path,
        "text": text,
        "before": docs.digest(before),
        "after": docs.digest(text.encode()),
    }
