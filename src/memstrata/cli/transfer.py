"""``memstrata export`` and ``memstrata import``: a workspace moved between a
folder and a database (or two folders), as its files (``memory.transfer``),
and, with a KIND first, the importers and exporters of other agents' memory
(``cli.importers``, loaded only then).

* ``memstrata import DIR`` = ``memstrata import memstrata DIR``: the whole
  workspace at DIR copied file for file;
* ``memstrata import KIND SOURCE`` (``miqi``, ``qracer``, ``q15``, ``qanot``,
  ``nanoclaw``, ``openclaw``, ``markdown``, ``jsonl``, ``mem0``): SOURCE read
  as that agent's memory and taken in item by item;
* ``memstrata export --to DIR`` = ``memstrata export memstrata DIR``;
  ``memstrata export jsonl FILE``, ``memstrata export openclaw DIR``.
"""

from __future__ import annotations

import os

import click

from ..config import local_folder, settings_from_env, workspace_location
from ..memory import Memory
from ..memory.transfer import TransferReport
from .base import console, json_option, open_memory, print_json, workspace_options

__all__ = ["export_command", "import_command"]


_EXPORT_KINDS = ("memstrata", "jsonl", "openclaw", "markdown")


@click.command("export")
@workspace_options
@click.argument("kind", metavar="[KIND]", required=False)
@click.argument("dest", metavar="[DEST]", required=False)
@click.option("--to", "to", default=None, metavar="DIR", help="A new or empty folder.")
@json_option
def export_command(
    workspace: str | None,
    group: str | None,
    kind: str | None,
    dest: str | None,
    to: str | None,
    as_json: bool,
) -> None:
    """Write the workspace out. KIND memstrata (or --to DIR alone): its files
    into DIR, an ordinary workspace folder (MEMORY.md with its ids, notes,
    transcripts ...), from a folder or a postgresql:// URL alike. KIND jsonl:
    the live facts into a new JSONL file DEST; openclaw / markdown: MEMORY.md
    and memory/*.md into a new or empty folder DEST."""
    if kind is not None and kind not in _EXPORT_KINDS:
        raise click.UsageError(f"unknown export kind {kind!r}; one of: {', '.join(_EXPORT_KINDS)}")
    if (dest is None) == (to is None):
        raise click.UsageError("give the destination once: `export KIND DEST` or `export --to DIR`")
    target = dest if dest is not None else to
    assert target is not None  # noqa: S101
    if kind not in (None, "memstrata"):
        from .importers import export_kind

        export_kind(kind, target, workspace, group, as_json)
        return
    folder = local_folder(target)
    with open_memory(workspace, group) as memory:
        report = memory.export_to(folder)
    _show(report, as_json, "exported")


@click.command("import")
@click.argument("first", metavar="[KIND]")
@click.argument("second", metavar="SOURCE", required=False)
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
@click.option("--move", is_flag=True, help="q15 only: remove q15's turn files once imported.")
@json_option
def import_command(
    first: str,
    second: str | None,
    into: str | None,
    group: str | None,
    from_group: str | None,
    dry_run: bool,
    move: bool,
    as_json: bool,
) -> None:
    """Take memory in (idempotent: a second run adds nothing).

    `import DIR` (or `import memstrata DIR`): load the memstrata workspace at
    DIR into another, file for file. `import KIND SOURCE`: read SOURCE as
    KIND (miqi, qracer, q15, qanot, nanoclaw, openclaw, markdown, jsonl,
    mem0) and take each item in; SOURCE is never changed (but with --move,
    for q15). See docs/importers.md."""
    kind, source = ("memstrata", first) if second is None else (first, second)
    if kind != "memstrata":
        if from_group is not None:
            raise click.UsageError("--from-group is for `import memstrata DIR`")
        from .importers import import_kind

        import_kind(kind, source, into, group, dry_run=dry_run, move=move, as_json=as_json)
        return
    if move:
        raise click.UsageError("--move is for `import q15 DIR`")
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
