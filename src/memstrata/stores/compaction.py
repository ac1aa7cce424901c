"""Session compaction (MiQi): the older turns of a transcript move to
``sessions/archive/<stem>.jsonl``, noted with an extractive summary in the
transcript's metadata record.

* The archive is appended (durably) before the transcript is rewritten
  atomically, both through the workspace's volume: a crash in between leaves
  turns in both, never in neither; readers count each once by its id, and the
  next compaction does not archive a turn twice.
* With a byte limit, the kept turns and the metadata record fit in
  ``TARGET_SHARE`` of it (hysteresis: the next turns do not pass the limit
  again at once; the last turn is always kept). The metadata record's
  ``compactions`` list holds at most ``MAX_COMPACTIONS`` entries: older ones
  are merged into its first (their counts summed, their seq ranges joined),
  and only the newest ``SUMMARIES_KEPT`` keep their summary (the turns
  themselves are in the archive), so the record stays small however often
  a session compacts.
* ``update_meta`` rewrites only the metadata record; every turn line is kept
  byte for byte. The caller holds the workspace lock.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidInput
from ..model import now
from ..storage.workspace import Workspace
from .transcripts import (
    SCHEMA_VERSION,
    Turn,
    archive_rel,
    format_time,
    jsonl_lines,
    read_records,
    transcript_rel,
    turn_or_none,
)

__all__ = ["MAX_COMPACTIONS", "TARGET_SHARE", "Compaction", "compact", "summarize", "update_meta"]

TARGET_SHARE = 0.75  # of session_max_bytes: what a compaction by size leaves
MAX_COMPACTIONS = 20  # entries in the metadata record's compactions list
SUMMARIES_KEPT = 3  # the newest entries that keep their summary (the archive has all)


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


def compact(workspace: Workspace, session: str, keep_last: int, max_bytes: int = 0) -> Compaction:
    """Keep the metadata and the last ``keep_last`` turns of the session's
    transcript, fewer if they would pass ``TARGET_SHARE`` of ``max_bytes``
    (0: no limit); move the others to ``archive/<stem>.jsonl`` (appended
    durably first; a turn already there is not written twice) and note them,
    with an extractive summary, in the metadata record. The caller holds the lock."""
    if isinstance(keep_last, bool) or not isinstance(keep_last, int) or keep_last < 0:
        raise InvalidInput(f"keep must be a whole number >= 0, not {keep_last!r}")
    volume = workspace.volume
    rel = transcript_rel(session)
    records = read_records(volume, rel)
    meta = records[0] if records and records[0].get("kind") == "meta" else None
    turns = [(record, turn_or_none(record)) for record in records if record is not meta]
    valid = [(record, turn) for record, turn in turns if turn is not None]
    cut = max(len(valid) - keep_last, 0)
    if max_bytes:
        cut = _cut_to_size(valid, cut, meta, int(max_bytes * TARGET_SHARE))
    if cut == 0:
        return Compaction(session, len(valid), 0, None, "")
    old, kept = valid[:cut], valid[cut:]
    archive_name = archive_rel(session)
    there = {record.get("id") for record in read_records(volume, archive_name)}
    fresh = [record for record, _ in old if record.get("id") not in there]
    if fresh:
        volume.append(archive_name, jsonl_lines(fresh))
    old_turns = [turn for _, turn in old if turn is not None]
    summary = summarize(old_turns)
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
        "compactions": bounded([*(meta or {}).get("compactions", []), entry]),
    }
    volume.write(rel, jsonl_lines([new_meta, *(record for record, _ in kept)]))
    return Compaction(session, len(kept), len(old), archive_name, summary)


def _cut_to_size(
    valid: Sequence[tuple[dict[str, Any], Turn | None]],
    cut: int,
    meta: Mapping[str, Any] | None,
    target: int,
) -> int:
    """The first kept turn's place, moved on from ``cut`` until the kept turns
    and the metadata record (with room for one more entry) fit in ``target``
    bytes; the last turn is always kept."""
    room = len(jsonl_lines([meta])) if meta else 0
    room += 4096  # the new compactions entry (its summary is at most ~20 short lines)
    size = room + sum(len(jsonl_lines([record])) for record, _ in valid[cut:])
    while size > target and cut < len(valid) - 1:
        size -= len(jsonl_lines([valid[cut][0]]))
        cut += 1
    return cut


def bounded(entries: list[Any]) -> list[Any]:
    """``entries`` with those before the last ``MAX_COMPACTIONS - 1`` merged
    into one (archived counts summed, seq ranges joined)."""
    entries = [
        {k: v for k, v in entry.items() if k != "summary"}
        if isinstance(entry, Mapping)
        and "merged" not in entry
        and place < len(entries) - SUMMARIES_KEPT
        else entry
        for place, entry in enumerate(entries)
    ]
    if len(entries) <= MAX_COMPACTIONS:
        return entries
    old, recent = entries[: -(MAX_COMPACTIONS - 1)], entries[-(MAX_COMPACTIONS - 1) :]
    spans = [
        entry["seq_range"]
        for entry in old
        if isinstance(entry, Mapping)
        and isinstance(entry.get("seq_range"), list)
        and len(entry["seq_range"]) == 2
        and all(type(seq) is int for seq in entry["seq_range"])
    ]
    merged_count = sum(
        entry.get("merged", 1) if type(entry.get("merged", 1)) is int else 1
        for entry in old
        if isinstance(entry, Mapping)
    )
    archived = sum(
        entry.get("archived", 0)
        for entry in old
        if isinstance(entry, Mapping) and type(entry.get("archived")) is int
    )
    merged: dict[str, Any] = {
        "at": old[-1].get("at") if isinstance(old[-1], Mapping) else None,
        "archived": archived,
        "archive": next(
            (e["archive"] for e in reversed(old) if isinstance(e, Mapping) and "archive" in e),
            None,
        ),
        "summary": f"- {merged_count} earlier compactions, {archived} turns in the archive",
        "merged": merged_count,
    }
    if spans:
        merged["seq_range"] = [min(s[0] for s in spans), max(s[1] for s in spans)]
    return [merged, *recent]


def update_meta(workspace: Workspace, session: str, changes: Mapping[str, Any]) -> dict[str, Any]:
    """Set fields of the transcript's metadata record (made when missing); the
    file is rewritten atomically, every turn line kept byte for byte. The
    caller holds the lock. Returns the new metadata."""
    rel = transcript_rel(session)
    data = workspace.volume.read(rel) or b""
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
    workspace.volume.write(rel, jsonl_lines([meta]) + b"".join(lines))
    return meta
