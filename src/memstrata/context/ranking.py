"""Which long-term facts reach the prompt when they do not all fit: the
package's one BM25 (``index.lexical.BM25``) in RAM, so that building a context needs no query
embedding and no index file.

* It mirrors the store's live facts: built once, then kept up to date from
  the engine's change log of item ids (``Engine.fact_changes``), so a write
  costs the gate only the facts it touched; a reset of the store (a reload
  from the files) rebuilds it, and so does a gate whose dead facts (forgotten
  or superseded) outnumber the live ones by more than 1,000.
* Terms are search's (``index.lexical.document_terms`` for a fact's category
  and text, ``query_tokens`` for the prompt: FTS5's tokens, Porter-stemmed,
  function words dropped from the prompt), so a prompt matches the facts
  ``search`` would match. BM25 with k1 = 1.2, b = 0.5 (facts are short and
  alike in length); each term scores at most ``IMPACT_CAP`` facts, those where
  it weighs most, so the cost does not grow with the store.
* ``top(prompt, k)`` returns item ids, best first (ties: the older fact); a
  fact that shares no term with the prompt is never returned.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from ..index.lexical import BM25, document_terms, query_tokens
from ..model import Item

__all__ = ["FactRanker"]

K1 = 1.2
B = 0.5
IMPACT_CAP = 512  # facts a term scores at most (those where it weighs most)


class FactRanker:
    """BM25 over the live long-term facts, in RAM."""

    def __init__(self) -> None:
        self._generation = -1
        # sync and top do not overlap: numpy reads the arrays in place, and an
        # array cannot grow while it is read that way
        self._lock = threading.RLock()
        self._clear()

    def _clear(self) -> None:
        self._seen = 0  # place in the change log
        self._bm25 = BM25(cap=IMPACT_CAP)
        self._ids: list[str | None] = []  # key -> item id (None: gone)
        self._key_of: dict[str, int] = {}

    @property
    def live(self) -> int:
        """How many live facts the gate holds (the store's, once synced)."""
        return self._bm25.live

    def sync(self, items: Mapping[str, Item], generation: int, changes: Sequence[str]) -> None:
        """Catch up with the store (``items``) from its change log."""
        with self._lock:
            self._sync(items, generation, changes)

    def _sync(self, items: Mapping[str, Item], generation: int, changes: Sequence[str]) -> None:
        if generation != self._generation:
            self._clear()  # a reset store: start again
            self._generation = generation
            for item in items.values():
                if item.is_live:
                    self._add(item)
            self._seen = len(changes)
            return
        for item_id in dict.fromkeys(changes[self._seen :]):
            self._remove(item_id)
            changed = items.get(item_id)
            if changed is not None and changed.is_live:
                self._add(changed)
        self._seen = len(changes)
        if self._bm25.dead > self._bm25.live + 1000:  # mostly dead facts: build it again
            self._generation = -1
            self._sync(items, generation, changes)

    def _add(self, item: Item) -> None:
        key = len(self._ids)
        self._ids.append(item.id)
        self._key_of[item.id] = key
        self._bm25.add(key, document_terms(f"{item.category} {item.text}"))

    def _remove(self, item_id: str) -> None:
        key = self._key_of.pop(item_id, None)
        if key is not None:
            self._ids[key] = None
            self._bm25.remove(key)

    def top(self, prompt: str, k: int) -> list[str]:
        """The ids of the ``k`` facts that best match ``prompt``, best first."""
        with self._lock:
            found = self._bm25.top(query_tokens(prompt), k, k1=K1, b=B)
        out = []
        for key, _ in found:
            item_id = self._ids[key]
            if item_id is not None:
                out.append(item_id)
        return out
