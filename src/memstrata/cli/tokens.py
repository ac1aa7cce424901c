"""``memstrata tokens add|list|revoke``: the bearer tokens of the memory
service (``memstrata serve --database``), one tenant (group) each, kept as
digests in the database (``postgres.tokens``)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

import click
from rich.table import Table
from rich.text import Text

from ..errors import InvalidInput
from .base import console, json_option, print_json

if TYPE_CHECKING:
    from ..postgres.connect import Database

__all__ = ["database_option", "database_url", "tokens_group"]

F = TypeVar("F", bound=Callable[..., Any])
ENV_DATABASE = "MEMSTRATA_DATABASE_URL"
SCHEMES = ("postgresql://", "postgres://")


def database_option(func: F) -> F:
    """``--database URL`` (or ``$MEMSTRATA_DATABASE_URL``), required."""
    return click.option(
        "--database",
        "database",
        envvar=ENV_DATABASE,
        show_envvar=True,
        required=True,
        metavar="URL",
        help="The PostgreSQL database (postgresql://user@host/db).",
    )(func)


def database_url(url: str) -> str:
    """``url`` if it names a PostgreSQL database, else ``InvalidInput``."""
    if not url.strip().lower().startswith(SCHEMES):
        raise InvalidInput(
            "--database (or $MEMSTRATA_DATABASE_URL) must be a postgresql:// URL, "
            "e.g. postgresql://memstrata@db.internal/memstrata"
        )
    return url.strip()


def _group_option(func: F) -> F:
    return click.option(
        "--group", "-g", required=True, metavar="NAME", help="The tenant the tokens serve."
    )(func)


@contextmanager
def _database(url: str) -> Iterator[Database]:
    from ..postgres.connect import Database

    database = Database(database_url(url), max_size=1)
    try:
        yield database
    finally:
        database.close()


@click.group(name="tokens")
def tokens_group() -> None:
    """Bearer tokens of the memory service (`memstrata serve --database`)."""


@tokens_group.command(name="add")
@_group_option
@click.option("--label", default="", help="A note saying who or what holds the token.")
@database_option
@json_option
def add_token(group: str, label: str, database: str, as_json: bool) -> None:
    """Make a token for GROUP; it is shown once (only its digest is kept)."""
    from ..postgres import tokens

    with _database(database) as db:
        token_id, token = tokens.add(db, group, label)
    if as_json:
        print_json({"id": token_id, "group": group, "label": label.strip(), "token": token})
        return
    click.echo(f"Token {token_id} for group {group!r}; shown once, keep it now:")
    click.echo(token)


@tokens_group.command(name="list")
@_group_option
@database_option
@json_option
def list_tokens(group: str, database: str, as_json: bool) -> None:
    """The tokens of GROUP, revoked ones too (never a secret)."""
    from ..postgres import tokens

    with _database(database) as db:
        found = tokens.list(db, group)
    if as_json:
        print_json([token.to_dict() for token in found])
        return
    if not found:
        console.print(f"Group {group!r} has no tokens.", markup=False)
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("id", "label", "created", "revoked"):
        table.add_column(column, overflow="fold")
    for token in found:
        revoked = token.revoked_at.strftime("%Y-%m-%d %H:%M") if token.revoked_at else ""
        table.add_row(
            token.id, Text(token.label), token.created_at.strftime("%Y-%m-%d %H:%M"), revoked
        )
    console.print(table)


@tokens_group.command(name="revoke")
@click.argument("token_id", metavar="ID")
@_group_option
@database_option
@json_option
def revoke_token(token_id: str, group: str, database: str, as_json: bool) -> None:
    """Revoke the token ID of GROUP (its id, or a unique prefix of at least 4 characters)."""
    from ..postgres import tokens

    with _database(database) as db:
        token = tokens.revoke(db, group, token_id)
    if as_json:
        print_json(token.to_dict())
    else:
        console.print(f"Revoked token {token.id} of group {group!r}.", markup=False)
