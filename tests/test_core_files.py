"""Core files beyond AGENT/USER/SOUL (issue 19, seed 002: q15 keeps and
injects every ``core/*.md``): any safe ``core/<name>.md`` is read, written,
listed and injected through the same guarded API, on a folder and on
PostgreSQL (also as a document by path); the three named ones stay the
defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstrata import InvalidInput, Memory
from memstrata.model import MAX_DOCUMENT_BYTES
from memstrata.stores import core
from memstrata.tools import dispatch

FAST = {"embedder": "none"}
REFUSED_NAMES = [
    "PROJECT",  # not .md
    "notes.txt",
    ".hidden.md",
    "sub/PROJECT.md",
    "../MEMORY.md",
    "core/PROJECT.md",
    " PROJECT.md",
    "-x.md",
    ".md",
    "\uff30ROJECT.md",  # a fullwidth letter: a form NFKC changes
    "P" * 121 + ".md",
    "",
]


def _core_section(memory: Memory) -> tuple[tuple[str, ...], str]:
    context = memory.build_context("hi", budget_tokens=4000)
    [section] = [s for s in context.sections if s.name == "Core"]
    return section.sources, section.text


def _exercise(memory: Memory) -> None:
    assert memory.core.write("PROJECT.md", "Ship memstrata 1.0 by June") == (
        "Ship memstrata 1.0 by June\n"
    )
    assert memory.core.read("PROJECT.md") == "Ship memstrata 1.0 by June\n"
    memory.core.write("agent", "You are careful.")
    memory.documents.edit_file("core/Team notes.md", lambda _: "Standups at 9\n")
    assert memory.core.read("Team notes.md") == "Standups at 9\n"
    volume = memory.workspace.volume
    assert core.listed(volume) == [
        "core/AGENT.md",
        "core/USER.md",
        "core/SOUL.md",
        "core/PROJECT.md",
        "core/Team notes.md",
    ]
    sources, text = _core_section(memory)
    assert sources[0] == "core/AGENT.md"
    assert {"core/PROJECT.md", "core/Team notes.md"} <= set(sources)
    assert "Ship memstrata 1.0 by June" in text and "Standups at 9" in text
    got = json.loads(dispatch(memory, "memory_get", {"path": "core/PROJECT.md"}))
    assert got["text"] == "Ship memstrata 1.0 by June"
    for name in REFUSED_NAMES:
        with pytest.raises(InvalidInput, match="core file must be one of"):
            memory.core.write(name, "x")
        with pytest.raises(InvalidInput, match="core file must be one of"):
            memory.core.read(name)
    with pytest.raises(InvalidInput, match="limit for a memory file"):
        memory.core.write("PROJECT.md", "x" * (MAX_DOCUMENT_BYTES + 1))
    assert memory.core.read("agent") == memory.core.read("AGENT.md") == "You are careful.\n"


def test_any_safe_core_file_in_a_folder(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", **FAST) as memory:
        _exercise(memory)
    assert (tmp_path / "ws" / "core" / "PROJECT.md").read_text() == "Ship memstrata 1.0 by June\n"


def test_any_safe_core_file_on_postgresql(postgres_url: str) -> None:
    import postgres_server

    with Memory.open(postgres_url, postgres_server.tenant("core"), **FAST) as memory:
        _exercise(memory)


def test_the_cli_sets_and_shows_any_core_file(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from memstrata.cli import cli

    home = str(tmp_path / "ws")
    Memory.open(home, **FAST).close()
    runner = CliRunner()
    done = runner.invoke(cli, ["core", "set", "PROJECT.md", "Ship by June", "-w", home])
    assert done.exit_code == 0 and "core/PROJECT.md" in done.output
    shown = runner.invoke(cli, ["core", "show", "PROJECT.md", "-w", home, "--json"])
    assert json.loads(shown.output) == {"name": "PROJECT.md", "text": "Ship by June\n"}
    assert "core/USER.md" in runner.invoke(cli, ["core", "set", "user", "x", "-w", home]).output
    refused = runner.invoke(cli, ["core", "set", "../MEMORY.md", "x", "-w", home])
    assert refused.exit_code != 0 and "core file must be one of" in refused.output
    assert "Traceback" not in refused.output
