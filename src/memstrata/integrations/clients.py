"""The MCP configuration snippet of each MCP client, for ``memstrata mcp --print-config``.

Each client documents its own file and shape for a local (stdio) server:

* ``claude-desktop`` — ``claude_desktop_config.json``: ``{"mcpServers": {name: {command, args}}}``;
* ``claude-code``    — ``.mcp.json`` at a project's root (or ``claude mcp add``):
  ``{"mcpServers": {name: {"type": "stdio", command, args, env}}}``;
* ``cursor``         — ``~/.cursor/mcp.json`` or ``.cursor/mcp.json``: ``{"mcpServers": ...}``;
* ``vscode``         — ``.vscode/mcp.json``: ``{"servers": {name: {"type": "stdio", ...}}}``;
* ``codex``          — ``~/.codex/config.toml``: a ``[mcp_servers.<name>]`` table.

``snippet`` gives the text to paste (JSON or TOML, nothing else: it parses as
it is); ``where`` says which file it goes in. Pure functions, no imports.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

__all__ = ["CLIENTS", "SERVER_NAME", "shell_word", "snippet", "where"]

SERVER_NAME = "memstrata"

_WHERE = {
    "claude-desktop": (
        "Merge into claude_desktop_config.json (Settings > Developer > Edit Config): "
        "~/Library/Application Support/Claude/ on macOS, %APPDATA%\\Claude\\ on Windows; "
        "then restart Claude Desktop."
    ),
    "claude-code": (
        "Save as .mcp.json at the project's root (shared with the project), or run: "
        "claude mcp add --scope user {name} -- {line}"
    ),
    "cursor": "Merge into ~/.cursor/mcp.json (every project) or .cursor/mcp.json (one project).",
    "vscode": (
        "Merge into .vscode/mcp.json (this workspace) or the user mcp.json "
        "(command palette: MCP: Open User Configuration)."
    ),
    "codex": "Append to ~/.codex/config.toml (or .codex/config.toml of a trusted project).",
}

CLIENTS = tuple(_WHERE)


def snippet(client: str, command: str, args: Sequence[str]) -> str:
    """The config text for ``client`` that starts ``command args`` as a stdio server."""
    arguments = list(args)
    if client == "codex":
        return (
            f"[mcp_servers.{SERVER_NAME}]\n"
            f"command = {_toml(command)}\n"
            f"args = [{', '.join(_toml(arg) for arg in arguments)}]\n"
        )
    server: dict[str, object] = {"command": command, "args": arguments}
    if client == "claude-code":
        server = {"type": "stdio", **server, "env": {}}
    elif client == "vscode":
        server = {"type": "stdio", **server}
    elif client not in ("claude-desktop", "cursor"):
        raise ValueError(f"unknown MCP client {client!r}; known: {', '.join(CLIENTS)}")
    key = "servers" if client == "vscode" else "mcpServers"
    return json.dumps({key: {SERVER_NAME: server}}, indent=2, ensure_ascii=False) + "\n"


def where(client: str, command: str, args: Sequence[str]) -> str:
    """Where ``client`` reads the snippet from (one line for a person)."""
    line = " ".join(shell_word(part) for part in (command, *args))
    return _WHERE[client].format(name=SERVER_NAME, line=line)


def _toml(text: str) -> str:
    """A TOML basic string (JSON's escapes, less ``\\/`` which json never writes)."""
    return json.dumps(text, ensure_ascii=False)


def shell_word(word: str) -> str:
    """``word`` as one word of a POSIX shell command line (quoted when it must be)."""
    if word and all(c.isalnum() or c in "/._-=:~+@%" for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"
