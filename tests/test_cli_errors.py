"""The CLI never prints a traceback: every failure is one line on stderr and a
non-zero exit (bytes that are not UTF-8 in argv, stdin or memstrata.toml, a
library error, a bug)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import memstrata
from memstrata import InvalidInput, Memory
from memstrata.cli import cli

SRC = str(Path(memstrata.__file__).resolve().parent.parent)


def run(*args: str, input: bytes | str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)


def one_line(result: Result) -> str:
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    [line] = result.stderr.strip().splitlines()
    return line


@pytest.fixture
def home(tmp_path: Path) -> str:
    path = str(tmp_path / "cli-ws")
    assert run("init", "-w", path).exit_code == 0
    return path


@pytest.mark.slow
def test_argv_bytes_that_are_not_utf8_are_one_line_in_a_real_process(home: str) -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SRC, os.environ.get("PYTHONPATH", "")])}
    for command in (b"remember", b"search", b"observe"):
        done = subprocess.run(
            [sys.executable, "-m", "memstrata", command, b"-w", os.fsencode(home), b"a\xff b"],
            capture_output=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert done.returncode == 1, done.stderr
        assert b"Traceback" not in done.stderr
        [line] = done.stderr.decode().strip().splitlines()
        assert "not valid UTF-8" in line and "\\xff" in line
    assert run("list", "-w", home, "--json").output.strip() == "[]"  # nothing was stored


def test_argv_with_surrogates_is_refused_before_any_command_runs(home: str) -> None:
    line = one_line(run("remember", "-w", home, "my name is \udcff"))
    assert line.startswith("Error: argument 4 is not valid UTF-8")


def test_a_settings_file_that_is_not_utf8_is_named(home: str) -> None:
    (Path(home) / "memstrata.toml").write_bytes(b"[memory]\nmax_items = 5 # caf\xe9\n")
    line = one_line(run("status", "-w", home))
    assert "memstrata.toml" in line and "not valid UTF-8" in line and "byte 28" in line
    doctor = run("doctor", "-w", home)
    assert doctor.exit_code == 1 and "Traceback" not in doctor.output
    assert "not valid UTF-8" in doctor.output


def test_stdin_that_is_not_utf8_is_one_line(home: str) -> None:
    line = one_line(run("core", "set", "user", "-w", home, input=b"Name: Aziz \xff\n"))
    assert "standard input is not valid UTF-8" in line
    line = one_line(run("scan", "-w", home, input=b"I prefer tea.\nbad \xff\n"))
    assert "line 2 of standard input is not valid UTF-8" in line


def test_a_library_error_over_several_lines_is_printed_on_one(
    home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: Memory) -> None:
        raise InvalidInput("first line\nsecond line")

    monkeypatch.setattr(Memory, "status", refuse)
    assert one_line(run("status", "-w", home)) == "Error: first line second line"


def test_an_unexpected_exception_is_one_line_unless_debugging(
    home: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(self: Memory) -> None:
        raise KeyError("boom")

    monkeypatch.setattr(Memory, "status", broken)
    monkeypatch.delenv("MEMSTRATA_DEBUG", raising=False)
    line = one_line(run("status", "-w", home))
    assert line.startswith("Error: internal error: KeyError: 'boom'")
    assert "please report" in line and "MEMSTRATA_DEBUG=1" in line
    monkeypatch.setenv("MEMSTRATA_DEBUG", "1")
    with pytest.raises(KeyError, match="boom"):
        run("status", "-w", home)
