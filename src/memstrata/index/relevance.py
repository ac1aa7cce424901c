"""How relevant a search's candidates are (the relevance floor), and the
diversity re-rank: the parts of ``hybrid`` that look at a whole result list.

Invariants: ``Relevance`` is computed from the candidate lists after the
filters, before fusion, so that it does not depend on min-max scaling (which
makes the best candidate of any list 1.0, however weak); ``lexical`` is in
[0, 1] for a list ranked in RAM and exactly 1.0 for one a backend ranked (no
ceiling is known for it: the floor then rests on the vector side alone).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass

from .chunks import Chunk
from .lexical import Lexical, bm25_text, document_terms
from .protocol import Index

__all__ = [
    "BACKGROUND",
    "FLOOR_OFFSETS",
    "RELEVANCE",
    "SMALL_INDEX_FLOORS",
    "Relevance",
    "diversify",
    "relevance",
    "vector_floor",
]

# Documents a term's rarity is judged against at the least (``Lexical.coverage``).
BACKGROUND = 1000


@dataclass(frozen=True, slots=True)
class Relevance:
    """How strongly anything matched a search: ``lexical`` is the best
    keyword candidate's share of the query's terms (``Lexical.coverage``),
    ``vector`` the best cosine (0.0 without vectors) among the index's
    ``vectors`` vectors of ``model``."""

    lexical: float
    vector: float
    vectors: int = 0
    model: str | None = None

    def passes(self, floor_lexical: float, floor_vector: float) -> bool:
        """Whether either side reaches its floor (a 0 floor: that side is
        off; both 0: everything passes); the cosine floor is
        ``vector_floor``'s for this index's size."""
        if not floor_lexical and not floor_vector:
            return True
        if floor_lexical and self.lexical >= floor_lexical:
            return True
        if not floor_vector:
            return False
        return self.vector >= vector_floor(floor_vector, self.vectors, self.model)


# The cosine floor on a small index, per embedder (vectors' ``name``): ``(a, b)``
# of ``a + b ln n`` for an index of ``n`` vectors. The best cosine a query about
# nothing the memory holds reaches among n chunks grows with ln n; this line is
# its 99th percentile (bench/bench_floor.py: 200 unrelated queries, random
# subsets of LoCoMo turns; fitted on four conversations, the fifth sees 1.1 %
# false hits on average, 2.4 % at most). A floor set on ~1,000 chunks would
# turn away, in a workspace of ten facts, paraphrases that belong there.
SMALL_INDEX_FLOORS: dict[str, tuple[float, float]] = {
    # bench_floor.py --context-vectors 0 (the int8 model before the integer
    # products: 0.1657 + 0.0226 ln n)
    "all-MiniLM-L6-v2-onnx-dq8": (0.1700, 0.0226),
    # with each turn's vector mixed with its window's (index/windows.py, the
    # default): bench_floor.py on the mixed vectors, 1.04 % held-out false
    # hits on average, 2.6 % at most (a mix of two cosines runs lower; the
    # int8 model's: 0.1564 + 0.0184 ln n)
    "all-MiniLM-L6-v2-onnx-dq8+window:0.6": (0.1611, 0.0190),
    # the static table (embed/static.py): bench_floor.py --embedder static,
    # 1.1 % held-out false hits on average, 2.3 % at most
    "static-minilm-128-int8:ca0f8ac79c31": (0.5103, 0.0203),
}


# ``Weights.floor_vector`` is on MiniLM's scale. Another embedder's cosines
# run higher or lower (a static model's unrelated texts share more of their
# direction): its floor is ``floor_vector`` plus its offset, chosen like
# MiniLM's (``bench locomo --cv``: the cosine its folds choose, less MiniLM's).
FLOOR_OFFSETS: dict[str, float] = {
    # its folds chose 0.60 (one 0.62) where MiniLM's default is 0.34
    "static-minilm-128-int8:ca0f8ac79c31": 0.26,
}


def vector_floor(floor: float, vectors: int, model: str | None) -> float:
    """The cosine floor of a search over ``vectors`` vectors of ``model``:
    ``floor`` (plus the model's ``FLOOR_OFFSETS``), or lower on an index small
    enough that an unrelated query's best cosine stays below
    ``SMALL_INDEX_FLOORS``' line (never higher than the offset floor; 0, the
    floor off, stays off; an embedder not measured keeps ``floor``)."""
    if not floor:
        return floor
    floor += FLOOR_OFFSETS.get(model or "", 0.0)
    line = SMALL_INDEX_FLOORS.get(model or "")
    if line is None or vectors < 1:
        return floor
    return min(floor, line[0] + line[1] * math.log(vectors))


# The relevance of this context's last search (the benchmarks calibrate the
# floor with it; nothing in the engine reads it).
RELEVANCE: ContextVar[Relevance | None] = ContextVar("memstrata_relevance", default=None)


def relevance(
    lexical: Lexical,
    stems: list[str],
    words: list[tuple[int, float]],
    nearest: list[tuple[int, float]],
    index: Index,
    *,
    here: bool,
) -> Relevance:
    """The ``Relevance`` of ``index``'s filtered candidate lists ``words``
    (BM25, best first; ``here``: ranked by ``lexical``) and ``nearest``
    (cosines): the share of the query's terms (``Lexical.coverage``) the best
    keyword candidate holds, the best cosine, the index's vectors."""
    chunks = index.chunks
    share = 0.0
    if words:
        if here:
            first = words[0][0]
            held = set(document_terms(bm25_text(index, first, chunks[first])))
            share = lexical.coverage(stems, held, BACKGROUND)
        else:
            share = 1.0
    best = max((score for _, score in nearest), default=0.0)
    return Relevance(share, best, len(index.vectors), index.vector_model)


def diversify(
    scored: list[tuple[float, int]], chunks: Mapping[int, Chunk], diversity: float, k: int
) -> list[tuple[float, int]]:
    """Greedy re-rank: each pick from a session already picked from is
    discounted by ``(1 - diversity) ** picks`` (chunks without a session are not)."""
    picks: dict[str, int] = {}
    heap = [(-score, cid, 0) for score, cid in scored]
    heapq.heapify(heap)
    out: list[tuple[float, int]] = []
    while heap and len(out) < k:
        negative, cid, seen = heapq.heappop(heap)
        session = chunks[cid].session
        count = picks.get(session, 0) if session else 0
        if count != seen:  # its discount changed since it was pushed: push it back
            base = -negative / (1 - diversity) ** seen
            heapq.heappush(heap, (-base * (1 - diversity) ** count, cid, count))
            continue
        out.append((-negative, cid))
        if session:
            picks[session] = count + 1
    return out
