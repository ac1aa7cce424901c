"""Query expansion for BM25 from the shipped static table (issue 16, seventh
session): each content word of a question also asks BM25 for its nearest
vocabulary words, each counting ``Weights.expand`` of a word of the question
(with MiniLM 0.35; other embedders 0: ``DEFAULTS``), so that "painting" also
finds "painter", "artist" and "art", and "kids" "children".

The table is the static embedder's (``embed/data/static-minilm-128.bin``:
MiniLM distilled to one row per WordPiece token; SHA-256-pinned), read once
per process at the first expanded search or by ``reindex(warm=True)`` (4 MB
read, ~11 MB of float32 rows for the 21k whole words kept; ~0.3 s). A
question's word is expanded when it is one whole token of that vocabulary
(a rarer word is split into pieces, and BM25 already weighs it), has three
letters or more, is not a transcript speaker's name nor written with a
capital letter inside the question (a name's neighbours are other names).
Its ``NEIGHBOURS`` nearest whole-word tokens by cosine (three letters or
more, not function words, not the word's own indexed stem) are added. A
"when" question is not expanded: its event's own words and the date factor
find it, and LoCoMo's temporal questions lost with it. A word's neighbours
cost one product over the 21k rows (~1-3 ms) the first time it is asked and
a look-up after (``_nearest``, cached). If the table cannot be read, search
runs without expansion. On PostgreSQL it counts only when BM25 ranks in RAM.

Measured leave one conversation out on LoCoMo (docs/search-history.md,
"Query expansion from the static table"): recall@5 / @10 0.7646 / 0.8457 →
0.7694 / 0.8468.
"""

from __future__ import annotations

import json
import re
import threading
from functools import lru_cache
from typing import TYPE_CHECKING

from ..errors import MemstrataError
from . import blas
from .lexical import _term
from .text import STOPWORDS, query_terms

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULTS", "NEIGHBOURS", "expansion", "warm", "weight_for"]

NEIGHBOURS = 5  # nearest words added per question word
# The weight measured for a built-in embedder (``Weights.expand`` when not
# given): MiniLM 0.35 (LoCoMo, nested leave one conversation out); the static
# table lost with it (0.7194 / 0.7979 -> 0.7163 / 0.7880), and BM25 alone and
# other embedders were not measured: 0.
DEFAULTS = {"minilm": 0.35}
_CAPITALISED = re.compile(r"(?<!^)(?<![.?!]\s)\b([A-Z][a-z]+)")


class _Table:
    """The static table's whole-word rows, normalised, and where each word is."""

    def __init__(self) -> None:
        import numpy as np

        from ..embed.static import _default_table, read_table, vendored_tokenizer_bytes

        data, where = _default_table()
        table = read_table(data, where)
        vocab: dict[str, int] = json.loads(vendored_tokenizer_bytes())["model"]["vocab"]
        kept = sorted(
            (row, word)
            for word, row in vocab.items()
            if word.isascii() and word.isalpha() and len(word) >= 3 and word not in STOPWORDS
        )
        self.words = [word for _, word in kept]
        self.place = {word: i for i, word in enumerate(self.words)}
        rows = table[[row for row, _ in kept]]
        self.matrix: np.ndarray = rows / np.linalg.norm(rows, axis=1, keepdims=True)


_LOCK = threading.Lock()
_TABLE: list[_Table | None] = []


def _table() -> _Table | None:
    with _LOCK:
        if not _TABLE:
            try:
                _TABLE.append(_Table())
            except (MemstrataError, OSError, ValueError, KeyError, ImportError):
                _TABLE.append(None)  # no table: no expansion (search runs as before)
        return _TABLE[0]


def weight_for(embedder: object) -> float:
    """The expansion's weight for the ``embedder`` setting (a name; an object: 0)."""
    return DEFAULTS.get(embedder.strip().lower(), 0.0) if isinstance(embedder, str) else 0.0


def warm() -> None:
    """Read the table now (~0.3 s once a process), not at the first search."""
    _table()


@lru_cache(maxsize=50_000)
def _nearest(word: str) -> tuple[str, ...]:
    """The indexed forms of ``word``'s ``NEIGHBOURS`` nearest whole words
    other than its own stem (none when it is not one whole word)."""
    import numpy as np

    table = _table()
    at = table.place.get(word) if table is not None else None
    if table is None or at is None:
        return ()
    with blas.limited():  # one OpenBLAS thread (see index.blas)
        scores = table.matrix @ table.matrix[at]
    top = np.argpartition(-scores, 4 * NEIGHBOURS)[: 4 * NEIGHBOURS]
    own = _term(word)
    near = [t for j in top[np.argsort(-scores[top])] if (t := _term(table.words[j])) != own]
    return tuple(dict.fromkeys(near[:NEIGHBOURS]))  # ("painter", "painters": one term)


def expansion(query: str, names: frozenset[str]) -> list[str]:
    """The indexed terms the static table adds to ``query``'s BM25 terms
    (none of the query's own; ``names``: the speakers' names, lower-cased)."""
    capital = {m.lower() for m in _CAPITALISED.findall(query)}
    words = query_terms(query)
    own = {_term(w) for w in words}
    out: dict[str, None] = {}
    for word in words:
        if len(word) < 3 or not word.isalpha() or word in names or word in capital:
            continue
        for term in _nearest(word):
            if term not in own:
                out[term] = None
    return list(out)
