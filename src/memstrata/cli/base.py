"""What every ``memstrata`` command shares: the console, the error handling,
the ``--workspace``/``--group``/``--json`` options and opening the workspace.

The CLI never prints a traceback (``Group``): a ``MemstrataError`` is one
line on stderr (``Error: ...``, its line breaks made spaces) and exit status
1; any other exception is one line too, ``Error: internal error: ...; please
report it``, unless ``$MEMSTRATA_DEBUG`` is set (then it propagates, with its
traceback). Arguments and standard input must be UTF-8: bytes that are not
(which Python turns into lone surrogates) are refused in one line before any
command runs, rather than stored as U+FFFD as the library would
(``model.valid_text``): a person can retype them, a lost character is lost.
"""

from __future__ import annotations

import errno
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click

from ..errors import InvalidInput, MemstrataError

if TYPE_CHECKING:
    from rich.console import Console

    from ..memory import Memory
    from ..storage.workspace import Workspace

__all__ = [
    "GLOBAL_GROUP",
    "GLOBAL_WORKSPACE",
    "Group",
    "console",
    "json_option",
    "locate",
    "memory_opener",
    "open_memory",
    "print_json",
    "read_stdin",
    "settings_of",
    "stdin_lines",
    "source_option",
    "workspace_options",
]

F = TypeVar("F", bound=Callable[..., Any])

# The root group's own --workspace/--group (given before the command), by parameter name.
GLOBAL_WORKSPACE = "global_workspace"
GLOBAL_GROUP = "global_group"

_console: Console | None = None


def __getattr__(name: str) -> Any:
    """``console``: the rich console, made on first use (rich is not cheap to
    import); into a pipe or a file its lines are not wrapped (a hook reading
    ``observe``'s output must not find an id cut at column 80)."""
    global _console
    if name != "console":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _console is None:
        from rich.console import Console

        _console = Console(highlight=False, soft_wrap=not sys.stdout.isatty())
    return _console


if TYPE_CHECKING:
    console: Console


ENV_DEBUG = "MEMSTRATA_DEBUG"

# What click itself turns into a message and an exit status (EOFError and
# KeyboardInterrupt become Abort; a broken pipe is a quiet exit).
_CLICKS = (click.ClickException, click.exceptions.Abort, click.exceptions.Exit, EOFError)


class Group(click.Group):
    """Every failure one line on stderr and a non-zero exit (see the module)."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if ctx.parent is None:  # the whole command line
            _check_utf8(args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except _CLICKS:
            raise
        except MemstrataError as exc:
            if os.environ.get(ENV_DEBUG):
                raise
            raise click.ClickException(_one_line(str(exc))) from exc
        except Exception as exc:
            if os.environ.get(ENV_DEBUG) or _broken_pipe(exc):
                raise
            raise click.ClickException(
                f"internal error: {type(exc).__name__}: {_one_line(str(exc))}; please report it "
                f"(rerun with {ENV_DEBUG}=1 for the traceback)"
            ) from exc


def _one_line(message: str) -> str:
    return " ".join(message.split())


def _broken_pipe(exc: Exception) -> bool:
    return isinstance(exc, OSError) and exc.errno == errno.EPIPE


def _check_utf8(args: Sequence[str]) -> None:
    """Refuse an argument that was not UTF-8 (its bytes became lone surrogates)."""
    for number, arg in enumerate(args, start=1):
        try:
            arg.encode("utf-8")
        except UnicodeEncodeError:
            try:
                shown = repr(os.fsencode(arg))
            except UnicodeEncodeError:
                shown = ascii(arg)
            raise click.ClickException(
                f"argument {number} is not valid UTF-8: {shown[:80]}; memstrata takes UTF-8 "
                "text (is the terminal's encoding UTF-8?)"
            ) from None


def _decoded(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InvalidInput(f"{what} is not valid UTF-8 at byte {exc.start}") from None


def read_stdin() -> str:
    """All of standard input, which must be UTF-8 (``InvalidInput``)."""
    return _decoded(sys.stdin.buffer.read(), "standard input")


def stdin_lines() -> Iterator[str]:
    """The lines of standard input without their line breaks, each UTF-8."""
    for number, raw in enumerate(sys.stdin.buffer, start=1):
        yield _decoded(raw, f"line {number} of standard input").rstrip("\r\n")


def _global(name: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option's callback: its value, else the root group's option ``name``
    (the same option given before the command)."""

    def fallback(ctx: click.Context, _param: click.Parameter, value: Any) -> Any:
        if value is None:
            return ctx.find_root().params.get(name)
        return value

    return fallback


def workspace_options(func: F) -> F:
    """``--workspace`` and ``--group``, accepted by every command, after it or
    (as the root group's options) before it; the one after the command wins."""
    func = click.option(
        "--group",
        "-g",
        default=None,
        metavar="NAME",
        callback=_global(GLOBAL_GROUP),
        help="Use the workspace of this group (ROOT/groups/NAME).",
    )(func)
    func = click.option(
        "--workspace",
        "-w",
        default=None,
        metavar="PATH",
        callback=_global(GLOBAL_WORKSPACE),
        help="Workspace root. Default: $MEMSTRATA_HOME, else ~/.memstrata/workspace.",
    )(func)
    return func


def json_option(func: F) -> F:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON.")(func)


def source_option(help: str) -> Callable[[F], F]:
    """``--source``: who a text comes from (one of ``Source``)."""
    from ..model import Source

    return click.option(
        "--source",
        type=click.Choice([member.value for member in Source]),
        default=Source.USER.value,
        show_default=True,
        help=help,
    )


def locate(workspace: str | None, group: str | None) -> Workspace:
    """The workspace folder of ``--workspace``/``--group`` (a command that
    needs a folder: a database URL is refused in one line)."""
    from ..config import local_folder, resolve_root
    from ..storage.workspace import Workspace

    found = resolve_root(workspace, os.environ)
    return Workspace.locate(local_folder(found) if isinstance(found, str) else found, group)


def database_url(workspace: str | None) -> str | None:
    """The database URL ``--workspace`` (or ``$MEMSTRATA_DATABASE_URL``) names, if any."""
    from ..config import resolve_root

    found = resolve_root(workspace, os.environ)
    return found if isinstance(found, str) else None


def settings_of(ws: Workspace) -> dict[str, Any]:
    """The settings of ``ws``: its ``memstrata.toml``, the ``MEMSTRATA_*``
    environment variables over it (``config.ENV_SETTINGS``)."""
    from ..config import workspace_settings

    return workspace_settings(ws.path, os.environ)


@contextmanager
def open_memory(workspace: str | None, group: str | None) -> Iterator[Memory]:
    with memory_opener(workspace, group)() as memory:
        yield memory


def memory_opener(workspace: str | None, group: str | None) -> Callable[[], Memory]:
    """What opens the memory of ``--workspace``/``--group``: the workspace is
    located and checked now (a missing one fails here), opened when called."""
    from ..config import settings_from_env

    url = database_url(workspace)
    if url is not None:  # settings from the environment only: no memstrata.toml there
        fields = settings_from_env(os.environ)

        def open_database() -> Memory:
            from ..memory import Memory

            return Memory.open(url, group, create=False, **fields)

        return open_database
    ws = locate(workspace, group)
    ws.require()
    settings = settings_of(ws)

    def open_folder() -> Memory:
        from ..memory import Memory

        return Memory.open(ws.root, ws.group, create=False, **settings)

    return open_folder


def print_json(data: Any) -> None:
    click.echo(json.dumps(data, ensure_ascii=False, indent=2))
