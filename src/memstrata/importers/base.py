"""What an importer reads a source into: records, and the helpers they share.

An importer (one module per source, ``importers.<kind>``) is a function
``read(source: Path) -> Iterator[Record]`` that only *reads* ``source``
(never writes, moves or touches its files) and yields, for every item it
finds, exactly one record: a ``Fact``, a ``TurnRecord``, a ``Document``, or a
``Skip`` saying why the item is not taken. Counting the records therefore
counts the source's items one by one: nothing is lost silently.

Every record names where it came from (``ref``: ``path`` or ``path:line``,
relative to the source) and, for a record that goes to another group than
the target's (NanoClaw's ``groups/<folder>/``), that ``group``. Original
ids, times and fields a record cannot carry go in ``original`` (kept in the
import ledger, ``importers.apply``) or, for a turn, in its ``meta``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "Document",
    "Fact",
    "Record",
    "Skip",
    "TurnRecord",
    "doc_name",
    "json_lines",
    "json_objects",
    "markdown_facts",
    "read_text",
    "stable_key",
    "time_of",
    "turns_from_messages",
]


@dataclass(frozen=True, slots=True)
class Fact:
    """A long-term fact (``Memory.remember``)."""

    ref: str
    text: str
    category: str | None = None
    user: str | None = None
    session: str | None = None
    at: datetime | None = None
    original: Mapping[str, Any] = field(default_factory=dict)
    group: str | None = None


@dataclass(frozen=True, slots=True)
class TurnRecord:
    """One transcript turn (``Memory.record_turn``); ``key`` identifies it in
    its source, so a second import finds it in the transcript's turn meta."""

    ref: str
    session: str
    key: str
    user: str = ""
    assistant: str = ""
    reasoning: str | None = None
    tool_calls: Sequence[Mapping[str, Any]] = ()
    tool_results: Sequence[Mapping[str, Any]] = ()
    meta: Mapping[str, Any] = field(default_factory=dict)
    at: datetime | None = None
    group: str | None = None


@dataclass(frozen=True, slots=True)
class Document:
    """A file copied into the workspace at ``path`` (an allowed memory file),
    its text line for line, so a ``file:line`` citation still points right."""

    ref: str
    path: str
    text: str
    group: str | None = None


@dataclass(frozen=True, slots=True)
class Skip:
    """An item of the source that is not taken, and why."""

    ref: str
    reason: str
    group: str | None = None


Record = Fact | TurnRecord | Document | Skip


def read_text(path: Path) -> str | None:
    """A source file's text (UTF-8, ``\\r\\n`` as ``\\n``), None when it is not UTF-8."""
    try:
        return path.read_bytes().decode("utf-8").replace("\r\n", "\n")
    except UnicodeDecodeError:
        return None


def json_lines(path: Path, ref: str) -> Iterator[tuple[str, Any] | Skip]:
    """Each non-blank line of a JSONL file: ``(ref:line, value)`` or a ``Skip``."""
    text = read_text(path)
    if text is None:
        yield Skip(ref, "not UTF-8 text")
        return
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip():
            continue
        where = f"{ref}:{number}"
        try:
            yield where, json.loads(line)
        except ValueError as exc:
            yield Skip(where, f"not JSON: {exc}")


def json_objects(path: Path, ref: str) -> Iterator[tuple[str, Mapping[str, Any]] | Skip]:
    """``json_lines`` whose values are JSON objects; any other value a ``Skip``."""
    for entry in json_lines(path, ref):
        if isinstance(entry, Skip) or isinstance(entry[1], Mapping):
            yield entry
        else:
            yield Skip(entry[0], "not a JSON object")


def time_of(value: Any) -> datetime | None:
    """A source's time (ISO 8601, or seconds / milliseconds since 1970), UTC
    when it names no zone; None when it is none of those."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        seconds = value / 1000 if value > 1e11 else value
        try:
            return datetime.fromtimestamp(seconds, UTC)
        except (OverflowError, OSError, ValueError):
            return None
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def stable_key(*parts: Any) -> str:
    """A short digest of ``parts``: the same source item gives the same key."""
    data = json.dumps(parts, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(data.encode()).hexdigest()[:16]


_NAME_BAD = re.compile(r"[^\w.\- ]+")


def doc_name(name: str) -> str:
    """``name`` as an allowed memory file name (letters, digits, ``._-``, inner spaces)."""
    cleaned = _NAME_BAD.sub("-", name).strip(" .-_")
    return cleaned[:110] or "imported"


# -- markdown ------------------------------------------------------------------------

_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+(?:\[[ xX]\]\s+)?")
_ITEM_ID = re.compile(r"\s+\^m[0-9a-z]{8}\s*$")
_SUPERSEDED = re.compile(r"superseded|archive", re.IGNORECASE)


def markdown_facts(text: str, ref: str, group: str | None = None) -> Iterator[Record]:
    """One fact per line of a MEMORY.md-like file: a bullet or a line of prose
    (its ``## section`` the category); headings and blank lines are structure,
    not items. HTML comments, code blocks and a ``Superseded`` section are
    skipped with the reason. A memstrata ``^id`` at a line's end is dropped."""
    category: str | None = None
    in_comment = in_code = superseded = False
    for number, line in enumerate(text.split("\n"), 1):
        where = f"{ref}:{number}"
        stripped = line.strip()
        if in_comment or stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith(("```", "~~~")):
            in_code = not in_code
            continue
        if not stripped:
            continue
        if in_code:
            yield Skip(where, "a line of a code block", group)
            continue
        heading = _HEADING.match(stripped)
        if heading:
            level, title = len(heading.group(1)), heading.group(2)
            if level >= 2:
                superseded = bool(_SUPERSEDED.fullmatch(title))
                category = title or None
            continue
        body = _ITEM_ID.sub("", _BULLET.sub("", line, count=1)).strip()
        if not body:
            continue
        if superseded:
            yield Skip(where, "a superseded fact (history, not a live fact)", group)
            continue
        yield Fact(where, body, category, original={"line": number}, group=group)


# -- chat messages -------------------------------------------------------------------


def _content_text(content: Any) -> str:
    """A message's content as text (OpenAI-style lists of parts joined)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        pieces = []
        for part in content:
            if isinstance(part, Mapping):
                pieces.append(str(part.get("text") or part.get("content") or ""))
            else:
                pieces.append(str(part))
        return "\n".join(piece for piece in pieces if piece)
    return json.dumps(content, ensure_ascii=False, default=str)


def _openai_call(call: Any) -> dict[str, Any]:
    """An OpenAI-style tool call (``{"id", "function": {"name", "arguments"}}``)
    or a flat one (``{"name", "arguments"}``) as a ``record_turn`` tool call."""
    if not isinstance(call, Mapping):
        return {"name": "unknown", "arguments": call}
    function = call.get("function")
    source = function if isinstance(function, Mapping) else call
    arguments: Any = source.get("arguments", source.get("args", {}))
    if isinstance(arguments, str):
        with contextlib.suppress(ValueError):
            arguments = json.loads(arguments)
    found = {"name": str(source.get("name") or "unknown"), "arguments": arguments}
    if call.get("id"):
        found["id"] = str(call["id"])
    return found


def turns_from_messages(
    messages: Sequence[tuple[str, Mapping[str, Any]]], session: str, key_base: str
) -> Iterator[Record]:
    """Flat chat messages (``role``, ``content``, ``tool_calls``, a time) as
    turns: a turn starts at each user message; the assistant's tool calls and
    the tools' results are its parts; its time is its first message's."""
    groups: list[list[tuple[str, Mapping[str, Any]]]] = []
    for ref, message in messages:
        if message.get("role") == "user" or not groups:
            groups.append([])
        groups[-1].append((ref, message))
    seen: dict[str, int] = {}
    for group in groups:
        turn = _turn(group, session)
        # the same words at the same time twice are two turns: the occurrence counts
        content = stable_key(key_base, turn.user, turn.assistant, str(turn.at))
        seen[content] = seen.get(content, 0) + 1
        yield replace(turn, key=stable_key(content, seen[content]))


def _turn(messages: list[tuple[str, Mapping[str, Any]]], session: str) -> TurnRecord:
    user, assistant, reasoning = [], [], []
    calls: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    at = None
    for _, message in messages:
        role = message.get("role")
        at = at or time_of(
            message.get("timestamp") or message.get("created_at") or message.get("ts")
        )
        text = _content_text(message.get("content"))
        if role == "user":
            user.append(text)
        elif role in ("tool", "function"):
            result = {"content": text, "name": message.get("name")}
            if message.get("tool_call_id"):
                result["tool_call_id"] = str(message["tool_call_id"])
            results.append(result)
        elif role == "assistant":
            calls += [_openai_call(call) for call in message.get("tool_calls") or ()]
            if message.get("reasoning_content"):
                reasoning.append(str(message["reasoning_content"]))
            if text:
                assistant.append(text)
        elif text:  # a system message: kept as what the user side saw
            user.append(f"[{role}] {text}")
    first = messages[0][0]
    return TurnRecord(
        ref=f"{first}-{messages[-1][0].rsplit(':', 1)[-1]}" if len(messages) > 1 else first,
        session=session,
        key="",
        user="\n".join(user),
        assistant="\n".join(assistant),
        reasoning="\n".join(reasoning) or None,
        tool_calls=calls,
        tool_results=results,
        at=at,
    )
