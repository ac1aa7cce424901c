"""The shared suite of ``Memory`` (issue 15), part 2: transcripts with parts,
their audit and compaction, daily notes, the layers (core, working, semantic,
notebook), documents by path and the path guard, search with citations, the
prompt context and the window. Every test runs on a folder and on PostgreSQL
(``places.place``); files are read only through ``memory.workspace.volume``."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import Memory
from memstrata.context import Message
from memstrata.errors import AccessDenied, Conflict, InvalidInput, NotFound
from memstrata.storage.workspace import session_stem
from places import Place

AT = datetime(2026, 3, 5, 10, 30, tzinfo=UTC)


def text_of(memory: Memory, rel: str) -> str:
    data = memory.workspace.volume.read(rel)
    assert data is not None, f"{rel} is missing"
    return data.decode("utf-8")


def line_at(memory: Memory, rel: str, number: int) -> str:
    return text_of(memory, rel).splitlines()[number - 1]


# -- transcripts -------------------------------------------------------------------------


def test_a_turn_keeps_its_parts_and_its_audit(opened: Memory) -> None:
    turn = opened.record_turn(
        "tg:7",
        user="Book room 4",
        assistant="Room 4 does not exist.",
        reasoning="I should call the booking tool.",
        tool_calls=[{"name": "book", "arguments": {"room": 4}, "id": "c1"}],
        tool_results=[{"tool_call_id": "c1", "content": "no such room", "success": False}],
        meta={"model": "scripted"},
        at=AT,
    )
    assert turn.seq == 1 and turn.session == "tg:7" and turn.created_at == AT
    [again] = opened.sessions.turns("tg:7")
    assert again == turn
    shape = [(m["role"], [p["type"] for p in m["parts"]]) for m in again.messages]
    assert shape == [
        ("user", ["text"]),
        ("assistant", ["reasoning", "tool_call"]),
        ("tool", ["tool_result"]),
        ("assistant", ["text"]),
    ]
    events = opened.sessions.audit("tg:7")
    assert [(e["turn"], e["role"]) for e in events] == [
        (1, "user"),
        (1, "reasoning"),
        (1, "tool_call"),
        (1, "tool_result"),
        (1, "assistant"),
    ]
    assert events[2]["tool"] == "book" and events[2]["args"] == {"room": 4}
    assert events[3]["success"] is False
    [info] = opened.sessions.list()
    assert (info.session, info.turns, info.last_seq) == ("tg:7", 1, 1)
    assert info.path == f"sessions/{session_stem('tg:7')}.jsonl"
    with pytest.raises(NotFound):
        opened.sessions.turns("nobody")


def test_seqs_count_on_and_last_takes_the_tail(opened: Memory) -> None:
    for n in range(1, 5):
        assert opened.record_turn("s", user=f"u{n}", assistant=f"a{n}").seq == n
    assert opened.record_turn("other", user="x", assistant="y").seq == 1
    assert [t.text_of("user") for t in opened.sessions.turns("s", last=2)] == ["u3", "u4"]
    assert opened.sessions.turns("s", last=0) == []
    assert [info.session for info in opened.sessions.list()] == ["other", "s"]


def test_compaction_keeps_the_seqs(opened: Memory) -> None:
    for n in range(1, 7):
        opened.record_turn("s", user=f"question {n}", assistant=f"answer {n}")
    done = opened.sessions.compact("s", keep=2)
    assert (done.kept, done.archived) == (2, 4) and done.archive is not None
    assert opened.workspace.volume.stat(done.archive) is not None
    assert [t.seq for t in opened.sessions.turns("s")] == [5, 6]
    assert [t.seq for t in opened.sessions.turns("s", archived=True)] == [1, 2, 3, 4, 5, 6]
    assert opened.record_turn("s", user="question 7", assistant="answer 7").seq == 7
    assert [info.archived for info in opened.sessions.list()] == [4]
    with pytest.raises(NotFound):
        opened.sessions.compact("nobody")


def test_a_transcript_over_its_limit_is_compacted_by_itself(place: Place) -> None:
    memory = place.open(session_max_turns=4, session_keep_turns=2)
    for n in range(1, 6):
        memory.record_turn("s", user=f"u{n}", assistant=f"a{n}")
    assert [t.seq for t in memory.sessions.turns("s")] == [4, 5]
    assert [t.seq for t in memory.sessions.turns("s", archived=True)] == [1, 2, 3, 4, 5]


def test_compact_session_summarizes_into_memory_md(opened: Memory) -> None:
    opened.record_turn("s", user="We decided to deploy on Tuesdays.", assistant="Noted.")
    opened.record_turn("s", user="The staging port is 5433.", assistant="Got it.")
    summary = opened.compact_session("s")
    assert summary.turns == (1, 2) and summary.path == f"summaries/{session_stem('s')}.md"
    assert "Session Compaction" in text_of(opened, summary.path)
    assert {opened.get(item_id).session for item_id in summary.items} <= {"s"}
    with pytest.raises(InvalidInput, match="no turn since"):
        opened.compact_session("s")  # nothing new since the summary
    recent = opened.build_context("deploy", session="s", budget_tokens=2000)
    assert "Noted." not in recent.text  # the summary starts the session afresh
    assert [t.seq for t in opened.sessions.turns("s")] == [1, 2]  # the transcript is untouched


# -- daily notes -------------------------------------------------------------------------


def test_exchanges_go_to_the_daily_note_of_their_day(opened: Memory) -> None:
    opened.record_exchange("hello there", "hi", at=AT)
    opened.record_turn("s", user="second question", assistant="second answer", at=AT)
    note = text_of(opened, "memory/2026-03-05.md")
    assert note.count("## [") == 2
    assert "**User:** hello there" in note and "**Agent:** second answer" in note
    [hit] = opened.search("second question", k=1, layers=["daily_notes"])
    assert hit.path == "memory/2026-03-05.md"
    assert "second question" in line_at(opened, hit.path, hit.line_start) or any(
        "second question" in line
        for line in text_of(opened, hit.path).splitlines()[hit.line_start - 1 : hit.line_end]
    )


def test_the_files_the_api_names_are_files_of_the_workspace(place: Place) -> None:
    """``record_exchange`` and a note name their file: on a folder the file in
    it; on PostgreSQL (no folder) the path in the workspace, by which the
    volume, documents and search name it."""
    memory = place.open()
    written = memory.record_exchange("a", "b", at=AT)
    note = memory.notes.create("Kites")
    if place.backend == "folder":
        assert written == memory.workspace.path / "memory/2026-03-05.md"
        assert note.path == memory.workspace.path / note.rel
        assert written.read_text(encoding="utf-8") == text_of(memory, "memory/2026-03-05.md")
    else:
        assert (written, note.path) == (Path("memory/2026-03-05.md"), Path(note.rel))


# -- layers ------------------------------------------------------------------------------


def test_core_files_are_read_and_replaced(opened: Memory) -> None:
    assert "#" in opened.core.read("agent")  # the template
    written = opened.core.write("user", "The user is Sardor, a backend engineer.")
    assert written == "The user is Sardor, a backend engineer.\n"
    assert opened.core.read("user") == written
    with pytest.raises(InvalidInput):
        opened.core.read("nobody")


def test_working_memory_stays_within_its_cap(place: Place) -> None:
    memory = place.open(working_max_chars=400)
    memory.working.add("priorities", "Ship the parser")
    memory.working.set("open_threads", ["Ask about the schema"])
    dropped = []
    for n in range(12):
        dropped += memory.working.progress(f"step {n} of a long migration, done carefully")
    state = memory.working.read()
    assert state.items("priorities") == ("Ship the parser",)
    assert state.items("open_threads") == ("Ask about the schema",)
    assert dropped and len(text_of(memory, "working/WORKING_MEMORY.md")) <= 400 + 400
    today = [rel for rel, _ in memory.workspace.volume.list("memory/") if rel.endswith(".md")]
    assert any("Left working memory" in text_of(memory, rel) for rel in today)


def test_semantic_items_are_added_once_and_removed(opened: Memory) -> None:
    added = opened.semantic.add("facts", "Dilnoza leads the payments team")
    assert added is not None and added.text == "Dilnoza leads the payments team"
    assert opened.semantic.add("facts", "Dilnoza leads the payments team") is None
    assert added in opened.semantic.read("facts")
    [removed] = opened.semantic.remove("facts", added.text)
    assert removed.text == added.text
    assert added.text not in {item.text for item in opened.semantic.read("facts")}


def test_notes_create_link_move_and_backlinks(opened: Memory) -> None:
    first = opened.notes.create("Retrieval", "BM25 is strong on short turns.")
    second = opened.notes.create("Vectors", "Vectors catch paraphrases.")
    twin = opened.notes.create("Retrieval", "another note with the same title")
    assert (first.name, first.folder) == ("retrieval", "inbox")
    assert first.rel == "notes/inbox/retrieval.md"
    assert twin.name != first.name and twin.name.startswith("retrieval-")
    assert opened.notes.link(first.name, second.name) is True
    assert opened.notes.link(first.name, second.name) is False
    assert "- [[vectors]]" in opened.notes.read(first.name)
    moved = opened.notes.move(first.name, "zettel")
    assert moved.rel == "notes/zettel/retrieval.md"
    assert opened.workspace.volume.stat(first.rel) is None
    assert [n.rel for n in opened.notes.backlinks(second.name)] == [moved.rel]
    assert {n.rel for n in opened.notes.list()} == {moved.rel, second.rel, twin.rel}
    assert [n.rel for n in opened.notes.list("zettel")] == [moved.rel]
    with pytest.raises(NotFound):
        opened.notes.read("nothing-here")
    with pytest.raises(InvalidInput):
        opened.notes.create("x", folder="elsewhere")


# -- documents and the path guard --------------------------------------------------------


def test_documents_are_edited_renamed_and_deleted_by_path(opened: Memory) -> None:
    docs = opened.documents
    assert docs.edit_file("memory/plan.md", lambda old: "# Plan\n- step one\n") is not None
    assert text_of(opened, "memory/plan.md") == "# Plan\n- step one\n"
    docs.edit_file("memory/plan.md", lambda old: (old or "") + "- step two\n")
    docs.rename_file("memory/plan.md", "notes/zettel/plan.md")
    assert opened.workspace.volume.stat("memory/plan.md") is None
    assert text_of(opened, "notes/zettel/plan.md").endswith("- step two\n")
    assert [n.name for n in opened.notes.list("zettel")] == ["plan"]
    docs.edit_file("memory/other.md", lambda old: "other\n")
    with pytest.raises(Conflict):
        docs.rename_file("memory/other.md", "notes/zettel/plan.md")
    assert docs.edit_file("notes/zettel/plan.md", lambda old: None) is None
    assert opened.workspace.volume.stat("notes/zettel/plan.md") is None
    with pytest.raises(NotFound):
        docs.edit_file("memory/none.md", lambda old: None)


@pytest.mark.parametrize(
    "path",
    [
        "../outside.md",
        "memory/../../outside.md",
        "/etc/passwd",
        ".memstrata/journal.wal",
        "sessions/s.jsonl",
        "memory/a\\b.md",
        "memstrata.toml",
    ],
)
def test_the_path_guard_refuses_what_is_no_memory_file(opened: Memory, path: str) -> None:
    with pytest.raises(AccessDenied):
        opened.documents.edit_file(path, lambda old: "forged\n")
    with pytest.raises(AccessDenied):
        opened.documents.rename_file("semantic/facts.md", path)
    assert opened.workspace.volume.read("semantic/facts.md") is not None  # nothing moved


# -- search, context, window -------------------------------------------------------------


@pytest.fixture
def searchable(opened: Memory) -> Memory:
    opened.remember("The staging database listens on port 5433", category="fact")
    opened.remember("I prefer dark mode in every editor", category="preference")
    opened.record_turn("tg:1", user="We moved the billing service to Go", assistant="Noted.")
    opened.semantic.add("facts", "Dilnoza leads the payments team")
    opened.notes.create("Retrieval", "BM25 is strong on short turns.\n\nVectors catch paraphrases.")
    opened.flush()
    return opened


def test_every_layer_is_found_with_its_citation(searchable: Memory) -> None:
    [fact] = searchable.search("staging database port", k=1)
    assert fact.layer == "long_term" and fact.path == "MEMORY.md"
    assert fact.citation == f"MEMORY.md:{fact.line_start}" and fact.line_start > 0
    assert "5433" in line_at(searchable, "MEMORY.md", fact.line_start)
    [turn] = searchable.search("billing service", k=1, layers=["transcripts"])
    assert turn.path == f"sessions/{session_stem('tg:1')}.jsonl"
    assert turn.line_start == 1 and turn.session == "tg:1"
    [semantic] = searchable.search("payments team", k=1)
    assert semantic.citation == "semantic/facts.md:5"
    assert "Dilnoza" in line_at(searchable, semantic.path, semantic.line_start)
    [note] = searchable.search("paraphrases", k=1, layers=["notebook"])
    assert note.path == "notes/inbox/retrieval.md"
    assert "paraphrases" in line_at(searchable, note.path, note.line_start)
    assert all(hit.layer not in {"core", "working"} for hit in searchable.search("memory", k=20))


def test_search_follows_writes_supersession_and_filters(opened: Memory) -> None:
    old = opened.remember("My name is Sarvar")
    opened.supersede(old.id, "My name is Sardor")
    assert [h.text for h in opened.search("name", layers=["long_term"])] == ["My name is Sardor"]
    both = opened.search("name", layers=["long_term"], include_superseded=True)
    assert {h.text for h in both} == {"My name is Sarvar", "My name is Sardor"}
    opened.record_turn("a", user="deploy the parser", assistant="done", at=AT)
    opened.record_turn("b", user="deploy the parser again", assistant="done")
    only_b = opened.search("deploy parser", k=10, session="b")
    assert only_b and {hit.session for hit in only_b} == {"b"}
    early = opened.search("deploy parser", k=10, layers=["transcripts"], until=AT)
    assert {hit.session for hit in early} == {"a"}
    before = [h.to_dict() for h in opened.search("deploy parser", k=10)]
    assert opened.reindex(full=True).files_indexed > 0
    assert [h.to_dict() for h in opened.search("deploy parser", k=10)] == before
    with pytest.raises(InvalidInput):
        opened.search("")


def test_a_hand_edit_is_searchable(opened: Memory) -> None:
    opened.workspace.volume.write("notes/zettel/kites.md", b"# Kites\n\nKites fly in spring.\n")
    opened.reindex()
    [hit] = opened.search("kites spring", k=1, layers=["notebook"])
    assert hit.citation == "notes/zettel/kites.md:3"


def test_index_status_tells_where_the_index_is(searchable: Memory) -> None:
    searchable.search("staging")
    status = searchable.index_status()
    assert status["chunks"] > 0 and status["vectors"] > 0 and status["stale_files"] == 0
    assert status["embedder"].startswith("hash")
    assert isinstance(status["path"], str) and status["path"]


def test_build_context_keeps_within_its_budget(opened: Memory) -> None:
    opened.core.write("agent", "You are a careful assistant.")
    opened.remember("The staging database listens on port 5433")
    opened.record_tool_failure("deploy", {"env": "prod"}, "denied")
    opened.observe("Remember to send the invoice on Friday.", session="s")
    opened.record_turn("s", user="what port does staging use?", assistant="5433")
    context = opened.build_context("staging port", session="s", budget_tokens=3000)
    assert context.tokens <= context.budget == 3000
    for said in ("careful assistant", "5433", "invoice", "denied"):
        assert said in context.text
    small = opened.build_context("staging port", session="s", budget_tokens=60)
    assert "[core files cut to fit the budget]" in small.text
    assert small.tokens <= 60 + 5  # (the budget, and the section's header)


def test_gate_and_recovery_context(opened: Memory) -> None:
    opened.remember("The staging database listens on port 5433")
    [hit] = opened.gate("User: which port does staging use?", budget_tokens=50)
    assert "5433" in hit.text
    opened.observe("Remember to send the invoice on Friday.", session="s")
    assert "invoice" in opened.recovery_context("s")


def test_a_window_captures_buffers_and_recovers(opened: Memory) -> None:
    window = opened.window("live", limit_tokens=400)
    window.add(Message("system", "You are helpful."))
    window.add(Message("user", "Hello there, let's start."))
    window.add(Message("assistant", "Hi! Ready."))
    window.add(Message("user", "Remember that the deploy key rotates every 30 days."))
    window.add(Message("assistant", "Noted: every 30 days."))
    filler = "We talked about the release checklist and the flaky tests again. " * 3
    kinds: list[str] = []
    for n in range(12):
        kinds += [e.kind for e in window.add(Message("user", f"{n}: {filler}"))]
        kinds += [e.kind for e in window.add(Message("assistant", "ok " * 20))]
    assert {"compacted", "buffered", "recovery"} <= set(kinds)
    facts = [item.text for item in opened.list()]
    assert "Remember that the deploy key rotates every 30 days." in facts
    buffer = text_of(opened, "memory/working-buffer.md")
    assert buffer.startswith("# Working Buffer (Danger Zone Log)") and "flaky tests" in buffer
    recovery = [m for m in window.messages if m.role == "system" and "compacted" in m.content]
    assert recovery and "Working buffer (memory/working-buffer.md)" in recovery[-1].content
