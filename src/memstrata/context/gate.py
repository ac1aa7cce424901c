"""The prompt's gate over long-term facts: BM25 in RAM, so that building a
context needs no query embedding and no index file.

* It mirrors the store's live facts: built once, then kept up to date from
  the engine's change log of item ids (``Engine.fact_changes``), so a write
  costs the gate only the facts it touched; a reset of the store (a reload
  from the files) rebuilds it.
* Terms are those of ``index.text.query_terms`` (Uzbek apostrophe letters,
  CJK bigrams, function words dropped) with English plural/tense endings
  folded (``ports``/``port``, ``used``/``use``), the same for facts and
  prompts. BM25 with k1 = 1.2, b = 0.5 (facts are short and alike in length).
* ``top(prompt, k)`` returns item ids, best first; a fact that shares no term
  with the prompt is never returned.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..index.text import query_terms
from ..model import Item

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FactGate", "terms"]

K1 = 1.2
B = 0.5
_ENDING = re.compile(r"(?<=[a-z]{3})(?:ies|es|s|ed|ing)$")


def terms(text: str) -> list[str]:
    """The gate's terms of ``text`` (repeats kept: they are term frequency)."""
    out = []
    for term in query_terms(text):
        out.append(_ENDING.sub("", term) if term.isascii() else term)
    return out


class FactGate:
    """BM25 over the live long-term facts, in RAM."""

    def __init__(self) -> None:
        self._generation = -1
        self._clear()

    def _clear(self) -> None:
        self._seen = 0  # place in the change log
        self._ids: list[str | None] = []  # doc -> item id (None: gone)
        self._lengths: list[int] = []
        self._length_array: np.ndarray | None = None  # a cache of _lengths
        self._doc_of: dict[str, int] = {}
        self._postings: dict[str, list[int]] = {}  # term -> docs, a doc once per occurrence
        # term -> (docs, occurrences in each) as arrays: a cache of the postings
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._live = 0
        self._total_length = 0

    def sync(self, items: Mapping[str, Item], generation: int, changes: Sequence[str]) -> None:
        """Catch up with the store (``items``) from its change log."""
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

    def _add(self, item: Item) -> None:
        doc = len(self._ids)
        words = terms(f"{item.category} {item.text}")
        self._ids.append(item.id)
        self._lengths.append(len(words))
        self._length_array = None
        self._doc_of[item.id] = doc
        for word in words:
            self._postings.setdefault(word, []).append(doc)
            self._arrays.pop(word, None)
        self._live += 1
        self._total_length += len(words)

    def _remove(self, item_id: str) -> None:
        doc = self._doc_of.pop(item_id, None)
        if doc is not None:
            self._ids[doc] = None  # its postings stay; dead docs are skipped
            self._live -= 1
            self._total_length -= self._lengths[doc]

    def top(self, prompt: str, k: int) -> list[str]:
        """The ids of the ``k`` facts that best match ``prompt``, best first."""
        import numpy as np

        if not self._live or k <= 0:
            return []
        average = max(self._total_length / self._live, 1.0)
        lengths = self._length_array
        matched = False
        total = np.zeros(len(self._ids), dtype=np.float64)
        for word in dict.fromkeys(terms(prompt)):
            posting = self._postings.get(word)
            if not posting:
                continue
            cached = self._arrays.get(word)
            if cached is None:
                docs, counts = np.unique(np.asarray(posting, dtype=np.int64), return_counts=True)
                cached = self._arrays[word] = (docs, counts.astype(np.float64))
            docs, counts = cached
            frequency = len(docs)
            idf = math.log(1 + (self._live - frequency + 0.5) / (frequency + 0.5))
            if lengths is None:
                lengths = self._length_array = np.asarray(self._lengths, dtype=np.float64)
            norm = K1 * (1 - B + B * lengths[docs] / average)
            total[docs] += idf * counts * (K1 + 1) / (counts + norm)
            matched = True
        if not matched:
            return []
        found = np.flatnonzero(total)
        if not len(found):
            return []
        if len(found) > 4 * k:  # only the best few need sorting
            found = found[np.argpartition(-total[found], 4 * k)[: 4 * k]]
        order = found[np.argsort(-total[found], kind="stable")]
        out = []
        for doc in order:
            item_id = self._ids[int(doc)]
            if item_id is not None:
                out.append(item_id)
                if len(out) >= k:
                    break
        return out
