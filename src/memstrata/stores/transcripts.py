"""Transcripts: schema-versioned turns, the per-session audit log and session
compaction (q15, qracer, MiQi).

Files, all under ``sessions/`` of a workspace (``<stem>`` is
``workspace.session_stem(session)``), read and written only through the
workspace's volume (``storage.volume``) by relative path:

* ``<stem>.jsonl`` — the transcript: one completed turn a line,
  ``{"schema_version": 2, "id", "seq", "session", "created_at", "messages":
  [{"role", "parts": [{"type": "text"|"reasoning"|"tool_call"|"tool_result",
  ...}]}], "meta"?}``. After a compaction its first line is a metadata record,
  ``{"schema_version": 2, "kind": "meta", "session", "compactions": [...]}``.
  The session's head (the last seq, the number of turns) is read from the log
  itself, so it can never disagree with it.
* ``<stem>.audit.jsonl`` — qracer's tier 1: every event of every turn (user
  message, reasoning, tool call with its arguments, tool result with success
  and source, assistant answer) as one line, ``{"turn", "turn_id", "ts",
  "role", ...}``. Append-only: compaction never touches it. It is written
  before the transcript line, so a crash between the two leaves events of a
  turn that was never acknowledged; their ``turn_id`` is in no transcript.
* ``archive/<stem>.jsonl`` — the turns a compaction took out of the
  transcript, byte for byte as they were. Nothing is discarded.

Invariants:

* An append is one ``Volume.append`` of whole lines, durable before the call
  returns; a torn last line (a writer killed mid-append) is cut off into the
  quarantine by the next append or open, never parsed as a turn (and the
  volume's append starts a line of its own after one in any case).
* Every text is redacted by the caller (``Memory``) before it reaches here.
* Older layouts (version 1 records, q15's turn files) are brought to this
  one at open by ``migrations.transcripts``.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import PurePosixPath
from typing import Any

from ..errors import InvalidInput
from ..model import now, parse_time_or_none
from ..storage.volume import Stat, Volume, cut_torn_tail, last_record
from ..storage.workspace import Workspace, session_stem

__all__ = [
    "PART_TYPES",
    "SCHEMA_VERSION",
    "SessionInfo",
    "Turn",
    "append_turn",
    "append_turns",
    "audit_events",
    "build_turn",
    "list_sessions",
    "read_audit",
    "read_turns",
]

SCHEMA_VERSION = 2
PART_TYPES = ("text", "reasoning", "tool_call", "tool_result")
ROLES = ("system", "user", "assistant", "tool")

Quarantine = Callable[[str, bytes, str], object]  # (workspace-relative path, bytes, reason)


@dataclass(frozen=True, slots=True)
class Turn:
    """One completed turn of a session's transcript."""

    id: str
    seq: int
    session: str
    created_at: datetime
    messages: tuple[Mapping[str, Any], ...]
    meta: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "id": self.id,
            "seq": self.seq,
            "session": self.session,
            "created_at": format_time(self.created_at),
            "messages": [dict(message) for message in self.messages],
        }
        if self.meta:
            data["meta"] = dict(self.meta)
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Turn:
        """A turn from its version 2 record; ``ValueError`` names what is wrong."""
        if data.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(f"schema_version is {data.get('schema_version')!r}")
        turn_id, seq, session = data.get("id"), data.get("seq"), data.get("session")
        if not isinstance(turn_id, str) or not turn_id:
            raise ValueError("the turn has no id")
        if isinstance(seq, bool) or not isinstance(seq, int) or seq < 1:
            raise ValueError(f"seq must be a whole number >= 1, not {seq!r}")
        if not isinstance(session, str) or not session:
            raise ValueError("the turn names no session")
        messages = data.get("messages")
        if not isinstance(messages, list):
            raise ValueError("messages must be a list")
        for message in messages:
            check_message(message)
        meta = data.get("meta") or {}
        if not isinstance(meta, dict):
            raise ValueError("meta must be an object")
        created = parse_time_or_none(data.get("created_at"))
        if created is None:
            raise ValueError("created_at is missing or not an ISO time")
        return cls(turn_id, seq, session, created, tuple(messages), meta)

    def text_of(self, role: str) -> str:
        """The text parts of this turn's messages of ``role``, joined."""
        return "\n".join(
            str(part.get("text", ""))
            for message in self.messages
            if message.get("role") == role
            for part in message.get("parts", ())
            if part.get("type") == "text"
        )


def format_time(at: datetime) -> str:
    return at.isoformat()


def check_message(message: Any) -> None:
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        raise ValueError(f"a message needs a role of {', '.join(ROLES)}")
    parts = message.get("parts")
    if not isinstance(parts, list):
        raise ValueError("a message needs a list of parts")
    for part in parts:
        if not isinstance(part, dict) or part.get("type") not in PART_TYPES:
            raise ValueError(f"a part needs a type of {', '.join(PART_TYPES)}")


# -- building a turn -------------------------------------------------------------


def build_turn(
    session: str,
    seq: int,
    at: datetime,
    *,
    user: str,
    assistant: str,
    reasoning: str | None = None,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    tool_results: Sequence[Mapping[str, Any]] = (),
    meta: Mapping[str, Any] | None = None,
) -> Turn:
    """A turn from an agent's pieces, in the order they happened: the user's
    message; the assistant's reasoning and tool calls; the tools' results; the
    assistant's answer. A tool call is ``{"name", "arguments"?, "id"?}``; a
    tool result ``{"content", "tool_call_id"?, "name"?, "success"?, "source"?}``.
    """
    for name, value in (("user", user), ("assistant", assistant)):
        if not isinstance(value, str):
            raise InvalidInput(f"{name} must be a string, not {type(value).__name__}")
    if reasoning is not None and not isinstance(reasoning, str):
        raise InvalidInput(f"reasoning must be a string, not {type(reasoning).__name__}")
    if meta is not None and not isinstance(meta, Mapping):
        raise InvalidInput(f"meta must be a mapping, not {type(meta).__name__}")
    turn_id = _turn_id(session, seq, at)
    calls = [_tool_call(call, index, turn_id) for index, call in enumerate(tool_calls)]
    results = [_tool_result(result, index, calls) for index, result in enumerate(tool_results)]
    messages: list[dict[str, Any]] = [_message("user", [{"type": "text", "text": user}])]
    thinking = [{"type": "reasoning", "text": reasoning}] if reasoning else []
    if calls:
        messages.append(_message("assistant", [*thinking, *calls]))
        thinking = []
    if results:
        messages.append(_message("tool", results))
    messages.append(_message("assistant", [*thinking, {"type": "text", "text": assistant}]))
    try:
        safe_meta = json.loads(json.dumps(dict(meta or {}), default=str))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"meta cannot be stored as JSON: {exc}") from exc
    return Turn(turn_id, seq, session, at, tuple(messages), safe_meta)


def _message(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "parts": parts}


def _turn_id(session: str, seq: int, at: datetime) -> str:
    digest = hashlib.sha256(f"{session}\0{seq}\0{at.isoformat()}".encode()).hexdigest()
    return f"t{digest[:12]}"


def _tool_call(call: Mapping[str, Any], index: int, turn_id: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise InvalidInput(f"tool call #{index + 1} must be a mapping with a name")
    name = call.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInput(f"tool call #{index + 1} has no name")
    arguments = call.get("arguments", call.get("args", {}))
    call_id = call.get("id") or f"{turn_id}-call{index + 1}"
    return {"type": "tool_call", "id": str(call_id), "name": name, "arguments": _json(arguments)}


def _tool_result(
    result: Mapping[str, Any], index: int, calls: Sequence[Mapping[str, Any]]
) -> dict[str, Any]:
    if not isinstance(result, Mapping):
        raise InvalidInput(f"tool result #{index + 1} must be a mapping with a content")
    content = result.get("content", result.get("output"))
    if content is None:
        raise InvalidInput(f"tool result #{index + 1} has no content")
    matching = calls[index] if index < len(calls) else None
    call_id = result.get("tool_call_id") or (matching["id"] if matching else None)
    name = result.get("name") or (matching["name"] if matching else None)
    success = result.get("success", True)
    if not isinstance(success, bool):
        raise InvalidInput(f"tool result #{index + 1}: success must be true or false")
    part: dict[str, Any] = {
        "type": "tool_result",
        "tool_call_id": call_id,
        "name": name,
        "content": content if isinstance(content, str) else _json(content),
        "success": success,
    }
    if result.get("source") is not None:
        part["source"] = str(result["source"])
    return part


def _json(value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError) as exc:
        raise InvalidInput(f"tool data cannot be stored as JSON: {exc}") from exc


def audit_events(turn: Turn) -> list[dict[str, Any]]:
    """The turn as qracer's audit lines, one per event, in order."""
    base = {"turn": turn.seq, "turn_id": turn.id, "ts": format_time(turn.created_at)}
    events: list[dict[str, Any]] = []
    for message in turn.messages:
        role = message["role"]
        for part in message["parts"]:
            kind = part["type"]
            if kind == "text":
                events.append({**base, "role": role, "content": part.get("text", "")})
            elif kind == "reasoning":
                events.append({**base, "role": "reasoning", "content": part.get("text", "")})
            elif kind == "tool_call":
                events.append(
                    {**base, "role": "tool_call", "tool": part.get("name"), "id": part.get("id"),
                     "args": part.get("arguments")}
                )  # fmt: skip
            else:
                event = {
                    **base,
                    "role": "tool_result",
                    "tool": part.get("name"),
                    "tool_call_id": part.get("tool_call_id"),
                    "success": part.get("success", True),
                    "content": part.get("content"),
                }
                if "source" in part:
                    event["source"] = part["source"]
                events.append(event)
    return events


# -- files -----------------------------------------------------------------------


def transcript_rel(session: str) -> str:
    return f"sessions/{session_stem(session)}.jsonl"


def audit_rel(session: str) -> str:
    return f"sessions/{session_stem(session)}.audit.jsonl"


def archive_rel(session: str) -> str:
    return f"sessions/archive/{session_stem(session)}.jsonl"


def jsonl_lines(records: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for record in records
    )


def last_seq(workspace: Workspace, session: str, quarantine: Quarantine) -> int:
    """The seq of the session's last turn (0 for none); a torn tail is quarantined."""
    rel = transcript_rel(session)
    torn = "torn last line"
    record = last_record(workspace.volume, rel, lambda data: quarantine(rel, data, torn))
    if record is None:
        return 0
    seq = record.get("seq")
    if record.get("kind") != "meta" and isinstance(seq, int) and not isinstance(seq, bool):
        return seq  # the common case: only the file's end was read
    # A transcript whose turns were all archived ends in its metadata record:
    # the seqs go on from the last archived one, never from 1 again.
    data = cut_torn_tail(workspace.volume, rel, lambda data: quarantine(rel, data, torn))
    turns = _turns_of(_records_of(data))
    return max([archived_seq(_meta_of(data)), *(turn.seq for turn in turns)])


def archived_seq(meta: Mapping[str, Any]) -> int:
    """The last seq the compactions noted in ``meta`` moved to the archive (0: none)."""
    last = 0
    for entry in meta.get("compactions", ()):
        span = entry.get("seq_range") if isinstance(entry, Mapping) else None
        if isinstance(span, list) and len(span) == 2 and type(span[1]) is int:
            last = max(last, span[1])
    return last


def append_turn(workspace: Workspace, turn: Turn) -> tuple[str, str]:
    """Append ``turn`` to its transcript and its events to the audit log, both
    durable before return; returns both (relative) paths. The caller holds the
    lock and took the seq from ``last_seq``."""
    return append_turns(workspace, [turn])


def append_turns(workspace: Workspace, turns: Sequence[Turn]) -> tuple[str, str]:
    """``append_turn`` for consecutive turns of one session: the audit log's
    lines in one append, then the transcript's in one (two fsyncs in all)."""
    session = turns[0].session
    if any(turn.session != session for turn in turns):
        raise ValueError("append_turns takes the turns of one session")
    transcript = transcript_rel(session)
    audit = audit_rel(session)
    workspace.volume.append(audit, jsonl_lines(e for turn in turns for e in audit_events(turn)))
    workspace.volume.append(transcript, jsonl_lines(turn.to_dict() for turn in turns))
    return transcript, audit


def read_records(volume: Volume, rel: str) -> list[dict[str, Any]]:
    """The JSON object lines of file ``rel`` (other lines skipped; none for no file)."""
    return _records_of(volume.read(rel) or b"")


def _records_of(data: bytes) -> list[dict[str, Any]]:
    records = []
    for raw in data.splitlines():
        try:
            record = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            continue
        if isinstance(record, dict):
            records.append(record)
    return records


def read_turns(workspace: Workspace, session: str, *, archived: bool = False) -> list[Turn]:
    """The session's turns in order (records that are no valid turn are skipped:
    ``upgrade`` at open moves them aside); ``archived``: with the turns earlier
    compactions moved to the archive, first.

    A compaction appends to the archive before it rewrites the transcript, so
    one that was killed in between leaves turns in both (the next compaction
    finishes it); each turn is counted once, by its id."""
    volume = workspace.volume
    turns = read_turns_at(volume, transcript_rel(session))
    if not archived:
        return turns
    ids = {turn.id for turn in turns}
    older = [t for t in read_turns_at(volume, archive_rel(session)) if t.id not in ids]
    return sorted(older, key=lambda turn: turn.seq) + turns


def read_turns_at(volume: Volume, rel: str) -> list[Turn]:
    """The turns of the transcript file ``rel``, in order."""
    return _turns_of(read_records(volume, rel))


def _turns_of(records: Iterable[Mapping[str, Any]]) -> list[Turn]:
    turns = []
    for record in records:
        if record.get("kind") == "meta":
            continue
        try:
            turns.append(Turn.from_dict(record))
        except ValueError:
            continue
    return turns


def read_meta(workspace: Workspace, session: str) -> dict[str, Any]:
    """The metadata record of a session's transcript ({} before any compaction)."""
    return read_meta_at(workspace.volume, transcript_rel(session))


def read_meta_at(volume: Volume, rel: str) -> dict[str, Any]:
    """The metadata record of the transcript file ``rel`` ({} if it has none)."""
    return _meta_of(volume.read(rel) or b"")


def _meta_of(data: bytes) -> dict[str, Any]:
    """The metadata record that is the first line of ``data`` ({} if none is).
    Only that line is copied (``split`` would copy the whole rest too)."""
    end = data.find(b"\n")
    first = data if end < 0 else data[:end]
    try:
        record = json.loads(first)
    except (UnicodeDecodeError, ValueError):
        return {}
    return record if isinstance(record, dict) and record.get("kind") == "meta" else {}


def turns_since_summary(volume: Volume, rel: str) -> list[Turn]:
    """The turns of transcript ``rel`` after its last session summary (all of
    them before the first)."""
    return fresh_turns(volume.read(rel) or b"")


def fresh_turns(data: bytes) -> list[Turn]:
    """``turns_since_summary`` of a transcript's bytes."""
    after = fresh_after(data)
    return [turn for turn in _turns_of(_records_of(data)) if turn.seq > after]


def fresh_after(data: bytes) -> int:
    """The last seq the session summary of a transcript's bytes covers (0: none)."""
    return int(_meta_of(data).get("fresh_after_seq", 0) or 0)


def conversation_lines(turns: Sequence[Turn], *, numbered: bool = False) -> list[str]:
    """The turns as ``role: text`` lines (``[turn N] role: text`` when
    ``numbered``), one line per message, user then assistant."""
    lines = []
    for turn in turns:
        for role in ("user", "assistant"):
            said = " ".join(turn.text_of(role).split())
            if said:
                lines.append(f"[turn {turn.seq}] {role}: {said}" if numbered else f"{role}: {said}")
    return lines


def read_audit(workspace: Workspace, session: str) -> list[dict[str, Any]]:
    return read_records(workspace.volume, audit_rel(session))


@dataclass(frozen=True, slots=True)
class SessionInfo:
    """One session's transcript, as ``session list`` shows it."""

    session: str
    path: str
    turns: int
    last_seq: int
    first_at: datetime | None
    last_at: datetime | None
    size: int
    archived: int

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "path": self.path,
            "turns": self.turns,
            "last_seq": self.last_seq,
            "first_at": format_time(self.first_at) if self.first_at else None,
            "last_at": format_time(self.last_at) if self.last_at else None,
            "size": self.size,
            "archived": self.archived,
        }


def transcript_files(workspace: Workspace) -> list[tuple[str, Stat]]:
    """The transcripts (``sessions/<stem>.jsonl``, not the audit logs) and
    their stats, in path order."""
    return [
        (rel, stat)
        for rel, stat in workspace.volume.list("sessions/")
        if "/" not in rel[len("sessions/") :]
        and rel.endswith(".jsonl")
        and not rel.endswith(".audit.jsonl")
    ]


def list_sessions(workspace: Workspace) -> list[SessionInfo]:
    """Every session with a transcript, the most recently active first."""
    out = []
    for rel, stat in transcript_files(workspace):
        records = read_records(workspace.volume, rel)
        meta = records[0] if records and records[0].get("kind") == "meta" else {}
        turns = []
        for record in records:
            try:
                turns.append(Turn.from_dict(record))
            except ValueError:
                continue
        session = turns[0].session if turns else str(meta.get("session") or file_stem(rel))
        archived = sum(int(c.get("archived", 0)) for c in meta.get("compactions", ()))
        out.append(
            SessionInfo(
                session=session,
                path=rel,
                turns=len(turns),
                last_seq=max([archived_seq(meta), *(t.seq for t in turns)]),
                first_at=turns[0].created_at if turns else None,
                last_at=turns[-1].created_at if turns else None,
                size=stat.size,
                archived=archived,
            )
        )
    epoch = datetime.min.replace(tzinfo=now().tzinfo)
    return sorted(out, key=lambda info: info.last_at or epoch, reverse=True)


def turn_or_none(record: Mapping[str, Any]) -> Turn | None:
    try:
        return Turn.from_dict(record)
    except ValueError:
        return None


def file_stem(rel: str) -> str:
    """The file name of ``rel`` without its last suffix (``Path.stem``)."""
    return PurePosixPath(rel).stem
