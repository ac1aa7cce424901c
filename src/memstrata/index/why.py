"""Why a search hit ranked where it did: the optional explain output of ``hybrid``.

Pass a ``Why()`` to ``hybrid(..., why=...)`` (or ``Memory.search(..., why=...)``);
after the search ``why.hits`` holds one ``Explanation`` per returned hit, in
the same order: the hit's BM25 rank and score and its share of the fused
score, the same for the vector list, what the conversation context added, and
each factor that multiplied it (source and layer, a speaker or a date the
query names, the answer type, recency, diversity).

Invariants:

* **The ranking is the same** with or without a ``Why``: ``hybrid`` only
  hands it what it computed, after it ranked.
* **The parts add up**: ``bm25 + vector + context`` is the fused score and
  the product of the factors times it is the hit's score (a factor this
  module does not know of shows as ``other``), so what a person reads is the
  arithmetic that ranked the hit.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .answers import answer_type, says
from .dates import dates_in
from .hybrid import (
    LAYER_WEIGHT,
    SOURCE_WEIGHT,
    Ranked,
    Weights,
    fused_part,
)
from .protocol import Index
from .text import query_terms

__all__ = ["Explanation", "Why"]

_ANSWER_NAMES = ("a time", "a number", "a place", "a name")


@dataclass(frozen=True, slots=True)
class Explanation:
    """What made one hit's score (see the module)."""

    score: float
    bm25_rank: int | None
    bm25_score: float | None
    bm25: float  # its share of the fused score
    vector_rank: int | None
    vector_score: float | None  # the cosine similarity
    vector: float
    context: float  # what the neighbouring turns and the session added
    factors: tuple[tuple[str, float], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "bm25": {"rank": self.bm25_rank, "score": self.bm25_score, "part": self.bm25},
            "vector": {"rank": self.vector_rank, "score": self.vector_score, "part": self.vector},
            "context": self.context,
            "factors": [{"factor": name, "times": times} for name, times in self.factors],
        }


@dataclass
class Why:
    """Filled by ``hybrid``: ``hits`` explains each returned hit, in order."""

    hits: list[Explanation] = field(default_factory=list)
    # every candidate with a ref (a fact's id, a turn's), returned or not:
    # its rank in the BM25 and in the vector list (None: not in that list)
    candidates: dict[str, tuple[int | None, int | None]] = field(default_factory=dict)

    def finish(
        self,
        index: Index,
        query: str,
        lists: tuple[Ranked, Ranked],
        fused: dict[int, float],
        chosen: list[tuple[float, int]],
        weights: Weights,
        now: datetime | None,
    ) -> None:
        """Explain ``chosen`` ((score, chunk id), best first), given the two
        candidate lists and the fused scores after the context step."""
        words, nearest = (
            _parts(ranked, weights, weight)
            for ranked, weight in ((lists[0], weights.bm25), (lists[1], weights.vector))
        )
        self.hits = []
        self.candidates = _candidates(index, lists)
        for score, cid in chosen:
            word, near = words.get(cid), nearest.get(cid)
            shares = (word[2] if word else 0.0) + (near[2] if near else 0.0)
            base = fused.get(cid, shares)
            factors = _factors(index, cid, query, weights, now)
            product = math.prod(times for _, times in factors)
            if base > 0 and not math.isclose(base * product, score, rel_tol=1e-9):
                factors.append(("other (diversity across sessions)", score / (base * product)))
            self.hits.append(
                Explanation(
                    score=score,
                    bm25_rank=word[0] if word else None,
                    bm25_score=word[1] if word else None,
                    bm25=word[2] if word else 0.0,
                    vector_rank=near[0] if near else None,
                    vector_score=near[1] if near else None,
                    vector=near[2] if near else 0.0,
                    context=base - shares,
                    factors=tuple(factors),
                )
            )


def _candidates(
    index: Index, lists: tuple[Ranked, Ranked]
) -> dict[str, tuple[int | None, int | None]]:
    chunks = index.chunks
    found: dict[str, tuple[int | None, int | None]] = {}
    for place, ranked in enumerate(lists):
        for rank, (cid, _) in enumerate(ranked, start=1):
            chunk = chunks.get(cid)
            if chunk is None or chunk.ref is None:
                continue
            ranks = list(found.get(chunk.ref, (None, None)))
            ranks[place] = ranks[place] or rank
            found[chunk.ref] = (ranks[0], ranks[1])
    return found


def _parts(ranked: Ranked, weights: Weights, weight: float) -> dict[int, tuple[int, float, float]]:
    """chunk id -> (rank, raw score, weighted share) for one candidate list, as
    ``hybrid`` fuses it."""
    if not ranked or not weight:
        return {}
    top = max(score for _, score in ranked)
    low = min(score for _, score in ranked) if weights.fusion == "minmax" else 0.0
    span = top - low
    out: dict[int, tuple[int, float, float]] = {}
    for rank, (cid, score) in enumerate(ranked, start=1):
        part = fused_part(weights.fusion, rank, score, low, span)
        out.setdefault(cid, (rank, score, weight * part))
    return out


def _factors(
    index: Index, cid: int, query: str, weights: Weights, now: datetime | None
) -> list[tuple[str, float]]:
    """The factors ``hybrid`` multiplied chunk ``cid``'s score by, named."""
    chunk = index.chunks[cid]
    found = [
        (
            f"source {chunk.source} × layer {chunk.layer}",
            SOURCE_WEIGHT.get(chunk.source, 1.0) * LAYER_WEIGHT.get(chunk.layer, 1.0),
        )
    ]
    named = weights.speaker and chunk.layer == "transcripts"
    if named and chunk.title.lower() in set(query_terms(query)):
        found.append((f"the query names the speaker {chunk.title}", 1.0 + weights.speaker))
    answer = answer_type(query) if weights.when else None
    if answer is not None and says(index.marks, cid, chunk.text, answer):
        found.append(
            (f"the query asks for {_ANSWER_NAMES[answer]} and it has one", 1 + weights.when)
        )
    mentions = dates_in(query) if weights.date else []
    if mentions and chunk.created_at is not None:
        closeness = max(m.matches(chunk.created_at.date()) for m in mentions)
        if closeness:
            what = "day" if closeness == 2 else "month"
            found.append(
                (f"written on the {what} the query names", 1 + weights.date * closeness / 2)
            )
    if weights.recency_half_life_days and now is not None and chunk.created_at is not None:
        age_days = max((now - chunk.created_at).total_seconds(), 0.0) / 86400
        found.append(
            (
                f"recency ({age_days:.0f} days old)",
                0.9 + 0.1 * 0.5 ** (age_days / weights.recency_half_life_days),
            )
        )
    return found
