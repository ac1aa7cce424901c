"""The ``FactStore`` seam: the long-term facts the engine writes through.

Every change reaches a store as a journal record (``storage.journal.Record``)
the engine wrote first: ``apply`` is the only write besides ``reset`` (a
whole state loaded at open) and ``expire_forgotten`` (the retention ended).
``stores.longterm.LongTermStore`` (RAM, checkpointed to MEMORY.md and a
snapshot by the engine) is the embedded implementation; ``tests/fakes.py``
has a plain-dict one, and ``tests/contracts/test_fact_store_contract.py`` is
what any backend must pass. Values crossing the seam are frozen dataclasses:
``model.Item``, ``longterm.Forgotten``, ``journal.Record``.

What a backend must guarantee:

* **Records in lsn order, each once.** ``apply`` ignores a record whose lsn
  is not above ``lsn`` (replaying the journal again is harmless) and raises
  ``lsn`` to it otherwise, whatever the record's op (records of other ops
  move ``lsn`` and change nothing else). ``lsn`` never goes down except by
  ``reset``; the engine may raise it to the journal's last lsn.
* **Operations.** ``ltm.put`` (``data["items"]``: whole items as
  ``Item.to_dict``) puts each item by id, all of them or none; an update keeps
  the id; a put of a forgotten id brings it back (``restore``) and takes it
  out of ``forgotten``. ``ltm.del`` (``data["ids"]``, ``reason``, ``at``)
  removes the items; an unknown id is no error.
* **Nothing forgotten is gone at once.** An item deleted for a reason in
  ``longterm.RESTORABLE`` (``forget``, ``hand_delete``) is kept in
  ``forgotten`` with when (the record's ``at``) and why, until
  ``expire_forgotten`` passes its time; other deletions are final.
* **De-duplication.** ``live_by_key(Item.key)`` / ``find_live(text, user)``
  find the live item with that key (normalized text, per user); superseded
  and deleted items are never found. One live item per key is the engine's
  rule (it de-duplicates before writing); a store need not repair a breach.
* ``items`` and ``forgotten`` are read-only views for the caller; items are
  immutable values, so a reader may keep one after the store changes.
* ``unused_id`` is an id neither an item nor a forgotten item has.
* Not thread-safe: the engine holds its lock around every call. A backend
  raises only ``memstrata.errors`` classes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Protocol, runtime_checkable

from ..model import Item
from ..storage.journal import Record
from .longterm import Forgotten

__all__ = ["FactStore", "retired_keys"]


@runtime_checkable
class FactStore(Protocol):
    """Long-term facts by id, their live keys, the forgotten ones, and the lsn."""

    lsn: int

    @property
    def items(self) -> Mapping[str, Item]:
        """Every item by id (live and superseded), in the order first put."""
        ...

    @property
    def forgotten(self) -> Mapping[str, Forgotten]: ...

    def apply(self, record: Record) -> None:
        """Apply one journal record (ignored unless newer than ``lsn``)."""
        ...

    def reset(
        self,
        items: dict[str, Item],
        lsn: int,
        keys: dict[str, str] | None = None,
        forgotten: dict[str, Forgotten] | None = None,
    ) -> None:
        """Replace the whole state; ``keys`` (key -> live id) may spare
        recomputing the de-duplication keys, and may be ignored."""
        ...

    def live_by_key(self, key: str) -> Item | None: ...

    def find_live(self, text: str, user: str | None = None) -> Item | None: ...

    def newest(self, accept: Callable[[Item], bool], limit: int | None) -> list[Item]:
        """Items ``accept`` takes, newest first by (created_at, id), at most ``limit``."""
        ...

    def expire_forgotten(self, before: datetime) -> None:
        """Let go of the items forgotten before ``before``."""
        ...

    def unused_id(self) -> str: ...


def retired_keys(store: FactStore) -> set[str]:
    """The de-duplication keys of every item of ``store`` that is not live
    (superseded, expired) and of every forgotten one: what a re-capture must
    not bring back, and what a context must not show as live."""
    keys = {item.key for item in store.items.values() if not item.is_live}
    keys.update(gone.item.key for gone in store.forgotten.values())
    return keys
