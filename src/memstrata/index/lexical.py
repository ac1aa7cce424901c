"""BM25 in RAM: the lexical half of hybrid search, scored with numpy, and the
one BM25 of the package: ``BM25`` is also the prompt's fact gate
(``context.ranking``), with the same terms, so a question matches the same way
in ``search`` and in ``build_context``.

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

* ``BM25`` holds postings and scores them; ``Lexical`` makes it follow an
  index, ``context.ranking.FactRanker`` the long-term store.
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
from collections.abc import Sequence
from functools import lru_cache
from typing import TYPE_CHECKING

from .referents import refers, salient
from .text import index_text, query_terms

if TYPE_CHECKING:
    import numpy as np

    from .chunks import Chunk
    from .protocol import Index

__all__ = ["BM25", "Lexical", "bm25_text", "document_terms", "query_tokens", "stemmed"]

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


class BM25:
    """BM25 postings in RAM over documents with int keys (see the module), and
    their scoring: whole postings, or each term's ``cap`` best documents.

    With ``cap`` set, a term scores at most ``cap`` documents, those where it
    weighs most (impact-ordered postings): a query's cost does not grow with the
    number of documents. The choice of a term's best documents is kept until a
    document holding the term is added or removed (the average length it was
    made with may have drifted a little since); their weights are computed
    again at each query. Not locked: its owner serialises calls.
    """

    def __init__(self, cap: int | None = None) -> None:
        self.cap = cap
        self.clear()

    def clear(self) -> None:
        self._vocab: dict[str, int] = {}
        self._rows: list[array[int]] = []  # term -> rows (int32)
        self._freqs: list[array[float]] = []  # term -> frequency in that row (float32)
        self._lengths = array("f")  # row -> terms in the document
        self._live = array("f")  # row -> 1.0 live, 0.0 removed
        self._ids = array("q")  # row -> key
        self._row_of: dict[int, int] = {}
        self._total = 0.0  # terms in live rows
        self._scores: np.ndarray | None = None  # reused: no fresh pages per search
        self._dead = 0
        # capped scoring only: row -> its distinct term ids, term id -> its best rows
        self._terms_of: list[array[int]] = []
        self._best_rows: dict[int, np.ndarray] = {}

    @property
    def live(self) -> int:
        """Documents added and not removed."""
        return len(self._row_of)

    @property
    def dead(self) -> int:
        """Documents removed since the last ``clear``."""
        return self._dead

    def __contains__(self, key: int) -> bool:
        return key in self._row_of

    def add(self, key: int, terms: list[str]) -> None:
        """Add the document ``key`` with its ``terms`` (``document_terms``)."""
        row = len(self._ids)
        counts: dict[str, int] = {}
        for term in terms:
            counts[term] = counts.get(term, 0) + 1
        tids = array("i")
        for term, count in counts.items():
            tid = self._vocab.get(term)
            if tid is None:
                tid = self._vocab[term] = len(self._rows)
                self._rows.append(array("i"))
                self._freqs.append(array("f"))
            self._rows[tid].append(row)
            self._freqs[tid].append(float(count))
            tids.append(tid)
        if self.cap is not None:
            self._terms_of.append(tids)
            for tid in tids:
                self._best_rows.pop(tid, None)
        self._ids.append(key)
        self._lengths.append(float(len(terms)))
        self._live.append(1.0)
        self._row_of[key] = row
        self._total += len(terms)

    def remove(self, key: int) -> None:
        """Remove the document ``key`` (its row stays, dead, until ``clear``)."""
        row = self._row_of.pop(key, None)
        if row is None:
            return
        self._live[row] = 0.0
        self._total -= self._lengths[row]
        self._dead += 1
        if self.cap is not None:
            for tid in self._terms_of[row]:
                self._best_rows.pop(tid, None)  # its best rows may hold this one

    def top(
        self,
        terms: list[str],
        limit: int,
        *,
        k1: float,
        b: float,
        extra: Sequence[str] = (),
        weight: float = 0.0,
    ) -> list[tuple[int, float]]:
        """The ``limit`` best keys for the indexed ``terms`` (``stemmed``,
        ``query_tokens``) with their BM25 scores (saturation ``k1``, length
        normalisation ``b``), best first; ties: the smaller key first. Each of
        the ``extra`` terms (``expand.expansion``) counts ``weight`` of one."""
        if not terms or not self._row_of or limit <= 0:
            return []
        asked = [(t, 1.0) for t in terms]
        if weight > 0:
            asked += [(t, weight) for t in extra]
        if self.cap is not None:
            return self._top_capped(asked, limit, k1, b, self.cap)
        return self._top(asked, limit, k1, b)

    def coverage(self, terms: list[str], held: set[str], background: int) -> float:
        """The share of the distinct query ``terms`` a document holding ``held``
        has, each term weighted by its rarity as if the index also had
        ``background`` documents without it (so that a tiny index, where every
        term it holds is common, still weighs a word it holds like one it does
        not): comparable from one query and one index to the next."""
        weights = {}
        for term in set(terms):
            tid = self._vocab.get(term)
            df = len(self._rows[tid]) if tid is not None else 0
            weights[term] = math.log(1.0 + (background + self.live - df + 0.5) / (df + 0.5))
        total = sum(weights.values())
        return sum(w for term, w in weights.items() if term in held) / total if total else 0.0

    def _idf(self, df: int) -> float:
        return math.log(1.0 + (self.live - df + 0.5) / (df + 0.5))

    def _top(
        self, terms: list[tuple[str, float]], limit: int, k1: float, b: float
    ) -> list[tuple[int, float]]:
        import numpy as np

        count = len(self._ids)
        average = max(self._total / self.live, 1.0)
        lengths = np.frombuffer(self._lengths, dtype=np.float32)
        if self._scores is None or len(self._scores) < count:
            self._scores = np.zeros(max(count * 2, 1024), dtype=np.float32)
        scores = self._scores[:count]
        scores.fill(0.0)
        touched = 0
        for term, scale in terms:
            tid = self._vocab.get(term)
            if tid is None:
                continue
            rows = np.frombuffer(self._rows[tid], dtype=np.int32)
            freqs = np.frombuffer(self._freqs[tid], dtype=np.float32)
            df = len(rows)
            norm = k1 * (1.0 - b + b * lengths[rows] / average)
            idf = scale * self._idf(df)
            scores[rows] += np.float32(idf * (k1 + 1.0)) * freqs / (freqs + norm)
            touched += df
        if not touched:
            return []
        scores *= np.frombuffer(self._live, dtype=np.float32)
        return self._best(scores, min(limit, touched), sparse=touched * 2 < count)

    def _best(
        self, scores: np.ndarray, limit: int, *, sparse: bool = False
    ) -> list[tuple[int, float]]:
        """The ``limit`` best rows; ``sparse``: few rows scored, so choose among
        those (a partition of a million scores costs ~7 ms on two cores)."""
        import numpy as np

        # (scores are >= 0; a boolean array is found ~4x faster than floats)
        rows = np.flatnonzero(scores > 0) if sparse else None
        if rows is not None and limit >= len(rows):
            best = rows
        elif rows is not None:
            best = rows[np.argpartition(-scores[rows], limit - 1)[:limit]]
        elif limit < len(scores):
            best = np.argpartition(-scores, limit - 1)[:limit]
        else:
            best = np.arange(len(scores))
        ids = np.frombuffer(self._ids, dtype=np.int64)
        best = best[np.lexsort((ids[best], -scores[best]))]  # ties: the older key first
        return [(int(ids[row]), float(scores[row])) for row in best if scores[row] > 0]

    def _capped_rows(self, tid: int, cap: int, k1: float, b: float, average: float) -> np.ndarray:
        """A term's live rows, cut to the ``cap`` where it weighs most."""
        import numpy as np

        best = self._best_rows.get(tid)
        if best is None:
            rows = np.frombuffer(self._rows[tid], dtype=np.int32)
            rows = rows[np.frombuffer(self._live, dtype=np.float32)[rows] > 0]
            if len(rows) > cap:
                freqs = np.frombuffer(self._freqs[tid], dtype=np.float32)
                freqs = freqs[np.isin(np.frombuffer(self._rows[tid], dtype=np.int32), rows)]
                weight = self._weights(rows, freqs, k1, b, average)
                rows = rows[np.argpartition(-weight, cap)[:cap]]
            best = self._best_rows[tid] = rows
        return best

    def _weights(
        self, rows: np.ndarray, freqs: np.ndarray, k1: float, b: float, average: float
    ) -> np.ndarray:
        import numpy as np

        lengths = np.frombuffer(self._lengths, dtype=np.float32)[rows]
        norm = k1 * (1.0 - b + b * lengths / average)
        result: np.ndarray = freqs * np.float32(k1 + 1.0) / (freqs + norm)
        return result

    def _top_capped(
        self, terms: list[tuple[str, float]], limit: int, k1: float, b: float, cap: int
    ) -> list[tuple[int, float]]:
        import numpy as np

        average = max(self._total / self.live, 1.0)
        rows_of, weights_of = [], []
        for term, scale in terms:
            tid = self._vocab.get(term)
            if tid is None:
                continue
            all_rows = np.frombuffer(self._rows[tid], dtype=np.int32)
            rows = self._capped_rows(tid, cap, k1, b, average)
            if not len(rows):
                continue
            at = np.searchsorted(all_rows, rows)  # a term's rows are in ascending order
            freqs = np.frombuffer(self._freqs[tid], dtype=np.float32)[at]
            idf = scale * self._idf(len(all_rows))
            rows_of.append(rows)
            weights_of.append(self._weights(rows, freqs, k1, b, average) * np.float32(idf))
        if not rows_of:
            return []
        found, where = np.unique(np.concatenate(rows_of), return_inverse=True)
        scores = np.bincount(where, weights=np.concatenate(weights_of)).astype(np.float32)
        ids = np.frombuffer(self._ids, dtype=np.int64)[found]
        order = np.lexsort((ids, -scores))[:limit]
        return [(int(ids[i]), float(scores[i])) for i in order if scores[i] > 0]


class Lexical:
    """BM25 over an ``Index``'s chunks (see the module)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bm25 = BM25()
        self._seen = 0  # place in index.chunk_log
        # The names transcript turns are said by (``speakers``), and their own
        # place in the log: they follow the index even where BM25 ranks in SQL.
        self._names: frozenset[str] = frozenset()
        self._names_seen = 0

    @property
    def live(self) -> int:
        return self._bm25.live

    @property
    def _ids(self) -> array[int]:
        return self._bm25._ids  # noqa: SLF001 - the rows, dead ones included (tests)

    def top(
        self,
        index: Index,
        terms: list[str],
        limit: int,
        *,
        k1: float,
        b: float,
        extra: Sequence[str] = (),
        weight: float = 0.0,
    ) -> list[tuple[int, float]]:
        """The ``limit`` best chunk ids for the indexed ``terms`` (``stemmed``,
        ``query_tokens``) with their BM25 scores (saturation ``k1``, length
        normalisation ``b``), best first; ``extra`` / ``weight``: ``BM25.top``."""
        with self._lock:
            with index.lock:  # writers hold it: the mirror holds still while we read it
                self._catch_up(index)
            return self._bm25.top(terms, limit, k1=k1, b=b, extra=extra, weight=weight)

    def speakers(self, index: Index) -> frozenset[str]:
        """The speakers' names of ``index``'s transcript turns (their titles,
        lower-cased). A name stays until the index is cleared, even once its
        turns are removed: it is only ever kept from a query's embedding
        (``text.without_names``)."""
        with self._lock, index.lock:
            log = index.chunk_log
            if self._names_seen < len(log):
                names = set(self._names)
                chunks = index.chunks
                for op, cid in log[self._names_seen :]:
                    if op == 0:
                        names.clear()
                    elif op > 0:
                        chunk = chunks.get(cid)
                        if chunk is not None and chunk.title and chunk.layer == "transcripts":
                            names.add(chunk.title.lower())
                self._names_seen = len(log)
                if names != self._names:
                    self._names = frozenset(names)
            return self._names

    def coverage(self, terms: list[str], held: set[str], background: int) -> float:
        """``BM25.coverage`` in the index as of its last ``top``."""
        with self._lock:
            return self._bm25.coverage(terms, held, background)

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
        bm25 = self._bm25
        for op, cid in changes:
            if op > 0:
                chunk = index.chunks.get(cid)
                if chunk is not None and cid not in bm25:
                    bm25.add(cid, document_terms(bm25_text(index, cid, chunk)))
            else:
                bm25.remove(cid)
        self._seen += len(changes)
        if bm25.dead > bm25.live + 1000:
            self._rebuild(index)

    def _rebuild(self, index: Index) -> None:
        self._bm25.clear()
        self._seen = len(index.chunk_log)
        for cid, chunk in list(index.chunks.items()):
            self._bm25.add(cid, document_terms(bm25_text(index, cid, chunk)))


def bm25_text(index: Index, cid: int, chunk: Chunk) -> str:
    """What BM25 reads of a chunk: ``Chunk.words``, and for a transcript
    message that refers back, the content words of the message before it
    (``referents``)."""
    words = chunk.words
    if chunk.layer != "transcripts" or not refers(chunk.text):
        return words
    before = index.neighbours(cid)
    if not before:
        return words
    previous = index.chunks.get(before[0])
    if previous is None or previous.line_start >= chunk.line_start:
        return words
    extra = salient(previous.text)
    return f"{words} ({' '.join(extra)})" if extra else words
