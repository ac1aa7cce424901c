"""The write-ahead journal: every mutation is a record here before it is applied.

File format (``.memstrata/journal.wal``), UTF-8 text, one record a line::

    <crc32 of the JSON, 8 hex digits> <JSON object>\\n

The JSON object always has ``lsn`` (log sequence number, +1 per record) and
``op``; the first line of a file is a ``header`` record whose ``lsn`` is the
*base*: every change up to and including it is already in the checkpointed
files, every record after it is newer.

Invariants:

* **Write-ahead.** A caller appends the record, then applies it in RAM. A
  record is one ``write(2)`` of one whole line, made while holding the
  workspace lock, so records from several processes never interleave and
  ``lsn`` is strictly increasing within a file.
* **Durable on request.** ``append(..., sync=True)`` returns after
  ``fdatasync``: the record survives kill -9 and power loss. Other records are
  group-committed: written at once (they survive kill -9, the kernel has
  them) and fsynced when ``flush_every_updates`` records are pending, when
  ``flush_interval_seconds`` has passed since the first pending one (a timer
  thread), or on ``sync()`` / ``close()``.
* **Torn tails are garbage, never fatal.** Only a process that died inside
  ``write(2)`` can leave a line without its newline; whoever next holds the
  lock (``read_new(repair=True)``) cuts it off and hands the bytes to the
  quarantine callback, so a later append never glues onto garbage. A complete
  line whose CRC or JSON is wrong is skipped and reported (``problems``), and
  kept until the next checkpoint hands it to the quarantine.
* **Checkpoint = replace.** After the canonical files are rendered with every
  record up to lsn L, ``reset(L)`` atomically replaces the file with one that
  holds only a header with base L. Readers that still have the old file open
  drain it to its end before they follow the new one; the old file is frozen
  once replaced (appenders check under the lock that they write the current
  file), so no record is ever skipped.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..model import now
from .files import atomic_write

__all__ = ["Journal", "JournalProblem", "JournalScan", "Log", "Record", "scan"]

FORMAT = 1


@dataclass(frozen=True, slots=True)
class Record:
    """One journal entry: its sequence number, operation and payload."""

    lsn: int
    op: str
    data: dict[str, Any]


@dataclass(frozen=True, slots=True)
class JournalProblem:
    """A line that could not be used: torn (incomplete) or corrupt (bad CRC/JSON)."""

    kind: str
    offset: int
    data: bytes
    reason: str


QuarantineHook = Callable[[bytes, str], object]


def encode(record: dict[str, Any]) -> bytes:
    """One journal line for ``record``."""
    payload = json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode()
    return b"%08x %s\n" % (zlib.crc32(payload), payload)


def decode(line: bytes) -> Record:
    """Parse one journal line (without its newline); ValueError if it is corrupt."""
    if len(line) < 10 or line[8:9] != b" ":
        raise ValueError("not a journal line")
    payload = line[9:]
    if int(line[:8], 16) != zlib.crc32(payload):
        raise ValueError("checksum mismatch")
    data = json.loads(payload.decode("utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("lsn"), int):
        raise ValueError("record without lsn")
    return Record(lsn=data["lsn"], op=str(data.get("op", "")), data=data)


@dataclass
class _GroupCommit:
    every: int
    interval: float
    pending: int = 0
    since: float = 0.0
    timer: threading.Timer | None = field(default=None, repr=False)


class Log(Protocol):
    """The engine's record log: ``Journal`` (a file) or
    ``postgres.journal.PostgresJournal`` (rows of one tenant).

    The semantics are ``Journal``'s (this module's invariants): ``records`` are
    those since the last ``reset`` (what the next checkpoint folds in),
    ``read_new`` gives what others appended since the last call, ``gap`` says
    records were missed (others reset more than once: reload the snapshot,
    apply ``records``, clear it), ``append`` is called only under the
    workspace lock and is acknowledged when that lock is released (the file:
    at ``append(sync=True)`` or the group commit; a database: at the commit).
    """

    base_lsn: int
    last_lsn: int
    header: dict[str, Any]
    records: list[Record]
    gap: bool
    problems: list[JournalProblem]

    def open(self, *, base_lsn: int) -> list[Record]: ...

    def read_new(self, *, repair: bool = False) -> list[Record]: ...

    def append(self, op: str, payload: dict[str, Any], *, sync: bool) -> Record: ...

    def sync(self) -> None: ...

    @property
    def unsynced(self) -> int:
        """Records appended but not yet durable."""
        ...

    @property
    def size(self) -> int:
        """Bytes the log takes."""
        ...

    def take_corrupt(self) -> list[JournalProblem]: ...

    def reset(self, base_lsn: int, header: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class Journal:
    """An append-only, checksummed, group-committed record log (one file)."""

    def __init__(
        self,
        path: Path,
        *,
        flush_every_updates: int = 20,
        flush_interval_seconds: float = 5.0,
        on_quarantine: QuarantineHook | None = None,
        read_only: bool = False,
    ) -> None:
        self.path = path
        self.read_only = read_only  # a workspace that cannot be written: follow, never write
        self.base_lsn = 0
        self.last_lsn = 0
        self.header: dict[str, Any] = {}
        self.records: list[Record] = []
        self.gap = False  # records were missed (see read_new); the caller clears it
        self.problems: list[JournalProblem] = []
        self._on_quarantine = on_quarantine
        self._io = threading.RLock()
        self._commit = _GroupCommit(flush_every_updates, flush_interval_seconds)
        self._fd: int | None = None
        self._ino = -1
        self._ino_followed = False
        self._offset = 0

    # -- opening and reading ------------------------------------------------

    def open(self, *, base_lsn: int) -> list[Record]:
        """Open the file (creating it with ``base_lsn`` if missing); return its records.

        Call while holding the workspace lock: a torn tail is repaired.
        """
        with self._io:
            if self.read_only and not self.path.exists():
                self.last_lsn = max(self.last_lsn, base_lsn)
                return []
            if not self.path.exists():
                self._write_fresh(base_lsn, {})
            self._open_current()
            records = self.read_new(repair=not self.read_only)
            self.last_lsn = max(self.last_lsn, base_lsn)
            return records

    def read_new(self, *, repair: bool = False) -> list[Record]:
        """Records appended since the last call, following a checkpoint's replacement.

        ``repair=True`` (only while holding the workspace lock) cuts off a torn tail.
        If the file was replaced more than once since the last call, the records
        of the files in between are gone from the journal (they are in the
        snapshot): ``gap`` is then set, and the caller must reload the snapshot,
        apply ``records`` (the whole current file) on top of it and clear ``gap``.
        """
        with self._io:
            records: list[Record] = []
            if self._fd is None:  # read-only, and there was no journal file yet
                if not self.path.exists():
                    return records
                self._open_current()
            while True:
                records.extend(self._read_to_end(repair))
                try:
                    current = os.stat(self.path).st_ino
                except FileNotFoundError:
                    if not repair:
                        return records
                    self._write_fresh(self.last_lsn, {})
                    current = -2
                if current == self._ino:
                    return records
                records.extend(self._read_to_end(repair))  # drain: the old file is frozen
                self._open_current()
                self._ino_followed = True

    def _open_current(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
        mode = os.O_RDONLY if self.read_only else os.O_RDWR | os.O_APPEND
        self._fd = os.open(self.path, mode)
        self._ino = os.fstat(self._fd).st_ino
        self._ino_followed = False
        self._offset = 0
        self.header = {}
        self.records = []
        self.problems = []

    def _read_to_end(self, repair: bool) -> list[Record]:
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size <= self._offset:
            return []
        chunk = os.pread(self._fd, size - self._offset, self._offset)
        end = chunk.rfind(b"\n") + 1
        records = []
        start = 0
        while start < end:
            stop = chunk.index(b"\n", start)
            line = chunk[start:stop]
            record = self._parse(line, self._offset + start)
            if record is not None:
                records.append(record)
            start = stop + 1
        torn_at = self._offset + end
        self._offset = torn_at
        if end < len(chunk) and repair:
            tail = chunk[end:]
            self.problems.append(JournalProblem("torn", torn_at, tail, "incomplete last record"))
            if self._on_quarantine is not None:
                self._on_quarantine(tail, f"torn last journal record at byte {torn_at}")
            os.ftruncate(self._fd, torn_at)
            os.fsync(self._fd)
        return records

    def _parse(self, line: bytes, offset: int) -> Record | None:
        try:
            record = decode(line)
        except (ValueError, UnicodeDecodeError) as exc:
            self.problems.append(JournalProblem("corrupt", offset, line, str(exc)))
            return None
        if record.op == "header":
            if record.lsn > self.last_lsn and self._ino_followed:
                self.gap = True
            self.base_lsn = record.lsn
            self.header = record.data
            self.last_lsn = max(self.last_lsn, record.lsn)
            return None
        self.records.append(record)
        if record.lsn <= self.last_lsn:
            return None  # already seen (a replay of a file we had read)
        self.last_lsn = record.lsn
        return record

    # -- writing ------------------------------------------------------------

    def append(self, op: str, payload: dict[str, Any], *, sync: bool) -> Record:
        """Write one record (the caller holds the workspace lock and has caught up)."""
        with self._io:
            assert self._fd is not None, "journal is not open"
            data = {"lsn": self.last_lsn + 1, "op": op, "ts": now().isoformat(), **payload}
            line = encode(data)
            self._write_all(line)
            self._offset += len(line)
            self.last_lsn += 1
            record = Record(lsn=data["lsn"], op=op, data=data)
            self.records.append(record)
            if sync:
                self._sync_locked()
            else:
                self._pending()
            return record

    def _write_all(self, line: bytes) -> None:
        """Write the whole line or nothing: a short write (a full disk) is cut off
        again and raised, so a record is never acknowledged half written."""
        assert self._fd is not None
        written = 0
        try:
            while written < len(line):
                count = os.write(self._fd, line[written:])
                if count == 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(self.path))
                written += count
        except OSError:
            if written:
                with contextlib.suppress(OSError):
                    os.ftruncate(self._fd, self._offset)
            raise

    def _pending(self) -> None:
        commit = self._commit
        if commit.pending == 0:
            commit.since = time.monotonic()
        commit.pending += 1
        overdue = commit.interval > 0 and time.monotonic() - commit.since >= commit.interval
        if commit.pending >= commit.every or overdue:
            self._sync_locked()
        elif commit.timer is None and commit.interval > 0:
            commit.timer = threading.Timer(commit.interval, self.sync)
            commit.timer.daemon = True
            commit.timer.start()

    def sync(self) -> None:
        """Make every record written so far durable (fdatasync)."""
        with self._io:
            self._sync_locked()

    def _sync_locked(self) -> None:
        commit = self._commit
        if commit.timer is not None:
            commit.timer.cancel()
            commit.timer = None
        if self._fd is not None:
            os.fdatasync(self._fd)
        commit.pending = 0

    @property
    def unsynced(self) -> int:
        """Records written but not yet fsynced."""
        return self._commit.pending

    @property
    def size(self) -> int:
        """Bytes read or written in the current file."""
        return self._offset

    def take_corrupt(self) -> list[JournalProblem]:
        """Corrupt lines seen in the current file (for quarantine before ``reset``)."""
        with self._io:
            return [p for p in self.problems if p.kind == "corrupt"]

    def reset(self, base_lsn: int, header: dict[str, Any]) -> None:
        """Replace the file with an empty one whose base is ``base_lsn`` (a checkpoint).

        ``header`` is stored in the new file's header record (``self.header``),
        where other processes read it when they follow the replacement.
        """
        with self._io:
            self._sync_locked()
            self._write_fresh(base_lsn, header)
            self._open_current()
            self._read_to_end(repair=False)

    def _write_fresh(self, base_lsn: int, extra: dict[str, Any]) -> None:
        header = {"lsn": base_lsn, "op": "header", "format": FORMAT, "ts": now().isoformat()}
        atomic_write(self.path, encode({**extra, **header}))

    def close(self) -> None:
        """Sync and close the file."""
        with self._io:
            if self._fd is not None:
                self._sync_locked()
                os.close(self._fd)
                self._fd = None


@dataclass(frozen=True, slots=True)
class JournalScan:
    """A read-only look at a journal file (for ``doctor``)."""

    header: dict[str, Any]
    records: list[Record]
    problems: list[JournalProblem]


def scan(path: Path) -> JournalScan:
    """Read every line of ``path`` without changing it."""
    data = path.read_bytes()
    header: dict[str, Any] = {}
    records: list[Record] = []
    problems: list[JournalProblem] = []
    end = data.rfind(b"\n") + 1
    offset = 0
    for line in data[:end].split(b"\n")[:-1]:
        try:
            record = decode(line)
        except (ValueError, UnicodeDecodeError) as exc:
            problems.append(JournalProblem("corrupt", offset, line, str(exc)))
        else:
            if record.op == "header":
                header = record.data
            else:
                records.append(record)
        offset += len(line) + 1
    if end < len(data):
        problems.append(JournalProblem("torn", end, data[end:], "incomplete last record"))
    return JournalScan(header, records, problems)
