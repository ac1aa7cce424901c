"""``memstrata session | core | working | semantic | notes``: transcripts and
the layers from the command line (issue 7)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING

import click
from rich.table import Table
from rich.text import Text

from ..stores.transcripts import SessionInfo, file_stem
from ..stores.working import SECTIONS
from .base import console, json_option, open_memory, print_json, read_stdin, workspace_options

if TYPE_CHECKING:
    from ..memory import Memory

__all__ = ["core_group", "notes_group", "semantic_group", "session_group", "working_group"]


# -- session ------------------------------------------------------------------------


@click.group(name="session")
def session_group() -> None:
    """Transcripts: list sessions, show one, compact them."""


@session_group.command(name="list")
@workspace_options
@json_option
def session_list(workspace: str | None, group: str | None, as_json: bool) -> None:
    """Every session with a transcript, the most recently active first; then
    the sessions that only `observe` has seen so far (0 turns)."""
    with open_memory(workspace, group) as memory:
        found = memory.sessions.list()
        observed = _observed_only(memory, found)
    if as_json:
        print_json([info.to_dict() for info in found + observed])
        return
    found += observed
    if not found:
        console.print("No sessions.")
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("session", "turns", "last seq", "archived", "last turn", "bytes", "file"):
        table.add_column(column)
    for info in found:
        table.add_row(
            Text(info.session),
            str(info.turns),
            str(info.last_seq),
            str(info.archived),
            info.last_at.strftime("%Y-%m-%d %H:%M") if info.last_at else "-",
            str(info.size),
            Text(info.path),
        )
    console.print(table)


def _observed_only(memory: Memory, listed: list[SessionInfo]) -> list[SessionInfo]:
    """Sessions with a SESSION-STATE.md (``observe -s``) but no transcript yet;
    a session id that is not a plain file name shows as its file stem."""
    stems = {file_stem(info.path) for info in listed}
    out = []
    for rel, stat in memory.workspace.volume.list("sessions/"):
        parts = rel.split("/")
        if len(parts) != 3 or parts[2] != "SESSION-STATE.md" or parts[1] in stems:
            continue
        at = datetime.fromtimestamp(stat.mtime_ns / 1e9, UTC)
        out.append(SessionInfo(parts[1], rel, 0, 0, None, at, stat.size, 0))
    return sorted(
        out, key=lambda info: info.last_at or datetime.min.replace(tzinfo=UTC), reverse=True
    )


@session_group.command(name="show")
@workspace_options
@click.argument("session")
@click.option("--last", "-n", type=click.IntRange(min=0), default=None, help="Only the last N.")
@click.option(
    "--archived", is_flag=True, help="Also the turns compactions moved to sessions/archive/."
)
@json_option
def session_show(
    workspace: str | None,
    group: str | None,
    session: str,
    last: int | None,
    archived: bool,
    as_json: bool,
) -> None:
    """The turns of SESSION, oldest first."""
    with open_memory(workspace, group) as memory:
        turns = memory.sessions.turns(session, last=last, archived=archived)
    if as_json:
        print_json([turn.to_dict() for turn in turns])
        return
    for turn in turns:
        console.print(Text(f"#{turn.seq}  {turn.created_at:%Y-%m-%d %H:%M:%S}  {turn.id}", "bold"))
        for message in turn.messages:
            for part in message["parts"]:
                kind = part["type"]
                if kind == "tool_call":
                    body = f"{part.get('name')}({part.get('arguments')})"
                elif kind == "tool_result":
                    ok = "ok" if part.get("success", True) else "failed"
                    body = f"{part.get('name')} {ok}: {part.get('content')}"
                else:
                    body = str(part.get("text", ""))
                label = message["role"] if kind == "text" else kind
                console.print(Text.assemble((f"  {label:>11}  ", "dim"), body))


@session_group.command(name="compact")
@workspace_options
@click.option("--session", "-s", "session", default=None, help="The session to compact.")
@click.option("--all", "all_sessions", is_flag=True, help="Compact every session.")
@click.option(
    "--keep",
    type=click.IntRange(min=0),
    default=None,
    help="Turns to keep (default: the session_keep_turns setting).",
)
@json_option
def session_compact(
    workspace: str | None,
    group: str | None,
    session: str | None,
    all_sessions: bool,
    keep: int | None,
    as_json: bool,
) -> None:
    """Keep the last turns of a transcript; older turns move to sessions/archive/."""
    if (session is None) == (not all_sessions):
        raise click.UsageError("give either --session ID or --all")
    with open_memory(workspace, group) as memory:
        if all_sessions:
            done = memory.sessions.compact_all(keep=keep)
        else:
            assert session is not None
            done = [memory.sessions.compact(session, keep=keep)]
    if as_json:
        print_json([result.to_dict() for result in done])
        return
    for result in done:
        where = f" to {result.archive}" if result.archive else ""
        console.print(
            f"{result.session}: kept {result.kept} turn(s), archived {result.archived}{where}",
            markup=False,
        )


# -- core -------------------------------------------------------------------------


@click.group(name="core")
def core_group() -> None:
    """Core files: AGENT.md, USER.md, SOUL.md, any other core/<name>.md (always in the prompt)."""


@core_group.command(name="show")
@workspace_options
@click.argument("name")  # agent, user, soul, or a core file's name (the core store checks it)
@json_option
def core_show(workspace: str | None, group: str | None, name: str, as_json: bool) -> None:
    """Print core file NAME (agent, user, soul, or e.g. PROJECT.md)."""
    with open_memory(workspace, group) as memory:
        text = memory.core.read(name)
    if as_json:
        print_json({"name": name, "text": text})
    else:
        click.echo(text, nl=False)


@core_group.command(name="set")
@workspace_options
@click.argument("name")  # agent, user, soul, or a core file's name (the core store checks it)
@click.argument("text", required=False)
def core_set(workspace: str | None, group: str | None, name: str, text: str | None) -> None:
    """Replace core file NAME (agent, user, soul, or e.g. PROJECT.md) with TEXT (or
    standard input); secrets are redacted."""
    from ..stores.core import rel  # (not at start-up)

    body = read_stdin() if text is None else text
    with open_memory(workspace, group) as memory:
        written = memory.core.write(name, body)
    console.print(f"Wrote {rel(name)} ({len(written)} characters).", markup=False)


# -- working ----------------------------------------------------------------------


@click.group(name="working")
def working_group() -> None:
    """Working memory: priorities, tasks, open threads, recent progress (bounded)."""


@working_group.command(name="show")
@workspace_options
@json_option
def working_show(workspace: str | None, group: str | None, as_json: bool) -> None:
    """The sections of WORKING_MEMORY.md and their items."""
    with open_memory(workspace, group) as memory:
        current = memory.working.read()
    if as_json:
        print_json({key: list(current.items(key)) for key in SECTIONS})
        return
    for key, title in SECTIONS.items():
        console.print(Text(title, "bold"))
        for item in current.items(key):
            console.print(Text(f"  - {item}"))


@working_group.command(name="add")
@workspace_options
@click.argument("section", type=click.Choice([k for k in SECTIONS if k != "recent_progress"]))
@click.argument("text")
def working_add(workspace: str | None, group: str | None, section: str, text: str) -> None:
    """Add TEXT to SECTION."""
    with open_memory(workspace, group) as memory:
        dropped = memory.working.add(section, text)
    _report_dropped(len(dropped))


@working_group.command(name="progress")
@workspace_options
@click.argument("text")
def working_progress(workspace: str | None, group: str | None, text: str) -> None:
    """Note progress (the oldest progress leaves first when the file is full)."""
    with open_memory(workspace, group) as memory:
        dropped = memory.working.progress(text)
    _report_dropped(len(dropped))


def _report_dropped(count: int) -> None:
    extra = f"; {count} older item(s) moved to today's daily note" if count else ""
    console.print(f"Saved{extra}.", markup=False)


# -- semantic ---------------------------------------------------------------------

_SEMANTIC = click.Choice(["facts", "preferences", "projects"])


@click.group(name="semantic")
def semantic_group() -> None:
    """Semantic memory: facts.md, preferences.md, projects.md (fetched on demand)."""


@semantic_group.command(name="list")
@workspace_options
@click.argument("name", type=_SEMANTIC)
@json_option
def semantic_list(workspace: str | None, group: str | None, name: str, as_json: bool) -> None:
    """The items of semantic file NAME, with their line numbers."""
    with open_memory(workspace, group) as memory:
        items = memory.semantic.read(name)
    if as_json:
        print_json([{"line": i.line, "text": i.text, "heading": i.heading} for i in items])
        return
    for item in items:
        console.print(Text(f"{item.line:>5}  {item.text}"))


@semantic_group.command(name="add")
@workspace_options
@click.argument("name", type=_SEMANTIC)
@click.argument("text")
def semantic_add(workspace: str | None, group: str | None, name: str, text: str) -> None:
    """Append TEXT to semantic file NAME (once)."""
    with open_memory(workspace, group) as memory:
        added = memory.semantic.add(name, text)
    message = f"Added at line {added.line}." if added else "Already there."
    console.print(message, markup=False)


@semantic_group.command(name="remove")
@workspace_options
@click.argument("name", type=_SEMANTIC)
@click.argument("item")
def semantic_remove(workspace: str | None, group: str | None, name: str, item: str) -> None:
    """Remove ITEM (its exact text, or its line number) from semantic file NAME."""
    which: str | int = int(item) if item.isdigit() else item
    with open_memory(workspace, group) as memory:
        removed = memory.semantic.remove(name, which)
    console.print(f"Removed {len(removed)} item(s).", markup=False)


# -- notes ------------------------------------------------------------------------


@click.group(name="notes")
def notes_group() -> None:
    """The notebook: notes/inbox, notes/zettel, notes/maps, linked with [[name]]."""


@notes_group.command(name="new")
@workspace_options
@click.argument("title")
@click.argument("body", required=False, default="")
@click.option(
    "--folder",
    type=click.Choice(["inbox", "zettel", "maps"]),
    default="inbox",
    show_default=True,
    help="The notebook folder to write the note in.",
)
@json_option
def notes_new(
    workspace: str | None, group: str | None, title: str, body: str, folder: str, as_json: bool
) -> None:
    """Create a note titled TITLE."""
    with open_memory(workspace, group) as memory:
        note = memory.notes.create(title, body, folder=folder)
    if as_json:
        print_json({"name": note.name, "folder": note.folder})
    else:
        console.print(f"Created {note.folder}/{note.name}.md", markup=False)


@notes_group.command(name="list")
@workspace_options
@click.option(
    "--folder",
    type=click.Choice(["inbox", "zettel", "maps"]),
    default=None,
    help="Only the notes of this folder (default: every folder).",
)
@json_option
def notes_list(workspace: str | None, group: str | None, folder: str | None, as_json: bool) -> None:
    """The notes, by folder."""
    with open_memory(workspace, group) as memory:
        found = memory.notes.list(folder)
    if as_json:
        print_json([{"name": note.name, "folder": note.folder} for note in found])
        return
    for note in found:
        console.print(Text(f"{note.folder:>7}  {note.name}"))


@notes_group.command(name="show")
@workspace_options
@click.argument("name")
@json_option
def notes_show(workspace: str | None, group: str | None, name: str, as_json: bool) -> None:
    """Print note NAME, and the notes that link to it."""
    with open_memory(workspace, group) as memory:
        text = memory.notes.read(name)
        linked_from = [note.name for note in memory.notes.backlinks(name)]
    if as_json:
        print_json({"name": name, "text": text, "backlinks": linked_from})
        return
    click.echo(text, nl=False)
    if linked_from:
        console.print(Text(f"\nlinked from: {', '.join(linked_from)}", "dim"))


@notes_group.command(name="link")
@workspace_options
@click.argument("source")
@click.argument("target")
def notes_link(workspace: str | None, group: str | None, source: str, target: str) -> None:
    """Add a [[TARGET]] link to note SOURCE."""
    with open_memory(workspace, group) as memory:
        added = memory.notes.link(source, target)
    console.print("Linked." if added else "Already linked.", markup=False)


@notes_group.command(name="move")
@workspace_options
@click.argument("name")
@click.argument("folder", type=click.Choice(["inbox", "zettel", "maps"]))
def notes_move(workspace: str | None, group: str | None, name: str, folder: str) -> None:
    """Move note NAME to FOLDER (zettel keeps an inbox note)."""
    with open_memory(workspace, group) as memory:
        note = memory.notes.move(name, folder)
    console.print(f"Moved to {note.folder}/{note.name}.md", markup=False)


@session_group.command(name="summarize")
@workspace_options
@click.argument("session")
@json_option
def session_summarize(
    workspace: str | None, group: str | None, session: str, as_json: bool
) -> None:
    """/compact: summarize SESSION's turns since its last summary into
    summaries/<session>.md and MEMORY.md; the next run starts fresh.

    The extractive summarizer (no model) unless MEMSTRATA_SUMMARIZER names
    one (openai or anthropic, with MEMSTRATA_SUMMARY_MODEL)."""
    with open_memory(workspace, group) as memory:
        done = memory.compact_session(session)
    if as_json:
        print_json(done.to_dict())
        return
    console.print(
        f"Summarized turns {done.turns[0]}-{done.turns[1]} of {done.session} with "
        f"{done.summarizer} into {done.path} and {len(done.items)} MEMORY.md item(s).",
        markup=False,
    )
    click.echo(done.summary, nl=False)
