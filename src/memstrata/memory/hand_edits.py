"""Saves of MEMORY.md taken in as proposals (issue 13), for the ``Engine``.

* **A save is applied relative to the content it started from** (a three-way
  merge against the last renderings: ``stores.handedit``); a save that looks
  damaged (empty, no title, not UTF-8, truncated mid-line, a mass deletion)
  goes to the quarantine byte for byte and MEMORY.md is rendered again.
* **A save in progress is never read as a deletion**: a file that changed
  less than ``SETTLE_SECONDS`` ago and would delete or looks damaged is left
  for the next checkpoint (``take_in`` returns None).
* **What a person types is redacted** before it is journaled, and a line over
  the fact length limit is set aside in the quarantine.
* **MEMORY.md rendered between checkpoints** (``render_now``, for a search
  that cites a fact written since the last one) never reads as an edit: its
  rendering is kept, durably, before anything else changes, and a save whose
  merge base is itself changes nothing. Without it a fact forgotten after
  the rendering would come back at the next open (a test kills a writer
  there).
* Every method but ``render_now`` (which takes it) runs with the workspace
  lock held.
"""

from __future__ import annotations

import builtins
import time
from typing import TYPE_CHECKING

from ..capture.secrets import redact
from ..model import MAX_TEXT_CHARS, Item, now
from ..stores import handedit, markdown
from ..stores.longterm import OP_PUT, Change

if TYPE_CHECKING:
    from .engine import Engine

__all__ = ["HandEdits"]

# Hand-edit changes per journal record (a huge edit is several records).
_CHANGES_PER_RECORD = 1000
# Renderings put in place while MEMORY.md keeps changing under them.
_REPLACE_TRIES = 4
# How long open waits for a MEMORY.md save that looks in progress.
_OPEN_SETTLE_WAIT = 3.0


class HandEdits:
    """Takes a person's saves of MEMORY.md into the engine's state."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def take_in(self, *, wait: bool) -> bool | None:
        """Take a hand edit of MEMORY.md in (lock held): True when the file must be
        rendered again, False when it holds what the engine last saw, None when
        it looks like a save still in progress (``wait``: give it a moment first)."""
        deadline = time.monotonic() + (_OPEN_SETTLE_WAIT if wait else 0.0)
        while not self.engine.memory_md.unchanged():
            found = self.engine.memory_md.read()
            if found is None:
                if self.engine.memory_md.known is not None:
                    self.engine.notice("MEMORY.md was missing; it is rendered again")
                self.engine.memory_md.known = None
                return True
            fingerprint, data = found
            if self.propose(data, fingerprint.mtime_ns) is not None:
                self.engine.memory_md.known = fingerprint
                return True
            if time.monotonic() >= deadline:
                return None
            time.sleep(handedit.SETTLE_SECONDS / 5)
        return False

    def propose(
        self, data: bytes, modified_ns: int | None, *, check: bool = True
    ) -> handedit.Plan | None:
        """Apply a saved MEMORY.md relative to the content it started from, or set
        it aside as damage (the plan says which); None (nothing done) when it
        changed too recently to tell a save in progress from a deletion
        (``modified_ns``; None: settled)."""
        parsed = markdown.parse(data)
        base = self.engine.memory_md.history.base_for(data, self._snapshot_rendering)
        plan = handedit.plan(data, parsed, base, self.engine.store, at=now(), check=check)
        in_progress = modified_ns is not None and not handedit.settled(modified_ns)
        if in_progress and (plan.damage or plan.deleted):
            return None
        if plan.damage is not None:
            self.engine.quarantine("MEMORY.md", data, f"damaged: {plan.damage}")
            self.engine.notice(
                f"MEMORY.md looked damaged ({plan.damage}): it is kept in the quarantine and "
                "MEMORY.md is rendered again from memory; if the change was meant, take it "
                "in with `memstrata accept-edit`"
            )
            return plan
        for bad in parsed.bad:
            self.engine.quarantine("MEMORY.md", bad.raw, f"line {bad.line_no} is not valid UTF-8")
        for line in plan.too_long:
            self.too_long(line)
        self._write_changes(plan.changes)
        if plan.changes:
            self.engine.notice(
                f"MEMORY.md was edited by hand: {len(plan.changes)} change(s) taken in"
            )
        if plan.deleted:
            self.engine.notice(
                f"{plan.deleted} fact(s) deleted by hand; `memstrata forgotten` lists them "
                "and `memstrata restore ID` brings one back"
            )
        for conflict in plan.conflicts:
            self.engine.notice(f"MEMORY.md: {conflict}")
        # The base of the person's next save; kept without what it must not keep.
        self.engine.memory_md.history.add(redact(data.decode("utf-8", "replace")).text.encode())
        return plan

    def render_now(self) -> bool:
        """Render MEMORY.md now without the rest of a checkpoint (the snapshot,
        the audit logs, the journal's reset): what a search that cites a fact
        written since the last checkpoint needs, for half the fsyncs.

        The rendering is kept in the history of renderings, durably, before
        anything else changes: a MEMORY.md that is one of them reads as no edit
        at the next open or checkpoint (the merge base is the file itself),
        whatever the snapshot's fingerprint says. False when it was not done
        (a save in progress; the next checkpoint takes it in).
        """
        engine = self.engine
        with engine.transaction("render MEMORY.md", catch_up=True):
            if engine.journal.unsynced:  # what the file shows is durable (as after a flush)
                engine.journal.sync()
            return self.put_rendering(keep_durably=True)

    def put_rendering(self, *, keep_durably: bool = False) -> bool:
        """Render MEMORY.md from the store and put it in place (lock held),
        taking in first a save a person made, and one the swap hands back
        (then rendering again). False when a save looks in progress or the
        file kept changing. ``keep_durably``: the rendering's copy in the
        history is fsynced right after the swap, before any later change (a
        power cut then cannot leave a file that no merge base knows)."""
        memory_md = self.engine.memory_md
        for _ in range(_REPLACE_TRIES):
            if self.take_in(wait=False) is None:
                return False
            with self.engine.state:
                rendered, lines = self.engine.store.render_lines()
            replaced = memory_md.replace(rendered, lines, keep_durably=keep_durably)
            if replaced.rescued is not None:
                self.engine.notice(
                    "an editor saved MEMORY.md while it was rewritten: the save is taken in"
                )
                self.propose(replaced.rescued, None)
                continue  # render again with the rescued save in
            if replaced.done:
                return True
        return False

    def too_long(self, line: markdown.MemoryLine) -> bool:
        """Set a MEMORY.md line over the fact length limit aside (True if it was)."""
        if len(line.text) <= MAX_TEXT_CHARS:
            return False
        raw = line.text.encode("utf-8", "replace")
        self.engine.quarantine(
            "MEMORY.md", raw, f"line {line.line_no} is over {MAX_TEXT_CHARS} chars"
        )
        self.engine.notice(
            f"MEMORY.md line {line.line_no} has {len(line.text)} characters, over the "
            f"{MAX_TEXT_CHARS} a fact may have; set aside in the quarantine"
        )
        return True

    def _snapshot_rendering(self) -> bytes:
        """MEMORY.md as the last checkpoint rendered it (the fallback merge base)."""
        snapshot = self.engine.read_snapshot()
        return markdown.render(snapshot.items.values()).encode() if snapshot else b""

    def without_secrets(self, item: Item) -> Item:
        """``item`` from MEMORY.md with any secret a person typed into it redacted."""
        safe = redact(item.text)
        if not safe.kinds:
            return item
        self.engine.notice(f"MEMORY.md: {', '.join(safe.kinds)} redacted from item {item.id}")
        return item.evolve(text=safe.text)

    def _write_changes(self, changes: builtins.list[Change]) -> None:
        """Journal planned changes in a few records (lock held), then sync."""
        puts = [self.without_secrets(c.item).to_dict() for c in changes if c.item is not None]
        deletes = [c.delete_id for c in changes if c.delete_id is not None]
        for start in range(0, len(puts), _CHANGES_PER_RECORD):
            chunk = puts[start : start + _CHANGES_PER_RECORD]
            self.engine.write(OP_PUT, {"items": chunk, "reason": "hand_edit"}, sync=False)
        if deletes:
            self.engine.delete(deletes, "hand_delete", sync=False)
        if changes:
            self.engine.journal.sync()
