"""The write-ahead engine under ``Memory``: loading, journal records, checkpoints.

``Engine`` owns the RAM state of one workspace (long-term items and lessons)
and the files it is rebuilt from. ``Memory`` and its parts (sessions, layers,
documents, search, context) each hold the one ``Engine`` and never each other:
they write through it and hear of each other's writes through its events.
Invariants (on top of ``journal``, ``stores.longterm`` and ``stores.lessons``):

* **Every write is decided on the latest state.** A writer takes the
  workspace lock (``transaction``), reads what other processes appended to
  the journal (``catch_up``), then appends and applies its own record
  (``write``).
* **Reads are served from RAM**: ``refresh`` costs one ``stat`` of the
  journal to pick up other processes' writes.
* **Events**: ``notify`` tells the subscribers (the search index marks the
  paths dirty) and then the write hooks; ``turn_recorded`` tells the turn
  listeners (the automatic session summary); ``close`` runs the closing
  listeners before its checkpoint and the closed listeners after it, even
  when the checkpoint fails (a full disk must not keep the index open).
* **Checkpoints** take hand edits of MEMORY.md in (checked as proposals:
  ``store.handedit``), append the journal to the audit logs
  (``LTM_AUDIT.jsonl``, ``LESSONS_AUDIT.jsonl``), render MEMORY.md (never over
  a save it has not taken in: ``store.memory_file``), LESSONS.jsonl and the
  snapshot atomically, and only then empty the journal. A MEMORY.md that
  looks like a save in progress defers the checkpoint (the journal keeps
  every record until the next one).
* **Open never crashes on bad files**: a torn journal tail, a corrupt
  snapshot, undecodable MEMORY.md lines, malformed lessons go to the
  quarantine and are listed in ``notices``.
* **Write hooks** run after a write is durable and the lock is released; a
  hook that raises is logged, never undoes the write.
* **A read-only workspace** (a read-only mount, no write permission, or
  ``read_only=True``) is read as it is: the snapshot and the journal are
  followed, nothing is repaired, checkpointed, quarantined or migrated, and a
  write fails with one ``StorageError`` that says so.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import functools
import logging
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..config import Settings
from ..errors import InvalidInput, MemstrataError, NotFound
from ..model import Item, Source, WriteEvent, now
from ..storage.files import storage_errors, sweep_temp_files
from ..storage.journal import Journal, Log, Record
from ..storage.lock import Lock, ReadOnlyLock, WorkspaceLock
from ..storage.quarantine import quarantine_bytes
from ..storage.workspace import (
    DOCS_AUDIT,
    LESSONS,
    LESSONS_AUDIT,
    LTM_AUDIT,
    MEMORY_MD,
    SNAPSHOT,
    Workspace,
)
from ..stores import audit, docs, handedit, markdown
from ..stores import daily as notes
from ..stores.lessons import OP_LESSON_PUT, Lesson, LessonStore
from ..stores.longterm import (
    OP_DELETE,
    OP_PUT,
    Fingerprint,
    LongTermStore,
    Snapshot,
    items_from_markdown,
    replay_audit,
    with_history,
)
from ..stores.memory_file import MemoryFile
from .events import Events
from .hand_edits import HandEdits

if TYPE_CHECKING:
    from ..capture.scan import RuleSet  # the rules load at the first capture

__all__ = ["Engine"]

log = logging.getLogger("memstrata")

_OPEN: weakref.WeakSet[Engine] = weakref.WeakSet()


# Ids kept in the change log of long-term items before it is started again (a
# new generation: its readers then compare the whole store once).
FACT_LOG_LIMIT = 100_000
MAX_NOTICES = 200  # status().notices keeps the newest this many


class Engine:
    """RAM state, journal and checkpoints of one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        rules: RuleSet | None = None,
        *,
        read_only: bool = False,
        journal: Log | None = None,
        lock: Lock | None = None,
    ) -> None:
        """On a folder the journal and lock are its files; a workspace on
        another volume (a database) brings its own ``journal`` and ``lock``."""
        self.workspace = workspace
        self.volume = workspace.volume
        self.settings = settings
        self.read_only = read_only
        self.rules = rules  # capture rules: the built-in packs plus the workspace's
        if read_only:  # whatever lock the backend brings: taking it refuses the write
            lock = ReadOnlyLock(
                workspace.lock, timeout=settings.lock_timeout_seconds, where=workspace.where
            )
        elif lock is None:
            lock = WorkspaceLock(workspace.lock, timeout=settings.lock_timeout_seconds)
        self.lock: Lock = lock
        self.state = threading.RLock()
        self.store = LongTermStore()
        self.lessons = LessonStore()
        self.lessons_dirty = False
        # Ids of long-term items changed since the store was last reset, in order,
        # and how many resets there were: readers that mirror the store (the
        # prompt's fact gate) catch up from here instead of scanning every item.
        self.fact_changes: builtins.list[str] = []
        self.fact_generation = 0
        self.events = Events()  # subscribers, turn and close listeners, write hooks
        if journal is None:
            journal = Journal(
                workspace.journal,
                flush_every_updates=settings.flush_every_updates,
                flush_interval_seconds=settings.flush_interval_seconds,
                on_quarantine=functools.partial(quarantine_bytes, self.volume, "journal.wal"),
                read_only=read_only,
            )
        self.journal: Log = journal
        self.memory_md = MemoryFile(self.volume)
        self.hand_edits = HandEdits(self)  # saves of MEMORY.md taken in as proposals
        self._header_seen: dict[str, Any] | None = None  # journal header already taken in
        self.notice_log: list[str] = []
        self._checkpoint_timer: threading.Timer | None = None
        self.closed = False

    def close(self) -> None:
        """Checkpoint what is pending and release the files (idempotent)."""
        if self.closed:
            return
        try:
            self.events.closing()
            self._close()
        finally:  # the parts let go of their files even when the checkpoint failed
            self.events.closed()

    def _close(self) -> None:
        self._cancel_checkpoint_timer()
        if self.read_only:
            self.closed = True
            self.journal.close()
            _OPEN.discard(self)
            return
        try:
            with storage_errors("close the workspace"), self.lock:
                try:
                    self.flush_locked()
                finally:
                    self.closed = True
                    self.journal.close()
        finally:
            self.lock.close()
            _OPEN.discard(self)

    @contextlib.contextmanager
    def transaction(self, doing: str, *, catch_up: bool = False) -> Iterator[None]:
        """The preamble of every write: open, the workspace lock, (``catch_up``:
        the other processes' journal records taken in), errors mapped to one
        ``StorageError`` that says what was being done."""
        self.check_open()
        with storage_errors(doing), self.lock:
            self.check_open()
            if catch_up:
                self.catch_up(repair=True)
            yield

    def flush(self) -> None:
        """Make everything durable and render MEMORY.md and the snapshot now."""
        self.check_open()
        with storage_errors("flush the workspace"), self.lock:
            self.check_open()
            self.flush_locked()

    def opened(self) -> None:
        """Open: checkpointed at interpreter exit if still open then."""
        _OPEN.add(self)

    def flush_locked(self) -> None:
        self.catch_up(repair=True)
        if self.journal.records or not self.memory_md.unchanged():
            self.checkpoint()
        else:
            self.journal.sync()

    def compact_locked(self, cap: int) -> int:
        ranked = sorted(
            self.store.items.values(),
            key=lambda item: (item.is_live, item.updated_at, item.id),
            reverse=True,
        )
        keys: set[str] = set()
        keep: builtins.list[Item] = []
        for item in ranked:
            if item.is_live:
                if item.key in keys:
                    continue
                keys.add(item.key)
            keep.append(item)
        if cap:
            keep = keep[:cap]
        kept_ids = {item.id for item in keep}
        drop = sorted(self.store.items.keys() - kept_ids)
        if drop:
            self.write(OP_DELETE, {"ids": drop, "reason": "compact"}, sync=True)
        return len(drop)

    def live_or_new(
        self,
        line: str,
        category: str,
        source: Source,
        session: str | None,
        at: datetime,
        user: str | None = None,
    ) -> Item:
        """The live item that says ``line``, seen once more, else a new item (lock held)."""
        existing = self.store.find_live(line, user)
        if existing is not None:
            return existing.evolve(hits=existing.hits + 1, updated_at=at)
        return Item(
            id=self.store.unused_id(),
            text=line,
            category=category,
            source=source,
            session=session,
            created_at=at,
            updated_at=at,
            valid_from=at,
            user=user,
        )

    # -- writes shared by the parts (lock held) -----------------------------------

    def put_items(self, items: builtins.list[Item], reason: str, sync: bool) -> WriteEvent:
        """Journal ``items`` as one record (the last is the live one); its event."""
        payload = {"items": [item.to_dict() for item in items], "reason": reason}
        self.write(OP_PUT, payload, sync=sync)
        live = items[-1]
        ids = tuple(item.id for item in items)
        return WriteEvent("fact", "put", live.text, live.source, "MEMORY.md", live.session, ids)

    def put_lesson(self, lesson: Lesson) -> WriteEvent:
        """Journal ``lesson`` (a repeat is counted: ``LessonStore.merge``); its event."""
        stored = self.lessons.merge(lesson)
        self.write(OP_LESSON_PUT, {"lessons": [stored.to_dict()]}, sync=False)
        where = "memory/LESSONS.jsonl"
        return WriteEvent(
            "lesson", "put", stored.text, stored.source, where, stored.session, (stored.id,)
        )

    # -- internals: loading ---------------------------------------------------

    def load(self) -> None:
        local = self.volume.local
        if not self.read_only and local is not None:
            for folder in (local, local / "memory", local / ".memstrata"):
                sweep_temp_files(folder)
        snapshot = self._reset_from_files()
        self._replay(self.journal.open(base_lsn=self.store.lsn))
        if self.read_only:
            if not self.memory_md.unchanged() and self.volume.stat(MEMORY_MD) is not None:
                self.notice("read-only workspace: hand edits of MEMORY.md are not taken in")
            return
        # The snapshot's MEMORY.md fingerprint is newer than this header if a
        # crash came between writing it and replacing the journal.
        self._header_seen = self.journal.header
        for problem in self.journal.problems:
            self.notice(f"journal: {problem.kind} record at byte {problem.offset} set aside")
        changed: bool | None = False
        if snapshot is not None:
            changed = self.hand_edits.take_in(wait=True)
        if changed is None:  # a save still in progress: the next checkpoint takes it in
            self._defer_checkpoint()
        elif snapshot is None or changed or self.lessons_dirty or self.journal.take_corrupt():
            self.checkpoint()

    def reload_locked(self) -> None:
        """Start again from the files, which an import replaced (lock held): the
        journal's base goes past every lsn it had, so no reader takes an older
        lsn for a new record."""
        last = max(self.journal.last_lsn, self.store.lsn)
        self._reset_from_files()
        self.store.lsn = base = max(last, self.store.lsn)
        known = self.memory_md.known
        self.journal.reset(base, {"markdown": known.to_dict()} if known is not None else {})

    def _reset_from_files(self) -> Snapshot | None:
        """Reset RAM to the snapshot, else to MEMORY.md alone (lock held)."""
        self.fact_generation += 1
        self.fact_changes = []
        snapshot = self.read_snapshot()
        if snapshot is not None:
            self.store.reset(dict(snapshot.items), snapshot.lsn, snapshot.keys, snapshot.forgotten)
            self.memory_md.known = snapshot.markdown
        elif (found := self.memory_md.read()) is not None:
            fingerprint, data = found
            parsed = self._parse_memory_md(data)
            lines = [line for line in parsed.lines if not self.hand_edits.too_long(line)]
            items = items_from_markdown(markdown.ParsedMemory(lines, parsed.bad), at=now())
            # The audit log keeps what the snapshot held beyond MEMORY.md: each
            # item's provenance and times, and the forgotten items.
            past = self._replay_audit()
            items = {key: with_history(item, past.items.get(key)) for key, item in items.items()}
            gone = {key: entry for key, entry in past.forgotten.items() if key not in items}
            clean = {key: self.hand_edits.without_secrets(item) for key, item in items.items()}
            self.store.reset(clean, 0, forgotten=gone)
            self.memory_md.known = fingerprint  # taken in whole: no snapshot to merge with
        self._load_lessons()
        return snapshot

    def _replay_audit(self) -> LongTermStore:
        """The state ``LTM_AUDIT.jsonl`` arrives at (empty when it is unreadable)."""
        try:
            return replay_audit(self.volume.read(LTM_AUDIT) or b"")
        except (OSError, MemstrataError):
            return LongTermStore()

    def _load_lessons(self) -> None:
        data = self.volume.read(LESSONS) or b""
        lessons, bad = LessonStore.parse(data)
        for _number, raw, reason in bad:
            self.quarantine("memory/LESSONS.jsonl", raw, reason)
            self.notice(f"memory/LESSONS.jsonl {reason}; set aside")
        self.lessons.reset(lessons)
        if bad:
            self.lessons_dirty = True  # rendered again at the next checkpoint

    def _parse_memory_md(self, data: bytes) -> markdown.ParsedMemory:
        """Parse MEMORY.md, setting undecodable lines aside byte for byte."""
        parsed = markdown.parse(data)
        for bad in parsed.bad:
            self.quarantine("MEMORY.md", bad.raw, f"line {bad.line_no} is not valid UTF-8")
            self.notice(f"MEMORY.md line {bad.line_no} is not valid UTF-8; set aside")
        return parsed

    def read_snapshot(self) -> Snapshot | None:
        raw = self.volume.read(SNAPSHOT)
        if raw is None:
            return None
        try:
            return Snapshot.decode(raw)
        except MemstrataError as exc:
            if self.read_only:
                self.notice(f"{exc}; read from MEMORY.md instead (read-only workspace)")
                return None
            self.quarantine(SNAPSHOT, raw, str(exc))
            self.volume.delete(SNAPSHOT)
            self.notice(f"{exc}; moved to quarantine and rebuilt from MEMORY.md")
            return None

    def delete(self, ids: builtins.list[str], reason: str, *, sync: bool) -> Record:
        """Journal and apply a deletion (lock held); ``forget`` and hand deletes stay
        restorable (``LongTermStore.forgotten``)."""
        payload = {"ids": ids, "reason": reason, "at": now().isoformat()}
        return self.write(OP_DELETE, payload, sync=sync)

    # -- internals: journal and checkpoints ----------------------------------

    def write(self, op: str, payload: dict[str, Any], sync: bool) -> Record:
        record = self.journal.append(op, payload, sync=sync)
        with self.state:
            self._apply(record)
        return record

    def _apply(self, record: Record) -> None:
        self.store.apply(record)
        self.lessons.apply(record)
        if record.op == OP_PUT:
            self.fact_changes.extend(str(item.get("id")) for item in record.data["items"])
        elif record.op == OP_DELETE:
            self.fact_changes.extend(str(item_id) for item_id in record.data["ids"])
        if len(self.fact_changes) > FACT_LOG_LIMIT:  # bounded: readers start over instead
            self.fact_generation += 1
            self.fact_changes = []

    def catch_up(self, *, repair: bool) -> None:
        """Apply what other processes appended; ``repair`` only with the lock held."""
        with storage_errors("read the journal"), self.state:
            new = self.journal.read_new(repair=repair)
            for record in new:
                self._apply(record)
            if repair:  # a document change its writer may not have finished
                docs.redo_latest(self.workspace.volume, new)
            if self.journal.gap and (repair or self.read_only):
                # Others checkpointed more than once since we last read: the
                # records in between are only in their snapshot. Start from it.
                self._reset_from_files()
                self._replay(self.journal.records)
                self.journal.gap = False
            if self.journal.header is not self._header_seen:  # a new journal file
                self._header_seen = self.journal.header
                header = Fingerprint.from_dict(self._header_seen.get("markdown"))
                if header is not None:
                    self.memory_md.known = header

    def _replay(self, records: builtins.list[Record]) -> None:
        """Apply journal records on top of a state just loaded from the files."""
        for record in records:
            self._apply(record)
        if not self.read_only:
            docs.redo_latest(self.workspace.volume, records)  # (lock held)
        # A store rebuilt from MEMORY.md starts below the journal's base: never go back.
        self.store.lsn = max(self.store.lsn, self.journal.last_lsn)

    def refresh(self) -> None:
        """Readers: pick up other processes' writes (one stat when nothing changed)."""
        self.catch_up(repair=False)
        if self.journal.gap:
            with storage_errors("reload the snapshot"), self.lock:
                self.catch_up(repair=True)

    def after_write(self) -> None:
        if len(self.journal.records) >= self.settings.checkpoint_every_updates:
            self.checkpoint()
        elif self._checkpoint_timer is None and self.settings.checkpoint_interval_seconds > 0:
            timer = threading.Timer(self.settings.checkpoint_interval_seconds, self._on_timer)
            timer.daemon = True
            self._checkpoint_timer = timer
            timer.start()

    def _on_timer(self) -> None:
        self._checkpoint_timer = None
        try:
            if not self.closed:
                self.flush()
        except MemstrataError as exc:  # a timer has no caller to raise to
            if not self.closed:
                log.warning("memstrata: timed checkpoint failed: %s", exc)

    def _cancel_checkpoint_timer(self) -> None:
        timer, self._checkpoint_timer = self._checkpoint_timer, None
        if timer is not None:
            timer.cancel()

    def checkpoint(self) -> bool:
        """Render the canonical files and empty the journal (lock held, caught up).

        False when MEMORY.md looks like a save in progress: the journal then
        keeps its records and a timer tries again once the file has settled.
        """
        self._cancel_checkpoint_timer()
        ws = self.workspace
        if self.settings.max_items and len(self.store.items) > self.settings.max_items * 1.1:
            self.compact_locked(self.settings.max_items)
        if not self.hand_edits.put_rendering():
            return self._defer_checkpoint()
        self.journal.sync()
        for problem in self.journal.take_corrupt():
            reason = f"corrupt journal record at byte {problem.offset}: {problem.reason}"
            self.quarantine("journal.wal", problem.data, reason)
        records = self.journal.records
        docs.redo_latest(ws.volume, records)  # a writer may have died between log and rename
        self._append_audit(LTM_AUDIT, [r for r in records if r.op.startswith("ltm.")])
        self._append_audit(LESSONS_AUDIT, [r for r in records if r.op.startswith("lesson.")])
        self._append_audit(
            DOCS_AUDIT, [r for r in records if docs.is_doc_op(r.op)], docs.audit_entry
        )
        retention = timedelta(days=self.settings.forgotten_retention_days)
        with self.state:
            self.store.expire_forgotten(now() - retention)
            lsn = self.store.lsn
            rows = self.store.snapshot_rows()
            forgotten = builtins.list(self.store.forgotten.values())
            lessons = self.lessons.render()
        if lessons or self.volume.stat(LESSONS) is not None:
            self.volume.write(LESSONS, lessons)
        self.lessons_dirty = False
        fingerprint = self.memory_md.known
        assert fingerprint is not None  # replaced just now
        self.volume.write(SNAPSHOT, Snapshot.encode(lsn, fingerprint, rows, forgotten))
        self.journal.reset(lsn, {"markdown": fingerprint.to_dict()})
        return True

    def _defer_checkpoint(self) -> bool:
        """Keep the journal (synced) and try the checkpoint again a moment later."""
        self.journal.sync()
        if self._checkpoint_timer is None and not self.closed:
            timer = threading.Timer(2 * handedit.SETTLE_SECONDS, self._on_timer)
            timer.daemon = True
            self._checkpoint_timer = timer
            timer.start()
        return False

    def _append_audit(
        self,
        rel: str,
        records: builtins.list[Record],
        entry: Callable[[Record], dict[str, Any]] = lambda record: record.data,
    ) -> None:
        """Append the records the audit log does not have yet (``stores.audit``)."""
        torn = functools.partial(self.quarantine, rel, reason="torn last line")
        audit.append_new(self.volume, rel, records, lambda data: torn(data), entry)

    # -- internals: helpers ---------------------------------------------------

    def require(self, item_id: str) -> Item:
        if not isinstance(item_id, str) or not item_id.strip():
            raise InvalidInput("an item id is required")
        item = self.store.items.get(item_id.strip().lstrip("^"))
        if item is None:
            raise NotFound(f"no memory item with id {item_id!r}")
        return item

    def check_open(self) -> None:
        if self.closed:
            raise InvalidInput("this Memory is closed")

    def notice(self, *messages: str) -> None:
        for message in messages:
            log.warning("memstrata: %s: %s", self.workspace.where, message)
            self.notice_log.append(message)
        del self.notice_log[:-MAX_NOTICES]  # the newest: a long-running process stays small

    def quarantine(self, original: str, data: bytes, reason: str) -> None:
        if not self.read_only:  # (a read-only workspace reads past bad bytes, keeps them)
            quarantine_bytes(self.volume, original, data, reason)

    def note_exchanges(self, exchanges: Sequence[notes.Exchange]) -> builtins.list[WriteEvent]:
        """Append exchanges (already redacted) to their daily notes, one fsync a
        note (lock held): the one code path of ``record_exchange`` and ``record_turn(s)``."""
        placed = notes.append_exchanges(self.workspace.volume, exchanges)
        return [WriteEvent("note", "put", b, Source.USER, at, s) for b, at, s in placed]

    def append_note(self, block: str, session: str | None, at: datetime) -> WriteEvent:
        """Append a section (already redacted) to the daily note of ``at`` (lock
        held); the event for the write hooks."""
        where = notes.append_exchange(self.workspace.volume, block, at)
        return WriteEvent("note", "put", block, Source.USER, where, session)


@atexit.register
def _close_all() -> None:
    """Checkpoint every Memory still open when the interpreter exits."""
    for memory in builtins.list(_OPEN):
        try:
            memory.close()
        except MemstrataError as exc:
            log.warning("memstrata: closing %s at exit failed: %s", memory.workspace.where, exc)
