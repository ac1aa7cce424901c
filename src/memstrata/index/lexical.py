"""BM25 in RAM: the lexical half of hybrid search, scored with numpy.

Why not FTS5's ``bm25()``: it scores every row that matches any query word,
one row at a time, so an OR of common words over 100k chunks costs ~14 ms on
two cores. Here each term's postings are flat typed arrays (chunk rows and
term frequencies) that numpy reads in place: scoring is one vectorised
``scores[rows] += idf * weight`` per query term and one ``argpartition``
(~1-2 ms at 100k chunks), with BM25's ``k1`` and ``b`` free to tune.

Tokens are FTS5's (``porter unicode61 remove_diacritics 2``; a test compares
them with SQLite's own): ``text.index_text`` first (Uzbek apostrophe letters
kept whole, CJK as characters and bigrams), then runs of letters and digits,
lower-cased, Latin diacritics removed, Porter-stemmed. Two known departures,
both harmless because queries and chunks go through the same code: the
stemmer is Snowball's ``porter`` (PyStemmer), which leaves a few suffixes
that Porter's reference code, and so FTS5, takes further ("incredibly" ->
``incredibli``, not ``incred``: 8 of 2,761 LoCoMo turns differ in one word);
and symbols such as emoji separate words here, while unicode61 keeps the
ones Unicode 6.1 did not know as tokens.

Invariants:

* **Derived and following.** The postings are built from ``Index.chunks`` and
  kept current from ``Index.chunk_log`` (added / removed / all cleared): a
  search first takes in what changed since the last one; nothing is stored.
* A removed chunk's row is dead (it scores 0 and is never returned); the
  arrays are rebuilt when dead rows outnumber live ones by more than 1,000.
* Document frequencies count dead rows until that rebuild (a small, bounded
  bias of idf), so removing a chunk costs O(1).
* One lock: catching up and scoring never overlap (an array must not grow
  while numpy reads it in place).
"""

from __future__ import annotations

import math
import re
import threading
import unicodedata
from array import array
from functools import lru_cache
from typing import TYPE_CHECKING

from .text import index_text, query_terms

if TYPE_CHECKING:
    import numpy as np

    from .protocol import Index

__all__ = ["Lexical", "document_terms", "query_tokens", "stemmed"]

# Runs of letters and digits: combining marks (Indic vowel signs, Hebrew
# points) separate tokens here as they do in unicode61.
_TOKEN = re.compile(r"[^\W_]+")


def _latin_folds() -> dict[int, str]:
    """Latin letters with diacritics -> their base letters (unicode61's remove_diacritics)."""
    folds = {}
    for code in (*range(0xC0, 0x250), *range(0x1E00, 0x1F00)):
        base = "".join(
            c for c in unicodedata.normalize("NFD", chr(code)) if not unicodedata.combining(c)
        )
        if base and base != chr(code) and base.isascii():
            folds[code] = base
    for code in range(0x300, 0x370):  # a combining diacritic written on its own
        folds[code] = ""
    return folds


_FOLDS = _latin_folds()


@lru_cache(maxsize=1)
def _stemmer() -> object:
    import Stemmer  # PyStemmer: Snowball's C stemmers; "porter" is FTS5's algorithm

    return Stemmer.Stemmer("porter")


@lru_cache(maxsize=200_000)
def _term(word: str) -> str:
    """One word as it is indexed: diacritics folded, then stemmed if it has 3 to
    64 UTF-8 bytes (as FTS5 does; Porter's rules only touch ASCII letters, so
    Cyrillic, CJK and the like come out as they went in)."""
    folded = word.translate(_FOLDS) if not word.isascii() else word
    if 3 <= len(folded.encode("utf-8")) <= 64:
        return str(_stemmer().stemWord(folded))  # type: ignore[attr-defined]
    return folded


def document_terms(text: str) -> list[str]:
    """The terms of ``text`` as indexed, repeats kept (they are term frequency)."""
    return [_term(word) for word in _TOKEN.findall(index_text(text).lower())]


def query_tokens(query: str) -> list[str]:
    """The distinct terms of a query (function words dropped: ``text.query_terms``)."""
    return stemmed(query_terms(query))


def stemmed(words: list[str]) -> list[str]:
    """``text.query_terms`` output as indexed terms, distinct, in order."""
    return list(dict.fromkeys(_term(word) for word in words))


class Lexical:
    """BM25 over an ``Index``'s chunks (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._clear()

    def _clear(self) -> None:
        self._vocab: dict[str, int] = {}
        self._rows: list[array[int]] = []  # term -> chunk rows (int32)
        self._freqs: list[array[float]] = []  # term -> frequency in that row (float32)
        self._lengths = array("f")  # row -> terms in the chunk
        self._live = array("f")  # row -> 1.0 live, 0.0 removed
        self._ids = array("q")  # row -> chunk id
        self._row_of: dict[int, int] = {}
        self._total = 0.0  # terms in live rows
        self._scores: np.ndarray | None = None  # reused: no fresh pages per search
        self._dead = 0
        self._seen = 0  # place in index.chunk_log

    @property
    def live(self) -> int:
        return len(self._row_of)

    def top(
        self, index: Index, terms: list[str], limit: int, *, k1: float, b: float
    ) -> list[tuple[int, float]]:
        """The ``limit`` best chunk ids for the indexed ``terms`` (``stemmed``,
        ``query_tokens``) with their BM25 scores (saturation ``k1``, length
        normalisation ``b``), best first."""
        with self._lock:
            with index.lock:  # writers hold it: the mirror holds still while we read it
                self._catch_up(index)
            if not terms or not self._row_of:
                return []
            return self._top(terms, limit, k1, b)

    def warm(self, index: Index) -> None:
        """Take in every change of ``index`` now (the first search need not)."""
        with self._lock, index.lock:
            self._catch_up(index)

    # -- following the index ------------------------------------------------------

    def _catch_up(self, index: Index) -> None:
        log = index.chunk_log
        changes = log[self._seen :]
        if any(op == 0 for op, _ in changes):
            self._rebuild(index)
            return
        for op, cid in changes:
            if op > 0:
                chunk = index.chunks.get(cid)
                if chunk is not None and cid not in self._row_of:
                    self._add(cid, chunk.body)
            else:
                self._remove(cid)
        self._seen += len(changes)
        if self._dead > self.live + 1000:
            self._rebuild(index)

    def _rebuild(self, index: Index) -> None:
        self._clear()
        self._seen = len(index.chunk_log)
        for cid, chunk in list(index.chunks.items()):
            self._add(cid, chunk.body)

    def _add(self, cid: int, body: str) -> None:
        row = len(self._ids)
        counts: dict[str, int] = {}
        terms = document_terms(body)
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        for term, count in counts.items():
            tid = self._vocab.get(term)
            if tid is None:
                tid = self._vocab[term] = len(self._rows)
                self._rows.append(array("i"))
                self._freqs.append(array("f"))
            self._rows[tid].append(row)
            self._freqs[tid].append(float(count))
        self._ids.append(cid)
        self._lengths.append(float(len(terms)))
        self._live.append(1.0)
        self._row_of[cid] = row
        self._total += len(terms)

    def _remove(self, cid: int) -> None:
        row = self._row_of.pop(cid, None)
        if row is None:
            return
        self._live[row] = 0.0
        self._total -= self._lengths[row]
        self._dead += 1

    # -- scoring --------------------------------------------------------------------

    def _top(self, terms: list[str], limit: int, k1: float, b: float) -> list[tuple[int, float]]:
        import numpy as np

        count = len(self._ids)
        live_rows = self.live
        average = max(self._total / live_rows, 1.0)
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        if self._scores is None or len(self._scores) < count:
            self._scores = np.zeros(max(count * 2, 1024), dtype=np.float32)
        scores = self._scores[:count]
        scores.fill(0.0)
        touched = 0
        for term in terms:
            tid = self._vocab.get(term)
            if tid is None:
                continue
            rows = np.frombuffer(self._rows[tid], dtype=np.int32)
            freqs = np.frombuffer(self._freqs[tid], dtype=np.float32)
            df = len(rows)
            idf = math.log(1.0 + (live_rows - df + 0.5) / (df + 0.5))
            norm = k1 * (1.0 - b + b * lengths[rows] / average)
            scores[rows] += np.float32(idf * (k1 + 1.0)) * freqs / (freqs + norm)
            touched += df
        if not touched:
            return []
        scores *= np.frombuffer(self._live, dtype=np.float32)
        return self._best(scores, min(limit, touched))

    def _best(self, scores: np.ndarray, limit: int) -> list[tuple[int, float]]:
        import numpy as np

        if limit <= 0:
            return []
        if limit < len(scores):
            best = np.argpartition(-scores, limit - 1)[:limit]
        else:
            best = np.arange(len(scores))
        ids = np.frombuffer(self._ids, dtype=np.int64)
        best = best[np.lexsort((ids[best], -scores[best]))]  # ties: the older chunk first
        return [(int(ids[row]), float(scores[row])) for row in best if scores[row] > 0]
