"""Query expansion for BM25 from the shipped static table (issue 16, seventh
session): each content word of a question also asks BM25 for its nearest
vocabulary words, each counting ``Weights.expand`` of a word of the question
(with MiniLM 0.35; other embedders 0: ``DEFAULTS``), so that "painting" also
finds "painter", "artist" and "art", and "kids" "children".

The neighbours come from the static embedder's table (``embed/data/
static-minilm-128.bin``: MiniLM distilled to one row per WordPiece token) and
are shipped computed (``embed/data/static-minilm-128-neighbours.txt.gz``,
built by ``bench/build_neighbours.py`` with ``compute``; a test recomputes a
sample): a search reads that list once per process (~23 ms) and looks words
up, instead of loading the table (0.16-0.3 s) and multiplying 21k rows for
each new word (1-3 ms). A question's word is expanded when it is one whole
token of that vocabulary (a rarer word is split into pieces, and BM25 already
weighs it), has three letters or more, is not a transcript speaker's name nor
written with a capital letter inside the question (a name's neighbours are
other names). Its ``NEIGHBOURS`` nearest whole-word tokens by cosine (three
letters or more, not function words, not the word's own indexed stem) are
added. A "when" question is not expanded: its event's own words and the date
factor find it, and LoCoMo's temporal questions lost with it. If the list cannot be read, search
runs without expansion. On PostgreSQL it counts only when BM25 ranks in RAM.

Measured leave one conversation out on LoCoMo (docs/search-history.md,
"Query expansion from the static table"): recall@5 / @10 0.7646 / 0.8457 →
0.7694 / 0.8468.
"""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Iterable
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

from . import blas
from .lexical import _term
from .text import STOPWORDS, query_terms

if TYPE_CHECKING:
    import numpy as np

__all__ = ["DEFAULTS", "NEIGHBOURS", "compute", "expansion", "parse", "warm", "weight_for"]

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


NEIGHBOURS_FILE = "static-minilm-128-neighbours.txt.gz"


@cache  # (two threads at once may both read it: the same list, no harm)
def _neighbours() -> dict[str, tuple[str, ...]] | None:
    """The shipped list: word -> the indexed forms of its nearest words (None:
    unreadable; no expansion then, search runs as before)."""
    try:
        data = (resources.files("memstrata") / "embed" / "data" / NEIGHBOURS_FILE).read_bytes()
        return parse(gzip.decompress(data).decode("utf-8"))
    except (OSError, ValueError, EOFError):
        return None


def parse(text: str) -> dict[str, tuple[str, ...]]:
    """The list's lines (``word<TAB>term term ...``) as a mapping."""
    out = {}
    for line in text.splitlines():
        word, _, terms = line.partition("\t")
        if word and terms:
            out[word] = tuple(terms.split(" "))
    return out


def weight_for(embedder: object) -> float:
    """The expansion's weight for the ``embedder`` setting (a name; an object: 0)."""
    return DEFAULTS.get(embedder.strip().lower(), 0.0) if isinstance(embedder, str) else 0.0


def warm() -> None:
    """Read the list now (~23 ms once a process), not at the first search."""
    _neighbours()


def _nearest(word: str) -> tuple[str, ...]:
    found = _neighbours()
    return found.get(word, ()) if found is not None else ()


def compute(words: Iterable[str] | None = None) -> dict[str, tuple[str, ...]]:
    """What the shipped list holds, computed from the table (for ``words``;
    None: every whole word): the indexed forms of each word's ``NEIGHBOURS``
    nearest whole words by cosine, other than its own stem. Offline only."""
    import numpy as np

    table = _Table()
    wanted = table.words if words is None else [w for w in words if w in table.place]
    out: dict[str, tuple[str, ...]] = {}
    with blas.limited():  # one OpenBLAS thread (see index.blas)
        for word in wanted:
            row = table.matrix @ table.matrix[table.place[word]]  # as measured: one word a product
            top = np.argpartition(-row, 4 * NEIGHBOURS)[: 4 * NEIGHBOURS]
            own = _term(word)
            near = [t for j in top[np.argsort(-row[top])] if (t := _term(table.words[j])) != own]
            found = tuple(dict.fromkeys(near[:NEIGHBOURS]))  # "painter(s)": one term
            if found:
                out[word] = found
    return out


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
