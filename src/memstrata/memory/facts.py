"""Long-term facts, a part of ``Memory``: remember, supersede, forget, restore,
compact and the reads (``get``, ``list``, ``forgotten``).

* **Acknowledged means durable.** ``remember`` (unless ``sync=False``),
  ``supersede``, ``forget`` and ``restore`` return after their journal record
  is fsynced; a supersession is one record (both changes or neither).
* **Every write is decided on the latest state** (``Engine.transaction`` with
  catch-up), so ids are unique and de-duplication holds across processes.
* **Reads are served from RAM** and cost one ``stat`` of the journal.
* **Nothing forgotten is gone at once**: ``forget`` and hand deletions stay
  restorable for ``forgotten_retention_days``.
"""

from __future__ import annotations

import builtins
from datetime import datetime

from ..capture.secrets import redact
from ..errors import Conflict, InvalidInput, NotFound
from ..model import (
    CompactResult,
    Item,
    Source,
    WriteEvent,
    aware,
    clean_session,
    clean_text,
    clean_user,
    normalize_category,
    now,
    parse_source,
)
from ..storage.files import storage_errors
from ..storage.quarantine import QUARANTINE, list_quarantine
from ..stores.longterm import Forgotten
from .engine import Engine

__all__ = ["Facts"]

ItemList = builtins.list[Item]


def safe_text(text: str) -> str:
    """One storable line with every recognised secret replaced (secrets never reach disk)."""
    return redact(clean_text(text)).text


class Facts:
    """The long-term facts of a workspace (MEMORY.md, journaled)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def remember(
        self,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
        user: str | None = None,
        sync: bool = True,
        at: datetime | None = None,
    ) -> Item:
        """Store a long-term fact; durable when this returns (unless ``sync=False``).

        A fact whose normalized text equals a live one is not stored twice:
        the existing item is returned with ``hits`` + 1. ``at`` is when the
        fact was said (default: now; an importer gives the original time).
        """
        line = safe_text(text)
        kind = normalize_category(category)
        origin = parse_source(source)
        session, user = clean_session(session), clean_user(user)
        when = now() if at is None else aware(at)
        with self.engine.transaction("write to the journal", catch_up=True):
            item = self.engine.live_or_new(line, kind, origin, session, when, user)
            event = self.engine.put_items([item], "duplicate" if item.hits else "remember", sync)
            self.engine.after_write()
        self.engine.events.notify(event)
        return item

    def supersede(
        self,
        item_id: str,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
        user: str | None = None,
    ) -> Item:
        """Replace a live fact by a corrected one; returns the new (live) item.

        The old item stays, retired: ``valid_to`` is set and ``superseded_by``
        names the new item (MEMORY.md moves it to its Superseded section). Both
        changes are one journal record, fsynced before return, so a crash keeps
        both or neither. If a live fact already says ``text``, it is the new item.
        """
        line = safe_text(text)
        origin = parse_source(source)
        session, user = clean_session(session), clean_user(user)
        with self.engine.transaction("write to the journal", catch_up=True):
            old = self.engine.require(item_id)
            if not old.is_live:
                raise Conflict(f"item {old.id} is already superseded by {old.superseded_by}")
            at = now()
            kind = normalize_category(category) if category else old.category
            new = self.engine.live_or_new(line, kind, origin, session, at, user)
            if new.id == old.id:
                raise InvalidInput(f"the correction says what item {old.id} already says")
            retired = old.evolve(valid_to=at, superseded_by=new.id, updated_at=at)
            event = self.engine.put_items([retired, new], "supersede", True)
            self.engine.after_write()
        self.engine.events.notify(event)
        return new

    def forget(self, item_id: str) -> Item:
        """Delete an item (durable on return); returns what was deleted.

        It stays restorable for ``forgotten_retention_days`` (``forgotten``,
        ``restore``).
        """
        with self.engine.transaction("write to the journal", catch_up=True):
            item = self.engine.require(item_id)
            self.engine.delete([item.id], "forget", sync=True)
            self.engine.after_write()
        self.engine.events.notify(
            WriteEvent("fact", "delete", "", item.source, "MEMORY.md", ids=(item.id,))
        )
        return item

    def forgotten(self, limit: int | None = None) -> builtins.list[Forgotten]:
        """Facts deleted by ``forget`` or by hand that can still be restored, newest first."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInput(f"limit must be a whole number >= 0, not {limit!r}")
        self.engine.check_open()
        self.engine.refresh()
        with self.engine.state:
            gone = sorted(self.engine.store.forgotten.values(), key=lambda f: (f.at, f.item.id))
        gone.reverse()
        return gone if limit is None else gone[:limit]

    def restore(self, item_id: str) -> Item:
        """Bring a forgotten fact back as it was (journaled, durable on return)."""
        if not isinstance(item_id, str) or not item_id.strip():
            raise InvalidInput("an item id is required")
        wanted = item_id.strip().lstrip("^")
        with self.engine.transaction("write to the journal", catch_up=True):
            entry = self.engine.store.forgotten.get(wanted)
            if entry is None:
                if wanted in self.engine.store.items:
                    raise Conflict(f"item {wanted} is not forgotten")
                raise NotFound(f"no forgotten item with id {item_id!r} (or its retention ended)")
            same = self.engine.store.find_live(entry.item.text, entry.item.user)
            if entry.item.is_live and same is not None:
                raise Conflict(f"a live fact already says this: {same.id}")
            item = entry.item.evolve(updated_at=now())
            event = self.engine.put_items([item], "restore", sync=True)
            self.engine.after_write()
        self.engine.events.notify(event)
        return item

    def accept_edit(self, stored: str | None = None) -> int:
        """Take in a MEMORY.md that was set aside as damage, as the person saved it.

        ``stored`` names the quarantined file (``list_quarantine``); by default
        the newest MEMORY.md there. Its changes are applied relative to the
        content it started from, without the damage checks; what it deletes
        stays restorable. Returns the number of changes taken in.
        """
        self.engine.check_open()
        entries = [
            e
            for e in list_quarantine(self.engine.volume)
            if e.original == "MEMORY.md" and e.reason.startswith("damaged:")
        ]
        if stored is not None:
            entries = [e for e in entries if e.stored == stored]
        if not entries:
            which = f" named {stored!r}" if stored else ""
            raise NotFound(f"no damaged MEMORY.md{which} in the quarantine")
        kept = QUARANTINE + entries[-1].stored
        with storage_errors(f"read {kept}"):
            data = self.engine.volume.read(kept)
        if data is None:
            raise NotFound(f"{kept} is named in the quarantine's index but is gone")
        with self.engine.transaction("take the edit in", catch_up=True):
            plan = self.engine.hand_edits.propose(data, None, check=False)
            self.engine.checkpoint()
        return len(plan.changes) if plan is not None else 0

    def compact(self, max_items: int | None = None) -> CompactResult:
        """De-duplicate (newest wins) and keep at most ``max_items`` items, newest first.

        Live items are kept before superseded ones. ``max_items`` defaults to the
        ``max_items`` setting; 0 or None there means no cap (de-duplicate only).
        """
        if max_items is not None and (isinstance(max_items, bool) or max_items < 0):
            raise InvalidInput(f"max_items must be a whole number >= 0, not {max_items!r}")
        cap = self.engine.settings.max_items if max_items is None else max_items
        with self.engine.transaction("compact the workspace", catch_up=True):
            removed = self.engine.compact_locked(cap)
            self.engine.checkpoint()
        return CompactResult(removed=removed, kept=len(self.engine.store.items))

    def get(self, item_id: str) -> Item:
        """The item with this id; ``NotFound`` if there is none."""
        self.engine.check_open()
        self.engine.refresh()
        with self.engine.state:
            return self.engine.require(item_id)

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
        self.engine.check_open()
        self.engine.refresh()

        def accept(item: Item) -> bool:
            return (
                (include_superseded or item.is_live)
                and (kind is None or item.category == kind)
                and (session is None or item.session == session)
                and (origin is None or item.source == origin)
            )

        with self.engine.state:
            return self.engine.store.newest(accept, limit)
