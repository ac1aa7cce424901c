"""The ``memstrata`` command line (click + rich).

An entry point: it alone (with the servers) reads ``$MEMSTRATA_HOME`` and
``memstrata.toml``, then calls the library with explicit arguments. A
``MemstrataError`` becomes one line on stderr and exit status 1; usage
errors exit 2 (click's convention).

Start-up is kept cheap: this module imports click and nothing of the engine.
Each command lives in a module of ``memstrata.cli`` that is imported only when
that command runs (``COMMANDS``: name -> ``module:attribute``), so
``memstrata --version`` loads no engine, no rules and no embedder. To add a
command: define it in a module of your own and add ONE line to ``COMMANDS``.

``--workspace``/``--group`` are accepted before the command
(``memstrata -w W mcp``) as well as after it (``memstrata mcp -w W``); the
one after the command wins (``base.workspace_options``).
"""

from __future__ import annotations

import importlib
from typing import Any

import click

from .base import GLOBAL_GROUP, GLOBAL_WORKSPACE, Group

__all__ = ["ALIASES", "AMEND", "COMMANDS", "cli", "main"]

# name -> "module (relative to memstrata.cli):attribute", in the order `--help` lists them.
COMMANDS: dict[str, str] = {
    "init": "items:init",
    "status": "items:status",
    "list": "items:list_items",
    "get": "items:get",
    "remember": "items:remember",
    "supersede": "items:supersede",
    "delete": "items:delete",
    "forgotten": "items:forgotten",
    "restore": "items:restore",
    "accept-edit": "items:accept_edit",
    "flush": "items:flush",
    "compact": "items:compact",
    "scan": "items:scan",
    "observe": "items:observe",
    "record-turn": "turns:record_turn",
    "lessons": "turns:lessons",
    "doctor": "items:doctor",
    "demo": "items:demo",
    "search": "search:search",
    "context": "search:context",
    "reindex": "search:reindex",
    "mcp": "serve:mcp",
    "serve": "serve:serve_command",
    "bench": "serve:bench",
    "tokens": "tokens:tokens_group",
    "session": "layers:session_group",
    "core": "layers:core_group",
    "working": "layers:working_group",
    "semantic": "layers:semantic_group",
    "notes": "layers:notes_group",
    "export": "transfer:export_command",
    "import": "transfer:import_command",
    "ui": "ui:ui_command",
}
# Other names a command answers to (the Python API's and the MCP tools' words),
# not listed by `--help`.
ALIASES: dict[str, str] = {"forget": "delete", "correct": "supersede"}
# name -> "module:function" that amends the command when it is loaded (another module's options).
AMEND: dict[str, list[str]] = {
    "mcp": ["clients:attach"],  # mcp --print-config CLIENT
}


def _load(name: str) -> click.Command:
    module, _, attribute = COMMANDS[name].partition(":")
    command = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)
    if not isinstance(command, click.Command):
        raise TypeError(f"{COMMANDS[name]} is not a click command")
    for amend in AMEND.get(name, ()):
        module, _, attribute = amend.partition(":")
        amended = getattr(importlib.import_module(f"{__name__}.{module}"), attribute)(command)
        if not isinstance(amended, click.Command):
            raise TypeError(f"{amend} did not return a click command")
        command = amended
    return command


class _Commands(dict[str, click.Command]):
    """``Group.commands`` that imports a command of ``COMMANDS`` when first
    looked up (``commands[name]`` and ``commands.get(name)`` both do)."""

    def __missing__(self, name: str) -> click.Command:
        if name not in COMMANDS:
            raise KeyError(name)
        command = self[name] = _load(name)
        return command

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default


class LazyGroup(Group):
    """A group whose commands are imported when first looked up (``COMMANDS``)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = _Commands(self.commands)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [*COMMANDS, *sorted(set(self.commands) - set(COMMANDS))]

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return super().get_command(ctx, ALIASES.get(cmd_name, cmd_name))


def _print_version(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from .. import __version__

    click.echo(f"memstrata, version {__version__}")
    ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
@click.option(
    "--workspace",
    "-w",
    GLOBAL_WORKSPACE,
    default=None,
    metavar="PATH",
    help="Workspace root (or a postgresql:// URL) for the command that follows. "
    "Default: $MEMSTRATA_HOME, else ~/.memstrata/workspace.",
)
@click.option(
    "--group",
    "-g",
    GLOBAL_GROUP,
    default=None,
    metavar="NAME",
    help="Use the workspace of this group (ROOT/groups/NAME) for the command that follows.",
)
def cli(**_globals: Any) -> None:
    """memstrata: layered, local-first memory for LLM agents."""
    import os

    from ..capture import rulecache
    from ..embed import onnx

    folder = rulecache.dir_from(os.environ)
    rulecache.use_dir(folder)
    onnx.use_dir(folder)  # the embedding model's integrity stamps


def main() -> None:
    """Console-script entry point."""
    cli(prog_name="memstrata")
