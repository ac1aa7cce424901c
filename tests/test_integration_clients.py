"""``memstrata mcp --print-config CLIENT``: each client's snippet parses, has the
shape that client documents, and starts this memstrata on this workspace."""

from __future__ import annotations

import json
import os
import stat
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memstrata.cli import cli
from memstrata.integrations.clients import CLIENTS, snippet


@pytest.fixture
def program(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ``memstrata`` script that runs this source tree, as the running program."""
    script = tmp_path / "bin" / "memstrata"
    script.parent.mkdir()
    source = Path(__file__).resolve().parents[1] / "src"
    script.write_text(f'#!/bin/sh\nPYTHONPATH={source} exec {sys.executable} -m memstrata "$@"\n')
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setattr(sys, "argv", [str(script)])
    return script


def _print(*args: str) -> tuple[str, str]:
    done = CliRunner().invoke(cli, ["mcp", "--print-config", *args])
    assert done.exit_code == 0, done.output
    return done.stdout, done.stderr


def _server(client: str, text: str) -> dict[str, Any]:
    if client == "codex":
        return dict(tomllib.loads(text)["mcp_servers"]["memstrata"])
    data = json.loads(text)
    assert list(data) == ["servers" if client == "vscode" else "mcpServers"]
    return dict(data["servers" if client == "vscode" else "mcpServers"]["memstrata"])


@pytest.mark.parametrize("client", CLIENTS)
def test_each_snippet_parses_and_names_this_memstrata(
    client: str, program: Path, tmp_path: Path
) -> None:
    ws = tmp_path / "my workspace"
    out, err = _print(client, "--workspace", str(ws), "--group", "alice")
    server = _server(client, out)
    assert server["command"] == str(program)
    assert server["args"] == ["mcp", "--workspace", str(ws.resolve()), "--group", "alice"]
    if client in ("vscode", "claude-code"):
        assert server["type"] == "stdio"
    assert err.strip()  # where it goes, for a person, on stderr only
    assert f"memstrata init --workspace '{ws.resolve()}' --group alice" in err
    assert not ws.exists()  # printing starts no server and creates nothing


def test_where_the_snippet_goes(program: Path) -> None:
    assert "claude_desktop_config.json" in _print("claude-desktop")[1]
    assert "claude mcp add --scope user memstrata -- " in _print("claude-code")[1]
    assert ".cursor/mcp.json" in _print("cursor")[1]
    assert ".vscode/mcp.json" in _print("vscode")[1]
    assert "~/.codex/config.toml" in _print("codex")[1]


def test_the_default_workspace_is_memstrata_home_made_absolute(
    program: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MEMSTRATA_HOME", "relative-home")
    server = _server("cursor", _print("cursor")[0])
    assert server["args"] == ["mcp", "--workspace", str(tmp_path / "relative-home")]


def test_an_unknown_client_is_a_usage_error() -> None:
    done = CliRunner().invoke(cli, ["mcp", "--print-config", "emacs"])
    assert done.exit_code == 2 and "emacs" in done.output


@pytest.mark.parametrize("client", CLIENTS)
def test_strings_that_need_escaping_survive(client: str) -> None:
    odd = 'C:\\Users\\Ana "A" Ünal\\memstrata'
    server = _server(client, snippet(client, odd, ["mcp", "--workspace", odd]))
    assert server["command"] == odd and server["args"][-1] == odd


@pytest.mark.slow
def test_the_claude_code_snippet_starts_a_working_server(program: Path, tmp_path: Path) -> None:
    pytest.importorskip("mcp", reason="the mcp extra is not installed")
    import anyio
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    ws = tmp_path / "ws"
    out, err = _print("claude-code", "-w", str(ws))
    assert "memstrata init" in err  # the server needs the workspace to exist
    assert CliRunner().invoke(cli, ["init", "-w", str(ws)]).exit_code == 0
    server = _server("claude-code", out)

    async def tools() -> list[str]:
        params = StdioServerParameters(
            command=server["command"],
            args=server["args"],
            env={"PATH": os.environ.get("PATH", ""), **server["env"]},
        )
        with (tmp_path / "server.log").open("w") as log:
            async with (
                stdio_client(params, errlog=log) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                return [tool.name for tool in (await session.list_tools()).tools]

    names = anyio.run(tools)
    assert "memory_search" in names
    assert (ws / "MEMORY.md").exists()
