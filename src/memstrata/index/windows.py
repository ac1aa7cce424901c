"""Contextual vectors (issue 16): a transcript turn is embedded in its window.

A turn often holds its topic only in the turns around it ("Watching them
every night!" after a turn about the Harry Potter films). So the vector
stored for a transcript turn is not the turn's own embedding alone but

    (1 - w) * embed(turn) + w * embed(previous + turn + next)

the turn's embedding mixed with that of its window (the message before it,
itself and the message after it in the same file and session, joined by
newlines, each neighbour cut to ``NEIGHBOUR_CHARS`` so that a long tool
result beside a turn does not push the turn out of the model's token limit).
The mix is stored as it is, not normalised: its dot product with a query's
unit vector is exactly ``(1 - w) cos(query, turn) + w cos(query, window)``,
which is what was measured. Its length is at most 1 (about 0.9-1.0: a window
is close to its turn), so the search's "cosine" of a turn is that mix, on
every backend: the RAM matrix ranks by dot product, PostgreSQL finds its
candidates with its cosine HNSW index and scores them by inner product
(``postgres.candidates``). One vector per chunk, as before.

``w`` is the ``context_vectors`` setting; unset, the weight measured for
the embedder (``DEFAULTS``): MiniLM 0.6 (LoCoMo, nested leave one
conversation out, every fold chose 0.6 of 0.15-0.9), none for the static
table (a mean of token rows over three messages dilutes the turn's own: it
lost recall at 0.6) or for any other embedder (unmeasured). 0: each turn's
own embedding. Chunks of other layers are embedded alone.

A turn's window is only embedded once the turn has a next one: until then
(the newest message of a session, or the last of one that ended) the turn is
stored with its own embedding alone. When the next message arrives,
``stale_before`` names the turn before it, so that the sync embeds it again
with its whole window. An agent that syncs after every turn so embeds one
window a message, not two (the window without its next and then with it);
the last message of each LoCoMo session without its window left recall as it
was (leave one conversation out: 0.7647 / 0.846 against 0.7643 / 0.846,
session recall 0.9546 against 0.9565, docs/search-history.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

    from .chunks import Chunk
    from .protocol import Index

__all__ = [
    "DEFAULTS",
    "NEIGHBOUR_CHARS",
    "joined",
    "mix",
    "model_name",
    "stale_before",
    "weight_for",
    "window_of",
    "window_text",
]

NEIGHBOUR_CHARS = 400  # of each neighbour: its end before the turn, its start after
DEFAULTS = {"minilm": 0.6}  # the window's weight measured for a built-in embedder


def weight_for(setting: float | None, embedder: object) -> float:
    """The window's weight: the ``context_vectors`` setting, else the one
    measured for the ``embedder`` setting (a name; an object: none)."""
    if setting is not None:
        return float(setting)
    return DEFAULTS.get(embedder.strip().lower(), 0.0) if isinstance(embedder, str) else 0.0


def model_name(embedder: str, weight: float) -> str:
    """The name the index stores the vectors under: the embedder's, and the
    window's weight when there is one (so changing it embeds again)."""
    return embedder if not weight else f"{embedder}+window:{weight:g}"


def mix(turns: np.ndarray, windows: np.ndarray, weight: float) -> np.ndarray:
    """The stored vectors of turns (rows of unit vectors) and their windows'."""
    return (1.0 - weight) * turns + weight * windows


def _around(index: Index, cid: int, chunk: Chunk) -> tuple[int | None, int | None]:
    """The ids of the transcript chunks just before and after ``cid`` in its
    session (in ``neighbours``' order: line, then id, as the messages of one
    turn share its line)."""
    before = after = None
    chunks = index.chunks
    here = (chunk.line_start, cid)
    for other in index.neighbours(cid, 1):
        near = chunks.get(other)
        if near is None or near.layer != "transcripts" or near.session != chunk.session:
            continue
        if (near.line_start, other) < here:
            before = other
        else:
            after = other
    return before, after


def window_text(index: Index, cid: int) -> str | None:
    """The text a transcript turn's window is embedded from, or None for a
    chunk that has no window (yet): another layer, or a turn with no next
    message in its session (it waits for one; see the module)."""
    chunk = index.chunks.get(cid)
    if chunk is None or chunk.layer != "transcripts":
        return None
    before, after = _around(index, cid, chunk)
    chunks = index.chunks
    return window_of(
        None if before is None else chunks[before].body,
        chunk.body,
        None if after is None else chunks[after].body,
    )


def window_of(before: str | None, turn: str, after: str | None) -> str | None:
    """The window's text of a turn between ``before`` and ``after`` (None:
    no such message), or None while the turn has no next message (it waits
    for one: see the module)."""
    return None if after is None else joined(before, turn, after)


def joined(before: str | None, turn: str, after: str | None) -> str:
    """A window's text: the message before (its last ``NEIGHBOUR_CHARS``),
    the turn, the message after (its first ones), one a line."""
    parts = [] if before is None else [before[-NEIGHBOUR_CHARS:]]
    parts.append(turn)
    if after is not None:
        parts.append(after[:NEIGHBOUR_CHARS])
    return "\n".join(parts)


def stale_before(index: Index, missing: Iterable[int]) -> set[int]:
    """The turns just before the ``missing`` (new) ones that hold a vector:
    their windows now have a next turn, so they are embedded again."""
    todo = set(missing)
    stale: set[int] = set()
    chunks = index.chunks
    vectors = index.vectors
    for cid in todo:
        chunk = chunks.get(cid)
        if chunk is None or chunk.layer != "transcripts":
            continue
        before, _ = _around(index, cid, chunk)
        if before is not None and before not in todo and before in vectors:
            stale.add(before)
    return stale
