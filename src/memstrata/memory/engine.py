"""The write-ahead engine under ``Memory``: loading, journal records, checkpoints.

``Engine`` owns the RAM state of one workspace (long-term items and lessons)
and the files it is rebuilt from; ``Memory`` adds the public calls on top.
Invariants (on top of ``journal``, ``store.longterm`` and ``store.lessons``):

* **Every write is decided on the latest state.** A writer takes the
  workspace lock, reads what other processes appended to the journal
  (``_catch_up``), then appends and applies its own record (``_write``).
* **Reads are served from RAM**: ``_refresh`` costs one ``stat`` of the
  journal to pick up other processes' writes.
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
import functools
import json
import logging
import threading
import time
import weakref
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from ..capture.scan import RuleSet
from ..capture.secrets import redact
from ..config import Settings
from ..errors import InvalidInput, MemstrataError, NotFound
from ..model import MAX_TEXT_CHARS, Item, Source, WriteEvent, clean_text, now
from ..storage.files import (
    append_durable,
    atomic_write,
    last_jsonl_record,
    quarantine_bytes,
    storage_errors,
    sweep_temp_files,
)
from ..storage.journal import Journal, Record
from ..storage.lock import ReadOnlyLock, WorkspaceLock
from ..storage.workspace import Workspace
from ..stores import daily as notes
from ..stores import docs, handedit, markdown
from ..stores.lessons import LessonStore
from ..stores.longterm import (
    OP_DELETE,
    OP_PUT,
    Change,
    Fingerprint,
    LongTermStore,
    Snapshot,
    items_from_markdown,
    replay_audit,
    with_history,
)
from ..stores.memory_file import MemoryFile

__all__ = ["Engine", "WriteHook", "safe_text"]

log = logging.getLogger("memstrata")

WriteHook = Callable[[WriteEvent], None]
_OPEN: weakref.WeakSet[Engine] = weakref.WeakSet()


# Ids kept in the change log of long-term items before it is started again (a
# new generation: its readers then compare the whole store once).
FACT_LOG_LIMIT = 100_000
# Items a journal record of taken-in hand edits carries at most.
_CHANGES_PER_RECORD = 1000
# Renderings a checkpoint tries while MEMORY.md keeps changing under it.
_REPLACE_TRIES = 4
# How long open waits for a MEMORY.md save that looks in progress.
_OPEN_SETTLE_WAIT = 3.0


class Engine:
    """RAM state, journal and checkpoints of one workspace."""

    def __init__(
        self,
        workspace: Workspace,
        settings: Settings,
        rules: RuleSet | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        self.workspace = workspace
        self.settings = settings
        self.read_only = read_only
        self._rules = rules  # capture rules: the built-in packs plus the workspace's
        lock = ReadOnlyLock if read_only else WorkspaceLock
        self._lock = lock(workspace.lock, timeout=settings.lock_timeout_seconds)
        self._state = threading.RLock()
        self._store = LongTermStore()
        self._lessons = LessonStore()
        self._lessons_dirty = False
        # Ids of long-term items changed since the store was last reset, in order,
        # and how many resets there were: readers that mirror the store (the
        # prompt's fact gate) catch up from here instead of scanning every item.
        self.fact_changes: builtins.list[str] = []
        self.fact_generation = 0
        self._hooks: builtins.list[WriteHook] = []
        self._journal = Journal(
            workspace.journal,
            flush_every_updates=settings.flush_every_updates,
            flush_interval_seconds=settings.flush_interval_seconds,
            on_quarantine=functools.partial(quarantine_bytes, workspace.quarantine, "journal.wal"),
            read_only=read_only,
        )
        self._memory_md = MemoryFile(workspace.memory_md, workspace.system / "rendered")
        self._header_seen: dict[str, Any] | None = None  # journal header already taken in
        self._notices: list[str] = []
        self._checkpoint_timer: threading.Timer | None = None
        self._closed = False

    def close(self) -> None:
        """Checkpoint what is pending and release the files (idempotent)."""
        if self._closed:
            return
        self._cancel_checkpoint_timer()
        if self.read_only:
            self._closed = True
            self._journal.close()
            _OPEN.discard(self)
            return
        try:
            with storage_errors("close the workspace"), self._lock:
                try:
                    self._flush_locked()
                finally:
                    self._closed = True
                    self._journal.close()
        finally:
            self._lock.close()
            _OPEN.discard(self)

    def flush(self) -> None:
        """Make everything durable and render MEMORY.md and the snapshot now."""
        self._check_open()
        with storage_errors("flush the workspace"), self._lock:
            self._check_open()
            self._flush_locked()

    def _opened(self) -> None:
        _OPEN.add(self)

    def _flush_locked(self) -> None:
        self._catch_up(repair=True)
        if self._journal.records or not self._memory_md.unchanged():
            self._checkpoint()
        else:
            self._journal.sync()

    def _compact_locked(self, cap: int) -> int:
        ranked = sorted(
            self._store.items.values(),
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
        drop = sorted(self._store.items.keys() - kept_ids)
        if drop:
            self._write(OP_DELETE, {"ids": drop, "reason": "compact"}, sync=True)
        return len(drop)

    def _live_or_new(
        self,
        line: str,
        category: str,
        source: Source,
        session: str | None,
        at: datetime,
        user: str | None = None,
    ) -> Item:
        """The live item that says ``line``, seen once more, else a new item (lock held)."""
        existing = self._store.find_live(line, user)
        if existing is not None:
            return existing.evolve(hits=existing.hits + 1, updated_at=at)
        return Item(
            id=self._store.unused_id(),
            text=line,
            category=category,
            source=source,
            session=session,
            created_at=at,
            updated_at=at,
            valid_from=at,
            user=user,
        )

    # -- internals: loading ---------------------------------------------------

    def _load(self) -> None:
        ws = self.workspace
        if not self.read_only:
            for folder in (ws.path, ws.path / "memory", ws.system):
                sweep_temp_files(folder)
        snapshot = self._reset_from_files()
        self._replay(self._journal.open(base_lsn=self._store.lsn))
        if self.read_only:
            if not self._memory_md.unchanged() and ws.memory_md.exists():
                self._notice("read-only workspace: hand edits of MEMORY.md are not taken in")
            return
        # The snapshot's MEMORY.md fingerprint is newer than this header if a
        # crash came between writing it and replacing the journal.
        self._header_seen = self._journal.header
        for problem in self._journal.problems:
            self._notice(f"journal: {problem.kind} record at byte {problem.offset} set aside")
        changed: bool | None = False
        if snapshot is not None:
            changed = self._take_in_markdown(wait=True)
        if changed is None:  # a save still in progress: the next checkpoint takes it in
            self._defer_checkpoint()
        elif snapshot is None or changed or self._lessons_dirty or self._journal.take_corrupt():
            self._checkpoint()

    def _reset_from_files(self) -> Snapshot | None:
        """Reset RAM to the snapshot, else to MEMORY.md alone (lock held)."""
        self.fact_generation += 1
        self.fact_changes = []
        snapshot = self._read_snapshot()
        if snapshot is not None:
            self._store.reset(dict(snapshot.items), snapshot.lsn, snapshot.keys, snapshot.forgotten)
            self._memory_md.known = snapshot.markdown
        elif (found := self._memory_md.read()) is not None:
            fingerprint, data = found
            parsed = self._parse_memory_md(data)
            lines = [line for line in parsed.lines if not self._too_long(line)]
            items = items_from_markdown(markdown.ParsedMemory(lines, parsed.bad), at=now())
            # The audit log keeps what the snapshot held beyond MEMORY.md: each
            # item's provenance and times, and the forgotten items.
            past = self._replay_audit()
            items = {key: with_history(item, past.items.get(key)) for key, item in items.items()}
            gone = {key: entry for key, entry in past.forgotten.items() if key not in items}
            clean = {key: self._without_secrets(item) for key, item in items.items()}
            self._store.reset(clean, 0, forgotten=gone)
            self._memory_md.known = fingerprint  # taken in whole: no snapshot to merge with
        self._load_lessons()
        return snapshot

    def _replay_audit(self) -> LongTermStore:
        """The state ``LTM_AUDIT.jsonl`` arrives at (empty when it is unreadable)."""
        try:
            return replay_audit(self.workspace.audit.read_bytes())
        except OSError:
            return LongTermStore()

    def _load_lessons(self) -> None:
        path = self.workspace.lessons
        data = path.read_bytes() if path.exists() else b""
        lessons, bad = LessonStore.parse(data)
        for _number, raw, reason in bad:
            self._quarantine("memory/LESSONS.jsonl", raw, reason)
            self._notice(f"memory/LESSONS.jsonl {reason}; set aside")
        self._lessons.reset(lessons)
        if bad:
            self._lessons_dirty = True  # rendered again at the next checkpoint

    def _parse_memory_md(self, data: bytes) -> markdown.ParsedMemory:
        """Parse MEMORY.md, setting undecodable lines aside byte for byte."""
        parsed = markdown.parse(data)
        for bad in parsed.bad:
            self._quarantine("MEMORY.md", bad.raw, f"line {bad.line_no} is not valid UTF-8")
            self._notice(f"MEMORY.md line {bad.line_no} is not valid UTF-8; set aside")
        return parsed

    def _read_snapshot(self) -> Snapshot | None:
        path = self.workspace.snapshot
        if not path.exists():
            return None
        try:
            return Snapshot.load(path)
        except MemstrataError as exc:
            if self.read_only:
                self._notice(f"{exc}; read from MEMORY.md instead (read-only workspace)")
                return None
            self._quarantine("memory/LTM_SNAPSHOT.json", path.read_bytes(), str(exc))
            path.unlink()
            self._notice(f"{exc}; moved to quarantine and rebuilt from MEMORY.md")
            return None

    def _take_in_markdown(self, *, wait: bool) -> bool | None:
        """Take a hand edit of MEMORY.md in (lock held): True when the file must be
        rendered again, False when it holds what the engine last saw, None when
        it looks like a save still in progress (``wait``: give it a moment first)."""
        deadline = time.monotonic() + (_OPEN_SETTLE_WAIT if wait else 0.0)
        while not self._memory_md.unchanged():
            found = self._memory_md.read()
            if found is None:
                if self._memory_md.known is not None:
                    self._notice("MEMORY.md was missing; it is rendered again")
                self._memory_md.known = None
                return True
            fingerprint, data = found
            if self._propose(data, fingerprint.mtime_ns) is not None:
                self._memory_md.known = fingerprint
                return True
            if time.monotonic() >= deadline:
                return None
            time.sleep(handedit.SETTLE_SECONDS / 5)
        return False

    def _propose(
        self, data: bytes, modified_ns: int | None, *, check: bool = True
    ) -> handedit.Plan | None:
        """Apply a saved MEMORY.md relative to the content it started from, or set
        it aside as damage (the plan says which); None (nothing done) when it
        changed too recently to tell a save in progress from a deletion
        (``modified_ns``; None: settled)."""
        parsed = markdown.parse(data)
        base = self._memory_md.history.base_for(data, self._snapshot_rendering)
        plan = handedit.plan(data, parsed, base, self._store, at=now(), check=check)
        in_progress = modified_ns is not None and not handedit.settled(modified_ns)
        if in_progress and (plan.damage or plan.deleted):
            return None
        if plan.damage is not None:
            self._quarantine("MEMORY.md", data, f"damaged: {plan.damage}")
            self._notice(
                f"MEMORY.md looked damaged ({plan.damage}): it is kept in the quarantine and "
                "MEMORY.md is rendered again from memory; if the change was meant, take it "
                "in with `memstrata accept-edit`"
            )
            return plan
        for bad in parsed.bad:
            self._quarantine("MEMORY.md", bad.raw, f"line {bad.line_no} is not valid UTF-8")
        for line in plan.too_long:
            self._too_long(line)
        self._write_changes(plan.changes)
        if plan.changes:
            self._notice(f"MEMORY.md was edited by hand: {len(plan.changes)} change(s) taken in")
        if plan.deleted:
            self._notice(
                f"{plan.deleted} fact(s) deleted by hand; `memstrata forgotten` lists them "
                "and `memstrata restore ID` brings one back"
            )
        for conflict in plan.conflicts:
            self._notice(f"MEMORY.md: {conflict}")
        # The base of the person's next save; kept without what it must not keep.
        self._memory_md.history.add(redact(data.decode("utf-8", "replace")).text.encode())
        return plan

    def _too_long(self, line: markdown.MemoryLine) -> bool:
        """Set a MEMORY.md line over the fact length limit aside (True if it was)."""
        if len(line.text) <= MAX_TEXT_CHARS:
            return False
        raw = line.text.encode("utf-8", "replace")
        self._quarantine("MEMORY.md", raw, f"line {line.line_no} is over {MAX_TEXT_CHARS} chars")
        self._notice(
            f"MEMORY.md line {line.line_no} has {len(line.text)} characters, over the "
            f"{MAX_TEXT_CHARS} a fact may have; set aside in the quarantine"
        )
        return True

    def _snapshot_rendering(self) -> bytes:
        """MEMORY.md as the last checkpoint rendered it (the fallback merge base)."""
        snapshot = self._read_snapshot()
        return markdown.render(snapshot.items.values()).encode() if snapshot else b""

    def _without_secrets(self, item: Item) -> Item:
        """``item`` from MEMORY.md with any secret a person typed into it redacted."""
        safe = redact(item.text)
        if not safe.kinds:
            return item
        self._notice(f"MEMORY.md: {', '.join(safe.kinds)} redacted from item {item.id}")
        return item.evolve(text=safe.text)

    def _write_changes(self, changes: builtins.list[Change]) -> None:
        """Journal planned changes in a few records (lock held), then sync."""
        puts = [self._without_secrets(c.item).to_dict() for c in changes if c.item is not None]
        deletes = [c.delete_id for c in changes if c.delete_id is not None]
        for start in range(0, len(puts), _CHANGES_PER_RECORD):
            chunk = puts[start : start + _CHANGES_PER_RECORD]
            self._write(OP_PUT, {"items": chunk, "reason": "hand_edit"}, sync=False)
        if deletes:
            self._delete(deletes, "hand_delete", sync=False)
        if changes:
            self._journal.sync()

    def _delete(self, ids: builtins.list[str], reason: str, *, sync: bool) -> Record:
        """Journal and apply a deletion (lock held); ``forget`` and hand deletes stay
        restorable (``LongTermStore.forgotten``)."""
        payload = {"ids": ids, "reason": reason, "at": now().isoformat()}
        return self._write(OP_DELETE, payload, sync=sync)

    # -- internals: journal and checkpoints ----------------------------------

    def _write(self, op: str, payload: dict[str, Any], sync: bool) -> Record:
        record = self._journal.append(op, payload, sync=sync)
        with self._state:
            self._apply(record)
        return record

    def _apply(self, record: Record) -> None:
        self._store.apply(record)
        self._lessons.apply(record)
        if record.op == OP_PUT:
            self.fact_changes.extend(str(item.get("id")) for item in record.data["items"])
        elif record.op == OP_DELETE:
            self.fact_changes.extend(str(item_id) for item_id in record.data["ids"])
        if len(self.fact_changes) > FACT_LOG_LIMIT:  # bounded: readers start over instead
            self.fact_generation += 1
            self.fact_changes = []

    def _catch_up(self, *, repair: bool) -> None:
        """Apply what other processes appended; ``repair`` only with the lock held."""
        with storage_errors("read the journal"), self._state:
            new = self._journal.read_new(repair=repair)
            for record in new:
                self._apply(record)
            if repair:  # a document change its writer may not have finished
                docs.redo_latest(self.workspace.path, new)
            if self._journal.gap and (repair or self.read_only):
                # Others checkpointed more than once since we last read: the
                # records in between are only in their snapshot. Start from it.
                self._reset_from_files()
                self._replay(self._journal.records)
                self._journal.gap = False
            if self._journal.header is not self._header_seen:  # a new journal file
                self._header_seen = self._journal.header
                header = Fingerprint.from_dict(self._header_seen.get("markdown"))
                if header is not None:
                    self._memory_md.known = header

    def _replay(self, records: builtins.list[Record]) -> None:
        """Apply journal records on top of a state just loaded from the files."""
        for record in records:
            self._apply(record)
        if not self.read_only:
            docs.redo_latest(self.workspace.path, records)  # (lock held)
        # A store rebuilt from MEMORY.md starts below the journal's base: never go back.
        self._store.lsn = max(self._store.lsn, self._journal.last_lsn)

    def _refresh(self) -> None:
        """Readers: pick up other processes' writes (one stat when nothing changed)."""
        self._catch_up(repair=False)
        if self._journal.gap:
            with storage_errors("reload the snapshot"), self._lock:
                self._catch_up(repair=True)

    def _after_write(self) -> None:
        if len(self._journal.records) >= self.settings.checkpoint_every_updates:
            self._checkpoint()
        elif self._checkpoint_timer is None and self.settings.checkpoint_interval_seconds > 0:
            timer = threading.Timer(self.settings.checkpoint_interval_seconds, self._on_timer)
            timer.daemon = True
            self._checkpoint_timer = timer
            timer.start()

    def _on_timer(self) -> None:
        self._checkpoint_timer = None
        try:
            if not self._closed:
                self.flush()
        except MemstrataError as exc:  # a timer has no caller to raise to
            if not self._closed:
                log.warning("memstrata: timed checkpoint failed: %s", exc)

    def _cancel_checkpoint_timer(self) -> None:
        timer, self._checkpoint_timer = self._checkpoint_timer, None
        if timer is not None:
            timer.cancel()

    def _checkpoint(self) -> bool:
        """Render the canonical files and empty the journal (lock held, caught up).

        False when MEMORY.md looks like a save in progress: the journal then
        keeps its records and a timer tries again once the file has settled.
        """
        self._cancel_checkpoint_timer()
        ws = self.workspace
        if self.settings.max_items and len(self._store.items) > self.settings.max_items * 1.1:
            self._compact_locked(self.settings.max_items)
        for _ in range(_REPLACE_TRIES):
            if self._take_in_markdown(wait=False) is None:
                return self._defer_checkpoint()
            with self._state:
                rendered = self._store.render()
            replaced = self._memory_md.replace(rendered)
            if replaced.rescued is not None:
                self._notice(
                    "an editor saved MEMORY.md while it was rewritten: the save is taken in"
                )
                self._propose(replaced.rescued, None)
                continue  # render again with the rescued save in
            if replaced.done:
                break
        else:
            return self._defer_checkpoint()
        self._journal.sync()
        for problem in self._journal.take_corrupt():
            reason = f"corrupt journal record at byte {problem.offset}: {problem.reason}"
            self._quarantine("journal.wal", problem.data, reason)
        records = self._journal.records
        docs.redo_latest(ws.path, records)  # a writer may have died between log and rename
        self._append_audit(ws.audit, [r for r in records if r.op.startswith("ltm.")])
        self._append_audit(ws.lessons_audit, [r for r in records if r.op.startswith("lesson.")])
        self._append_audit(
            ws.documents_audit, [r for r in records if docs.is_doc_op(r.op)], docs.audit_entry
        )
        retention = timedelta(days=self.settings.forgotten_retention_days)
        with self._state:
            self._store.expire_forgotten(now() - retention)
            lsn = self._store.lsn
            rows = self._store.snapshot_rows()
            forgotten = builtins.list(self._store.forgotten.values())
            lessons = self._lessons.render()
        if lessons or ws.lessons.exists():
            atomic_write(ws.lessons, lessons)
        self._lessons_dirty = False
        fingerprint = self._memory_md.known
        assert fingerprint is not None  # replaced just now
        atomic_write(ws.snapshot, Snapshot.encode(lsn, fingerprint, rows, forgotten))
        self._journal.reset(lsn, {"markdown": fingerprint.to_dict()})
        return True

    def _defer_checkpoint(self) -> bool:
        """Keep the journal (synced) and try the checkpoint again a moment later."""
        self._journal.sync()
        if self._checkpoint_timer is None and not self._closed:
            timer = threading.Timer(2 * handedit.SETTLE_SECONDS, self._on_timer)
            timer.daemon = True
            self._checkpoint_timer = timer
            timer.start()
        return False

    def _append_audit(
        self,
        path: Path,
        records: builtins.list[Record],
        entry: Callable[[Record], dict[str, Any]] = lambda record: record.data,
    ) -> None:
        """Append the records the audit log does not have yet (a crash may repeat a checkpoint)."""
        if not records:
            return
        name = path.relative_to(self.workspace.path).as_posix()
        last = last_jsonl_record(path, lambda torn: self._quarantine(name, torn, "torn last line"))
        done = int(last.get("lsn", 0)) if last else 0
        lines = [
            json.dumps(entry(record), ensure_ascii=False, separators=(",", ":")) + "\n"
            for record in records
            if record.lsn > done
        ]
        if lines:
            append_durable(path, "".join(lines).encode())

    # -- internals: helpers ---------------------------------------------------

    def _require(self, item_id: str) -> Item:
        if not isinstance(item_id, str) or not item_id.strip():
            raise InvalidInput("an item id is required")
        item = self._store.items.get(item_id.strip().lstrip("^"))
        if item is None:
            raise NotFound(f"no memory item with id {item_id!r}")
        return item

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput("this Memory is closed")

    def _notice(self, *messages: str) -> None:
        for message in messages:
            log.warning("memstrata: %s: %s", self.workspace.path, message)
            self._notices.append(message)

    def _quarantine(self, original: str, data: bytes, reason: str) -> None:
        if not self.read_only:  # (a read-only workspace reads past bad bytes, keeps them)
            quarantine_bytes(self.workspace.quarantine, original, data, reason)

    def _append_note(self, block: str, session: str | None, at: datetime) -> WriteEvent:
        """Append a section (already redacted) to the daily note of ``at`` (lock
        held); the event for the write hooks."""
        path = notes.append_exchange(self.workspace.path / "memory", block, at)
        where = path.relative_to(self.workspace.path).as_posix()
        return WriteEvent("note", "put", block, Source.USER, where, session)

    def _after_turn(self, turn: Any) -> None:
        """Called after every recorded transcript turn, outside the lock (the
        automatic session summary hooks in here)."""

    def _notify(self, *events: WriteEvent) -> None:
        """Tell the write hooks (call with the lock released: a hook may read memory)."""
        for event in events:
            for hook in builtins.list(self._hooks):
                try:
                    hook(event)
                except Exception:  # a hook's failure must not undo a durable write
                    log.exception("memstrata: write hook %r failed on %s", hook, event.kind)


def safe_text(text: str) -> str:
    """One storable line with every recognised secret replaced (secrets never reach disk)."""
    return redact(clean_text(text)).text


@atexit.register
def _close_all() -> None:
    """Checkpoint every Memory still open when the interpreter exits."""
    for memory in builtins.list(_OPEN):
        try:
            memory.close()
        except MemstrataError as exc:
            log.warning("memstrata: closing %s at exit failed: %s", memory.workspace.path, exc)
