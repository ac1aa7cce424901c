"""Transcripts: schema-versioned turns, the per-session audit log, upgrades and
quarantine at open, and session compaction (q15, qracer, MiQi).

Files, all under ``sessions/`` of a workspace (``<stem>`` is
``workspace.session_stem(session)``):

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

* An append is one ``write`` of whole lines and an fsync before the call
  returns; a torn last line (a writer killed mid-append) is cut off into the
  quarantine by the next append or open, never parsed as a turn.
* Every text is redacted by the caller (``Memory``) before it reaches here.
* ``upgrade`` runs at open under the workspace lock. Version 1 records (flat
  ``{"role", "content"}`` messages, one a line, as many agents write them) and
  q15's turn files (``history/turns/YYYY/MM/DD/*.json``) become version 2
  turns; a line or file that cannot be read (bad JSON, invalid UTF-8, not a
  record) moves byte for byte to the quarantine with the reason. A file is
  rewritten atomically, after its original bytes were copied to
  ``.memstrata/backup/``; a q15 file is moved to the backup only after the
  transcript holding its turn is durable (its turn id keeps a second import
  out). A second open changes nothing, and reads no transcript that is as
  it was when this process (or the last one) knew it good: ``Transcripts``
  keeps their sizes and mtimes in ``.memstrata/transcripts-verified.json``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .errors import InvalidInput
from .files import append_durable, atomic_write, fsync_dir, last_jsonl_record
from .model import now, parse_time_or_none
from .workspace import Workspace, session_stem

__all__ = [
    "PART_TYPES",
    "SCHEMA_VERSION",
    "Compaction",
    "SessionInfo",
    "Turn",
    "append_turn",
    "audit_events",
    "build_turn",
    "compact",
    "list_sessions",
    "read_audit",
    "read_turns",
    "upgrade",
]

SCHEMA_VERSION = 2
PART_TYPES = ("text", "reasoning", "tool_call", "tool_result")
ROLES = ("system", "user", "assistant", "tool")
_V1_ROLES = {"system", "user", "assistant", "tool", "function"}
_V1_TIME_KEYS = ("created_at", "ts", "timestamp", "time")

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
            _check_message(message)
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


def _check_message(message: Any) -> None:
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


def transcript_path(workspace: Workspace, session: str) -> Path:
    return workspace.path / "sessions" / f"{session_stem(session)}.jsonl"


def audit_path(workspace: Workspace, session: str) -> Path:
    return workspace.path / "sessions" / f"{session_stem(session)}.audit.jsonl"


def archive_path(workspace: Workspace, session: str) -> Path:
    return workspace.path / "sessions" / "archive" / f"{session_stem(session)}.jsonl"


def _lines(records: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(
        json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
        for record in records
    )


def last_seq(workspace: Workspace, session: str, quarantine: Quarantine) -> int:
    """The seq of the session's last turn (0 for none); a torn tail is quarantined."""
    path = transcript_path(workspace, session)
    where = _relative(workspace, path)
    record = last_jsonl_record(path, lambda torn: quarantine(where, torn, "torn last line"))
    if record is None:
        return 0
    seq = record.get("seq")
    if record.get("kind") != "meta" and isinstance(seq, int) and not isinstance(seq, bool):
        return seq
    # A transcript whose turns were all archived ends in its metadata record:
    # the seqs go on from the last archived one, never from 1 again.
    turns = read_turns(workspace, session)
    return max([archived_seq(read_meta_at(path)), *(turn.seq for turn in turns)])


def archived_seq(meta: Mapping[str, Any]) -> int:
    """The last seq the compactions noted in ``meta`` moved to the archive (0: none)."""
    last = 0
    for entry in meta.get("compactions", ()):
        span = entry.get("seq_range") if isinstance(entry, Mapping) else None
        if isinstance(span, list) and len(span) == 2 and type(span[1]) is int:
            last = max(last, span[1])
    return last


def append_turn(workspace: Workspace, turn: Turn) -> tuple[Path, Path]:
    """Append ``turn`` to its transcript and its events to the audit log, both
    fsynced before return; returns both paths. The caller holds the lock and
    took the seq from ``last_seq``."""
    folder = workspace.path / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    transcript = transcript_path(workspace, turn.session)
    audit = audit_path(workspace, turn.session)
    append_durable(audit, _lines(audit_events(turn)))
    append_durable(transcript, _lines([turn.to_dict()]))
    return transcript, audit


def _read_records(path: Path) -> list[dict[str, Any]]:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return []
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
    turns = read_turns_at(transcript_path(workspace, session))
    if not archived:
        return turns
    ids = {turn.id for turn in turns}
    older = [t for t in read_turns_at(archive_path(workspace, session)) if t.id not in ids]
    return sorted(older, key=lambda turn: turn.seq) + turns


def read_turns_at(path: Path) -> list[Turn]:
    """The turns of the transcript file ``path``, in order."""
    turns = []
    for record in _read_records(path):
        if record.get("kind") == "meta":
            continue
        try:
            turns.append(Turn.from_dict(record))
        except ValueError:
            continue
    return turns


def read_meta(workspace: Workspace, session: str) -> dict[str, Any]:
    """The metadata record of a session's transcript ({} before any compaction)."""
    return read_meta_at(transcript_path(workspace, session))


def read_meta_at(path: Path) -> dict[str, Any]:
    """The metadata record of the transcript file ``path`` ({} if it has none)."""
    try:
        with open(path, "rb") as handle:
            first = handle.readline()
    except FileNotFoundError:
        return {}
    try:
        record = json.loads(first)
    except (UnicodeDecodeError, ValueError):
        return {}
    return record if isinstance(record, dict) and record.get("kind") == "meta" else {}


def turns_since_summary(path: Path) -> list[Turn]:
    """The turns of transcript ``path`` after its last session summary (all of
    them before the first)."""
    fresh_after = int(read_meta_at(path).get("fresh_after_seq", 0) or 0)
    return [turn for turn in read_turns_at(path) if turn.seq > fresh_after]


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
    return _read_records(audit_path(workspace, session))


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


def transcript_files(workspace: Workspace) -> list[Path]:
    folder = workspace.path / "sessions"
    if not folder.is_dir():
        return []
    return sorted(
        path
        for path in folder.glob("*.jsonl")
        if path.is_file() and not path.name.endswith(".audit.jsonl")
    )


def list_sessions(workspace: Workspace) -> list[SessionInfo]:
    """Every session with a transcript, the most recently active first."""
    out = []
    for path in transcript_files(workspace):
        records = _read_records(path)
        meta = records[0] if records and records[0].get("kind") == "meta" else {}
        turns = []
        for record in records:
            try:
                turns.append(Turn.from_dict(record))
            except ValueError:
                continue
        session = turns[0].session if turns else str(meta.get("session") or path.stem)
        archived = sum(int(c.get("archived", 0)) for c in meta.get("compactions", ()))
        out.append(
            SessionInfo(
                session=session,
                path=_relative(workspace, path),
                turns=len(turns),
                last_seq=max([archived_seq(meta), *(t.seq for t in turns)]),
                first_at=turns[0].created_at if turns else None,
                last_at=turns[-1].created_at if turns else None,
                size=path.stat().st_size,
                archived=archived,
            )
        )
    epoch = datetime.min.replace(tzinfo=now().tzinfo)
    return sorted(out, key=lambda info: info.last_at or epoch, reverse=True)


# -- compaction (MiQi) -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Compaction:
    """What ``compact`` did to one session."""

    session: str
    kept: int
    archived: int
    archive: str | None
    summary: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "kept": self.kept,
            "archived": self.archived,
            "archive": self.archive,
            "summary": self.summary,
        }


def summarize(turns: Sequence[Turn], limit: int = 20, chars: int = 120) -> str:
    """An extractive summary of ``turns``: the first user line of each (at most
    ``limit`` turns, the first and the last ones kept), with its seq."""

    def line(turn: Turn) -> str:
        said = " ".join(turn.text_of("user").split())
        said = said if len(said) <= chars else said[: chars - 3].rstrip() + "..."
        return f"- #{turn.seq} ({format_time(turn.created_at)[:10]}) user: {said}"

    if len(turns) <= limit:
        return "\n".join(line(turn) for turn in turns)
    head, tail = turns[: limit // 2], turns[-(limit - limit // 2) :]
    skipped = len(turns) - len(head) - len(tail)
    return "\n".join(
        [*(line(t) for t in head), f"- … {skipped} more turns …", *(line(t) for t in tail)]
    )


def compact(workspace: Workspace, session: str, keep_last: int) -> Compaction:
    """Keep the metadata and the last ``keep_last`` turns of the session's
    transcript; move the others to ``archive/<stem>.jsonl`` (appended and
    fsynced first; a turn already there is not written twice) and note them,
    with an extractive summary, in the metadata record. The caller holds the lock."""
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
        raise InvalidInput(f"keep must be a whole number >= 0, not {keep_last!r}")
    path = transcript_path(workspace, session)
    records = _read_records(path)
    meta = records[0] if records and records[0].get("kind") == "meta" else None
    turns = [(record, _turn_or_none(record)) for record in records if record is not meta]
    valid = [(record, turn) for record, turn in turns if turn is not None]
    cut = max(len(valid) - keep_last, 0)
    if cut == 0:
        return Compaction(session, len(valid), 0, None, "")
    old, kept = valid[:cut], valid[cut:]
    archive = archive_path(workspace, session)
    archive.parent.mkdir(parents=True, exist_ok=True)
    there = {record.get("id") for record in _read_records(archive)}
    fresh = [record for record, _ in old if record.get("id") not in there]
    if fresh:
        append_durable(archive, _lines(fresh))
    old_turns = [turn for _, turn in old if turn is not None]
    summary = summarize(old_turns)
    archive_name = _relative(workspace, archive)
    entry = {
        "at": format_time(now()),
        "archived": len(old),
        "seq_range": [old_turns[0].seq, old_turns[-1].seq],
        "archive": archive_name,
        "summary": summary,
    }
    new_meta = {
        **(meta or {}),
        "schema_version": SCHEMA_VERSION,
        "kind": "meta",
        "session": session,
        "compactions": [*(meta or {}).get("compactions", []), entry],
    }
    atomic_write(path, _lines([new_meta, *(record for record, _ in kept)]))
    return Compaction(session, len(kept), len(old), archive_name, summary)


def update_meta(workspace: Workspace, session: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Set fields of the transcript's metadata record (made when missing); the
    file is rewritten atomically, every turn line kept byte for byte. The
    caller holds the lock. Returns the new metadata."""
    path = transcript_path(workspace, session)
    data = path.read_bytes() if path.exists() else b""
    lines = data.splitlines(keepends=True)
    meta: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": "meta", "session": session}
    if lines:
        try:
            first = json.loads(lines[0])
        except (UnicodeDecodeError, ValueError):
            first = None
        if isinstance(first, dict) and first.get("kind") == "meta":
            meta = first
            lines = lines[1:]
    meta.update(changes)
    atomic_write(path, _lines([meta]) + b"".join(lines))
    return meta


def _turn_or_none(record: Mapping[str, Any]) -> Turn | None:
    try:
        return Turn.from_dict(record)
    except ValueError:
        return None


# -- upgrades and quarantine at open ---------------------------------------------


Verified = dict[str, tuple[int, int]]  # transcript path -> (size, mtime_ns) known good


def upgrade(workspace: Workspace, quarantine: Quarantine, verified: Verified) -> list[str]:
    """Bring every transcript to version 2 and import q15 turn files; returns
    what was done, one line each (nothing on a second run).

    A transcript whose size and mtime are those ``verified`` holds for it is
    not read again; every file read is entered in ``verified`` as it now is."""
    notices: list[str] = []
    for path in transcript_files(workspace):
        where = _relative(workspace, path)
        info = path.stat()
        if verified.get(where) == (info.st_size, info.st_mtime_ns):
            continue
        notices += _upgrade_file(workspace, path, quarantine)
        info = path.stat()
        verified[where] = (info.st_size, info.st_mtime_ns)
    notices += _import_q15(workspace, quarantine)
    return notices


def _upgrade_file(workspace: Workspace, path: Path, quarantine: Quarantine) -> list[str]:
    data = path.read_bytes()
    where = _relative(workspace, path)
    kept: list[dict[str, Any]] = []
    pending_v1: list[tuple[int, dict[str, Any]]] = []
    changed, upgraded, bad = False, 0, 0
    fallback_session = path.stem
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    elif raw_lines:
        changed = True  # no final line break: the last line is rewritten whole or set aside

    def flush_v1() -> None:
        nonlocal upgraded
        for turn in _turns_from_v1(pending_v1, _session_of(kept, fallback_session), kept):
            kept.append(turn.to_dict())
            upgraded += 1
        pending_v1.clear()

    for number, raw in enumerate(raw_lines, start=1):
        if not raw.strip():
            changed = True
            continue
        reason = None
        record: Any = None
        try:
            record = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError:
            reason = f"line {number} is not valid UTF-8"
        except ValueError as exc:
            reason = f"line {number} is not JSON ({exc})"
        if reason is None and not isinstance(record, dict):
            reason = f"line {number} is not a JSON object"
        if reason is None and _is_v1(record):
            pending_v1.append((number, record))
            changed = True
            continue
        if reason is None:
            flush_v1()
            if record.get("kind") == "meta" and not kept:
                kept.append(record)
                continue
            try:
                Turn.from_dict(record)
            except ValueError as exc:
                reason = f"line {number} is not a turn: {exc}"
        if reason is not None:
            quarantine(where, raw, reason)
            bad += 1
            changed = True
            continue
        kept.append(record)
    flush_v1()
    if not changed:
        return []
    _backup(workspace, where, data)
    atomic_write(path, _lines(kept))
    parts = []
    if upgraded:
        parts.append(f"upgraded {upgraded} version 1 turn(s) to version {SCHEMA_VERSION}")
    if bad:
        parts.append(f"quarantined {bad} unreadable line(s)")
    return [f"{where}: {', '.join(parts) or 'rewritten with whole lines'} (original in backup)"]


def _is_v1(record: Mapping[str, Any]) -> bool:
    return (
        "schema_version" not in record
        and record.get("role") in _V1_ROLES
        and isinstance(record.get("content"), (str, list, type(None)))
    )


def _session_of(kept: Sequence[Mapping[str, Any]], fallback: str) -> str:
    for record in reversed(kept):
        session = record.get("session")
        if isinstance(session, str) and session:
            return session
    return fallback


def _v1_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # OpenAI-style content blocks
        return "\n".join(
            str(block.get("text", "")) if isinstance(block, dict) else str(block)
            for block in content
        )
    return ""


def _turns_from_v1(
    records: Sequence[tuple[int, Mapping[str, Any]]],
    session: str,
    kept: Sequence[Mapping[str, Any]],
) -> list[Turn]:
    """Flat messages grouped into turns: a turn starts at each user message."""
    if not records:
        return []
    seq = _max_seq(kept)
    groups: list[list[tuple[int, Mapping[str, Any]]]] = []
    for number, record in records:
        if record["role"] == "user" or not groups:
            groups.append([])
        groups[-1].append((number, record))
    turns = []
    for group in groups:
        seq += 1
        messages = []
        created = None
        for _, record in group:
            role = "tool" if record["role"] == "function" else record["role"]
            text = _v1_text(record.get("content"))
            kind = "tool_result" if role == "tool" else "text"
            part: dict[str, Any] = {"type": kind}
            if kind == "text":
                part["text"] = text
            else:
                part.update(
                    tool_call_id=record.get("tool_call_id"),
                    name=record.get("name"),
                    content=text,
                    success=True,
                )
            messages.append({"role": role, "parts": [part]})
            for key in _V1_TIME_KEYS:
                if created is None and record.get(key) is not None:
                    created = _v1_time(record[key])
        first_line = group[0][0]
        created = created or now()
        digest = hashlib.sha256(
            f"v1\0{session}\0{first_line}\0{json.dumps(group[0][1], sort_keys=True)}".encode()
        ).hexdigest()
        turns.append(Turn(f"v{digest[:12]}", seq, session, created, tuple(messages), {}))
    return turns


def _max_seq(records: Iterable[Mapping[str, Any]]) -> int:
    seqs = [r.get("seq") for r in records]
    return max((s for s in seqs if isinstance(s, int) and not isinstance(s, bool)), default=0)


def _v1_time(value: Any) -> datetime | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return datetime.fromtimestamp(value, tz=now().tzinfo)
        except (OverflowError, OSError, ValueError):
            return None
    return parse_time_or_none(value)


def _import_q15(workspace: Workspace, quarantine: Quarantine) -> list[str]:
    root = workspace.path / "history" / "turns"
    if not root.is_dir():
        return []
    found = sorted(root.glob("*/*/*/*.json"))
    turns_by_session: dict[str, list[tuple[Path, Turn]]] = {}
    for path in found:
        where = _relative(workspace, path)
        data = path.read_bytes()
        try:
            record = json.loads(data.decode("utf-8"))
            turn = _q15_turn(record, where)
        except UnicodeDecodeError:
            quarantine(where, data, "q15 turn file is not valid UTF-8")
            path.unlink()
            continue
        except ValueError as exc:
            quarantine(where, data, f"q15 turn file cannot be read: {exc}")
            path.unlink()
            continue
        turns_by_session.setdefault(turn.session, []).append((path, turn))
    notices = []
    for session, items in turns_by_session.items():
        transcript = transcript_path(workspace, session)
        transcript.parent.mkdir(parents=True, exist_ok=True)
        existing = _read_records(transcript)
        have = {record.get("id") for record in existing}
        seq = _max_seq(existing)
        new = []
        for _, turn in sorted(items, key=lambda item: (item[1].created_at, item[1].seq)):
            if turn.id in have:
                continue
            seq += 1
            new.append(
                Turn(turn.id, seq, session, turn.created_at, turn.messages, turn.meta).to_dict()
            )
        if new:
            append_durable(transcript, _lines(new))
        for path, _ in items:
            where = _relative(workspace, path)
            _backup(workspace, where, path.read_bytes())
            path.unlink()
        notices.append(
            f"imported {len(new)} q15 turn file(s) into {_relative(workspace, transcript)} "
            "(originals in backup)"
        )
    head = workspace.path / "history" / "state" / "head.json"
    if head.exists():
        _backup(workspace, _relative(workspace, head), head.read_bytes())
        head.unlink()
    _remove_empty_dirs(workspace.path / "history")
    return notices


def _q15_turn(record: Any, where: str) -> Turn:
    if not isinstance(record, dict):
        raise ValueError("not a JSON object")
    session = str(record.get("session") or record.get("session_id") or "q15")
    turn_id = str(record.get("id") or "q" + hashlib.sha256(where.encode()).hexdigest()[:12])
    created = _v1_time(record.get("created_at") or record.get("ts")) or now()
    raw_messages = record.get("messages")
    if not isinstance(raw_messages, list) or not raw_messages:
        raise ValueError("no messages")
    messages = []
    for message in raw_messages:
        if isinstance(message, dict) and "parts" in message:
            _check_message(message)
            messages.append(message)
        elif isinstance(message, dict) and message.get("role") in _V1_ROLES:
            role = "tool" if message["role"] == "function" else message["role"]
            messages.append(
                {
                    "role": role,
                    "parts": [{"type": "text", "text": _v1_text(message.get("content"))}],
                }
            )
        else:
            raise ValueError("a message has neither parts nor a role and content")
    raw_seq = record.get("seq")
    seq = raw_seq if isinstance(raw_seq, int) and not isinstance(raw_seq, bool) else 1
    return Turn(turn_id, max(seq, 1), session, created, tuple(messages), {"imported_from": where})


def _backup(workspace: Workspace, where: str, data: bytes) -> Path:
    folder = workspace.system / "backup"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = now().strftime("%Y%m%dT%H%M%S%f")
    target = folder / f"{stamp}-{where.replace('/', '__')}"
    atomic_write(target, data)
    return target


def _remove_empty_dirs(root: Path) -> None:
    if not root.is_dir():
        return
    for folder in sorted((p for p in root.rglob("*") if p.is_dir()), reverse=True):
        with contextlib.suppress(OSError):
            folder.rmdir()
    try:
        root.rmdir()
        fsync_dir(root.parent)
    except OSError:
        pass


def _relative(workspace: Workspace, path: Path) -> str:
    return path.relative_to(workspace.path).as_posix()
