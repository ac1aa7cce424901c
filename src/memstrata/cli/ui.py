"""``memstrata ui``: serve the local web inspector of a workspace (``memstrata.ui``).

Importing this module costs only click: the web libraries are imported when
the command runs, so ``memstrata --version`` stays fast.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import click

from ..config import settings_from_env
from ..memory import Memory
from .base import console, database_url, locate, settings_of, workspace_options

__all__ = ["ui_command"]


@click.command(name="ui")
@workspace_options
@click.option(
    "--host",
    default="127.0.0.1",
    show_default=True,
    help="The address to bind; beyond loopback (e.g. 0.0.0.0) needs --token.",
)
@click.option(
    "--port", "-p", type=click.IntRange(1, 65535), default=8766, show_default=True, help="The port."
)
@click.option(
    "--token",
    envvar="MEMSTRATA_UI_TOKEN",
    show_envvar=True,
    default=None,
    help="A secret the browser must present (needed beyond loopback): open the printed "
    "address once, a cookie keeps it.",
)
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="HOST",
    help="One more name the browser may address the server by (a DNS name, a proxy's); repeatable.",
)
@click.option("--no-open", is_flag=True, help="Do not open the browser.")
def ui_command(
    workspace: str | None,
    group: str | None,
    host: str,
    port: int,
    token: str | None,
    allowed_hosts: tuple[str, ...],
    no_open: bool,
) -> None:
    """Look at your memory: a local web inspector (Ctrl-C stops it).

    Overview, facts with their history (correct, forget, restore), search
    with why each hit ranked, sessions and layers. With --group, only that
    group's memory is reachable.
    """
    from ..ui import require, serve

    require()
    serve(
        _opener(workspace, group),
        host=host,
        port=port,
        token=token,
        open_browser=not no_open,
        allowed=allowed_hosts,
        announce=lambda line: console.print(line, markup=False, highlight=False),
    )


def _opener(workspace: str | None, group: str | None) -> Callable[[], Memory]:
    """What opens the workspace as ``open_memory`` does, checked now (a missing
    workspace fails here, in one line) and opened later, while the server answers."""
    url = database_url(workspace)
    if url is not None:
        return lambda: Memory.open(url, group, create=False, **settings_from_env(os.environ))
    ws = locate(workspace, group)
    ws.require()
    settings = settings_of(ws)
    return lambda: Memory.open(ws.root, ws.group, create=False, **settings)
