"""The memstrata command line: every command, --json, and clear errors."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from memstrata import __version__
from memstrata.cli import cli


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def home(tmp_path: Path) -> str:
    path = str(tmp_path / "cli-ws")
    assert run("init", "-w", path).exit_code == 0
    return path


def test_every_command_has_help_text() -> None:
    assert isinstance(cli, click.Group)
    for name, command in cli.commands.items():
        assert command.help and command.help.strip(), f"{name} has no help"
        result = run(name, "--help")
        assert result.exit_code == 0, name
        assert "Usage:" in result.output


def test_version() -> None:
    result = run("--version")
    assert result.exit_code == 0
    assert __version__ in result.output


def test_init_creates_and_then_reports_complete(tmp_path: Path) -> None:
    path = str(tmp_path / "new")
    first = run("init", "-w", path, "--json")
    assert first.exit_code == 0
    assert "core/AGENT.md" in json.loads(first.output)["created"]
    second = run("init", "-w", path)
    assert "already complete" in second.output


def test_init_a_group_workspace(tmp_path: Path) -> None:
    result = run("init", "-w", str(tmp_path), "--group", "family")
    assert result.exit_code == 0
    assert (tmp_path / "groups" / "family" / "MEMORY.md").exists()


def test_remember_list_get_delete_round_trip(home: str) -> None:
    added = json.loads(
        run("remember", "-w", home, "I prefer dark mode", "-c", "preference", "--json").output
    )
    assert added["category"] == "preference"
    again = run("remember", "-w", home, "i prefer dark mode.")
    assert "Already remembered" in again.output
    listed = json.loads(run("list", "-w", home, "--json").output)
    assert [item["id"] for item in listed] == [added["id"]]
    shown = json.loads(run("get", "-w", home, added["id"], "--json").output)
    assert shown["hits"] == 1
    table = run("list", "-w", home)
    assert added["id"] in table.output
    deleted = run("delete", "-w", home, added["id"])
    assert deleted.exit_code == 0
    assert json.loads(run("list", "-w", home, "--json").output) == []


def test_list_options(home: str) -> None:
    run("remember", "-w", home, "a", "-s", "s1")
    run("remember", "-w", home, "b", "-s", "s2")
    run("remember", "-w", home, "c", "-s", "s1")
    texts = [i["text"] for i in json.loads(run("list", "-w", home, "-s", "s1", "--json").output)]
    assert texts == ["c", "a"]
    limited = json.loads(run("list", "-w", home, "--limit", "1", "--json").output)
    assert [i["text"] for i in limited] == ["c"]


def test_status_flush_compact_doctor(home: str) -> None:
    for n in range(5):
        run("remember", "-w", home, f"fact {n}")
    status = json.loads(run("status", "-w", home, "--json").output)
    assert status["items"] == 5
    assert run("flush", "-w", home).exit_code == 0
    compacted = json.loads(run("compact", "-w", home, "--max-items", "2", "--json").output)
    assert compacted == {"removed": 3, "kept": 2}
    doctor = run("doctor", "-w", home, "--json")
    assert doctor.exit_code == 0
    assert {f["level"] for f in json.loads(doctor.output)["findings"]} <= {"ok", "info"}
    assert "layout" in run("doctor", "-w", home).output


def test_memstrata_home_is_the_default_workspace(isolated_home: Path) -> None:
    assert run("init").exit_code == 0
    assert (isolated_home / "MEMORY.md").exists()
    assert run("remember", "from the env var").exit_code == 0
    assert "from the env var" in (isolated_home / "MEMORY.md").read_text()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("get", "mnosuchid"), "no memory item with id 'mnosuchid'"),
        (("delete", "mnosuchid"), "no memory item with id 'mnosuchid'"),
        (("remember", "   "), "text is empty"),
        (("list", "--group", "Bad/Name"), "group name 'Bad/Name' is not allowed"),
    ],
)
def test_bad_input_is_one_clear_line_and_a_non_zero_exit(
    home: str, args: tuple[str, ...], message: str
) -> None:
    result = run(*args, "-w", home)
    assert result.exit_code == 1
    [line] = result.stderr.strip().splitlines()
    assert line.startswith(f"Error: {message}")
    assert "Traceback" not in result.output


def test_a_missing_workspace_says_how_to_create_it(tmp_path: Path) -> None:
    result = run("list", "-w", str(tmp_path / "nowhere"))
    assert result.exit_code == 1
    assert "memstrata init" in result.stderr
    doctor = run("doctor", "-w", str(tmp_path / "nowhere"))
    assert doctor.exit_code == 1
    assert "no memstrata workspace" in doctor.output


def test_an_unreadable_workspace_is_a_clear_error(home: str) -> None:
    memory_md = Path(home) / "MEMORY.md"
    memory_md.unlink()
    memory_md.mkdir()  # something that cannot be read as a file
    result = run("remember", "-w", home, "x")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: cannot ")
    assert "Traceback" not in result.stderr


def test_a_bad_settings_file_is_named(home: str) -> None:
    (Path(home) / "memstrata.toml").write_text("[memory]\nflush_every_updates = 'often'\n")
    result = run("status", "-w", home)
    assert result.exit_code == 1
    assert "memstrata.toml" in result.stderr and "flush_every_updates" in result.stderr
    assert run("doctor", "-w", home).exit_code == 1


def test_demo_runs_and_keeps_its_workspace(tmp_path: Path) -> None:
    keep = tmp_path / "demo"
    result = run("demo", "--keep", str(keep))
    assert result.exit_code == 0, result.output
    assert "killed by SIGKILL: True" in result.output
    assert "Deploys are frozen on Fridays" in (keep / "MEMORY.md").read_text()
    memory_md = (keep / "MEMORY.md").read_text()
    assert "Likes tables for comparisons" in memory_md
    assert "~~The staging database is pg-staging-2~~" in memory_md
    assert "staging password: [REDACTED:password]" in memory_md
    files = b"".join(path.read_bytes() for path in keep.rglob("*") if path.is_file())
    assert b"Tr0ub4dor&3" not in files


def test_text_that_looks_like_markup_is_printed_as_written(home: str) -> None:
    run("remember", "-w", home, "I prefer [bold] tea and [red]x[/red]", "-s", "[s]")
    table = run("list", "-w", home).output
    assert "[bold] tea" in table and "[red]x[/red]" in table and "[s]" in table
    item_id = json.loads(run("list", "-w", home, "--json").output)[0]["id"]
    assert "[bold] tea" in run("get", "-w", home, item_id).output


def test_supersede_keeps_the_old_fact_as_superseded(home: str) -> None:
    old = json.loads(run("remember", "-w", home, "My name is Sarvar", "--json").output)
    new = json.loads(run("supersede", "-w", home, old["id"], "My name is Sardor", "--json").output)
    listed = json.loads(run("list", "-w", home, "--all", "--json").output)
    by_id = {item["id"]: item for item in listed}
    assert by_id[old["id"]]["superseded_by"] == new["id"]
    assert by_id[old["id"]]["valid_to"] is not None
    assert by_id[new["id"]]["valid_to"] is None
    again = run("supersede", "-w", home, old["id"], "My name is Bob")
    assert again.exit_code == 1 and "already superseded" in again.stderr
