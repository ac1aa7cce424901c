"""``memstrata mcp --print-config CLIENT``: the snippet that adds this server to an MCP client.

``attach(command)`` adds the option to the ``mcp`` command: with it, the
command prints the client's snippet (``integrations.clients``) on stdout and
where it goes on stderr, and starts no server. The snippet starts this
``memstrata`` (its absolute path when it is on PATH: desktop apps do not see
a shell's PATH) with the same ``--workspace``/``--group`` as given, the
workspace made absolute.
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path
from typing import Any

import click

from ..config import resolve_root
from ..errors import MemstrataError
from ..integrations.clients import CLIENTS, shell_word, snippet, where
from ..storage.workspace import Workspace

__all__ = ["attach", "server_command"]


def attach(command: click.Command) -> click.Command:
    """Give ``command`` (the ``mcp`` command) the ``--print-config`` option."""
    command.params.append(
        click.Option(
            ["--print-config"],
            type=click.Choice(CLIENTS),
            default=None,
            metavar="CLIENT",
            help="Print the config snippet that adds this server to CLIENT "
            f"({', '.join(CLIENTS)}) and exit; starts no server.",
        )
    )
    serve = command.callback
    if serve is None:  # pragma: no cover - the mcp command has a callback
        raise TypeError("attach needs a command with a callback")

    @functools.wraps(serve)
    def callback(*args: Any, print_config: str | None = None, **options: Any) -> Any:
        if print_config is None:
            return serve(*args, **options)
        program, arguments = server_command(options.get("workspace"), options.get("group"))
        click.echo(snippet(print_config, program, arguments), nl=False)
        click.echo(where(print_config, program, arguments), err=True)
        if not _exists(arguments[2], options.get("group")):
            init = "memstrata init " + " ".join(shell_word(word) for word in arguments[1:])
            click.echo(f"The workspace does not exist yet: create it first with {init}", err=True)
        return None

    command.callback = callback
    return command


def server_command(workspace: str | None, group: str | None) -> tuple[str, list[str]]:
    """The program and arguments that serve this workspace over MCP (stdio)."""
    root = resolve_root(workspace, os.environ)
    location = root if isinstance(root, str) else str(Path(root).expanduser().resolve())
    arguments = ["mcp", "--workspace", location]
    if group:
        arguments += ["--group", group]
    return _program(), arguments


def _exists(location: str, group: str | None) -> bool:
    """Whether the workspace at ``location`` exists (a database URL: assumed)."""
    if "://" in location:
        return True
    try:
        return Workspace.locate(Path(location), group).exists()
    except MemstrataError:  # a malformed group: the server will say so
        return True


def _program() -> str:
    """The running ``memstrata`` script, else the one on PATH, else the bare name."""
    import shutil  # only when a snippet is printed: the CLI starts without it

    script = Path(sys.argv[0])
    if script.name == "memstrata" and script.is_file():
        return str(script.absolute())
    found = shutil.which("memstrata")
    return str(Path(found).absolute()) if found else "memstrata"
