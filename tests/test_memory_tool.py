"""The memory tool (memory_20250818) client: commands, exact answers, and path attacks."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory
from memstrata.storage.workspace import Workspace
from memstrata.tools.memory_tool import MemoryToolHandler

KEY = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 3


@pytest.fixture
def tool(workspace: Workspace) -> Iterator[MemoryToolHandler]:
    with Memory.open(workspace.path, embedder="none") as memory:
        yield MemoryToolHandler(memory)


def run(tool: MemoryToolHandler, command: str, **args: object) -> str:
    return tool.handle({"command": command, **args})


def files_of(folder: Path) -> dict[str, bytes]:
    """Every file (not following symlinks) below ``folder``: relative path -> bytes."""
    found: dict[str, bytes] = {}
    for base, _, names in os.walk(folder):
        for name in names:
            path = Path(base) / name
            if not path.is_symlink() and ".memstrata" not in path.parts:
                found[str(path.relative_to(folder))] = path.read_bytes()
    return found


# -- view -------------------------------------------------------------------------------------


def test_view_of_memories_lists_the_allowed_files_with_sizes(
    tool: MemoryToolHandler, workspace: Workspace
) -> None:
    (workspace.path / "memory" / "2026-01-01.md").write_text("x" * 10)
    (workspace.path / "notes" / "inbox" / "idea.md").write_text("y" * 2048)
    (workspace.path / "memory" / "other.txt").write_text("not listed")
    listing = run(tool, "view", path="/memories")
    lines = listing.split("\n")
    assert lines[0] == "Here are the memory files in /memories (size, path):"
    assert "10B\t/memories/memory/2026-01-01.md" in lines
    assert "2.0K\t/memories/notes/inbox/idea.md" in lines
    assert any(line.endswith("\t/memories/core/AGENT.md") for line in lines)
    assert not any("LTM_" in line or ".memstrata" in line or "other.txt" in line for line in lines)
    assert run(tool, "view", path="/memories/") == listing


def test_view_of_a_folder_lists_only_that_folder(
    tool: MemoryToolHandler, workspace: Workspace
) -> None:
    (workspace.path / "notes" / "inbox" / "idea.md").write_text("abc")
    assert run(tool, "view", path="/memories/notes/inbox") == (
        "Here are the memory files in /memories/notes/inbox (size, path):\n"
        "3B\t/memories/notes/inbox/idea.md"
    )
    assert (
        run(tool, "view", path="/memories/summaries") == "No memory files in /memories/summaries."
    )


def test_view_of_a_file_numbers_its_lines(tool: MemoryToolHandler, workspace: Workspace) -> None:
    (workspace.path / "memory" / "a.md").write_text("one\ntwo\r\nthree\n")
    assert run(tool, "view", path="/memories/memory/a.md") == (
        "Here's the content of /memories/memory/a.md with line numbers:\n"
        "     1\tone\n     2\ttwo\n     3\tthree"
    )
    assert run(tool, "view", path="/memories/memory/a.md", view_range=[2, 3]) == (
        "Here's the content of /memories/memory/a.md with line numbers:\n     2\ttwo\n     3\tthree"
    )
    assert run(tool, "view", path="/memories/memory/a.md", view_range=[3, -1]).endswith(
        "\n     3\tthree"
    )
    (workspace.path / "MEMORY.md").write_text("# Memory\n")
    assert run(tool, "view", path="/memories/MEMORY.md") == (
        "Here's the content of /memories/MEMORY.md with line numbers:\n     1\t# Memory"
    )


@pytest.mark.parametrize("bad", [[0, 1], [2, 1], [1, 4], [4, -1], [1], "1-2", [1.0, 2], [True, 2]])
def test_view_range_is_checked(tool: MemoryToolHandler, workspace: Workspace, bad: object) -> None:
    (workspace.path / "memory" / "a.md").write_text("one\ntwo\nthree\n")
    answer = run(tool, "view", path="/memories/memory/a.md", view_range=bad)
    assert answer.startswith("Error: Invalid `view_range` parameter: ")


def test_view_of_a_missing_or_empty_or_binary_file(
    tool: MemoryToolHandler, workspace: Workspace
) -> None:
    assert run(tool, "view", path="/memories/memory/none.md") == (
        "Error: The path /memories/memory/none.md does not exist. Please provide a valid path."
    )
    (workspace.path / "memory" / "empty.md").write_text("")
    assert run(tool, "view", path="/memories/memory/empty.md") == (
        "The file /memories/memory/empty.md is empty."
    )
    (workspace.path / "memory" / "bin.md").write_bytes(b"\xff\xfe")
    assert run(tool, "view", path="/memories/memory/bin.md") == (
        "Error: /memories/memory/bin.md is not valid UTF-8 text; it cannot be shown or edited here."
    )


# -- create -----------------------------------------------------------------------------------


def test_create_writes_and_overwrites(tool: MemoryToolHandler, workspace: Workspace) -> None:
    target = workspace.path / "memory" / "new.md"
    assert run(tool, "create", path="/memories/memory/new.md", file_text="hello\n") == (
        "File created successfully at: /memories/memory/new.md"
    )
    assert target.read_text() == "hello\n"
    assert run(tool, "create", path="/memories/memory/new.md", file_text="again") == (
        "File overwritten successfully at: /memories/memory/new.md"
    )
    assert target.read_text() == "again"
    assert not [p for p in target.parent.iterdir() if ".tmp-" in p.name]


def test_create_makes_a_missing_allowed_folder(tool: MemoryToolHandler) -> None:
    shutil.rmtree(tool.root / "notes")
    assert run(tool, "create", path="/memories/notes/maps/m.md", file_text="x") == (
        "File created successfully at: /memories/notes/maps/m.md"
    )
    assert (tool.root / "notes" / "maps" / "m.md").read_text() == "x"


def test_create_redacts_secrets(tool: MemoryToolHandler, workspace: Workspace) -> None:
    answer = run(tool, "create", path="/memories/memory/k.md", file_text=f"key {KEY}\n")
    assert answer == (
        "File created successfully at: /memories/memory/k.md "
        "Secrets were redacted before writing: api_key."
    )
    text = (workspace.path / "memory" / "k.md").read_text()
    assert KEY not in text and "[REDACTED:api_key]" in text


@pytest.mark.parametrize(
    ("command", "args"),
    [
        ("create", {"path": "/memories/MEMORY.md", "file_text": "x"}),
        ("str_replace", {"path": "/memories/MEMORY.md", "old_str": "a", "new_str": "b"}),
        ("insert", {"path": "/memories/MEMORY.md", "insert_line": 0, "insert_text": "x"}),
        ("delete", {"path": "/memories/MEMORY.md"}),
        ("rename", {"old_path": "/memories/MEMORY.md", "new_path": "/memories/memory/m.md"}),
        ("rename", {"old_path": "/memories/memory/a.md", "new_path": "/memories/MEMORY.md"}),
    ],
)
def test_memory_md_is_read_only_here(
    tool: MemoryToolHandler, workspace: Workspace, command: str, args: dict[str, object]
) -> None:
    (workspace.path / "memory" / "a.md").write_text("a\n")
    before = files_of(workspace.path)
    answer = tool.handle({"command": command, **args})
    assert answer == (
        "Error: /memories/MEMORY.md is rendered from memstrata's journaled store and cannot be "
        "changed with the memory tool (a direct write would be overwritten); use memory_write / "
        "remember to add or change long-term memories. It can be viewed."
    )
    assert files_of(workspace.path) == before


# -- str_replace ------------------------------------------------------------------------------


def test_str_replace(tool: MemoryToolHandler, workspace: Workspace) -> None:
    target = workspace.path / "memory" / "a.md"
    target.write_text("alpha\nbeta\ngamma\nbeta\n")
    assert run(tool, "str_replace", path="/memories/memory/a.md", old_str="alpha", new_str="A") == (
        "The memory file /memories/memory/a.md has been edited."
    )
    assert target.read_text() == "A\nbeta\ngamma\nbeta\n"
    assert run(tool, "str_replace", path="/memories/memory/a.md", old_str="zeta", new_str="") == (
        "Error: No replacement was performed, old_str `zeta` did not appear verbatim in "
        "/memories/memory/a.md."
    )
    assert run(tool, "str_replace", path="/memories/memory/a.md", old_str="beta", new_str="") == (
        "Error: No replacement was performed. Multiple occurrences of old_str `beta` in lines: "
        "[2, 4]. Please ensure it is unique."
    )
    assert target.read_text() == "A\nbeta\ngamma\nbeta\n"
    assert run(tool, "str_replace", path="/memories/memory/a.md", old_str="gamma\n").startswith(
        "The memory file"
    )
    assert target.read_text() == "A\nbeta\nbeta\n"


def test_str_replace_counts_overlapping_occurrences(
    tool: MemoryToolHandler, workspace: Workspace
) -> None:
    (workspace.path / "memory" / "a.md").write_text("aaa\n")
    answer = run(tool, "str_replace", path="/memories/memory/a.md", old_str="aa", new_str="b")
    assert answer.startswith("Error: No replacement was performed. Multiple occurrences")


def test_str_replace_redacts_a_secret_it_completes(
    tool: MemoryToolHandler, workspace: Workspace
) -> None:
    target = workspace.path / "memory" / "a.md"
    target.write_text("db password: PLACEHOLDER\nother line\n")
    answer = run(
        tool,
        "str_replace",
        path="/memories/memory/a.md",
        old_str="PLACEHOLDER",
        new_str="Tr0ub4dor",
    )
    assert answer.endswith("Secrets were redacted before writing: password.")
    assert "Tr0ub4dor" not in target.read_text()
    assert target.read_text().endswith("\nother line\n")


def test_str_replace_errors(tool: MemoryToolHandler, workspace: Workspace) -> None:
    assert run(tool, "str_replace", path="/memories/memory/none.md", old_str="a") == (
        "Error: The path /memories/memory/none.md does not exist. Please provide a valid path."
    )
    assert run(tool, "str_replace", path="/memories/memory/none.md") == (
        "Error: Missing required parameter `old_str` for command `str_replace`."
    )
    assert run(tool, "str_replace", path="/memories/memory/a.md", old_str=3) == (
        "Error: Parameter `old_str` must be a string, not int."
    )


# -- insert -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("original", "line", "text", "expected"),
    [
        ("a\nb\n", 0, "top", "top\na\nb\n"),
        ("a\nb\n", 1, "mid\n", "a\nmid\nb\n"),
        ("a\nb\n", 2, "end", "a\nb\nend\n"),
        ("a\nb", 1, "mid", "a\nmid\nb"),
        ("a\nb", 2, "end", "a\nb\nend\n"),
        ("", 0, "first", "first\n"),
        ("a\n", 1, "x\ny", "a\nx\ny\n"),
    ],
)
def test_insert(
    tool: MemoryToolHandler,
    workspace: Workspace,
    original: str,
    line: int,
    text: str,
    expected: str,
) -> None:
    target = workspace.path / "memory" / "a.md"
    target.write_text(original)
    answer = run(tool, "insert", path="/memories/memory/a.md", insert_line=line, insert_text=text)
    assert answer == "The memory file /memories/memory/a.md has been edited."
    assert target.read_text() == expected


def test_insert_errors(tool: MemoryToolHandler, workspace: Workspace) -> None:
    (workspace.path / "memory" / "a.md").write_text("a\nb\n")
    for line in (-1, 3):
        assert run(
            tool, "insert", path="/memories/memory/a.md", insert_line=line, insert_text="x"
        ) == (
            f"Error: Invalid `insert_line` parameter: {line}. It should be within the range of "
            "lines of the file: [0, 2]."
        )
    assert run(tool, "insert", path="/memories/memory/a.md", insert_line="1", insert_text="x") == (
        "Error: Parameter `insert_line` must be an integer, not '1'."
    )
    assert run(tool, "insert", path="/memories/memory/a.md", insert_text="x") == (
        "Error: Missing required parameter `insert_line` for command `insert`."
    )
    assert run(tool, "insert", path="/memories/memory/no.md", insert_line=0, insert_text="x") == (
        "Error: The path /memories/memory/no.md does not exist. Please provide a valid path."
    )


def test_insert_redacts(tool: MemoryToolHandler, workspace: Workspace) -> None:
    target = workspace.path / "memory" / "a.md"
    target.write_text("a\n")
    run(tool, "insert", path="/memories/memory/a.md", insert_line=1, insert_text=f"k {KEY}")
    assert KEY not in target.read_text()


# -- delete and rename ------------------------------------------------------------------------


def test_delete(tool: MemoryToolHandler, workspace: Workspace) -> None:
    target = workspace.path / "notes" / "inbox" / "x.md"
    target.write_text("x")
    assert run(tool, "delete", path="/memories/notes/inbox/x.md") == (
        "Successfully deleted /memories/notes/inbox/x.md"
    )
    assert not target.exists()
    assert run(tool, "delete", path="/memories/notes/inbox/x.md") == (
        "Error: The path /memories/notes/inbox/x.md does not exist. Please provide a valid path."
    )
    assert run(tool, "delete", path="/memories/notes/inbox") == (
        "Error: /memories/notes/inbox is a folder; only files can be deleted."
    )
    assert run(tool, "delete", path="/memories").startswith("Error: /memories is a folder")


def test_rename(tool: MemoryToolHandler, workspace: Workspace) -> None:
    source = workspace.path / "notes" / "inbox" / "x.md"
    source.write_text("x")
    assert (
        run(
            tool,
            "rename",
            old_path="/memories/notes/inbox/x.md",
            new_path="/memories/notes/zettel/y.md",
        )
        == "Successfully renamed /memories/notes/inbox/x.md to /memories/notes/zettel/y.md"
    )
    assert not source.exists()
    assert (workspace.path / "notes" / "zettel" / "y.md").read_text() == "x"


def test_rename_never_overwrites(tool: MemoryToolHandler, workspace: Workspace) -> None:
    (workspace.path / "memory" / "a.md").write_text("a")
    (workspace.path / "memory" / "b.md").write_text("b")
    assert run(
        tool, "rename", old_path="/memories/memory/a.md", new_path="/memories/memory/b.md"
    ) == ("Error: The destination /memories/memory/b.md already exists.")
    assert (workspace.path / "memory" / "a.md").read_text() == "a"
    assert (workspace.path / "memory" / "b.md").read_text() == "b"
    assert run(
        tool, "rename", old_path="/memories/memory/c.md", new_path="/memories/memory/d.md"
    ) == ("Error: The path /memories/memory/c.md does not exist. Please provide a valid path.")


# -- bad commands -----------------------------------------------------------------------------


def test_bad_commands_are_error_text(tool: MemoryToolHandler) -> None:
    assert tool.handle({"command": "chmod", "path": "/memories/x"}) == (
        "Error: Unknown command 'chmod'; use one of view, create, str_replace, insert, delete, "
        "rename."
    )
    assert tool.handle({}).startswith("Error: Unknown command None")
    assert tool.handle("view").startswith("Error: the command must be an object")  # type: ignore[arg-type]
    assert run(tool, "view") == "Error: Missing required parameter `path` for command `view`."
    assert run(tool, "view", path="/etc/passwd") == (
        "Error: The path '/etc/passwd' is not a file under /memories; paths look like "
        "/memories/memory/notes.md."
    )


# -- attacks ----------------------------------------------------------------------------------

ATTACKS = [
    "../../etc/passwd",
    "/etc/passwd",
    "memory/../../../etc/hostname",
    "..\\..\\x",
    "MEMORY.md/../../secret",
    "memory/%2e%2e/%2e%2e/etc/passwd",
    "notes/inbox/evil.md",
    "memory\uff0f..\uff0fsecret.md",
    "memory/\u2024\u2024/secret.md",
    ".memstrata/journal.wal",
    "memstrata.toml",
]


@pytest.fixture
def hostile(workspace: Workspace) -> Path:
    """A secret file next to the workspace and a symlink to it in notes/inbox."""
    secret = workspace.path.parent / "secret.md"
    secret.write_text("TOP SECRET\n")
    (workspace.path / "notes" / "inbox" / "evil.md").symlink_to(secret)
    return secret


@pytest.mark.parametrize("attack", ATTACKS)
def test_path_attacks_are_refused_by_every_command(
    tool: MemoryToolHandler, workspace: Workspace, hostile: Path, attack: str
) -> None:
    outside = workspace.path.parent
    before_ws, before_out = files_of(workspace.path), files_of(outside)
    path = f"/memories/{attack}"
    commands: list[dict[str, object]] = [
        {"command": "view", "path": path},
        {"command": "view", "path": path, "view_range": [1, 1]},
        {"command": "create", "path": path, "file_text": "pwned"},
        {"command": "str_replace", "path": path, "old_str": "TOP", "new_str": "pwned"},
        {"command": "insert", "path": path, "insert_line": 0, "insert_text": "pwned"},
        {"command": "delete", "path": path},
        {"command": "rename", "old_path": path, "new_path": "/memories/memory/stolen.md"},
        {"command": "rename", "old_path": "/memories/core/USER.md", "new_path": path},
    ]
    for command in commands:
        answer = tool.handle(command)
        assert answer.startswith("Error:"), (command, answer)
        assert "TOP SECRET" not in answer
    assert files_of(workspace.path) == before_ws
    assert files_of(outside) == before_out
    assert hostile.read_text() == "TOP SECRET\n"


def test_the_listing_skips_symlinks_out(
    tool: MemoryToolHandler, workspace: Workspace, hostile: Path
) -> None:
    assert "evil" not in run(tool, "view", path="/memories")


SEGMENTS = st.sampled_from(
    ["..", ".", "", "%2e%2e", "memory", "notes", "inbox", "a.md", "\uff0f", "\u2024", "MEMORY.md"]
)


@settings(
    max_examples=150,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(
    parts=st.lists(st.one_of(SEGMENTS, st.text(max_size=3)), min_size=1, max_size=6),
    command=st.sampled_from(["create", "str_replace", "insert", "delete", "rename"]),
)
def test_no_write_leaves_the_workspace(
    tool: MemoryToolHandler,
    workspace: Workspace,
    hostile: Path,
    parts: list[str],
    command: str,
) -> None:
    outside = workspace.path.parent
    before = {k: v for k, v in files_of(outside).items() if not k.startswith("ws/")}
    path = "/memories/" + "/".join(parts)
    tool.handle(
        {
            "command": command,
            "path": path,
            "file_text": "pwned",
            "old_str": "TOP",
            "new_str": "pwned",
            "insert_line": 0,
            "insert_text": "pwned",
            "old_path": path,
            "new_path": path + "2",
        }
    )
    after = {k: v for k, v in files_of(outside).items() if not k.startswith("ws/")}
    assert after == before
    assert hostile.read_text() == "TOP SECRET\n"
    for name in files_of(workspace.path):
        assert not name.endswith("2") or name.startswith(".memstrata")


def test_an_edit_of_a_file_that_is_not_utf8_is_refused_in_tool_terms(
    tool: MemoryToolHandler, workspace: Workspace
) -> None:
    (workspace.path / "memory" / "bin.md").write_bytes(b"\xff\xfe")
    answer = run(tool, "str_replace", path="/memories/memory/bin.md", old_str="a", new_str="b")
    assert answer == (
        "Error: /memories/memory/bin.md is not valid UTF-8 text; it cannot be shown or edited here."
    )
    assert (workspace.path / "memory" / "bin.md").read_bytes() == b"\xff\xfe"
