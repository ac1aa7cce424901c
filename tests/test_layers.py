"""The layers: the injection table, core files, semantic files and legacy migrations.

Working memory is tested in test_working.py, the notebook in test_notebook.py.
"""

from __future__ import annotations

import tempfile
from importlib import resources
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata import Corrupt, InvalidInput, NotFound
from memstrata.migrations import layers as migrate
from memstrata.model import clean_text, normalize_text
from memstrata.storage.layers import POLICY, Policy
from memstrata.storage.workspace import Workspace
from memstrata.stores import core, semantic
from workspaces import fresh

SECRET = "api_key=sk-proj-abcdefghijklmnopqrstuvwxyz123456"
# Prose with no digits or credential words: redaction leaves it alone.
prose = st.text(alphabet="abcdefg xyz.,!?'#-*\n", max_size=200)


def _template(name: str) -> str:
    return (resources.files("memstrata") / "templates" / name).read_text("utf-8")


def _no_temp_files(folder: Path) -> None:
    assert not [p for p in folder.rglob("*") if ".tmp-" in p.name]


# -- the injection table ---------------------------------------------------------


def test_the_policy_table_names_every_layer_once() -> None:
    layers = "core working session_state long_term lessons semantic notebook daily_notes"
    assert set(POLICY) == {*layers.split(), "transcripts", "system"}
    assert all(isinstance(policy, Policy) for policy in POLICY.values())
    # who the agent is reaches every prompt; system files never do
    assert POLICY["core"] is Policy.ALWAYS and POLICY["system"] is Policy.NEVER
    assert POLICY["long_term"] is Policy.GATED


def test_the_policy_table_is_read_only() -> None:
    with pytest.raises(TypeError):
        POLICY["core"] = Policy.NEVER  # type: ignore[index]


# -- core -------------------------------------------------------------------------


def test_core_files_read_as_their_templates(workspace: Workspace) -> None:
    for name, file in core.FILES.items():
        assert core.read(workspace, name) == _template(file)
        assert core.read(workspace, file) == _template(file)


@pytest.mark.parametrize("name", ["user", "USER.md", "User", "user.md"])
def test_core_write_by_any_spelling_of_the_name(workspace: Workspace, name: str) -> None:
    written = core.write(workspace, name, "# USER.md\n\n- Name: Dilnoza")
    assert written == "# USER.md\n\n- Name: Dilnoza\n"
    assert (workspace.path / "core" / "USER.md").read_text() == written
    assert core.read(workspace, "user") == written
    assert core.read(workspace, "soul") == _template("SOUL.md")
    _no_temp_files(workspace.path / "core")


@pytest.mark.parametrize(
    "name", ["memory", ".CLAUDE.md", "CLAUDE.txt", "../SOUL.md", "", "core/SOUL.md"]
)  # (core/CLAUDE.md is a core file like any other: tests/test_core_files.py)
def test_core_refuses_other_names(workspace: Workspace, name: str) -> None:
    with pytest.raises(InvalidInput, match="agent, user, soul, AGENT.md, USER.md, SOUL.md"):
        core.write(workspace, name, "x")
    with pytest.raises(InvalidInput):
        core.read(workspace, name)


def test_core_write_redacts_secrets(workspace: Workspace) -> None:
    written = core.write(workspace, "agent", f"Deploy with {SECRET}\n")
    assert "sk-proj" not in written
    assert "[REDACTED:api_key]" in core.read(workspace, "agent")


def test_core_write_keeps_the_text_exactly(workspace: Workspace) -> None:
    text = "# SOUL\n\n\n  indented\ttabs\n\nlast line\n\n"
    assert core.write(workspace, "soul", text) == text
    assert (workspace.path / "core" / "SOUL.md").read_bytes() == text.encode()


def test_core_read_of_a_missing_or_corrupt_file(workspace: Workspace) -> None:
    (workspace.path / "core" / "USER.md").unlink()
    with pytest.raises(NotFound, match="core/USER.md"):
        core.read(workspace, "user")
    (workspace.path / "core" / "AGENT.md").write_bytes(b"# A\n\xff\xfe bad\n")
    with pytest.raises(Corrupt, match="not valid UTF-8 at byte 4"):
        core.read(workspace, "agent")


# -- semantic ---------------------------------------------------------------------


def test_semantic_add_read_remove(workspace: Workspace) -> None:
    added = semantic.add(workspace, "facts", "The office is in Tashkent")
    assert added == semantic.SemanticItem(5, "The office is in Tashkent")
    assert semantic.add(workspace, "facts.md", "Billing runs on PostgreSQL") is not None
    assert [(i.line, i.text) for i in semantic.read(workspace, "facts")] == [
        (5, "The office is in Tashkent"),
        (6, "Billing runs on PostgreSQL"),
    ]
    text = (workspace.path / "semantic" / "facts.md").read_text()
    assert (
        text
        == _template("facts.md") + "\n- The office is in Tashkent\n- Billing runs on PostgreSQL\n"
    )
    assert semantic.remove(workspace, "facts", 5) == [semantic.SemanticItem(5, added.text)]
    assert semantic.remove(workspace, "facts", "Billing runs on PostgreSQL")[0].line == 5
    assert (workspace.path / "semantic" / "facts.md").read_text() == _template("facts.md")


def test_semantic_add_dedupes_by_normalized_text(workspace: Workspace) -> None:
    assert semantic.add(workspace, "preferences", "I like green tea.") is not None
    assert semantic.add(workspace, "preferences", "  i like GREEN   tea ") is None
    assert [i.text for i in semantic.read(workspace, "preferences")] == ["I like green tea."]


def test_semantic_add_is_one_redacted_line(workspace: Workspace) -> None:
    item = semantic.add(workspace, "projects", f"memstrata\nuses {SECRET}")
    assert item is not None
    assert item.text == "memstrata uses api_key=[REDACTED:api_key]"
    with pytest.raises(InvalidInput):
        semantic.add(workspace, "projects", " \n ")


def test_semantic_reads_hand_written_files(workspace: Workspace) -> None:
    (workspace.path / "semantic" / "projects.md").write_text(
        "# Projects\r\n\r\nIntro text.\r\n\r\n## Work\r\n\r\n* memstrata\r\n"
        "  - a nested line is not an item\r\n+ billing\r\n\r\n```\r\n- inside a fence\r\n```\r\n"
        "## Home\r\n- garden\r\n"
    )
    items = semantic.read(workspace, "projects")
    assert [(i.line, i.text, i.heading) for i in items] == [
        (7, "memstrata", "Work"),
        (9, "billing", "Work"),
        (15, "garden", "Home"),
    ]
    semantic.remove(workspace, "projects", 9)
    assert (workspace.path / "semantic" / "projects.md").read_text() == (
        "# Projects\n\nIntro text.\n\n## Work\n\n* memstrata\n"
        "  - a nested line is not an item\n\n```\n- inside a fence\n```\n## Home\n- garden\n"
    )


def test_semantic_remove_of_what_is_not_there(workspace: Workspace) -> None:
    semantic.add(workspace, "facts", "one")
    before = (workspace.path / "semantic" / "facts.md").read_bytes()
    with pytest.raises(NotFound, match="no item 'two'"):
        semantic.remove(workspace, "facts", "two")
    with pytest.raises(NotFound, match="line 1 of semantic/facts.md is not an item"):
        semantic.remove(workspace, "facts", 1)
    with pytest.raises(InvalidInput):
        semantic.remove(workspace, "facts", True)
    assert (workspace.path / "semantic" / "facts.md").read_bytes() == before


def test_semantic_refuses_other_files(workspace: Workspace) -> None:
    with pytest.raises(InvalidInput, match="facts, preferences, projects"):
        semantic.read(workspace, "../MEMORY")


def test_semantic_add_to_a_missing_file_starts_from_the_template(workspace: Workspace) -> None:
    (workspace.path / "semantic" / "facts.md").unlink()
    assert semantic.read(workspace, "facts") == []
    semantic.add(workspace, "facts", "one")
    assert (workspace.path / "semantic" / "facts.md").read_text() == _template("facts.md") + (
        "\n- one\n"
    )


item_texts = st.text(alphabet="abcxyz ÄЖ漢.,!-", min_size=1, max_size=40).filter(
    lambda text: text.strip(" .,!-") != ""
)


@settings(max_examples=60, deadline=None)
@given(st.lists(item_texts, max_size=12), st.sampled_from(sorted(semantic.FILES)))
def test_semantic_round_trip(texts: list[str], name: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        workspace = fresh(Path(root))
        expected: dict[str, str] = {}
        for text in texts:
            item = semantic.add(workspace, name, text)
            key = clean_text(text)
            assert (item is None) == (normalize_text(key) in expected)
            expected.setdefault(normalize_text(key), key)
        assert [i.text for i in semantic.read(workspace, name)] == list(expected.values())
        for text in reversed(list(expected.values())):
            semantic.remove(workspace, name, text)
        assert semantic.read(workspace, name) == []
        template = _template(semantic.FILES[name])
        assert semantic.path(workspace, name).read_text() == template


# -- migrations -------------------------------------------------------------------


def _soul(workspace: Workspace) -> str:
    return (workspace.path / "core" / "SOUL.md").read_text()


def test_claude_md_replaces_an_untouched_soul_template(workspace: Workspace) -> None:
    data = b"# CLAUDE.md\n\nYou are Andy, a terse assistant.\n"
    (workspace.path / "CLAUDE.md").write_bytes(data)
    done = migrate.migrate_claude_md(workspace)
    assert done == [
        "core/SOUL.md: replaced the untouched template with the text of CLAUDE.md",
        "moved CLAUDE.md to .memstrata/migrated/CLAUDE.md (byte for byte)",
    ]
    assert _soul(workspace).encode() == data
    assert not (workspace.path / "CLAUDE.md").exists()
    assert (workspace.system / "migrated" / "CLAUDE.md").read_bytes() == data
    assert migrate.migrate_claude_md(workspace) == []
    assert _soul(workspace).encode() == data


def test_claude_md_is_appended_to_a_soul_with_content(workspace: Workspace) -> None:
    mine = "# SOUL\n\n- Be kind.\n"
    core.write(workspace, "soul", mine)
    (workspace.path / "CLAUDE.md").write_text("Answer in Uzbek.")
    done = migrate.migrate_claude_md(workspace)
    assert (
        done[0] == "core/SOUL.md: appended the text of CLAUDE.md under '## Migrated from CLAUDE.md'"
    )
    assert _soul(workspace) == mine + "\n## Migrated from CLAUDE.md\n\nAnswer in Uzbek.\n"
    assert migrate.migrate_claude_md(workspace) == []


def test_claude_md_migration_redacts_but_keeps_the_original_aside(workspace: Workspace) -> None:
    data = f"Deploy with {SECRET}\n".encode()
    (workspace.path / "CLAUDE.md").write_bytes(data)
    migrate.migrate_claude_md(workspace)
    assert "sk-proj" not in _soul(workspace)
    assert (workspace.system / "migrated" / "CLAUDE.md").read_bytes() == data


def test_a_crash_before_the_move_does_not_add_the_text_twice(workspace: Workspace) -> None:
    core.write(workspace, "soul", "# SOUL\n")
    data = b"Legacy rules.\n"
    (workspace.path / "CLAUDE.md").write_bytes(data)
    migrate.migrate_claude_md(workspace)
    after = _soul(workspace)
    # As if the process died after writing SOUL.md and before moving CLAUDE.md:
    (workspace.system / "migrated" / "CLAUDE.md").unlink()
    (workspace.path / "CLAUDE.md").write_bytes(data)
    assert migrate.migrate_claude_md(workspace) == [
        "moved CLAUDE.md to .memstrata/migrated/CLAUDE.md (byte for byte)"
    ]
    assert _soul(workspace) == after


def test_a_second_claude_md_is_kept_beside_the_first(workspace: Workspace) -> None:
    (workspace.path / "CLAUDE.md").write_text("first\n")
    migrate.migrate_claude_md(workspace)
    (workspace.path / "CLAUDE.md").write_text("second\n")
    done = migrate.migrate_claude_md(workspace)
    assert done[-1] == "moved CLAUDE.md to .memstrata/migrated/CLAUDE.1.md (byte for byte)"
    assert _soul(workspace) == "first\n\n## Migrated from CLAUDE.md\n\nsecond\n"
    assert (workspace.system / "migrated" / "CLAUDE.md").read_text() == "first\n"


def test_an_empty_or_undecodable_claude_md(workspace: Workspace) -> None:
    (workspace.path / "CLAUDE.md").write_bytes(b"\n\n")
    assert migrate.migrate_claude_md(workspace) == [
        "moved CLAUDE.md to .memstrata/migrated/CLAUDE.md (byte for byte)"
    ]
    assert _soul(workspace) == _template("SOUL.md")
    bad = b"Rules \xff\xfe here\n"
    (workspace.path / "CLAUDE.md").write_bytes(bad)
    done = migrate.migrate_claude_md(workspace)
    assert "CLAUDE.md was not valid UTF-8: its bad bytes were replaced in SOUL.md" in done
    assert _soul(workspace) == "Rules \ufffd\ufffd here\n"
    assert (workspace.system / "migrated" / "CLAUDE.1.md").read_bytes() == bad


def test_no_claude_md_means_nothing_to_do(workspace: Workspace) -> None:
    assert migrate.migrate_claude_md(workspace) == []
    assert migrate.take_compaction_sections(workspace) == []
    assert not (workspace.system / "migrated").exists()
    assert _soul(workspace) == _template("SOUL.md")


SOUL_WITH_COMPACTIONS = """\
# SOUL.md

- Be direct.

## Session Compaction 2025-01-15T10:30:00Z

Summary of the first session.
### Details
- decided on PostgreSQL
```
## Session Compaction inside a fence is body
```

## Voice

- Short answers.

## Session Compaction (2025-02-01)
- second summary"""


def test_compaction_sections_are_cut_out_and_returned(workspace: Workspace) -> None:
    core.write(workspace, "soul", SOUL_WITH_COMPACTIONS)
    sections = migrate.take_compaction_sections(workspace)
    assert [s.title for s in sections] == [
        "Session Compaction 2025-01-15T10:30:00Z",
        "Session Compaction (2025-02-01)",
    ]
    assert sections[0].lines == [
        "",
        "Summary of the first session.",
        "### Details",
        "- decided on PostgreSQL",
        "```",
        "## Session Compaction inside a fence is body",
        "```",
        "",
    ]
    assert sections[1].body == "- second summary\n"
    assert _soul(workspace) == "# SOUL.md\n\n- Be direct.\n\n## Voice\n\n- Short answers.\n\n"
    assert migrate.take_compaction_sections(workspace) == []


def test_compaction_sections_from_a_migrated_claude_md(workspace: Workspace) -> None:
    (workspace.path / "CLAUDE.md").write_text(SOUL_WITH_COMPACTIONS)
    migrate.migrate_claude_md(workspace)
    sections = migrate.take_compaction_sections(workspace)
    assert len(sections) == 2
    assert "Session Compaction" not in _soul(workspace)


def test_compaction_sections_are_redacted(workspace: Workspace) -> None:
    core.write(workspace, "soul", "# S\n")
    soul = workspace.path / "core" / "SOUL.md"
    soul.write_text(f"# S\n## Session Compaction x\nused {SECRET}\n")
    [section] = migrate.take_compaction_sections(workspace)
    assert "sk-proj" not in section.text


def test_a_corrupt_soul_is_left_alone(workspace: Workspace) -> None:
    soul = workspace.path / "core" / "SOUL.md"
    soul.write_bytes(b"# S\n\xff\n## Session Compaction\nx\n")
    (workspace.path / "CLAUDE.md").write_text("rules\n")
    with pytest.raises(Corrupt):
        migrate.take_compaction_sections(workspace)
    with pytest.raises(Corrupt):
        migrate.migrate_claude_md(workspace)
    assert soul.read_bytes() == b"# S\n\xff\n## Session Compaction\nx\n"
    assert (workspace.path / "CLAUDE.md").exists()


plain_lines = st.lists(
    st.text(alphabet="abc xyz.-*", max_size=20).filter(lambda line: not line.startswith("#")),
    max_size=4,
).map(lambda lines: "".join(f"{line}\n" for line in lines))
blocks = st.lists(
    st.tuples(
        st.booleans(), st.sampled_from(["Session Compaction", "Voice", "Notes"]), plain_lines
    ),
    max_size=6,
)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["", "# SOUL.md\n\n", "intro\n"]), blocks)
def test_compaction_cut_loses_nothing(head: str, generated: list[tuple[bool, str, str]]) -> None:
    text = head
    kept, moved = head, []
    for index, (compaction, title, body) in enumerate(generated):
        block = f"## {'Session Compaction ' if compaction else ''}{title} {index}\n{body}"
        text += block
        if compaction or title == "Session Compaction":
            moved.append(block)
        else:
            kept += block
    with tempfile.TemporaryDirectory() as root:
        workspace = fresh(Path(root))
        soul = workspace.path / "core" / "SOUL.md"
        soul.write_text(text)
        sections = migrate.take_compaction_sections(workspace)
        assert [s.text for s in sections] == moved
        if moved:
            assert soul.read_text() == kept + ("\n" if kept and not kept.endswith("\n") else "")
        else:
            assert soul.read_text() == text
        assert migrate.take_compaction_sections(workspace) == []


@settings(max_examples=60, deadline=None)
@given(prose, st.sampled_from(["template", "missing", "empty", "custom"]))
def test_claude_md_migration_loses_nothing(claude: str, soul_state: str) -> None:
    with tempfile.TemporaryDirectory() as root:
        workspace = fresh(Path(root))
        soul = workspace.path / "core" / "SOUL.md"
        custom = "# Mine\n\n- keep me\n"
        if soul_state == "missing":
            soul.unlink()
        elif soul_state == "empty":
            soul.write_text("")
        elif soul_state == "custom":
            soul.write_text(custom)
        (workspace.path / "CLAUDE.md").write_text(claude)
        migrate.migrate_claude_md(workspace)
        stored = (workspace.system / "migrated" / "CLAUDE.md").read_text()
        assert stored == claude
        result = soul.read_text() if soul.exists() else ""
        if claude.strip():
            assert claude.rstrip("\n") in result
        if soul_state == "custom":
            assert result.startswith(custom)
        assert migrate.migrate_claude_md(workspace) == []
        assert (soul.read_text() if soul.exists() else "") == result


def test_layer_names_and_files_come_from_one_table() -> None:
    """storage.layers.LAYERS owns the names and the files: the index's layer_of,
    the path guard and search's layer names all follow it."""
    from memstrata.index import chunks
    from memstrata.memory import search
    from memstrata.storage import access
    from memstrata.storage.layers import LAYERS, SEARCHABLE, layer_of

    assert [layer.name for layer in LAYERS] == list(POLICY)
    assert search.LAYERS == SEARCHABLE == {layer.name for layer in LAYERS} - {"system"}
    assert chunks.layer_of is layer_of
    examples = {
        "core": "core/AGENT.md",
        "working": "working/WORKING_MEMORY.md",
        "session_state": "sessions/s1/SESSION-STATE.md",
        "long_term": "MEMORY.md",
        "lessons": "memory/LESSONS.jsonl",
        "daily_notes": "memory/2026-01-02.md",
        "semantic": "memory/topics.md",
        "notebook": "notes/zettel/a.md",
        "transcripts": "sessions/archive/s1.jsonl",
    }
    for layer in LAYERS:
        if layer.files:
            assert layer_of(examples[layer.name]) == layer.name
        for glob in layer.named:  # what a caller may name is a file of the layer
            path = glob.replace("*", "x")
            assert access.allowed(path) and layer_of(path) is not None
    # a file named like another layer's is in the layer of its folder
    assert layer_of("semantic/SESSION-STATE.md") == "semantic"
    assert layer_of("sessions/s1.audit.jsonl") is None


_SEGMENTS = st.sampled_from(
    ["MEMORY.md", "memory", "sessions", "archive", "notes", "inbox", "x.md", "2026-01-01.md",
     "a.jsonl", "a.audit.jsonl", "SESSION-STATE.md", "core", "summaries", "[x].md", "a*b?.md"]
)  # fmt: skip


@given(st.lists(_SEGMENTS | st.text(alphabet="ab.-*?[]0", max_size=6), min_size=1, max_size=4))
def test_the_compiled_globs_match_as_fnmatch_does_segment_by_segment(segments: list[str]) -> None:
    from fnmatch import fnmatchcase

    from memstrata.storage.layers import LAYERS, matches

    path = "/".join(segments)
    for layer in LAYERS:
        for glob in layer.files + layer.exclude:
            parts, globs = path.split("/"), glob.split("/")
            expected = len(parts) == len(globs) and all(map(fnmatchcase, parts, globs))
            assert matches(path, glob) == expected, (path, glob)
