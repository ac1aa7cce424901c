"""A person edits MEMORY.md by hand: the edit is taken in, never overwritten."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from memstrata import Memory, Source
from memstrata.storage.volume import Swapped


def _edit(ws: Path, old: str, new: str) -> None:
    path = ws / "MEMORY.md"
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} not in MEMORY.md"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _seed(ws: Path) -> dict[str, str]:
    with Memory.open(ws) as memory:
        ids = {
            "name": memory.remember("My name is Bobur", category="proper_noun").id,
            "tea": memory.remember("I like green tea", category="preference").id,
            "db": memory.remember("Use PostgreSQL for billing", category="decision").id,
        }
    return ids


def test_a_new_line_without_id_becomes_a_user_fact(ws: Path) -> None:
    _seed(ws)
    _edit(ws, "## Preferences\n", "## Preferences\n- I like short answers\n")
    with Memory.open(ws) as memory:
        [added] = [i for i in memory.list() if i.text == "I like short answers"]
        assert added.category == "preference"
        assert added.source is Source.USER
        assert any("edited by hand" in notice for notice in memory.notices)
    assert f"- I like short answers ^{added.id}" in (ws / "MEMORY.md").read_text()


def test_control_characters_typed_by_hand_are_spaces_as_in_remember(ws: Path) -> None:
    _seed(ws)
    _edit(ws, "## Preferences\n", "## Preferences\n- I like\x07tea\x1b[31m hot\u2028now\n")
    with Memory.open(ws) as memory:
        typed = {i.text for i in memory.list()} - {"My name is Bobur", "I like green tea"}
        assert typed - {"Use PostgreSQL for billing"} == {"I like tea [31m hot now"}
        assert memory.remember("I like\x07tea\x1b[31m hot\u2028now").text in typed
        assert len(memory.list()) == 4  # the same fact: not stored twice
    assert "\x07" not in (ws / "MEMORY.md").read_text()


def test_changed_text_keeps_the_id(ws: Path) -> None:
    ids = _seed(ws)
    _edit(ws, "I like green tea", "I like black tea")
    with Memory.open(ws) as memory:
        assert memory.get(ids["tea"]).text == "I like black tea"


def test_a_deleted_line_forgets_the_item(ws: Path) -> None:
    ids = _seed(ws)
    _edit(ws, f"- Use PostgreSQL for billing ^{ids['db']}\n", "")
    with Memory.open(ws) as memory:
        assert ids["db"] not in {item.id for item in memory.list()}
        assert len(memory.list()) == 2


def test_moving_a_line_changes_its_category(ws: Path) -> None:
    ids = _seed(ws)
    line = f"- I like green tea ^{ids['tea']}\n"
    _edit(ws, line, "")
    _edit(ws, "## Decisions\n", "## Decisions\n" + line)
    with Memory.open(ws) as memory:
        assert memory.get(ids["tea"]).category == "decision"


def test_moving_a_line_to_superseded_retires_it(ws: Path) -> None:
    ids = _seed(ws)
    line = f"- My name is Bobur ^{ids['name']}\n"
    _edit(ws, line, "")
    text = (ws / "MEMORY.md").read_text()
    (ws / "MEMORY.md").write_text(text + "\n## Superseded\n" + line)
    with Memory.open(ws) as memory:
        item = memory.get(ids["name"])
        assert not item.is_live
        assert ids["name"] not in {i.id for i in memory.list()}
        assert ids["name"] in {i.id for i in memory.list(include_superseded=True)}
    text = (ws / "MEMORY.md").read_text()
    assert re.search(rf"- ~~My name is Bobur~~ \(superseded [-0-9: ]+UTC\) \^{ids['name']}", text)


def test_an_edit_made_while_a_process_is_running_survives_its_next_checkpoint(ws: Path) -> None:
    ids = _seed(ws)
    with Memory.open(ws) as memory:
        written = memory.remember("written by the agent before the edit")
        _edit(ws, "I like green tea", "I like jasmine tea")
        _edit(ws, "## Names\n", "## Names\n- My cat is Tom\n")
        memory.flush()
        assert memory.get(ids["tea"]).text == "I like jasmine tea"
        assert memory.get(written.id).text == written.text  # not taken as a hand delete
        assert "My cat is Tom" in {item.text for item in memory.list()}
    text = (ws / "MEMORY.md").read_text()
    assert "I like jasmine tea" in text and "My cat is Tom ^m" in text
    assert written.text in text


def test_a_deletion_by_the_api_is_not_undone_by_a_stale_file(ws: Path) -> None:
    ids = _seed(ws)
    with Memory.open(ws) as memory:
        memory.forget(ids["db"])
        _edit(ws, "I like green tea", "I like oolong tea")  # the file still shows the db line
        memory.flush()
        assert ids["db"] not in {item.id for item in memory.list()}
        assert memory.get(ids["tea"]).text == "I like oolong tea"


def test_the_same_edit_is_taken_in_once(ws: Path) -> None:
    _seed(ws)
    _edit(ws, "## Preferences\n", "## Preferences\n- I like short answers\n")
    for _ in range(3):
        with Memory.open(ws) as memory:
            assert [i.text for i in memory.list()].count("I like short answers") == 1


def test_a_duplicate_line_added_by_hand_is_not_stored_twice(ws: Path) -> None:
    _seed(ws)
    _edit(ws, "## Preferences\n", "## Preferences\n- i like GREEN tea.\n")
    with Memory.open(ws) as memory:
        assert len(memory.list()) == 3


def test_an_edit_is_taken_in_before_a_fresh_fact_is_rendered_for_its_citation(ws: Path) -> None:
    ids = _seed(ws)
    with Memory.open(ws, embedder="none") as memory:
        fresh = memory.remember("The okapi enclosure opens at nine")
        _edit(ws, "I like green tea", "I like jasmine tea")
        hit = memory.search("okapi enclosure", k=1)[0]  # renders MEMORY.md for the citation
        assert hit.line_start > 0 and memory.get(ids["tea"]).text == "I like jasmine tea"
        assert memory.status().journal_records > 0  # a render, not a checkpoint
    text = (ws / "MEMORY.md").read_text()
    assert "I like jasmine tea" in text and f"{fresh.text} ^{fresh.id}" in text


def test_a_save_that_lands_while_a_fresh_fact_is_rendered_is_taken_in(
    ws: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An editor renames its save in between the check and the swap: the swap
    hands it back (``rescued``) and the render takes it in, not over it."""
    _seed(ws)
    with Memory.open(ws, embedder="none") as memory:
        memory.remember("The okapi enclosure opens at nine")
        volume = memory.workspace.volume
        swap = volume.swap
        saved = (ws / "MEMORY.md").read_text().replace("## Names\n", "## Names\n- My cat is Tom\n")

        def editor_in_between(rel: str, data: bytes, expect: Any) -> Swapped:
            done = swap(rel, data, expect)
            monkeypatch.setattr(volume, "swap", swap)  # once
            return Swapped(done.done, saved.encode(), done.stat)

        monkeypatch.setattr(volume, "swap", editor_in_between)
        assert memory.search("okapi enclosure", k=1)[0].line_start > 0
        assert "My cat is Tom" in {item.text for item in memory.list()}
        assert any("while it was rewritten" in notice for notice in memory.notices)
    assert "My cat is Tom ^m" in (ws / "MEMORY.md").read_text()
