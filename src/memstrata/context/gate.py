"""The prompt's gate over long-term facts: BM25 in RAM, so that building a
context needs no query embedding and no index file.

* It mirrors the store's live facts: built once, then kept up to date from
  the engine's change log of item ids (``Engine.fact_changes``), so a write
  costs the gate only the facts it touched; a reset of the store (a reload
  from the files) rebuilds it, and so does a gate whose dead facts (forgotten
  or superseded) outnumber the live ones twice over.
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
import threading
from array import array
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..index.text import query_terms
from ..model import Item

if TYPE_CHECKING:
    import numpy as np

__all__ = ["FactGate", "terms"]

K1 = 1.2
B = 0.5
IMPACT_CAP = 512  # facts a term scores at most (those where it weighs most)
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
        # sync and top do not overlap: numpy reads the arrays in place, and an
        # array cannot grow while it is read that way
        self._lock = threading.RLock()
        self._clear()

    def _clear(self) -> None:
        self._seen = 0  # place in the change log
        self._ids: list[str | None] = []  # doc -> item id (None: gone)
        # Flat typed arrays, read by numpy without a copy: doc -> term count,
        # doc -> 1 while live, term -> docs (a doc once per occurrence).
        self._lengths = array("q")
        self._alive = bytearray()
        self._words: list[tuple[str, ...]] = []  # doc -> its distinct terms
        self._doc_of: dict[str, int] = {}
        self._postings: dict[str, array[int]] = {}
        # term -> (docs, BM25 weights, document count): impact-ordered, capped postings
        self._arrays: dict[str, tuple[np.ndarray, np.ndarray, int]] = {}
        self._live = 0
        self._total_length = 0

    @property
    def live(self) -> int:
        """How many live facts the gate holds (the store's, once synced)."""
        return self._live

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
        if len(self._ids) > 2 * self._live + 1000:  # mostly dead docs: build it again
            self._generation = -1
            self._sync(items, generation, changes)

    def _add(self, item: Item) -> None:
        doc = len(self._ids)
        words = terms(f"{item.category} {item.text}")
        self._ids.append(item.id)
        self._lengths.append(len(words))
        self._alive.append(1)
        self._words.append(tuple(dict.fromkeys(words)))
        self._doc_of[item.id] = doc
        for word in words:
            posting = self._postings.get(word)
            if posting is None:
                posting = self._postings[word] = array("q")
            posting.append(doc)
            self._arrays.pop(word, None)
        self._live += 1
        self._total_length += len(words)

    def _remove(self, item_id: str) -> None:
        doc = self._doc_of.pop(item_id, None)
        if doc is not None:
            for word in self._words[doc]:
                self._arrays.pop(word, None)  # its capped postings may hold this doc
            self._ids[doc] = None  # its postings stay; dead docs are skipped
            self._alive[doc] = 0
            self._live -= 1
            self._total_length -= self._lengths[doc]

    def _impacts(self, word: str, average: float) -> tuple[np.ndarray, np.ndarray, int]:
        """A term's postings in impact order, cut at ``IMPACT_CAP`` docs: the docs,
        each one's BM25 term weight (without idf), and the term's document count."""
        import numpy as np

        cached = self._arrays.get(word)
        if cached is None:
            posting = np.frombuffer(self._postings[word], dtype=np.int64)
            docs, counts = np.unique(posting, return_counts=True)
            alive = np.frombuffer(self._alive, dtype=np.uint8)[docs].astype(bool)
            docs, counts = docs[alive], counts[alive].astype(np.float64)
            lengths = np.frombuffer(self._lengths, dtype=np.int64)[docs]
            norm = K1 * (1 - B + B * lengths / average)
            weight = counts * (K1 + 1) / (counts + norm)
            if len(docs) > IMPACT_CAP:
                best = np.argpartition(-weight, IMPACT_CAP)[:IMPACT_CAP]
                cached = (docs[best], weight[best], len(docs))
            else:
                cached = (docs, weight, len(docs))
            self._arrays[word] = cached
        return cached

    def top(self, prompt: str, k: int) -> list[str]:
        """The ids of the ``k`` facts that best match ``prompt``, best first
        (see ``_top``)."""
        with self._lock:
            return self._top(prompt, k)

    def _top(self, prompt: str, k: int) -> list[str]:
        """The ids of the ``k`` facts that best match ``prompt``, best first.

        Each term scores at most ``IMPACT_CAP`` facts, those where it weighs
        most: the cost does not grow with the store (impact-ordered postings)."""
        import numpy as np

        if not self._live or k <= 0:
            return []
        average = max(self._total_length / self._live, 1.0)
        docs_of, weights_of = [], []
        for word in dict.fromkeys(terms(prompt)):
            if not self._postings.get(word):
                continue
            docs, weight, frequency = self._impacts(word, average)
            idf = math.log(1 + (self._live - frequency + 0.5) / (frequency + 0.5))
            docs_of.append(docs)
            weights_of.append(weight * idf)
        if not docs_of:
            return []
        found, where = np.unique(np.concatenate(docs_of), return_inverse=True)
        total = np.bincount(where, weights=np.concatenate(weights_of))
        order = np.argsort(-total, kind="stable")[: 4 * k]
        out = []
        for index in order:
            item_id = self._ids[int(found[index])]
            if item_id is not None and total[index] > 0:
                out.append(item_id)
                if len(out) >= k:
                    break
        return out
