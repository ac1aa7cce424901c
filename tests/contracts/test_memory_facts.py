"""The shared suite of ``Memory`` (issue 15), part 1: capture, long-term facts,
lessons, session state, hand edits of MEMORY.md, status, reopen, and what
another ``Memory`` on the same workspace (another process) sees. Every test
runs on a folder and on PostgreSQL (``places.place``)."""

from __future__ import annotations

import re
import threading
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstrata import Memory, Source
from memstrata.errors import Conflict, InvalidInput, NotFound, StorageError
from memstrata.storage import volume as volume_module
from memstrata.storage.quarantine import QUARANTINE, list_quarantine
from places import Place

OPENAI_KEY = "sk-4f9aQ2xL7mN8pR3sT6vW1yZ0bC5dE7gH2jK9mP4q"
PASSWORD = "hunter2-very-secret"


def stored(memory: Memory) -> dict[str, bytes]:
    """Every file of the workspace, by volume path."""
    volume = memory.workspace.volume
    return {rel: volume.read(rel) or b"" for rel, _ in volume.list()}


def leaks(memory: Memory, secret: str, tmp_path: Path) -> list[str]:
    """Where ``secret`` is kept: files, journal records, an export, search, list, lessons."""
    found = [rel for rel, data in stored(memory).items() if secret.encode() in data]
    found += [f"journal {r.lsn}" for r in memory.engine.journal.records if secret in str(r.data)]
    memory.export_to(tmp_path / "export")
    found += [
        f"export {path.relative_to(tmp_path)}"
        for path in (tmp_path / "export").rglob("*")
        if path.is_file() and secret.encode() in path.read_bytes()
    ]
    words = secret.replace("-", " ")
    found += [f"search {hit.citation}" for hit in memory.search(words, k=50) if secret in hit.text]
    found += [f"item {i.id}" for i in memory.list(include_superseded=True) if secret in i.text]
    found += [f"lesson {x.id}" for x in memory.lessons.list() if secret in x.text]
    return found


# -- capture -----------------------------------------------------------------------------


def test_observe_captures_a_name_and_a_preference(opened: Memory) -> None:
    captured = opened.observe(
        "My name is Sardor. I prefer dark mode in every editor.", session="tg:1", user="u1"
    )
    assert {c.category for c in captured} >= {"proper_noun", "preference"}
    assert all(c.stored and c.item_id for c in captured)
    facts = {item.category: item for item in opened.list()}
    assert facts["proper_noun"].text == "My name is Sardor."
    assert facts["preference"].text == "I prefer dark mode in every editor."
    assert {item.session for item in facts.values()} == {"tg:1"}
    assert {item.user for item in facts.values()} == {"u1"}
    assert {item.source for item in facts.values()} == {Source.USER}
    again = opened.observe("I prefer dark mode in every editor.", user="u1")
    assert opened.get(again[0].item_id or "").hits == 1  # seen once more, not stored twice
    assert len(opened.list()) == 2


def test_only_the_users_own_words_are_captured(opened: Memory) -> None:
    captured = opened.observe("My name is Sardor.", source="tool")
    assert captured and not any(c.stored for c in captured)
    assert opened.list() == [] and opened.session_state() == []


def test_a_correction_supersedes_and_leaves_a_lesson(opened: Memory) -> None:
    [first] = opened.observe("My name is Sarvar.")
    captures = opened.observe("Actually, my name is Sardor, not Sarvar.")
    assert {c.superseded for c in captures} == {first.item_id}
    [live] = opened.list()
    old = opened.get(first.item_id or "")
    assert old.valid_to is not None and old.superseded_by == live.id
    [lesson] = opened.lessons.list()
    assert lesson.kind == "correction" and "Sarvar" in lesson.wrong


def test_a_secret_is_never_stored(opened: Memory, tmp_path: Path) -> None:
    opened.observe(
        f"Remember that the deploy key is {OPENAI_KEY}. Remember that my password is "
        f"{PASSWORD} for the VPN.",
        session="s1",
    )
    opened.remember(f"the staging key is {OPENAI_KEY}")
    opened.record_turn("s1", user=f"use {OPENAI_KEY}", assistant=f"ok, my password is {PASSWORD}")
    opened.record_exchange(f"my password is {PASSWORD}", "noted")
    opened.record_tool_failure("http", {"auth": f"Bearer {OPENAI_KEY}"}, f"401 for {OPENAI_KEY}")
    opened.notes.create("Keys", f"the key is {OPENAI_KEY}")
    opened.documents.edit_file("semantic/facts.md", lambda old: f"{old}- key {OPENAI_KEY}\n")
    assert "[REDACTED:" in " ".join(item.text for item in opened.list())
    assert leaks(opened, OPENAI_KEY, tmp_path / "a") == []
    assert leaks(opened, PASSWORD, tmp_path / "b") == []
    opened.flush()  # and once checkpointed into MEMORY.md, the snapshot, the audit logs
    assert leaks(opened, OPENAI_KEY, tmp_path / "c") == []


# -- long-term facts ---------------------------------------------------------------------


def test_remember_supersede_forget_restore(opened: Memory) -> None:
    old = opened.remember("The staging database listens on port 5432", category="fact")
    new = opened.supersede(old.id, "The staging database listens on port 5433")
    retired = opened.get(old.id)
    assert retired.superseded_by == new.id and retired.valid_to is not None
    assert not retired.is_live and new.is_live and new.valid_to is None
    assert new.category == "fact"
    assert [i.id for i in opened.list()] == [new.id]
    assert {i.id for i in opened.list(include_superseded=True)} == {old.id, new.id}
    with pytest.raises(Conflict):
        opened.supersede(old.id, "a retired fact cannot be superseded again")

    gone = opened.forget(new.id)
    assert gone.id == new.id and opened.list() == []
    with pytest.raises(NotFound):
        opened.get(new.id)
    assert [f.item.id for f in opened.forgotten()] == [new.id]
    back = opened.restore(new.id)
    assert back.text == new.text and opened.get(new.id).is_live
    assert opened.forgotten() == []
    with pytest.raises(NotFound):
        opened.restore("m-no-such")


def test_remember_the_same_fact_twice_counts_it(opened: Memory) -> None:
    first = opened.remember("I like green tea", category="preference")
    second = opened.remember("i like GREEN tea.")
    assert second.id == first.id and second.hits == first.hits + 1
    assert len(opened.list()) == 1


def test_get_and_list_filter(opened: Memory) -> None:
    a = opened.remember("Deploys happen on Tuesdays", category="decision", session="s1")
    b = opened.remember("Prefers short answers", category="preference", source="agent")
    c = opened.remember("Lives in Tashkent", category="fact", session="s2")
    assert opened.get(f"^{a.id}") == opened.get(a.id) == a
    assert [i.id for i in opened.list()] == [c.id, b.id, a.id]  # newest first
    assert [i.id for i in opened.list(category="decision")] == [a.id]
    assert [i.id for i in opened.list(session="s2")] == [c.id]
    assert [i.id for i in opened.list(source=Source.AGENT)] == [b.id]
    assert [i.id for i in opened.list(limit=1)] == [c.id]
    with pytest.raises(NotFound):
        opened.get("m-no-such")
    with pytest.raises(InvalidInput):
        opened.list(limit=-1)


def test_compact_keeps_one_live_item_per_fact(opened: Memory) -> None:
    for n in range(5):
        opened.remember(f"fact number {n}")
    done = opened.compact(max_items=3)
    assert (done.removed, done.kept) == (2, 3)
    assert len(opened.list(include_superseded=True)) == 3


# -- lessons and session state -----------------------------------------------------------


def test_tool_failures_become_lessons_most_seen_first(opened: Memory) -> None:
    once = opened.record_tool_failure("search", {"q": "x"}, "timeout")
    for _ in range(2):
        twice = opened.record_tool_failure("deploy", {"env": "prod"}, RuntimeError("denied"))
    assert twice.hits == 2 and once.hits == 1
    assert [lesson.id for lesson in opened.lessons.top(2)] == [twice.id, once.id]
    assert "RuntimeError: denied" in twice.text
    assert opened.lessons.forget(once.id).id == once.id
    assert [lesson.id for lesson in opened.lessons.list()] == [twice.id]
    with pytest.raises(NotFound):
        opened.lessons.forget(once.id)


def test_session_state_keeps_what_each_session_said(opened: Memory) -> None:
    opened.observe("Remember to send the invoice on Friday.", session="a")
    opened.observe("I prefer tea over coffee.", session="b")
    opened.observe("My name is Sardor.")  # no session: the root SESSION-STATE.md
    [a] = opened.session_state("a")
    assert "invoice" in a.text
    [b] = opened.session_state("b")
    assert "tea over coffee" in b.text and "preference" in b.category
    assert [e.text for e in opened.session_state()] == ["My name is Sardor."]
    assert opened.session_state("nobody") == []


# -- a person's edit of MEMORY.md --------------------------------------------------------


def test_a_save_of_memory_md_is_taken_in_as_a_proposal(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a folder a person saves MEMORY.md in an editor; on PostgreSQL the same
    save is a write of the tenant's MEMORY.md row (what `memstrata edit` does
    with its rendered file): both go through the volume here, and both are
    taken in at the next checkpoint as a proposal."""
    monkeypatch.setattr(volume_module, "SETTLE_SECONDS", 0.0)  # a deletion is not held back
    memory = place.open()
    tea = memory.remember("I like green tea", category="preference")
    gone = memory.remember("Use MySQL for billing", category="decision")
    memory.flush()
    volume = memory.workspace.volume
    text = (volume.read("MEMORY.md") or b"").decode()
    assert f"- I like green tea ^{tea.id}" in text
    text = text.replace("I like green tea", "I like black tea")
    text = text.replace(f"- Use MySQL for billing ^{gone.id}\n", "")
    text = text.replace("## Preferences\n", "## Preferences\n- I like short answers\n")
    volume.write("MEMORY.md", text.encode())
    memory.flush()
    assert memory.get(tea.id).text == "I like black tea"  # the id is kept
    assert gone.id not in {i.id for i in memory.list()}
    [added] = [i for i in memory.list() if i.text == "I like short answers"]
    assert added.category == "preference" and added.source is Source.USER
    rendered = (volume.read("MEMORY.md") or b"").decode()
    assert f"- I like short answers ^{added.id}" in rendered
    with place.open() as other:  # and it is what every other process reads
        assert other.get(tea.id).text == "I like black tea"
        assert gone.id in {f.item.id for f in other.forgotten()}


def test_memory_md_is_not_a_document_an_agent_may_write(opened: Memory) -> None:
    with pytest.raises(InvalidInput, match="MEMORY.md"):
        opened.documents.edit_file("MEMORY.md", lambda old: "## Facts\n- forged\n")
    assert opened.list() == []


# -- status, reopen, other processes -----------------------------------------------------


def test_status_counts(opened: Memory) -> None:
    first = opened.status()
    assert (first.items, first.superseded, first.lessons, first.lsn) == (0, 0, 0, 0)
    old = opened.remember("one")
    opened.supersede(old.id, "two")
    opened.record_tool_failure("t", {}, "e")
    now = opened.status()
    assert (now.items, now.superseded, now.lessons) == (1, 1, 1)
    assert now.lsn == 2 + 1 and now.journal_records == 3 and now.journal_bytes > 0
    assert now.unsynced == 0 and now.quarantined == 0 and now.notices == ()
    assert now.workspace == opened.workspace.where
    opened.flush()
    flushed = opened.status()
    assert flushed.journal_records == 0 and flushed.lsn == now.lsn and flushed.items == 1


def test_reopen_sees_everything(place: Place) -> None:
    with place.open() as memory:
        fact = memory.remember("The staging database listens on port 5433")
        old = memory.remember("My name is Sarvar")
        new = memory.supersede(old.id, "My name is Sardor")
        forgotten = memory.remember("forget me")
        memory.forget(forgotten.id)
        lesson = memory.record_tool_failure("deploy", {"env": "prod"}, "denied")
        memory.observe("I prefer tea over coffee.", session="s")
        memory.record_turn("s", user="hello", assistant="hi")
    with place.open() as memory:
        assert {i.id for i in memory.list()} == {fact.id, new.id} | {
            i.id for i in memory.list(category="preference")
        }
        assert memory.get(old.id).superseded_by == new.id
        assert [f.item.id for f in memory.forgotten()] == [forgotten.id]
        assert [x.id for x in memory.lessons.list()] == [lesson.id]
        assert [e.text for e in memory.session_state("s")] == ["I prefer tea over coffee."]
        assert [t.text_of("user") for t in memory.sessions.turns("s")] == ["hello"]
        assert memory.record_turn("s", user="again", assistant="ok").seq == 2
        assert memory.status().lsn > 0


def test_two_memories_on_one_workspace_see_each_others_writes(place: Place) -> None:
    one, two = place.open(), place.open()
    fact = one.remember("written by the first")
    assert two.get(fact.id).text == "written by the first"
    newer = two.supersede(fact.id, "corrected by the second")
    assert one.get(fact.id).superseded_by == newer.id
    assert [i.text for i in one.list()] == ["corrected by the second"]
    lesson = two.record_tool_failure("t", {}, "boom")
    assert [x.id for x in one.lessons.top()] == [lesson.id]
    one.observe("I prefer tea over coffee.", session="s")
    assert [e.text for e in two.session_state("s")] == ["I prefer tea over coffee."]
    assert one.record_turn("s", user="a", assistant="b").seq == 1
    assert two.record_turn("s", user="c", assistant="d").seq == 2
    assert [t.seq for t in one.sessions.turns("s")] == [1, 2]
    one.flush()  # a checkpoint by one: the other reads on from it
    fresh = two.remember("after the checkpoint")
    assert one.get(fresh.id).text == "after the checkpoint"
    assert {i.text for i in one.search("checkpoint", layers=["long_term"])} >= {fresh.text}
    assert two.status().items == one.status().items == 3


def test_a_read_only_memory_reads_and_refuses_writes(place: Place) -> None:
    with place.open() as memory:
        fact = memory.remember("kept")
    with place.open(read_only=True) as reader:
        assert reader.read_only and reader.get(fact.id).text == "kept"
        with pytest.raises(StorageError, match="read-only"):
            reader.remember("refused")
        assert [hit.text for hit in reader.search("kept", layers=["long_term"])] == ["kept"]


def test_groups_never_see_each_others_facts(place: Place) -> None:
    mine, theirs = place.open(), place.beside().open()
    secret = mine.remember("the launch code word is pelican")
    theirs.remember("the office wifi is guest")
    assert [i.text for i in theirs.list()] == ["the office wifi is guest"]
    with pytest.raises(NotFound):
        theirs.get(secret.id)
    assert all("pelican" not in hit.text for hit in theirs.search("launch code word pelican"))
    assert all("wifi" not in hit.text for hit in mine.search("office wifi guest"))
    theirs.record_turn("s", user="pelican?", assistant="no")
    mine.record_turn("s", user="hello", assistant="hi")
    assert [t.text_of("user") for t in mine.sessions.turns("s")] == ["hello"]
    assert [t.seq for t in theirs.sessions.turns("s")] == [1]
    assert mine.lessons.list() == theirs.lessons.list() == []


def test_a_mass_deletion_is_held_until_accepted(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(volume_module, "SETTLE_SECONDS", 0.0)
    memory = place.open()
    ids = [memory.remember(f"fact number {n} about topic {n * 7}").id for n in range(30)]
    memory.flush()
    volume = memory.workspace.volume
    doomed = set(ids[:10])
    lines = (volume.read("MEMORY.md") or b"").decode().splitlines(keepends=True)
    saved = "".join(x for x in lines if not any(i in x for i in doomed)).encode()
    volume.write("MEMORY.md", saved)
    memory.flush()
    assert {item.id for item in memory.list()} == set(ids)
    assert any("would delete 10 of 30" in n for n in memory.notices)
    [kept] = list_quarantine(volume)
    assert volume.read(QUARANTINE + kept.stored) == saved  # byte for byte
    with pytest.raises(NotFound):
        memory.accept_edit("no-such-file")
    assert memory.accept_edit() == 10
    assert {item.id for item in memory.list()} == set(ids) - doomed
    assert {f.item.id for f in memory.forgotten()} == doomed


# -- what open does ----------------------------------------------------------------------


def test_open_without_create_needs_the_workspace(place: Place) -> None:
    with pytest.raises(NotFound, match="no memstrata workspace") as refused:
        place.open(create=False)
    [hint] = re.findall(r"`memstrata init --workspace ([^`]*)`", str(refused.value))
    location = str(place.location).split("://")[-1]  # (a URL is shown without its password)
    assert hint.split("://")[-1] in {location, f"{location} --group {place.group}"}
    place.open().close()
    with place.open(create=False) as memory:
        assert memory.list() == []


def test_a_damaged_snapshot_is_set_aside_and_rebuilt(place: Place) -> None:
    with place.open() as memory:
        fact = memory.remember("survives a damaged snapshot")
    with place.open() as memory:
        memory.workspace.volume.write("memory/LTM_SNAPSHOT.json", b"{not json")
    with place.open() as memory:
        assert memory.get(fact.id).text == "survives a damaged snapshot"
        assert memory.status().quarantined == 1
        assert any("quarantine" in notice for notice in memory.notices)


def test_a_workspace_rule_pack_extends_observe(place: Place) -> None:
    with place.open() as memory:
        memory.workspace.volume.write(
            "rules/team.toml",
            b'language = "en"\n[[rule]]\nname = "oncall"\ncategory = "remember"\n'
            b"pattern = '''\\bon[- ]call this week is\\s+{UP}'''\n",
        )
    with place.open() as memory:
        [capture] = memory.observe("On-call this week is Dilnoza.")
        assert capture.category == "remember" and capture.item_id is not None


def test_write_hooks_hear_every_durable_write(opened: Memory) -> None:
    heard: list[tuple[str, str, str]] = []
    opened.add_write_hook(lambda event: heard.append((event.kind, event.op, event.path)))
    fact = opened.remember("heard")
    opened.forget(fact.id)
    opened.record_turn("s", user="hello", assistant="hi", at=datetime(2026, 3, 5, tzinfo=UTC))
    opened.notes.create("Heard")
    assert heard == [
        ("fact", "put", "MEMORY.md"),
        ("fact", "delete", "MEMORY.md"),
        ("turn", "put", "sessions/s.jsonl"),
        ("note", "put", "memory/2026-03-05.md"),
        ("layer", "put", "notes/inbox/heard.md"),
    ]


def test_accepting_a_save_whose_copy_is_gone_is_not_found(
    place: Place, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(volume_module, "SETTLE_SECONDS", 0.0)
    memory = place.open()
    for n in range(10):
        memory.remember(f"fact number {n}")
    memory.flush()
    volume = memory.workspace.volume
    volume.write("MEMORY.md", b"# Memory\n")  # deletes every fact: held as damage
    memory.flush()
    [kept] = list_quarantine(volume)
    volume.delete(QUARANTINE + kept.stored)
    with pytest.raises(NotFound, match="gone"):
        memory.accept_edit()
    assert len(memory.list()) == 10


def test_threads_and_memories_writing_at_once_lose_nothing(place: Place) -> None:
    memories = [place.open(), place.open()]
    failures: list[BaseException] = []

    def write(who: int) -> None:
        try:
            for n in range(15):
                memory = memories[who % 2]
                memory.remember(f"writer {who} fact {n}")
                memory.record_turn("shared", user=f"{who}-{n}", assistant="ok")
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(who,)) for who in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    for memory in memories:
        assert len(memory.list()) == 60
        turns = memory.sessions.turns("shared")
        assert [t.seq for t in turns] == list(range(1, 61))
        assert len({t.text_of("user") for t in turns}) == 60
