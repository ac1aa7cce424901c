"""What kind of thing a turn names, as BM25 words (issue 16, seventh session):
the multi-hop questions the index misses often ask for a kind the turn never
says ("Which cities has John been to?" against "I loved Chicago"; "What
instruments does she play?" against "my violin"). At ingest, each word of a
turn that is one whole token of MiniLM's vocabulary is compared, by the
shipped static table's cosine, with a fixed list of kinds (``KINDS``: places,
works, music, games, food, animals, pursuits; written before looking at
LoCoMo's questions and not tuned on them); a kind whose cosine reaches
``least`` is added to what BM25 reads of the turn. Used by ``ctx_ideas.py``
(the BM25 variants ``types<NN>`` / ``ptypes<NN>``: every word, or only the
capitalised ones, NN the least cosine in hundredths); nothing in ``src``
changes.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import numpy as np

import query_expand
from memstrata.index.lexical import _term
from memstrata.index.text import STOPWORDS

# fmt: off
KINDS = (
    "city", "country", "state", "town", "island", "place", "language",
    "book", "novel", "author", "movie", "film", "show", "series", "song", "album", "band",
    "singer", "music", "instrument", "game", "sport", "team", "food", "dish", "drink",
    "restaurant", "animal", "pet", "dog", "cat", "bird", "art", "painting", "hobby", "job",
    "career", "company", "school", "university", "holiday", "festival", "car",
)
# fmt: on
_WORD = re.compile(r"[A-Za-z]+")
_CACHE: dict[str, tuple[str, float]] = {}
_KIND_ROWS: list[np.ndarray] = []


def _kinds() -> np.ndarray:
    if not _KIND_ROWS:
        table = query_expand.neighbours()
        rows = table.table[[table.row_of[k] for k in KINDS]]
        _KIND_ROWS.append(rows / np.linalg.norm(rows, axis=1, keepdims=True))
    return _KIND_ROWS[0]


def kind_of(word: str) -> tuple[str, float]:
    """The nearest kind of a lower-cased word and its cosine ("", 0.0: not
    one whole token, a function word, or a kind itself)."""
    found = _CACHE.get(word)
    if found is not None:
        return found
    table = query_expand.neighbours()
    row = table.row_of.get(word)
    out = ("", 0.0)
    if row is not None and len(word) >= 3 and word not in STOPWORDS and word not in KINDS:
        v = table.table[row] / np.linalg.norm(table.table[row])
        scores = _kinds() @ v
        best = int(np.argmax(scores))
        if _term(KINDS[best]) != _term(word):
            out = (KINDS[best], float(scores[best]))
    _CACHE[word] = out
    return out


def kinds(text: str, least: float, speakers: Iterable[str], capitalised: bool) -> list[str]:
    """The kinds ``text``'s words name with a cosine of at least ``least``
    (each once; the speakers' names and, with ``capitalised``, every word not
    written with a capital letter, skipped)."""
    names = {s.lower() for s in speakers}
    out: list[str] = []
    for word in _WORD.findall(text):
        if capitalised and not word[0].isupper():
            continue
        lower = word.lower()
        if lower in names:
            continue
        kind, cos = kind_of(lower)
        if kind and cos >= least and kind not in out:
            out.append(kind)
    return out


def asked_kinds(question: str) -> list[str]:
    """The kinds a question asks for: a kind's word in the plural ("Which
    cities…", "What books…") or right after what / which / "kind of"
    ("What instrument…", "What kind of art…")."""
    stems = {_term(k): k for k in KINDS}
    found = []
    words = _WORD.findall(question)
    for i, word in enumerate(words):
        lower = word.lower()
        kind = stems.get(_term(lower))
        if kind is None:
            continue
        before = " ".join(w.lower() for w in words[max(i - 2, 0) : i])
        plural = lower != kind and lower.endswith("s")
        if plural or re.search(r"(?:^|\s)(?:what|which)$|(?:kind|kinds|type|types) of$", before):
            found.append(kind)
    return list(dict.fromkeys(found))


_CHUNK_KINDS: dict[tuple[int, str], frozenset[str]] = {}


def chunk_kinds(key: tuple[int, str], text: str, least: float) -> frozenset[str]:
    """The kinds a chunk's words name (cosine ≥ ``least``) or say outright,
    kept per (id, text)."""
    found = _CHUNK_KINDS.get(key)
    if found is None:
        stems = {_term(k): k for k in KINDS}
        said = {stems[t] for w in _WORD.findall(text) if (t := _term(w.lower())) in stems}
        named = kinds(text, least, (), capitalised=False)
        found = _CHUNK_KINDS[key] = frozenset(said | set(named))
    return found
