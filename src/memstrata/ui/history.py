"""A fact's history as a timeline, read from the journaled record of changes.

Every change to a long-term fact is one journal record (``ltm.put`` with its
``reason``: remember, duplicate, supersede, restore, a hand edit...; or
``ltm.delete``); a checkpoint appends the records to ``memory/LTM_AUDIT.jsonl``
and empties the journal. The timeline of item ``X`` is the records that name
``X``, oldest first, from the audit log and then the journal.

Invariants:

* **Read-only**: nothing here writes; the audit log is read through the
  workspace's volume (a folder or a database).
* **Fast at any size**: the log is held in RAM as bytes (read again only when
  its size or mtime changed) and searched for ``"X"`` with ``bytes.find``;
  only the lines that contain it are parsed (a line whose parse fails or that
  does not name ``X`` in an id field is skipped).
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..memory import Memory
from ..model import parse_time_or_none
from ..storage.workspace import LTM_AUDIT
from ..stores.longterm import OP_DELETE

__all__ = ["Event", "Timeline"]


@dataclass(frozen=True, slots=True)
class Event:
    """One step of a fact's life."""

    at: datetime | None
    kind: str  # created, seen again, superseded, replaces, restored, forgotten, changed
    detail: str
    other: str | None = None  # the other fact's id (what replaced it / what it replaced)
    lsn: int = 0


class Timeline:
    """Timelines of the facts of one ``Memory`` (see the module)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._lock = threading.Lock()
        self._key: tuple[int, int, int] | None = None
        self._data = b""

    def of(self, item_id: str) -> list[Event]:
        """The events of item ``item_id``, oldest first."""
        records = [*self._from_audit(item_id), *self._from_journal(item_id)]
        seen: set[int] = set()
        events: list[Event] = []
        for record in sorted(records, key=lambda r: int(r.get("lsn", 0))):
            lsn = int(record.get("lsn", 0))
            if lsn in seen:
                continue
            seen.add(lsn)
            event = _event(record, item_id)
            if event is not None:
                events.append(event)
        return events

    def _audit(self) -> bytes:
        volume = self.memory.workspace.volume
        stat = volume.stat(LTM_AUDIT)
        key = (stat.size, stat.mtime_ns, stat.inode) if stat is not None else (0, 0, 0)
        with self._lock:
            if key != self._key:
                self._data = (volume.read(LTM_AUDIT) or b"") if stat is not None else b""
                self._key = key
            return self._data

    def _from_audit(self, item_id: str) -> list[dict[str, Any]]:
        data = self._audit()
        needle = json.dumps(item_id).encode()
        found: list[dict[str, Any]] = []
        start = data.find(needle)
        while start >= 0:
            begin = data.rfind(b"\n", 0, start) + 1
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            record = _parse(data[begin:end])
            if record is not None and _names(record, item_id):
                found.append(record)
            start = data.find(needle, end)
        return found

    def _from_journal(self, item_id: str) -> list[dict[str, Any]]:
        engine = self.memory.engine
        with engine.state:
            records = list(engine.journal.records)
        return [r.data for r in records if r.op.startswith("ltm.") and _names(r.data, item_id)]


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _names(record: dict[str, Any], item_id: str) -> bool:
    if record.get("op") == OP_DELETE:
        return item_id in (record.get("ids") or ())
    items = [i for i in record.get("items") or () if isinstance(i, dict)]
    return any(item_id in (i.get("id"), i.get("superseded_by")) for i in items)


def _event(record: dict[str, Any], item_id: str) -> Event | None:
    lsn = int(record.get("lsn", 0))
    at = parse_time_or_none(record.get("ts")) or parse_time_or_none(record.get("at"))
    reason = str(record.get("reason", ""))
    if record.get("op") == OP_DELETE:
        return Event(at, "forgotten", f"deleted ({reason or 'forget'})", None, lsn)
    items = [i for i in record.get("items") or () if isinstance(i, dict)]
    mine = next((i for i in items if i.get("id") == item_id), None)
    if mine is None:
        return None
    other = next((i for i in items if i.get("id") != item_id), None)
    text = str(mine.get("text", ""))
    if reason == "supersede" and mine.get("superseded_by"):
        new = other.get("text", "") if other else ""
        return Event(at, "superseded", f"replaced by: {new}", mine.get("superseded_by"), lsn)
    if reason == "supersede" and other is not None:
        return Event(at, "replaces", f"corrects: {other.get('text', '')}", other.get("id"), lsn)
    if reason == "duplicate":
        return Event(at, "seen again", f"said again (hits {mine.get('hits', 0)})", None, lsn)
    if reason == "restore":
        return Event(at, "restored", text, None, lsn)
    if reason == "remember":
        return Event(at, "created", text, None, lsn)
    return Event(at, "changed", f"{reason or 'changed'}: {text}", None, lsn)
