"""``PostgresJournal``: the engine's record log as rows of one tenant, a
``storage.journal.Log`` with ``Journal``'s semantics.

Tables (``schema``, migration ``0004_files``, each under the tenant policy):
``memstrata_journal`` (one row per record: ``lsn``, ``op``, ``data`` -- the
record's JSON exactly as the file journal writes it, key order included) and
``memstrata_journal_state`` (the tenant's ``base_lsn``, the header of the last
reset, and ``epoch``, +1 at every reset).

* **Appends happen under the lock** (``PostgresLock``, the workspace lock):
  a record's ``lsn`` is ``last_lsn + 1`` of the caller, who has caught up
  under that lock, so a tenant's lsns increase by one in commit order; the
  key ``(tenant, lsn)`` refuses a duplicate (``Conflict``). The record is
  written in the lock's transaction and acknowledged when the lock is
  released (the commit): ``sync`` does nothing, ``unsynced`` is 0.
* **Reading.** ``read_new`` gives the rows above ``last_lsn``, in one
  statement with the state (one snapshot). ``records`` are the rows since the
  last reset (what the next checkpoint folds in); ``header`` is the last
  reset's header, a new object only when another reset was read.
* **Reset** (a checkpoint) deletes the rows up to ``base_lsn``, stores the
  header and bumps ``epoch``. A reader that finds another epoch whose base is
  above what it has read has missed records (they are in the snapshot now):
  ``gap`` is set, and the caller reloads the snapshot, applies ``records`` and
  clears it (the file journal sets it only after two resets: it drains a
  replaced file first; here the rows are gone at once).
* **RAM never runs ahead of the database for long.** While another thread of
  this process holds the lock, ``read_new`` reads nothing (that thread's
  uncommitted appends are in RAM already, the database would not show them
  yet). When the lock's transaction is rolled back or its commit fails
  (``PostgresLock.on_abort``), the appends and reset it held are taken back
  from RAM and ``gap`` is set, so the engine reloads what the database holds.
* The database has no torn or corrupt lines: ``problems`` and
  ``take_corrupt()`` are empty. ``size`` is approximate: the bytes of the JSON
  of the header and the records since the last reset.
* Thread-safe (one re-entrant lock around every call); errors are
  ``memstrata.errors`` only.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InvalidInput
from ..model import now
from ..storage.journal import FORMAT, JournalProblem, Record
from .connect import Database
from .lock import PostgresLock, bind

if TYPE_CHECKING:
    from .connect import Connection

__all__ = ["PostgresJournal"]

# The state and the rows to read, in one snapshot: those above ``last`` while
# the epoch is the one read before, else all since the (new) base.
_READ = (
    "SELECT s.base_lsn, s.epoch, CASE WHEN s.epoch <> %(epoch)s THEN s.header END, "
    "j.lsn, j.op, j.data, octet_length(j.data::text) "
    "FROM memstrata_journal_state s LEFT JOIN memstrata_journal j ON j.tenant = s.tenant "
    "AND j.lsn > CASE WHEN s.epoch = %(epoch)s THEN %(last)s ELSE s.base_lsn END "
    "ORDER BY j.lsn"
)
_OPEN = (
    "INSERT INTO memstrata_journal_state (tenant, base_lsn, header) VALUES (%s, %s, %s::json) "
    "ON CONFLICT (tenant) DO NOTHING"
)
_APPEND = "INSERT INTO memstrata_journal (tenant, lsn, op, data) VALUES (%s, %s, %s, %s::json)"
_RESET = (
    "INSERT INTO memstrata_journal_state (tenant, base_lsn, header) VALUES (%s, %s, %s::json) "
    "ON CONFLICT (tenant) DO UPDATE SET base_lsn = EXCLUDED.base_lsn, "
    "header = EXCLUDED.header, epoch = memstrata_journal_state.epoch + 1 RETURNING epoch"
)


@dataclass(frozen=True, slots=True)
class _Saved:
    """What RAM held before the lock's transaction changed it (to put back)."""

    base_lsn: int
    last_lsn: int
    header: dict[str, Any]
    records: list[Record]
    count: int
    epoch: int
    size: int


class PostgresJournal:
    """The journal of ``tenant`` on the database at ``db`` (a URL, or an open
    ``Database`` the caller keeps); bound to ``lock`` (of the same tenant and
    database) when given, else to a lock of its own."""

    def __init__(
        self, db: str | Database, tenant: str, *, lock: PostgresLock | None = None
    ) -> None:
        self.lock, self._owns_lock = bind(db, tenant, lock)
        self.tenant = self.lock.tenant
        self.base_lsn = 0
        self.last_lsn = 0
        self.header: dict[str, Any] = {}
        self.records: list[Record] = []
        self.gap = False  # records were missed (see the module); the caller clears it
        self.problems: list[JournalProblem] = []
        self._epoch = 0  # of the state last read; 0: none read yet
        self._size = 0
        self._io = threading.RLock()
        self._saved: _Saved | None = None
        self._saved_in = 0  # the lock's generation _saved belongs to
        self.lock.on_abort.append(self._rolled_back)

    def __repr__(self) -> str:
        return f"PostgresJournal({self.lock.where})"

    # -- reading ---------------------------------------------------------------------

    def open(self, *, base_lsn: int) -> list[Record]:
        """Create the tenant's journal with ``base_lsn`` if it has none; return
        its records (every one since the last reset)."""
        with self._io:
            with self.lock.connection("open the journal") as conn:
                self._save()
                conn.execute(_OPEN, (self.tenant, base_lsn, _dumps(_header(base_lsn, {}))))
                self._epoch = 0  # read it all again
                records = self._read(conn)
            self.last_lsn = max(self.last_lsn, base_lsn)
            return records

    def read_new(self, *, repair: bool = False) -> list[Record]:
        """Records appended since the last call (``repair``: nothing to repair)."""
        with self._io:
            if self.lock.held_elsewhere():
                return []  # the holder's appends are in RAM already (see the module)
            with self.lock.connection("read the journal") as conn:
                return self._read(conn)

    def _read(self, conn: Connection) -> list[Record]:
        rows = conn.execute(_READ, {"epoch": self._epoch, "last": self.last_lsn}).fetchall()
        if not rows:
            return []  # no journal yet
        seen = self.last_lsn
        base, epoch, header = rows[0][0], rows[0][1], rows[0][2]
        if epoch != self._epoch:  # reset since (or never read)
            if self._epoch and base > seen:
                self.gap = True
            self.base_lsn, self.header, self._epoch = base, header, epoch
            self.records, self._size = [], len(_dumps(header))
            self.last_lsn = max(self.last_lsn, base)
        new: list[Record] = []
        for _, _, _, lsn, op, data, size in rows:
            if lsn is None:
                continue
            record = Record(lsn=lsn, op=op, data=data)
            self.records.append(record)
            self._size += size
            if lsn > seen:
                new.append(record)
            self.last_lsn = max(self.last_lsn, lsn)
        return new

    # -- writing ---------------------------------------------------------------------

    def append(self, op: str, payload: dict[str, Any], *, sync: bool) -> Record:
        """Write one record in the lock's transaction (the caller holds the lock
        and has caught up); acknowledged at the commit, whatever ``sync``."""
        with self._io:
            lsn = self.last_lsn + 1
            data = {"lsn": lsn, "op": op, "ts": now().isoformat(), **payload}
            text = _dumps(data)
            with self.lock.connection("append to the journal") as conn:
                self._save()
                conn.execute(_APPEND, (self.tenant, lsn, op, text))
            record = Record(lsn=lsn, op=op, data=data)
            self.records.append(record)
            self.last_lsn = lsn
            self._size += len(text.encode())
            return record

    def sync(self) -> None:
        """Nothing to do: a record is durable when the lock's transaction commits."""

    @property
    def unsynced(self) -> int:
        """Always 0 (see ``sync``)."""
        return 0

    @property
    def size(self) -> int:
        """About the bytes of the header and records since the last reset."""
        return self._size

    def take_corrupt(self) -> list[JournalProblem]:
        """Nothing: rows are never torn nor corrupt."""
        return []

    def reset(self, base_lsn: int, header: dict[str, Any]) -> None:
        """A checkpoint: delete the records up to ``base_lsn`` and store
        ``header`` (others read it when they read the new epoch)."""
        with self._io:
            full = _header(base_lsn, header)
            text = _dumps(full)
            with self.lock.connection("reset the journal") as conn:
                self._save()
                conn.execute("DELETE FROM memstrata_journal WHERE lsn <= %s", (base_lsn,))
                row = conn.execute(_RESET, (self.tenant, base_lsn, text)).fetchone()
            assert row is not None
            self.base_lsn, self.header, self._epoch = base_lsn, full, int(row[0])
            self.records = [record for record in self.records if record.lsn > base_lsn]
            self._size = len(text.encode()) + sum(
                len(_dumps(record.data).encode()) for record in self.records
            )
            self.last_lsn = max(self.last_lsn, base_lsn)

    def close(self) -> None:
        """Let go of the lock (and the pool) when this journal made its own."""
        with self._io:
            if self._rolled_back in self.lock.on_abort:
                self.lock.on_abort.remove(self._rolled_back)
            if self._owns_lock:
                self._owns_lock = False
                self.lock.close()

    # -- the lock's transaction rolled back ------------------------------------------

    def _save(self) -> None:
        """Before the lock's transaction first changes RAM: what to put back."""
        if not self.lock.joined() or self._saved_in == self.lock.generation:
            return
        self._saved = _Saved(
            self.base_lsn,
            self.last_lsn,
            self.header,
            self.records,
            len(self.records),
            self._epoch,
            self._size,
        )
        self._saved_in = self.lock.generation

    def _rolled_back(self) -> None:
        with self._io:
            saved = self._saved
            if saved is None or self._saved_in != self.lock.generation:
                return  # this journal wrote nothing in that transaction
            self._saved = None
            del saved.records[saved.count :]
            self.base_lsn, self.last_lsn, self.header = saved.base_lsn, saved.last_lsn, saved.header
            self.records, self._epoch, self._size = saved.records, saved.epoch, saved.size
            self.gap = True


def _header(base_lsn: int, extra: dict[str, Any]) -> dict[str, Any]:
    """A reset's header, as the file journal's header record has it."""
    return {**extra, "lsn": base_lsn, "op": "header", "format": FORMAT, "ts": now().isoformat()}


def _dumps(data: dict[str, Any]) -> str:
    """``data`` as the file journal encodes it; ``InvalidInput`` if it cannot be."""
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        text.encode()
    except (TypeError, ValueError) as exc:  # UnicodeEncodeError is a ValueError
        raise InvalidInput(f"cannot journal this record: {exc}") from exc
    return text
