"""Working memory: WORKING_MEMORY.md parsed, rendered, edited and kept within its cap."""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Corrupt, InvalidInput
from memstrata.model import clean_text
from memstrata.storage.workspace import Workspace
from memstrata.stores import working
from memstrata.stores.working import Dropped, Section, WorkingMemory
from workspaces import fresh

AT = datetime(2026, 1, 15, 10, 30, tzinfo=UTC)
TEMPLATE = (resources.files("memstrata") / "templates" / "WORKING_MEMORY.md").read_text("utf-8")


def _file(workspace: Workspace) -> str:
    return working.path(workspace).read_text()


def test_the_template_has_the_six_empty_sections() -> None:
    memory = working.parse(TEMPLATE)
    assert [(s.title, s.key, s.items) for s in memory.sections] == [
        ("Priorities", "priorities", ()),
        ("Active tasks", "active_tasks", ()),
        ("Open threads", "open_threads", ()),
        ("Recent progress", "recent_progress", ()),
        ("Pending checks", "pending_checks", ()),
        ("Temporary context", "temporary_context", ()),
    ]
    assert working.render(memory) == TEMPLATE


def test_set_and_add_items(workspace: Workspace) -> None:
    assert working.set_items(workspace, "priorities", ["Ship 0.2", "Fix the crash"]) == []
    working.add_item(workspace, "Active tasks", "Write the layer tests")
    working.add_item(workspace, "open threads", "Ask Bobur about the schema")
    working.add_progress(workspace, "Layers module drafted", at=AT)
    assert _file(workspace) == (
        "# WORKING_MEMORY.md -- Active state\n\n"
        "<!-- Always in the prompt, and bounded: keep only what is live right now. -->\n\n"
        "## Priorities\n\n- Ship 0.2\n- Fix the crash\n\n"
        "## Active tasks\n\n- Write the layer tests\n\n"
        "## Open threads\n\n- Ask Bobur about the schema\n\n"
        "## Recent progress\n\n- [2026-01-15T10:30:00+00:00] Layers module drafted\n\n"
        "## Pending checks\n\n## Temporary context\n"
    )
    memory = working.read(workspace)
    assert memory.items("active_tasks") == ("Write the layer tests",)
    working.set_items(workspace, "priorities", [])
    assert working.read(workspace).items("priorities") == ()


def test_add_item_skips_an_equal_item(workspace: Workspace) -> None:
    working.add_item(workspace, "active_tasks", "Review the PR.")
    before = _file(workspace)
    assert working.add_item(workspace, "active_tasks", "review the  PR") == []
    assert _file(workspace) == before


def test_items_are_one_redacted_line(workspace: Workspace) -> None:
    working.add_item(workspace, "open_threads", "deploy\nwith api_key=sk-proj-abcdefghijklmnop1234")
    [item] = working.read(workspace).items("open_threads")
    assert item == "deploy with api_key=[REDACTED:api_key]"
    with pytest.raises(InvalidInput, match="empty"):
        working.add_item(workspace, "open_threads", "  ")
    with pytest.raises(InvalidInput, match="list of strings"):
        working.set_items(workspace, "priorities", "one string")


@pytest.mark.parametrize("section", ["pending", "", "Recent"])
def test_unknown_sections_are_refused(workspace: Workspace, section: str) -> None:
    with pytest.raises(InvalidInput, match="priorities, active_tasks, open_threads"):
        working.add_item(workspace, section, "x")


HAND_WRITTEN = """\
# My working memory

## Priorities
Top of mind this week:
- Ship 0.2
  - with the migration notes
* Fix the crash


## Pending checks

- [ ] CI is green

```
## not a heading
```

## Open threads
- Ask Bobur
"""


def test_hand_written_text_is_kept(workspace: Workspace) -> None:
    working.path(workspace).write_text(HAND_WRITTEN)
    working.add_progress(workspace, "Checked CI", at=AT)
    assert _file(workspace) == (
        "# My working memory\n\n"
        "## Priorities\n\nTop of mind this week:\n"
        "- Ship 0.2\n  - with the migration notes\n- Fix the crash\n\n"
        "## Pending checks\n\n```\n## not a heading\n```\n- [ ] CI is green\n\n"
        "## Open threads\n\n- Ask Bobur\n\n"
        "## Active tasks\n\n"
        "## Recent progress\n\n- [2026-01-15T10:30:00+00:00] Checked CI\n"
    )
    memory = working.read(workspace)
    assert memory.items("priorities") == ("Ship 0.2\n  - with the migration notes", "Fix the crash")
    assert working.render(working.parse(_file(workspace))) == _file(workspace)


def test_a_second_section_of_the_same_name_is_kept_as_written() -> None:
    text = "## Priorities\n\n- a\n\n## Priorities\n\n- b\n"
    memory = working.parse(text)
    assert memory.items("priorities") == ("a",)
    assert memory.sections[1] == Section("Priorities", None, (), ("- b",))
    assert working.render(memory).startswith(text)


def test_crlf_and_a_missing_file(workspace: Workspace) -> None:
    working.path(workspace).unlink()
    assert working.read(workspace) == working.parse(TEMPLATE)
    working.add_item(workspace, "priorities", "one")
    assert _file(workspace) == TEMPLATE.replace("## Priorities\n", "## Priorities\n\n- one\n")
    working.path(workspace).write_bytes(b"## Priorities\r\n\r\n- one\r\n")
    assert working.read(workspace).items("priorities") == ("one",)


def test_a_corrupt_file_is_not_rewritten(workspace: Workspace) -> None:
    working.path(workspace).write_bytes(b"## Priorities\n- caf\xe9\n")
    with pytest.raises(Corrupt, match="WORKING_MEMORY.md"):
        working.add_progress(workspace, "x")
    assert working.path(workspace).read_bytes() == b"## Priorities\n- caf\xe9\n"


# -- the cap ----------------------------------------------------------------------


def test_oldest_progress_leaves_first_then_open_threads(workspace: Workspace) -> None:
    working.set_items(workspace, "priorities", ["P" * 50])
    working.set_items(workspace, "open_threads", ["thread one", "thread two"])
    for number in range(5):
        working.add_progress(workspace, f"step {number}", at=AT)
    cap = len(_file(workspace))
    dropped = working.add_progress(workspace, "step 5", at=AT, cap=cap)
    assert dropped == [Dropped("Recent progress", "[2026-01-15T10:30:00+00:00] step 0")]
    progress = working.read(workspace).items("recent_progress")
    assert [item.rsplit(" ", 1)[1] for item in progress] == ["1", "2", "3", "4", "5"]
    dropped = working.add_item(workspace, "active_tasks", "T" * 150, cap=cap)
    assert dropped == [
        *(Dropped("Recent progress", f"[2026-01-15T10:30:00+00:00] step {n}") for n in range(1, 5)),
        Dropped("Open threads", "thread one"),
    ]
    memory = working.read(workspace)
    assert memory.items("open_threads") == ("thread two",)
    assert memory.items("recent_progress") == ("[2026-01-15T10:30:00+00:00] step 5",)
    assert len(_file(workspace)) <= cap


def test_priorities_and_tasks_never_leave(workspace: Workspace) -> None:
    working.add_progress(workspace, "kept", at=AT)
    before = _file(workspace)
    with pytest.raises(InvalidInput, match="Priorities, Active tasks, the newest Recent progress"):
        working.set_items(workspace, "priorities", ["x" * 300], cap=300)
    assert _file(workspace) == before


@pytest.mark.parametrize("cap", [0, -1, True, 1.5])
def test_the_cap_must_be_a_positive_integer(workspace: Workspace, cap: object) -> None:
    with pytest.raises(InvalidInput, match="cap"):
        working.add_item(workspace, "priorities", "x", cap=cap)  # type: ignore[arg-type]


words = st.text(alphabet="abcdefgxyz ЖÄ漢.,", min_size=1, max_size=40).filter(
    lambda text: text.strip(" .,") != ""
)
sections = st.sampled_from(sorted(working.SECTIONS))
operations = st.one_of(
    st.tuples(st.just("set"), sections, st.lists(words, max_size=5)),
    st.tuples(st.just("add"), sections, words),
    st.tuples(st.just("progress"), st.just("recent_progress"), words),
)


@settings(max_examples=80, deadline=None)
@given(st.lists(operations, min_size=1, max_size=25), st.integers(150, 900))
def test_every_write_keeps_the_cap_and_the_newest_progress(
    script: list[tuple[str, str, object]], cap: int
) -> None:
    with tempfile.TemporaryDirectory() as root:
        workspace = fresh(Path(root))
        newest: str | None = None
        for kind, section, argument in script:
            before = working.path(workspace).read_bytes()
            try:
                if kind == "set":
                    assert isinstance(argument, list)
                    working.set_items(workspace, section, argument, cap=cap)
                elif kind == "add":
                    assert isinstance(argument, str)
                    working.add_item(workspace, section, argument, cap=cap)
                else:
                    assert isinstance(argument, str)
                    working.add_progress(workspace, argument, at=AT, cap=cap)
            except InvalidInput:
                assert working.path(workspace).read_bytes() == before
                continue
            progress = working.read(workspace).items("recent_progress")
            if kind == "progress":
                newest = progress[-1]
                assert newest.endswith(clean_text(str(argument)))
            elif section == "recent_progress":  # set or add: the file's last item is newest
                newest = progress[-1] if progress else None
            assert len(_file(workspace)) <= cap
            if newest is not None:
                assert progress[-1] == newest


# -- round trips ------------------------------------------------------------------

item_texts = (
    st.text(alphabet="abc xyz-*#[]`ЖÄ.", min_size=1, max_size=30).map(str.strip).filter(bool)
)
items = st.one_of(
    item_texts,
    st.tuples(item_texts, item_texts).map(lambda pair: f"{pair[0]}\n  - {pair[1]}"),
)
notes = st.from_regex(r"[A-Za-z][A-Za-z ,.:]{0,30}", fullmatch=True)
own_titles = st.from_regex(r"[A-Z][a-z ]{0,15}[a-z]", fullmatch=True).filter(
    lambda title: title.casefold() not in {t.casefold() for t in working.SECTIONS.values()}
)
own_lines = st.lists(
    st.one_of(notes, notes.map(lambda n: f"- {n}"), st.just(""), st.just("### sub")), max_size=6
).map(lambda lines: tuple(lines) if lines and lines[0] and lines[-1] else ())


@st.composite
def memories(draw: st.DrawFn) -> WorkingMemory:
    managed = [
        Section(
            title,
            key,
            tuple(draw(st.lists(items, max_size=4))),
            tuple(draw(st.lists(notes, max_size=2))),
        )
        for key, title in working.SECTIONS.items()
    ]
    own = [
        Section(draw(own_titles), None, (), draw(own_lines)) for _ in range(draw(st.integers(0, 2)))
    ]
    order = draw(st.permutations(managed + own))
    preamble = draw(st.sampled_from(["", "# WORKING_MEMORY.md\n\n", "# W\n\n<!-- c -->\n\n"]))
    return WorkingMemory(preamble, tuple(order))


@settings(max_examples=200)
@given(memories())
def test_parse_gives_back_what_render_wrote(memory: WorkingMemory) -> None:
    text = working.render(memory)
    assert working.parse(text) == memory
    assert working.render(working.parse(text)) == text


@settings(max_examples=200)
@given(st.text(alphabet="ab -*#\n\t`~[]", max_size=200))
def test_parse_never_fails_and_settles_after_one_render(text: str) -> None:
    once = working.render(working.parse(text))
    assert working.render(working.parse(once)) == once
    for key in working.SECTIONS:
        working.parse(text).items(key)
