"""``memstrata export`` and ``memstrata import``: a workspace moved between a
folder and a database (or two folders), as its files (``memory.transfer``)."""

from __future__ import annotations

import os

import click

from ..config import local_folder, settings_from_env, workspace_location
from ..memory import Memory
from ..memory.transfer import TransferReport
from .base import console, json_option, open_memory, print_json, workspace_options

__all__ = ["export_command", "import_command"]


@click.command("export")
@workspace_options
@click.option("--to", "to", required=True, metavar="DIR", help="A new or empty folder.")
@json_option
def export_command(workspace: str | None, group: str | None, to: str, as_json: bool) -> None:
    """Write the workspace's files into DIR: an ordinary workspace folder
    (MEMORY.md with its ids, notes, transcripts ...), from a folder or a
    postgresql:// URL alike."""
    folder = local_folder(to)
    with open_memory(workspace, group) as memory:
        report = memory.export_to(folder)
    _show(report, as_json, "exported")


@click.command("import")
@click.argument("source", metavar="DIR")
@click.option(
    "--into",
    "into",
    default=None,
    metavar="PATH|URL",
    help="The workspace to load it into (a folder or a postgresql:// URL; "
    "default: --workspace, $MEMSTRATA_DATABASE_URL, $MEMSTRATA_HOME).",
)
@click.option("--group", "-g", default=None, metavar="NAME", help="The group (tenant) to load.")
@click.option("--from-group", default=None, metavar="NAME", help="The group of DIR to read.")
@click.option("--dry-run", is_flag=True, help="Report what would change; change nothing.")
@json_option
def import_command(
    source: str,
    into: str | None,
    group: str | None,
    from_group: str | None,
    dry_run: bool,
    as_json: bool,
) -> None:
    """Load the workspace at DIR into another (idempotent: equal files are
    left alone; a second run changes nothing)."""
    workspace_location(source)  # a bad location is one line, before anything opens
    if into is None:
        with open_memory(None, group) as memory:
            report = memory.import_from(source, from_group, dry_run=dry_run)
    else:
        env = settings_from_env(os.environ)
        with Memory.open(into, group, **env) as memory:
            report = memory.import_from(source, from_group, dry_run=dry_run)
    _show(report, as_json, "would change" if dry_run else "imported")


def _show(report: TransferReport, as_json: bool, verb: str) -> None:
    if as_json:
        print_json(report.to_dict())
        return
    changed = len(report.created) + len(report.updated)
    console.print(
        f"{report.source} -> {report.target}: {verb} {changed} file(s), {report.bytes} bytes"
    )
    if report.updated or report.unchanged or report.kept:
        console.print(
            f"  created {len(report.created)}, updated {len(report.updated)}, "
            f"unchanged {len(report.unchanged)}, kept (not in the source) {len(report.kept)}"
        )
