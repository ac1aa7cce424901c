"""The item commands of ``memstrata``: init, status, list, get, remember,
supersede, delete, forgotten, restore, accept-edit, flush, compact, scan,
observe, doctor and demo (imported when one of them runs: see ``cli``)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..capture.scan import Entry, RuleSet, load_rules
from ..capture.scan import scan as scan_text
from ..capture.secrets import redact
from ..config import settings_from_env
from ..memory import Memory
from ..model import Item
from ..storage.workspace import init_workspace
from .base import (
    console,
    database_url,
    json_option,
    locate,
    open_memory,
    print_json,
    settings_of,
    source_option,
    stdin_lines,
    workspace_options,
)

__all__ = [
    "accept_edit",
    "compact",
    "delete",
    "demo",
    "doctor",
    "flush",
    "forgotten",
    "get",
    "init",
    "list_items",
    "observe",
    "remember",
    "restore",
    "scan",
    "status",
    "supersede",
]


def _item_table(items: list[Item]) -> Table:
    table = Table(show_edge=False, pad_edge=False)
    for column in ("id", "category", "text", "source", "session", "created"):
        table.add_column(column, overflow="fold" if column == "text" else "ellipsis")
    for item in items:
        table.add_row(
            item.id,
            Text(item.category),
            Text(item.text, style="" if item.is_live else "strike"),
            item.source.value,
            Text(item.session or ""),
            item.created_at.strftime("%Y-%m-%d %H:%M"),
        )
    return table


@click.command()
@workspace_options
@json_option
def init(workspace: str | None, group: str | None, as_json: bool) -> None:
    """Create the workspace layout (never overwrites a file)."""
    url = database_url(workspace)
    if url is not None:
        with Memory.open(url, group, **settings_from_env(os.environ)) as memory:
            where = memory.workspace.where
        if as_json:
            print_json({"workspace": where, "created": []})
        else:
            console.print(Text.assemble("Initialised memstrata workspace at ", (where, "bold")))
        return
    ws = locate(workspace, group)
    created = init_workspace(ws)
    with Memory.open(ws.root, ws.group, **settings_of(ws)):
        pass
    if as_json:
        print_json({"workspace": str(ws.path), "created": created})
        return
    if created:
        console.print(Text.assemble("Initialised memstrata workspace at ", (str(ws.path), "bold")))
        for name in created:
            console.print(f"  created {name}")
    else:
        console.print(
            Text.assemble("Workspace at ", (str(ws.path), "bold"), " is already complete")
        )


@click.command()
@workspace_options
@json_option
def status(workspace: str | None, group: str | None, as_json: bool) -> None:
    """Counts, journal position and anything that needed repair."""
    with open_memory(workspace, group) as memory:
        index = memory.index_status()
        report = memory.status()
    if as_json:
        print_json({**report.to_dict(), "index": index})
        return
    table = Table.grid(padding=(0, 2))
    for name, value in report.to_dict().items():
        if name != "notices":
            table.add_row(name.replace("_", " "), Text(str(value if value is not None else "-")))
    for name in ("chunks", "vectors", "bytes", "embedder", "context_vectors", "stale_files"):
        table.add_row(f"index {name.replace('_', ' ')}", Text(str(index[name])))
    console.print(table)
    for notice in report.notices:
        console.print(Text.assemble(("notice: ", "yellow"), notice))


@click.command(name="list")
@workspace_options
@click.option("--limit", "-n", type=click.IntRange(min=0), default=None, help="At most N items.")
@click.option("--session", "-s", default=None, help="Only items from this session.")
@click.option("--category", "-c", default=None, help="Only items of this category.")
@click.option("--all", "include_all", is_flag=True, help="Include superseded items.")
@json_option
def list_items(
    workspace: str | None,
    group: str | None,
    limit: int | None,
    session: str | None,
    category: str | None,
    include_all: bool,
    as_json: bool,
) -> None:
    """Long-term items, newest first."""
    with open_memory(workspace, group) as memory:
        items = memory.list(
            limit=limit, session=session, category=category, include_superseded=include_all
        )
    if as_json:
        print_json([item.to_dict() for item in items])
    elif items:
        console.print(_item_table(items))
    else:
        console.print("No items.")


@click.command()
@workspace_options
@click.argument("item_id", metavar="ID")
@json_option
def get(workspace: str | None, group: str | None, item_id: str, as_json: bool) -> None:
    """Show one item with all its metadata."""
    with open_memory(workspace, group) as memory:
        item = memory.get(item_id)
    if as_json:
        print_json(item.to_dict())
        return
    for name, value in item.to_dict().items():
        console.print(Text.assemble((name, "bold"), f": {value if value is not None else '-'}"))


@click.command()
@workspace_options
@click.argument("text")
@click.option("--category", "-c", default=None, help="Category (section of MEMORY.md).")
@click.option("--session", "-s", default=None, help="Session the fact came from.")
@source_option("Who the fact comes from.")
@json_option
def remember(
    workspace: str | None,
    group: str | None,
    text: str,
    category: str | None,
    session: str | None,
    source: str,
    as_json: bool,
) -> None:
    """Store TEXT as a long-term fact (durable when the command returns)."""
    with open_memory(workspace, group) as memory:
        item = memory.remember(text, category=category, session=session, source=source)
    if as_json:
        print_json(item.to_dict())
    elif item.hits:
        console.print(f"Already remembered as {item.id} (now seen {item.hits + 1} times)")
    else:
        console.print(f"Remembered {item.id} [{item.category}] {item.text}", markup=False)


@click.command()
@workspace_options
@click.argument("item_id", metavar="ID")
@click.argument("text")
@click.option("--session", "-s", default=None, help="Session the correction came from.")
@json_option
def supersede(
    workspace: str | None,
    group: str | None,
    item_id: str,
    text: str,
    session: str | None,
    as_json: bool,
) -> None:
    """Replace fact ID by a corrected TEXT; the old one is kept as superseded."""
    with open_memory(workspace, group) as memory:
        new = memory.supersede(item_id, text, session=session)
    if as_json:
        print_json(new.to_dict())
    else:
        console.print(f"Superseded {item_id} by {new.id}: {new.text}", markup=False)


@click.command()
@workspace_options
@click.argument("item_id", metavar="ID")
@json_option
def delete(workspace: str | None, group: str | None, item_id: str, as_json: bool) -> None:
    """Forget the item with this ID (restorable: see `memstrata forgotten`)."""
    with open_memory(workspace, group) as memory:
        item = memory.forget(item_id)
    if as_json:
        print_json(item.to_dict())
    else:
        console.print(f"Deleted {item.id}: {item.text}", markup=False)


@click.command()
@workspace_options
@click.option("--limit", "-n", type=click.IntRange(min=0), default=None, help="Show at most N.")
@json_option
def forgotten(workspace: str | None, group: str | None, limit: int | None, as_json: bool) -> None:
    """List facts deleted by `delete`/`forget` or by hand that can still be restored."""
    with open_memory(workspace, group) as memory:
        gone = memory.forgotten(limit)
    if as_json:
        print_json([entry.to_dict() for entry in gone])
        return
    if not gone:
        console.print("Nothing forgotten within the retention period.")
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("id", "deleted", "how", "text"):
        table.add_column(column, overflow="fold" if column == "text" else "ellipsis")
    for entry in gone:
        when = entry.at.strftime("%Y-%m-%d %H:%M")
        table.add_row(entry.item.id, when, entry.reason, Text(entry.item.text))
    console.print(table)


@click.command()
@workspace_options
@click.argument("item_id", metavar="ID")
@json_option
def restore(workspace: str | None, group: str | None, item_id: str, as_json: bool) -> None:
    """Bring back a forgotten fact (see `memstrata forgotten`)."""
    with open_memory(workspace, group) as memory:
        item = memory.restore(item_id)
    if as_json:
        print_json(item.to_dict())
    else:
        console.print(f"Restored {item.id}: {item.text}", markup=False)


@click.command(name="accept-edit")
@workspace_options
@click.argument("stored", metavar="[QUARANTINED]", required=False)
@json_option
def accept_edit(
    workspace: str | None, group: str | None, stored: str | None, as_json: bool
) -> None:
    """Take in a MEMORY.md that was set aside as damage (default: the newest).

    Use it when a large deletion or a rewrite of MEMORY.md was meant; what it
    deletes stays restorable.
    """
    with open_memory(workspace, group) as memory:
        changes = memory.accept_edit(stored)
    if as_json:
        print_json({"changes": changes})
    else:
        console.print(f"Taken in: {changes} change(s).")


@click.command()
@workspace_options
def flush(workspace: str | None, group: str | None) -> None:
    """Write MEMORY.md and the snapshot now and empty the journal."""
    with open_memory(workspace, group) as memory:
        memory.flush()
        report = memory.status()
    console.print(f"Flushed: {report.items} item(s) at lsn {report.lsn}")


@click.command()
@workspace_options
@click.option(
    "--max-items",
    type=click.IntRange(min=0),
    default=None,
    help="Keep at most N items, newest first (default: the max_items setting; 0 = no cap).",
)
@json_option
def compact(workspace: str | None, group: str | None, max_items: int | None, as_json: bool) -> None:
    """De-duplicate long-term memory and enforce the item cap."""
    with open_memory(workspace, group) as memory:
        result = memory.compact(max_items=max_items)
    if as_json:
        print_json({"removed": result.removed, "kept": result.kept})
    else:
        console.print(f"Compacted: removed {result.removed}, kept {result.kept}")


def _rules(workspace: str | None, group: str | None) -> RuleSet | None:
    """The workspace's capture rule packs on top of the built-in ones, if it has any."""
    if database_url(workspace) is not None:  # the packs are the tenant's rules/ rows
        with open_memory(workspace, group) as memory:
            return memory.engine.rules
    folder = locate(workspace, group).rules
    return load_rules(folder) if folder.is_dir() else None


def _entries_json(entries: list[Entry]) -> list[dict[str, Any]]:
    return [{"category": e.category, "text": e.text, "span": list(e.span)} for e in entries]


@click.command()
@workspace_options
@click.argument("text", required=False)
@json_option
def scan(workspace: str | None, group: str | None, text: str | None, as_json: bool) -> None:
    """Show what TEXT would capture, writing nothing (a dry run of `observe`).

    Without TEXT, reads one message per line from stdin and prints one JSON
    array per line. Secrets are redacted before the scan, as `observe` does.
    """
    rules = _rules(workspace, group)
    if text is None:
        for line in stdin_lines():
            found = scan_text(redact(line).text, rules=rules)
            click.echo(json.dumps(_entries_json(found), ensure_ascii=False))
        return
    found = scan_text(redact(text).text, rules=rules)
    if as_json:
        print_json(_entries_json(found))
    elif found:
        for entry in found:
            console.print(Text.assemble((f"{entry.category:>14}", "bold"), "  ", entry.text))
    else:
        console.print("Nothing to capture.")


@click.command()
@workspace_options
@click.argument("text")
@click.option("--session", "-s", default=None, help="Session the message belongs to.")
@click.option("--user", "-u", default=None, help="Who wrote the message.")
@source_option("Where the text comes from (only 'user' text is written).")
@json_option
def observe(
    workspace: str | None,
    group: str | None,
    text: str,
    session: str | None,
    user: str | None,
    source: str,
    as_json: bool,
) -> None:
    """Record a message as an agent would before answering it."""
    with open_memory(workspace, group) as memory:
        captures = memory.observe(text, session=session, user=user, source=source)
    if as_json:
        print_json([capture.to_dict() for capture in captures])
        return
    if not captures:
        console.print("Nothing captured.")
    for capture in captures:
        note = "" if capture.stored else "  (not stored: only the user's own words are)"
        if capture.superseded:
            note += f"  (supersedes {capture.superseded})"
        if capture.item_id:
            note += f"  -> {capture.item_id}"
        console.print(
            Text.assemble((f"{capture.category:>14}", "bold"), "  ", capture.text, (note, "dim"))
        )


@click.command()
@workspace_options
@json_option
def doctor(workspace: str | None, group: str | None, as_json: bool) -> None:
    """Check the workspace and say what is wrong in plain words (read-only)."""
    from ..doctor import Level, diagnose

    styles = {Level.OK: "green", Level.INFO: "cyan", Level.WARN: "yellow", Level.ERROR: "red"}
    url = database_url(workspace)
    if url is not None:  # the server, this role, the schema and the tenant
        from ..doctor.database import diagnose_database
        from ..postgres.connect import location_of

        findings, where = diagnose_database(url, group), location_of(url)
    else:
        ws = locate(workspace, group)
        findings, where = diagnose(ws), str(ws.path)
    failed = any(finding.level is Level.ERROR for finding in findings)
    if as_json:
        print_json({"workspace": where, "findings": [f.to_dict() for f in findings]})
    else:
        for finding in findings:
            style = styles[finding.level]
            console.print(
                Text.assemble(
                    (f"{finding.level.value:>5}", style),
                    "  ",
                    (finding.check, "bold"),
                    f": {finding.message}",
                )
            )
    if failed:
        sys.exit(1)


@click.command()
@click.option(
    "--keep",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Build the demo workspace here (a new folder) and keep it.",
)
def demo(keep: Path | None) -> None:
    """Walk a short scripted conversation through the engine and show what it kept."""
    from ..demo import run_demo

    run_demo(console, keep)
