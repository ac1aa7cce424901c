"""The command line as a shell hook uses it: a cheap start-up (nothing heavy
imported), ``--workspace``/``--group`` before or after the command,
``record-turn``, ``lessons add``, sessions seen by ``observe``, ``context``
without ``--budget``, help on every option, and plain logs off a terminal."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from memstrata.cli import COMMANDS, cli
from memstrata.cli.serve import plain_logs

SRC = str(Path(__file__).resolve().parents[1] / "src")


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


@pytest.fixture
def home(tmp_path: Path) -> str:
    path = str(tmp_path / "ws")
    assert run("init", "-w", path).exit_code == 0
    return path


def _imported_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport sys, json\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
    )
    return set(json.loads(out.stdout.strip().splitlines()[-1]))


HEAVY = ("numpy", "onnxruntime", "tokenizers", "memstrata.capture.scan", "memstrata.memory")


@pytest.mark.slow  # a fresh interpreter
def test_importing_the_cli_loads_nothing_heavy() -> None:
    loaded = _imported_after("import memstrata.cli")
    assert not [name for name in HEAVY if name in loaded]
    assert "rich" not in loaded


@pytest.mark.slow  # a fresh interpreter
def test_importing_memstrata_loads_no_engine_until_memory_is_used() -> None:
    loaded = _imported_after("import memstrata\nfrom memstrata import MemstrataError")
    assert not [name for name in HEAVY if name in loaded]
    assert "memstrata.memory" in _imported_after("from memstrata import Memory")


@pytest.mark.slow  # a fresh interpreter
def test_observe_loads_no_numpy_nor_onnxruntime(home: str) -> None:
    """A shell hook's per-message ``observe``, the learned scorer included."""
    code = (
        "from memstrata.cli import cli\n"
        f"cli.main(['observe', '-w', {home!r}, '-s', 's1', 'note for later: call the bank. "
        "I prefer tea, not coffee.'], standalone_mode=False)"
    )
    loaded = _imported_after(code)
    assert "memstrata.capture.scorer" in loaded and "memstrata.memory" in loaded
    assert not [name for name in ("numpy", "onnxruntime", "tokenizers") if name in loaded]
    # nor the index side of Memory (search, the prompt context): built on first use
    index_side = ("memstrata.memory.search", "memstrata.memory.context", "memstrata.index.hybrid")
    assert not [name for name in index_side if name in loaded]


@pytest.mark.slow  # a fresh interpreter
def test_the_mcp_server_is_built_without_the_engine() -> None:
    """What ``memstrata mcp`` does before it answers ``initialize``: the memory
    opens afterwards, in a background thread (``mcp_server._Served``)."""
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    code = (
        "import memstrata.cli.serve\n"
        "from memstrata.mcp_server import build_server\n"
        "build_server(lambda: None)"
    )
    loaded = _imported_after(code)
    assert "memstrata.mcp_server.toolset" in loaded
    assert not [name for name in HEAVY if name in loaded]
    engine = ("memstrata.index", "memstrata.tools.handlers", "memstrata.tools.calls")
    assert not [name for name in loaded if name.startswith(engine)]


def test_version_runs_without_the_engine() -> None:
    result = run("--version")
    assert result.exit_code == 0 and result.output.startswith("memstrata, version ")


def test_every_registered_command_resolves() -> None:
    for name in COMMANDS:
        command = cli.get_command(click.Context(cli), name)
        assert isinstance(command, click.Command), name
        assert cli.commands[name] is command


def _walk(command: click.Command, path: tuple[str, ...]) -> Iterator[tuple[str, click.Parameter]]:
    for param in command.params:
        yield " ".join(path), param
    if isinstance(command, click.Group):
        ctx = click.Context(command)
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None
            yield from _walk(sub, (*path, name))


def test_every_option_of_every_command_has_help() -> None:
    missing = [
        f"{where} {'/'.join(param.opts)}"
        for where, param in _walk(cli, ("memstrata",))
        if isinstance(param, click.Option) and not (param.help or "").strip()
    ]
    assert missing == []


@pytest.mark.parametrize("before", [True, False])
def test_workspace_and_group_before_or_after_the_command(tmp_path: Path, before: bool) -> None:
    root = str(tmp_path / "root")
    where = ["-w", root, "--group", "team"]
    assert run(*where, "init").exit_code == 0  # before
    args = (
        [*where, "remember", "The build uses tox"]
        if before
        else ["remember", "The build uses tox", *where]
    )
    assert run(*args).exit_code == 0
    listed = json.loads(run("list", "--json", "-w", root, "-g", "team").output)
    assert [item["text"] for item in listed] == ["The build uses tox"]
    assert (tmp_path / "root" / "groups" / "team").is_dir()


def test_the_option_after_the_command_wins(tmp_path: Path) -> None:
    first, second = str(tmp_path / "a"), str(tmp_path / "b")
    for path in (first, second):
        assert run("init", "-w", path).exit_code == 0
    assert run("-w", first, "remember", "Kept in b", "-w", second).exit_code == 0
    assert json.loads(run("list", "--json", "-w", first).output) == []
    assert len(json.loads(run("list", "--json", "-w", second).output)) == 1


def test_record_turn_with_options_and_tool_calls(home: str) -> None:
    calls = json.dumps([{"name": "ls", "args": {"path": "/tmp"}}])
    result = run(
        "record-turn", "-w", home, "-s", "s1", "-u", "list tmp", "-a", "done",
        "--tool-calls", calls, "--json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    turn = json.loads(result.output)
    assert turn["session"] == "s1" and turn["seq"] == 1
    shown = json.loads(run("session", "show", "s1", "-w", home, "--json").output)
    assert len(shown) == 1 and "ls" in json.dumps(shown)


def test_record_turn_from_stdin(home: str) -> None:
    body = {"session": "s2", "user": "hi", "assistant": "hello", "meta": {"hook": "bash"}}
    result = run("-w", home, "record-turn", "--stdin", input=json.dumps(body))
    assert result.exit_code == 0, result.output
    assert "turn 1 of session s2" in result.output
    again = run("-w", home, "record-turn", "--stdin", input=json.dumps(body))
    assert "turn 2 of session s2" in again.output


@pytest.mark.parametrize(
    ("args", "stdin", "message"),
    [
        (("-u", "a", "-a", "b"), None, "needs --session"),
        (("-s", "x", "--tool-calls", "[nope"), None, "--tool-calls is not valid JSON"),
        (("-s", "x", "--tool-calls", "3"), None, "JSON array"),
        (("-s", "x", "--meta", "[1]"), None, "meta must be a JSON object"),
        (("--stdin",), "[1, 2]", "one JSON object"),
        (("--stdin",), '{"session": "x", "usr": "typo"}', "unknown keys"),
    ],
)
def test_record_turn_refuses_bad_input_in_one_line(
    home: str, args: tuple[str, ...], stdin: str | None, message: str
) -> None:
    result = CliRunner().invoke(cli, ["record-turn", "-w", home, *args], input=stdin)
    assert result.exit_code == 1
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_lessons_add_counts_a_repeat(home: str) -> None:
    args = ("lessons", "add", "-w", home, "--tool", "grep", "--error", "exit status 2")
    first = json.loads(run(*args, "--args", '{"pattern": "x"}', "--json").output)
    second = json.loads(run(*args, "--json").output)
    assert first["id"] == second["id"] and second["hits"] == 2
    listed = json.loads(run("lessons", "list", "-w", home, "--json").output)
    assert [lesson["tool"] for lesson in listed] == ["grep"]


def test_a_session_seen_only_by_observe_is_listed(home: str) -> None:
    assert run("observe", "-w", home, "-s", "s1", "My name is Alice.").exit_code == 0
    assert "s1" in run("session", "list", "-w", home).output
    listed = json.loads(run("session", "list", "-w", home, "--json").output)
    assert [(info["session"], info["turns"]) for info in listed] == [("s1", 0)]
    assert run("record-turn", "-w", home, "-s", "s1", "-u", "a", "-a", "b").exit_code == 0
    listed = json.loads(run("session", "list", "-w", home, "--json").output)
    assert [(info["session"], info["turns"]) for info in listed] == [("s1", 1)]


def test_context_has_a_default_budget(home: str) -> None:
    assert run("remember", "-w", home, "The deploy target is fly.io").exit_code == 0
    result = run("context", "-w", home, "where do we deploy?")
    assert result.exit_code == 0, result.output
    assert "fly.io" in result.output and "of 2000 tokens" in result.output


def test_plain_logs_off_a_terminal_are_one_line_per_record() -> None:
    root = logging.getLogger()
    saved, level = root.handlers[:], root.level
    root.handlers.clear()
    stream = io.StringIO()
    try:
        assert plain_logs(stream)
        session = "a" * 120
        logging.getLogger("mcp.test").info("session %s\nsecond line", session)
        assert not plain_logs(stream)  # configured once
    finally:
        root.handlers[:] = saved
        root.setLevel(level)
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and session in lines[0] and "\\nsecond line" in lines[0]


def test_plain_logs_leave_a_terminal_alone() -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    root = logging.getLogger()
    saved = root.handlers[:]
    root.handlers.clear()
    try:
        assert not plain_logs(Tty())
        assert root.handlers == []
    finally:
        root.handlers[:] = saved


def test_observe_into_a_pipe_keeps_each_capture_on_one_line(home: str) -> None:
    """A hook parses observe's output: an id must not wrap onto a line of its own."""
    text = "Remember that the quarterly deploy window for the billing service is Friday 18:00 UTC."
    done = subprocess.run(
        [sys.executable, "-m", "memstrata", "observe", text, "-w", home],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": SRC, "COLUMNS": "", "PATH": "/usr/bin:/bin"},
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines and all(" -> m" in line for line in lines), done.stdout
