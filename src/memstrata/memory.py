"""``Memory``: the facade an agent holds for one workspace.

Invariants (on top of ``journal`` and ``store.longterm``):

* **Secrets never reach disk.** Every text is passed through
  ``capture.secrets.redact`` before it is journaled (API writes and lines a
  person adds to MEMORY.md alike).
* **Acknowledged means durable.** ``remember`` and ``forget`` return after the
  journal record is fsynced (``sync=False`` opts a write into group commit).
* **Every write is decided on the latest state.** A writer takes the
  workspace lock, reads what other processes appended to the journal, then
  appends and applies its own record; so ids are unique and de-duplication
  holds across processes.
* **Reads are served from RAM.** ``get``, ``list`` and ``status`` take no
  lock; they cost one ``stat`` of the journal to pick up other processes'
  writes, and read nothing when nothing changed.
* **Checkpoints** (``flush``, ``close``, every ``checkpoint_every_updates``
  records, ``checkpoint_interval_seconds`` after the first unflushed write,
  and at interpreter exit) fold hand edits of MEMORY.md in, append the
  journal to ``LTM_AUDIT.jsonl``, render MEMORY.md and the snapshot
  atomically, and only then empty the journal.
* **Open never crashes on bad files**: a torn journal tail, a corrupt
  snapshot, undecodable MEMORY.md lines go to the quarantine and are listed
  in ``status().notices``.
"""

from __future__ import annotations

import atexit
import builtins
import functools
import json
import logging
import os
import threading
import weakref
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from .capture.secrets import redact
from .config import Settings
from .errors import Conflict, InvalidInput, MemstrataError, NotFound
from .files import (
    append_durable,
    atomic_write,
    last_jsonl_record,
    list_quarantine,
    quarantine_bytes,
    storage_errors,
    sweep_temp_files,
)
from .journal import Journal, Record
from .lock import WorkspaceLock
from .model import (
    CompactResult,
    Item,
    Source,
    Status,
    clean_session,
    clean_text,
    normalize_category,
    now,
    parse_source,
)
from .store import markdown
from .store.longterm import (
    OP_DELETE,
    OP_PUT,
    Change,
    Fingerprint,
    LongTermStore,
    Snapshot,
    items_from_markdown,
    plan_hand_edits,
)
from .workspace import Workspace, init_workspace

__all__ = ["Memory"]

log = logging.getLogger("memstrata")

ItemList = builtins.list[Item]
_OPEN: weakref.WeakSet[Memory] = weakref.WeakSet()


class Memory:
    """Layered, durable memory of one workspace (use ``Memory.open``)."""

    def __init__(self, workspace: Workspace, settings: Settings) -> None:
        self.workspace = workspace
        self.settings = settings
        self._lock = WorkspaceLock(workspace.lock, timeout=settings.lock_timeout_seconds)
        self._state = threading.RLock()
        self._store = LongTermStore()
        self._journal = Journal(
            workspace.journal,
            flush_every_updates=settings.flush_every_updates,
            flush_interval_seconds=settings.flush_interval_seconds,
            on_quarantine=functools.partial(quarantine_bytes, workspace.quarantine, "journal.wal"),
        )
        self._markdown: Fingerprint | None = None
        self._header_seen: dict[str, Any] | None = None  # journal header already taken in
        self._notices: list[str] = []
        self._checkpoint_timer: threading.Timer | None = None
        self._closed = False

    # -- lifecycle ------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        group: str | None = None,
        *,
        create: bool = True,
        **settings: Any,
    ) -> Memory:
        """Open the workspace at ``path`` (``group``: ``path/groups/<group>``).

        ``create`` makes the layout when it is missing; ``settings`` are the
        fields of ``memstrata.config.Settings``.
        """
        workspace = Workspace.locate(Path(path).expanduser(), group)
        if create:
            init_workspace(workspace)
        else:
            workspace.require()
        memory = cls(workspace, Settings.from_mapping(settings))
        try:
            with storage_errors(f"open the workspace at {workspace.path}"), memory._lock:
                memory._load()
        except BaseException:
            memory._closed = True
            memory._journal.close()
            memory._lock.close()
            raise
        _OPEN.add(memory)
        return memory

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Checkpoint what is pending and release the files (idempotent)."""
        if self._closed:
            return
        self._cancel_checkpoint_timer()
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

    def _flush_locked(self) -> None:
        self._catch_up(repair=True)
        current = self._markdown is not None and self._markdown.matches(self.workspace.memory_md)
        if self._journal.records or not current:
            self._checkpoint()
        else:
            self._journal.sync()

    # -- writes ---------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
        sync: bool = True,
    ) -> Item:
        """Store a long-term fact; durable when this returns (unless ``sync=False``).

        A fact whose normalized text equals a live one is not stored twice:
        the existing item is returned with ``hits`` + 1.
        """
        line = _safe_text(text)
        kind = normalize_category(category)
        origin = parse_source(source)
        session = clean_session(session)
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            item = self._live_or_new(line, kind, origin, session, now())
            reason = "duplicate" if item.hits else "remember"
            self._write(OP_PUT, {"items": [item.to_dict()], "reason": reason}, sync=sync)
            self._after_write()
        return item

    def supersede(
        self,
        item_id: str,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
    ) -> Item:
        """Replace a live fact by a corrected one; returns the new (live) item.

        The old item stays, retired: ``valid_to`` is set and ``superseded_by``
        names the new item (MEMORY.md moves it to its Superseded section). Both
        changes are one journal record, fsynced before return, so a crash keeps
        both or neither. If a live fact already says ``text``, it is the new item.
        """
        line = _safe_text(text)
        origin = parse_source(source)
        session = clean_session(session)
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            old = self._require(item_id)
            if not old.is_live:
                raise Conflict(f"item {old.id} is already superseded by {old.superseded_by}")
            at = now()
            kind = normalize_category(category) if category else old.category
            new = self._live_or_new(line, kind, origin, session, at)
            if new.id == old.id:
                raise InvalidInput(f"the correction says what item {old.id} already says")
            retired = old.evolve(valid_to=at, superseded_by=new.id, updated_at=at)
            items = [retired.to_dict(), new.to_dict()]
            self._write(OP_PUT, {"items": items, "reason": "supersede"}, sync=True)
            self._after_write()
        return new

    def _live_or_new(
        self, line: str, category: str, source: Source, session: str | None, at: datetime
    ) -> Item:
        """The live item that says ``line``, seen once more, else a new item (lock held)."""
        existing = self._store.find_live(line)
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
        )

    def forget(self, item_id: str) -> Item:
        """Delete an item for good (durable on return); returns what was deleted."""
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            item = self._require(item_id)
            self._write(OP_DELETE, {"ids": [item.id], "reason": "forget"}, sync=True)
            self._after_write()
        return item

    def compact(self, max_items: int | None = None) -> CompactResult:
        """De-duplicate (newest wins) and keep at most ``max_items`` items, newest first.

        Live items are kept before superseded ones. ``max_items`` defaults to the
        ``max_items`` setting; 0 or None there means no cap (de-duplicate only).
        """
        if max_items is not None and (isinstance(max_items, bool) or max_items < 0):
            raise InvalidInput(f"max_items must be a whole number >= 0, not {max_items!r}")
        cap = self.settings.max_items if max_items is None else max_items
        self._check_open()
        with storage_errors("compact the workspace"), self._lock:
            self._catch_up(repair=True)
            removed = self._compact_locked(cap)
            self._checkpoint()
        return CompactResult(removed=removed, kept=len(self._store.items))

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

    # -- reads ----------------------------------------------------------------

    def get(self, item_id: str) -> Item:
        """The item with this id; ``NotFound`` if there is none."""
        self._check_open()
        self._refresh()
        with self._state:
            return self._require(item_id)

    def list(
        self,
        *,
        category: str | None = None,
        session: str | None = None,
        source: Source | str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
    ) -> ItemList:
        """Items, newest first, filtered by category, session and source."""
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise InvalidInput(f"limit must be a whole number >= 0, not {limit!r}")
        kind = normalize_category(category) if category is not None else None
        origin = parse_source(source) if source is not None else None
        self._check_open()
        self._refresh()

        def accept(item: Item) -> bool:
            return (
                (include_superseded or item.is_live)
                and (kind is None or item.category == kind)
                and (session is None or item.session == session)
                and (origin is None or item.source == origin)
            )

        with self._state:
            return self._store.newest(accept, limit)

    def status(self) -> Status:
        """Counts, journal position and anything open had to report."""
        self._check_open()
        self._refresh()
        with self._state:
            live = sum(1 for item in self._store.items.values() if item.is_live)
            return Status(
                workspace=str(self.workspace.path),
                group=self.workspace.group,
                items=live,
                superseded=len(self._store.items) - live,
                lsn=self._store.lsn,
                journal_records=len(self._journal.records),
                journal_bytes=self._journal.size,
                unsynced=self._journal.unsynced,
                quarantined=len(list_quarantine(self.workspace.quarantine)),
                notices=tuple(self._notices),
            )

    @property
    def notices(self) -> tuple[str, ...]:
        """Problems found and handled since open (quarantined files, torn records...)."""
        return tuple(self._notices)

    # -- internals: loading ---------------------------------------------------

    def _load(self) -> None:
        ws = self.workspace
        for folder in (ws.path, ws.path / "memory", ws.system):
            sweep_temp_files(folder)
        snapshot = self._reset_from_files()
        self._replay(self._journal.open(base_lsn=self._store.lsn))
        # The snapshot's MEMORY.md fingerprint is newer than this header if a
        # crash came between writing it and replacing the journal.
        self._header_seen = self._journal.header
        for problem in self._journal.problems:
            self._notice(f"journal: {problem.kind} record at byte {problem.offset} set aside")
        changed = False
        if snapshot is not None:
            if ws.memory_md.exists():
                changed = self._fold_hand_edits(snapshot.items)
            else:
                self._notice("MEMORY.md was missing; it is rendered again from the snapshot")
                changed = True
        if snapshot is None or changed or self._journal.take_corrupt():
            self._checkpoint()

    def _reset_from_files(self) -> Snapshot | None:
        """Reset RAM to the snapshot, else to MEMORY.md alone (lock held)."""
        snapshot = self._read_snapshot()
        if snapshot is not None:
            self._store.reset(dict(snapshot.items), snapshot.lsn, snapshot.keys)
            self._markdown = snapshot.markdown
        elif self.workspace.memory_md.exists():
            parsed = self._parse_memory_md(self.workspace.memory_md.read_bytes())
            items = items_from_markdown(parsed, at=now())
            self._store.reset({key: self._without_secrets(i) for key, i in items.items()}, 0)
        return snapshot

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
            self._quarantine("memory/LTM_SNAPSHOT.json", path.read_bytes(), str(exc))
            path.unlink()
            self._notice(f"{exc}; moved to quarantine and rebuilt from MEMORY.md")
            return None

    def _fold_hand_edits(self, base: dict[str, Item]) -> bool:
        """Journal and apply the hand edits of MEMORY.md; True if the file was edited."""
        path = self.workspace.memory_md
        if self._markdown is not None and self._markdown.matches(path):
            return False
        fingerprint, data = Fingerprint.read(path)
        parsed = self._parse_memory_md(data)
        changes = plan_hand_edits(parsed, base, self._store, at=now())
        for change in changes:
            self._write_change(change)
        if changes:
            self._journal.sync()
            self._notice(f"MEMORY.md was edited by hand: {len(changes)} change(s) taken in")
        self._markdown = fingerprint  # taken in: the next checkpoint must not read it again
        return True  # the file must be rendered again, or the same edit is read twice

    def _without_secrets(self, item: Item) -> Item:
        """``item`` from MEMORY.md with any secret a person typed into it redacted."""
        safe = redact(item.text)
        if not safe.kinds:
            return item
        self._notice(f"MEMORY.md: {', '.join(safe.kinds)} redacted from item {item.id}")
        return item.evolve(text=safe.text)

    def _write_change(self, change: Change) -> None:
        if change.item is not None:
            item = self._without_secrets(change.item)
            payload = {"items": [item.to_dict()], "reason": change.reason}
            self._write(OP_PUT, payload, sync=False)
        elif change.delete_id is not None:
            self._write(OP_DELETE, {"ids": [change.delete_id], "reason": change.reason}, False)

    # -- internals: journal and checkpoints ----------------------------------

    def _write(self, op: str, payload: dict[str, Any], sync: bool) -> Record:
        record = self._journal.append(op, payload, sync=sync)
        with self._state:
            self._store.apply(record)
        return record

    def _catch_up(self, *, repair: bool) -> None:
        """Apply what other processes appended; ``repair`` only with the lock held."""
        with storage_errors("read the journal"), self._state:
            for record in self._journal.read_new(repair=repair):
                self._store.apply(record)
            if self._journal.gap and repair:
                # Others checkpointed more than once since we last read: the
                # records in between are only in their snapshot. Start from it.
                self._reset_from_files()
                self._replay(self._journal.records)
                self._journal.gap = False
            if self._journal.header is not self._header_seen:  # a new journal file
                self._header_seen = self._journal.header
                header = Fingerprint.from_dict(self._header_seen.get("markdown"))
                if header is not None:
                    self._markdown = header

    def _replay(self, records: builtins.list[Record]) -> None:
        """Apply journal records on top of a state just loaded from the files."""
        for record in records:
            self._store.apply(record)
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

    def _checkpoint(self) -> None:
        """Render the canonical files and empty the journal (lock held, caught up)."""
        self._cancel_checkpoint_timer()
        ws = self.workspace
        edited = self._markdown is not None and not self._markdown.matches(ws.memory_md)
        if edited and ws.memory_md.exists():
            base = self._read_snapshot()
            self._fold_hand_edits(base.items if base is not None else {})
        if self.settings.max_items and len(self._store.items) > self.settings.max_items * 1.1:
            self._compact_locked(self.settings.max_items)
        self._journal.sync()
        for problem in self._journal.take_corrupt():
            reason = f"corrupt journal record at byte {problem.offset}: {problem.reason}"
            self._quarantine("journal.wal", problem.data, reason)
        self._append_audit(self._journal.records)
        with self._state:
            rendered = self._store.render()
            lsn = self._store.lsn
            rows = self._store.snapshot_rows()
        atomic_write(ws.memory_md, rendered)
        fingerprint = Fingerprint.of(ws.memory_md, rendered)
        atomic_write(ws.snapshot, Snapshot.encode(lsn, fingerprint, rows))
        self._journal.reset(lsn, {"markdown": fingerprint.to_dict()})
        self._markdown = fingerprint

    def _append_audit(self, records: builtins.list[Record]) -> None:
        """Append the records the audit log does not have yet (a crash may repeat a checkpoint)."""
        path = self.workspace.audit
        last = last_jsonl_record(
            path, lambda torn: self._quarantine("memory/LTM_AUDIT.jsonl", torn, "torn last line")
        )
        done = int(last.get("lsn", 0)) if last else 0
        lines = [
            json.dumps(record.data, ensure_ascii=False, separators=(",", ":")) + "\n"
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
        quarantine_bytes(self.workspace.quarantine, original, data, reason)


def _safe_text(text: str) -> str:
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
