"""``memstrata record-turn`` and ``memstrata lessons``: what a shell hook
writes after each exchange (a turn of a session, a failed tool call) and
the lessons it leaves.

``record-turn`` takes the turn's parts as options or, with ``--stdin``, as
one JSON object (``{"user": ..., "assistant": ..., "tool_calls": [...]}``),
so that a hook never has to quote a long text for the shell.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from ..errors import InvalidInput
from .base import console, json_option, open_memory, print_json, read_stdin, workspace_options

__all__ = ["lessons", "record_turn"]

_TURN_KEYS = ("user", "assistant", "reasoning", "tool_calls", "tool_results", "meta")


def _json_value(raw: str | None, what: str) -> Any:
    if raw is None:
        return None
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise InvalidInput(f"{what} is not valid JSON: {exc}") from None


def _json_list(raw: str | None, what: str) -> list[Any]:
    value = _json_value(raw, what)
    if value is None:
        return []
    if isinstance(value, dict):  # one call given on its own
        return [value]
    if not isinstance(value, list):
        raise InvalidInput(f"{what} must be a JSON array of objects")
    return value


def _from_stdin() -> dict[str, Any]:
    data = _json_value(read_stdin(), "standard input")
    if not isinstance(data, dict):
        raise InvalidInput("standard input must be one JSON object (user, assistant, ...)")
    unknown = sorted(set(data) - {*_TURN_KEYS, "session"})
    if unknown:
        raise InvalidInput(f"unknown keys on standard input: {', '.join(unknown)}")
    return data


@click.command(name="record-turn")
@workspace_options
@click.option("--session", "-s", default=None, help="The session the turn belongs to (needed).")
@click.option("--user", "-u", "user_text", default=None, help="What the user said.")
@click.option("--assistant", "-a", default=None, help="What the assistant answered.")
@click.option("--reasoning", default=None, help="The assistant's reasoning, if kept.")
@click.option(
    "--tool-calls",
    default=None,
    metavar="JSON",
    help='The tool calls as a JSON array of objects, e.g. \'[{"name": "ls", "args": {}}]\'.',
)
@click.option(
    "--tool-results", default=None, metavar="JSON", help="The tool results as a JSON array."
)
@click.option("--meta", default=None, metavar="JSON", help="A JSON object kept with the turn.")
@click.option(
    "--stdin",
    "from_stdin",
    is_flag=True,
    help="Read the turn as one JSON object from stdin (keys: session, user, assistant, "
    "reasoning, tool_calls, tool_results, meta); options given too take precedence.",
)
@json_option
def record_turn(
    workspace: str | None,
    group: str | None,
    session: str | None,
    user_text: str | None,
    assistant: str | None,
    reasoning: str | None,
    tool_calls: str | None,
    tool_results: str | None,
    meta: str | None,
    from_stdin: bool,
    as_json: bool,
) -> None:
    """Append one completed turn to a session's transcript (durable on return)."""
    data = _from_stdin() if from_stdin else {}
    given = {
        "session": session,
        "user": user_text,
        "assistant": assistant,
        "reasoning": reasoning,
        "tool_calls": _json_list(tool_calls, "--tool-calls") if tool_calls else None,
        "tool_results": _json_list(tool_results, "--tool-results") if tool_results else None,
        "meta": _json_value(meta, "--meta"),
    }
    data.update({key: value for key, value in given.items() if value is not None})
    if not data.get("session"):
        raise InvalidInput("record-turn needs --session (or a 'session' key on stdin)")
    if data.get("meta") is not None and not isinstance(data["meta"], dict):
        raise InvalidInput("meta must be a JSON object")
    with open_memory(workspace, group) as memory:
        turn = memory.record_turn(
            str(data["session"]),
            user=data.get("user") or "",
            assistant=data.get("assistant") or "",
            reasoning=data.get("reasoning"),
            tool_calls=data.get("tool_calls") or (),
            tool_results=data.get("tool_results") or (),
            meta=data.get("meta"),
        )
    if as_json:
        print_json(turn.to_dict())
    else:
        console.print(f"Recorded turn {turn.seq} of session {turn.session}", markup=False)


@click.group()
def lessons() -> None:
    """Self-improvement lessons from tool failures and corrections."""


@lessons.command(name="add")
@workspace_options
@click.option("--tool", "-t", required=True, help="The tool whose call failed.")
@click.option("--error", "-e", required=True, help="The error it gave (its first line is kept).")
@click.option(
    "--args",
    "tool_args",
    default=None,
    metavar="JSON",
    help="The call's arguments (JSON, or any text); secrets are redacted.",
)
@click.option("--session", "-s", default=None, help="The session the failure happened in.")
@json_option
def add_lesson(
    workspace: str | None,
    group: str | None,
    tool: str,
    error: str,
    tool_args: str | None,
    session: str | None,
    as_json: bool,
) -> None:
    """Keep the lesson of a failed tool call (a repeat is counted, not stored twice)."""
    with open_memory(workspace, group) as memory:
        lesson = memory.record_tool_failure(tool, tool_args or "", error, session=session)
    if as_json:
        print_json(lesson.to_dict())
    else:
        console.print(f"Lesson {lesson.id} (seen {lesson.hits}x): {lesson.text}", markup=False)


@lessons.command(name="list")
@workspace_options
@click.option("--limit", "-n", type=click.IntRange(min=0), default=None, help="At most N.")
@json_option
def list_lessons(
    workspace: str | None, group: str | None, limit: int | None, as_json: bool
) -> None:
    """Lessons, the ones to show first at the top."""
    with open_memory(workspace, group) as memory:
        found = memory.lessons.top(len(memory.lessons.list()) if limit is None else limit)
    if as_json:
        print_json([lesson.to_dict() for lesson in found])
        return
    if not found:
        console.print("No lessons.")
        return
    table = Table(show_edge=False, pad_edge=False)
    for column in ("id", "kind", "seen", "what went wrong", "instead", "last"):
        table.add_column(column, overflow="fold")
    for lesson in found:
        table.add_row(
            lesson.id,
            lesson.kind,
            str(lesson.hits),
            Text(lesson.wrong),
            Text(lesson.instead),
            lesson.updated_at.strftime("%Y-%m-%d %H:%M"),
        )
    console.print(table)


@lessons.command(name="delete")
@workspace_options
@click.argument("lesson_id", metavar="ID")
@json_option
def delete_lesson(workspace: str | None, group: str | None, lesson_id: str, as_json: bool) -> None:
    """Delete the lesson with this ID."""
    with open_memory(workspace, group) as memory:
        lesson = memory.lessons.forget(lesson_id)
    if as_json:
        print_json(lesson.to_dict())
    else:
        console.print(f"Deleted lesson {lesson.id}: {lesson.text}", markup=False)
