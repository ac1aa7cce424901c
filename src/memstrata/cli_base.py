"""What every ``memstrata`` command shares: the console, the error handling,
the ``--workspace``/``--group``/``--json`` options and opening the workspace."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import click
from rich.console import Console

from .config import load_settings, resolve_root
from .errors import MemstrataError
from .memory import Memory
from .model import Source
from .workspace import Workspace

__all__ = [
    "Group",
    "console",
    "json_option",
    "locate",
    "open_memory",
    "print_json",
    "source_option",
    "workspace_options",
]

F = TypeVar("F", bound=Callable[..., Any])
console = Console(highlight=False)


class Group(click.Group):
    """Turns library errors into one line on stderr instead of a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemstrataError as exc:
            raise click.ClickException(str(exc)) from exc


def workspace_options(func: F) -> F:
    """``--workspace`` and ``--group``, accepted by every command."""
    func = click.option(
        "--group",
        "-g",
        default=None,
        metavar="NAME",
        help="Use the workspace of this group (ROOT/groups/NAME).",
    )(func)
    func = click.option(
        "--workspace",
        "-w",
        default=None,
        metavar="PATH",
        help="Workspace root. Default: $MEMSTRATA_HOME, else ~/.memstrata/workspace.",
    )(func)
    return func


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def source_option(help: str) -> Callable[[F], F]:
    """``--source``: who a text comes from (one of ``Source``)."""
    return click.option(
        "--source",
        type=click.Choice([member.value for member in Source]),
        default=Source.USER.value,
        show_default=True,
        help=help,
    )


def locate(workspace: str | None, group: str | None) -> Workspace:
    return Workspace.locate(resolve_root(workspace), group)


@contextmanager
def open_memory(workspace: str | None, group: str | None) -> Iterator[Memory]:
    ws = locate(workspace, group)
    ws.require()
    settings = load_settings(ws.path)
    with Memory.open(ws.root, ws.group, create=False, **settings) as memory:
        yield memory


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
