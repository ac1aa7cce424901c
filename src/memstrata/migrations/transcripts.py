"""Transcripts from older layouts, brought to version 2 at open.

``upgrade`` runs at open under the workspace lock. Version 1 records (flat
``{"role", "content"}`` messages, one a line, as many agents write them, an
assistant's OpenAI-style ``tool_calls`` kept as tool_call parts) and
q15's turn files (``history/turns/YYYY/MM/DD/*.json``) become version 2
turns; a line or file that cannot be read (bad JSON, invalid UTF-8, not a
record) moves byte for byte to the quarantine with the reason. A file is
rewritten atomically, after its original bytes were copied to
``.memstrata/backup/``. q15's files are never changed or removed (q15 can
go on using its folder): each turn is *copied*, once (its turn id keeps a
second copy out); an unreadable one is copied to the quarantine and left
where it is (``memstrata import q15 DIR --move`` is the explicit way to take
q15's files away). A second open changes nothing, and reads no transcript that is as
it was when this process (or the last one) knew it good: ``Transcripts``
keeps their sizes and mtimes in ``.memstrata/transcripts-verified.json``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from ..model import now, parse_time_or_none
from ..storage.layers import matches
from ..storage.workspace import Workspace
from ..stores.transcripts import (
    SCHEMA_VERSION,
    Quarantine,
    Turn,
    check_message,
    file_stem,
    jsonl_lines,
    read_records,
    transcript_files,
    transcript_rel,
)

__all__ = ["Verified", "q15_turn", "upgrade"]

_V1_ROLES = {"system", "user", "assistant", "tool", "function"}
_V1_TIME_KEYS = ("created_at", "ts", "timestamp", "time")

Verified = dict[str, tuple[int, int]]  # transcript path -> (size, mtime_ns) known good


def upgrade(workspace: Workspace, quarantine: Quarantine, verified: Verified) -> list[str]:
    """Bring every transcript to version 2 and import q15 turn files; returns
    what was done, one line each (nothing on a second run).

    A transcript whose size and mtime are those ``verified`` holds for it is
    not read again; every file read is entered in ``verified`` as it now is."""
    notices: list[str] = []
    for where, info in transcript_files(workspace):
        if verified.get(where) == (info.size, info.mtime_ns):
            continue
        notices += _upgrade_file(workspace, where, quarantine)
        now_info = workspace.volume.stat(where)
        if now_info is not None:
            verified[where] = (now_info.size, now_info.mtime_ns)
    notices += _import_q15(workspace, quarantine, verified)
    return notices


def _upgrade_file(workspace: Workspace, where: str, quarantine: Quarantine) -> list[str]:
    data = workspace.volume.read(where)
    if data is None:  # gone since it was listed
        return []
    kept: list[dict[str, Any]] = []
    pending_v1: list[tuple[int, dict[str, Any]]] = []
    changed, upgraded, bad = False, 0, 0
    fallback_session = file_stem(where)
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
    workspace.volume.write(where, jsonl_lines(kept))
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


def _v1_tool_calls(record: Mapping[str, Any]) -> list[dict[str, Any]]:
    """An OpenAI-style message's ``tool_calls`` (and the older ``function_call``)
    as tool_call parts; arguments given as a JSON string are parsed."""
    raw = record.get("tool_calls")
    calls = list(raw) if isinstance(raw, list) else []
    legacy = record.get("function_call")
    if isinstance(legacy, dict):
        calls.append({"function": legacy})
    parts = []
    for index, call in enumerate(calls):
        if not isinstance(call, dict):
            continue
        inner = call.get("function")
        function: dict[str, Any] = inner if isinstance(inner, dict) else call
        name = function.get("name")
        if not isinstance(name, str) or not name:
            continue
        arguments = function.get("arguments", function.get("args", {}))
        if isinstance(arguments, str):
            with contextlib.suppress(ValueError):  # else kept as the string it was
                arguments = json.loads(arguments)
        call_id = call.get("id") or f"call{index + 1}"
        parts.append(
            {"type": "tool_call", "id": str(call_id), "name": name, "arguments": arguments}
        )
    return parts


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
            calls = _v1_tool_calls(record)
            parts = [*([part] if kind != "text" or text or not calls else []), *calls]
            messages.append({"role": role, "parts": parts})
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


_Q15_TURNS = "history/turns/*/*/*/*.json"


def _import_q15(workspace: Workspace, quarantine: Quarantine, verified: Verified) -> list[str]:
    """Copy q15's turn files into the transcripts; q15's own files stay as they
    are (q15 can go on using its folder): a turn already there (by id) is not
    copied again, and a file read once is not read again while its size and
    mtime are those ``verified`` holds for it."""
    volume = workspace.volume
    listed = volume.list("history/turns/")
    turns_by_session: dict[str, list[Turn]] = {}
    for where, info in listed:
        key = (info.size, info.mtime_ns)
        if not matches(where, _Q15_TURNS) or verified.get(where) == key:
            continue
        data = volume.read(where)
        if data is None:
            continue
        verified[where] = key
        try:
            turn = q15_turn(json.loads(data.decode("utf-8")), where)
        except UnicodeDecodeError:
            quarantine(where, data, "q15 turn file is not valid UTF-8 (a copy; q15's file kept)")
            continue
        except ValueError as exc:
            reason = f"q15 turn file cannot be read: {exc} (a copy; q15's file kept)"
            quarantine(where, data, reason)
            continue
        turns_by_session.setdefault(turn.session, []).append(turn)
    notices = []
    for session, turns in turns_by_session.items():
        transcript = transcript_rel(session)
        existing = read_records(volume, transcript)
        have = {record.get("id") for record in existing}
        seq = _max_seq(existing)
        new = []
        for turn in sorted(turns, key=lambda turn: (turn.created_at, turn.seq)):
            if turn.id in have:
                continue
            seq += 1
            new.append(
                Turn(turn.id, seq, session, turn.created_at, turn.messages, turn.meta).to_dict()
            )
        if new:
            volume.append(transcript, jsonl_lines(new))
            notices.append(
                f"copied {len(new)} q15 turn file(s) into {transcript} (q15's files kept)"
            )
    return notices


def q15_turn(record: Any, where: str) -> Turn:
    """One q15 turn file (any schema version) as a version 2 turn; ``ValueError``
    when it is not one."""
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
            check_message(message)
            messages.append(message)
        elif isinstance(message, dict) and message.get("role") in _V1_ROLES:
            role = "tool" if message["role"] == "function" else message["role"]
            text = _v1_text(message.get("content"))
            calls = _v1_tool_calls(message)
            said = [{"type": "text", "text": text}] if text or not calls else []
            messages.append({"role": role, "parts": [*said, *calls]})
        else:
            raise ValueError("a message has neither parts nor a role and content")
    raw_seq = record.get("seq")
    seq = raw_seq if isinstance(raw_seq, int) and not isinstance(raw_seq, bool) else 1
    return Turn(turn_id, max(seq, 1), session, created, tuple(messages), {"imported_from": where})


def _backup(workspace: Workspace, where: str, data: bytes) -> str:
    stamp = now().strftime("%Y%m%dT%H%M%S%f")
    target = f".memstrata/backup/{stamp}-{where.replace('/', '__')}"
    workspace.volume.write(target, data)
    return target
