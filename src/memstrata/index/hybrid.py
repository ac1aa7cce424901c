"""Hybrid search over an ``Index`` (``index.protocol``: any backend): BM25
and vector candidates fused, then weighted by context, source, speaker, date
and (optionally) recency.

1. Candidates: the best ``candidates`` chunks by BM25 (``Lexical``, in RAM)
   and by cosine similarity to the query's embedding (``Vectors``; the
   embedder reads the query without the transcripts' speaker names,
   ``text.without_names``), each list filtered. An index that is a
   ``CandidateSource`` may find either list itself (PostgreSQL: full-text
   search and HNSW in SQL); the rest is the same.
2. Fusion: ``w_bm25 * s_bm25 + w_vector * s_vector`` with each list's scores
   scaled to [FLOOR_PART, 1] over its candidates (``minmax``: the weakest
   candidate still counts, every match is kept), or weighted reciprocal
   rank fusion ``w / (RRF_K + rank)`` (``rrf``). A chunk missing from a list
   adds nothing from it.
3. Context (transcripts): a turn gains ``neighbours`` times the score of each
   turn next to it, and ``session`` times the best score in its session.
4. Factors: the source's weight (the user's words count most, tool output
   least), the layer's (raw logs a little less than curated memory), a
   speaker the query names, a date the query names, recency.
5. Diversity across sessions (MMR-like): an option, and on by default for
   a question that gathers what was said at several times (``gather``).

With no embedder it is BM25 alone (step 1 has one list), and the caller says so.
"""

from __future__ import annotations

import heapq
import sys
import threading
from collections.abc import Callable, Collection, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from ..errors import InvalidInput
from .answers import answer_type, gathers, says
from .chunks import Chunk
from .dates import dates_in
from .expand import expansion
from .lexical import Lexical, stemmed
from .protocol import Index
from .relevance import RELEVANCE, Relevance, diversify, relevance
from .text import query_terms, without_names
from .vectors import Vectors

if TYPE_CHECKING:
    import numpy as np

    from .why import Why

__all__ = [
    "RELEVANCE",
    "CandidateSource",
    "Filters",
    "Hit",
    "Ranked",
    "Relevance",
    "Vectors",
    "Weights",
    "fused_part",
    "hybrid",
    "vectors_in_ram",
]

RRF_K = 60
# What the weakest candidate of a list adds in min-max fusion (as a share of the
# list's weight): every candidate was found, so none may scale to nothing and
# vanish (three notes say "zebra": three hits). Relevance is the floor's job.
FLOOR_PART = 0.001
# From this many chunks BM25 would rank on a worker while the query is
# embedded. Off: on this project's 2-core machine it was slower at a million
# chunks (p50 24.6 / 27.1 ms against 21.9 / 24.4 serial, idle; the embedding
# and BM25 share the cores), so every search runs in order; a machine with
# cores to spare may set it (tests exercise both orders).
OVERLAP_ABOVE = sys.maxsize
_T = TypeVar("_T")
SNIPPET_CHARS = 240
SOURCE_WEIGHT = {"user": 1.0, "import": 1.0, "agent": 0.9, "tool": 0.8}
# Raw logs (what was said, superseded facts included) weigh a little less than
# curated memory when both match equally well.
LAYER_WEIGHT = {"transcripts": 0.9, "daily_notes": 0.9}
# The most a chunk's source and layer weigh together (a bound for ``_factored``).
_WEIGHTS_CEILING = max(1.0, *SOURCE_WEIGHT.values()) * max(1.0, *LAYER_WEIGHT.values())


@dataclass(frozen=True, slots=True)
class Weights:
    """The knobs of the fusion, few and each with a reason. The defaults were
    tuned on three LoCoMo dev conversations and checked on the other two
    (README, "How well it finds")."""

    bm25: float = 1.0
    vector: float = 0.7
    # BM25's term-frequency saturation and length normalisation (``Lexical``):
    # short chat turns gain from less of both than the textbook 1.2 / 0.75
    k1: float = 0.9
    b: float = 0.4
    candidates: int = 200  # per list, before filters
    # "minmax": each list's scores scaled to [0, 1] over its candidates (keeps
    # how much better the first hit is than the rest); "rrf": reciprocal ranks
    fusion: str = "minmax"
    recency_half_life_days: float = 0.0  # 0: no recency factor
    # Conversation context: a transcript turn also scores by the turns around it
    # (the answer is often the reply to the turn the question matches) and by
    # the best turn of its session (the topic of a session is a prior).
    neighbours: float = 0.3
    session: float = 0.7
    # A query that names who said a transcript turn ("What did Caroline…")
    # raises that speaker's turns by this factor.
    speaker: float = 0.5
    # A query naming a date ("on October 13, 2023", "in May 2023") raises the
    # chunks written that day by this factor (that month: half of it).
    date: float = 2.0
    # Diversity (MMR-like, by session): the n-th hit from one session counts
    # (1 - diversity) ** n of its score, so the top k spread over sessions.
    diversity: float = 0.0
    # ... and the diversity of a question that gathers what was said at
    # several times ("What books has John read?", "both", "in common":
    # ``answers.gathers``) when ``diversity`` is 0 (issue 16, LoCoMo
    # leave-one-out: the folds chose 0.2 five times out of five).
    gather: float = 0.2
    # Answer type: a "when …?" query raises chunks that say when something
    # happened ("yesterday", "last week", a date); "how many/much" ones with a
    # number; "where" ones naming a place ("in Paris", "at the park").
    when: float = 0.6
    # BM25 query expansion: a question's words also ask for their nearest words
    # by the static table, each counting this much (``index.expand``; 0: off;
    # None: the embedder's, which ``Memory.search`` sets: MiniLM 0.35, others 0).
    expand: float | None = None
    # Relevance floor: a search returns nothing unless its best keyword match
    # holds ``floor_lexical`` of the query's terms (``Lexical.coverage``) or
    # its nearest vector has a cosine of ``floor_vector`` (MiniLM's scale; lower
    # on a small index: ``vector_floor``); without vectors, ``floor_lexical_alone``
    # (0: that side off). Chosen on LoCoMo against 200 unrelated queries,
    # leave-one-conversation-out (``bench locomo --cv``; docs/search.md).
    floor_lexical: float = 0.36
    floor_vector: float = 0.34
    floor_lexical_alone: float = 0.22

    def __post_init__(self) -> None:
        if self.fusion not in ("minmax", "rrf"):
            raise InvalidInput(f"fusion must be 'minmax' or 'rrf', not {self.fusion!r}")
        if not 0.0 <= self.diversity < 1.0:
            raise InvalidInput("diversity must be in [0, 1)")
        if not 0.0 <= self.gather < 1.0:
            raise InvalidInput("gather must be in [0, 1)")
        if self.candidates < 1:
            raise InvalidInput("candidates must be >= 1")
        if self.expand is not None and self.expand < 0:
            raise InvalidInput("expand must be >= 0")


@dataclass(frozen=True, slots=True)
class Filters:
    """Which chunks may be returned."""

    layers: frozenset[str] | None = None
    session: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    source: str | None = None
    path_prefix: str | None = None
    include_superseded: bool = False
    sessions: frozenset[str] | None = None  # any of these (with session: both)

    def accept(self, chunk: Chunk) -> bool:
        if not chunk.live and not self.include_superseded:
            return False
        if self.layers is not None and chunk.layer not in self.layers:
            return False
        if self.session is not None and chunk.session != self.session:
            return False
        if self.sessions is not None and chunk.session not in self.sessions:
            return False
        if self.source is not None and chunk.source != self.source:
            return False
        if self.path_prefix is not None and not chunk.path.startswith(self.path_prefix):
            return False
        when = chunk.created_at
        if self.since is not None and (when is None or when < self.since):
            return False
        return not (self.until is not None and (when is None or when > self.until))

    def acceptor(self) -> Callable[[Chunk], bool]:
        """``accept`` as one function, cut to the conditions these filters set
        (a search calls it ~1,300 times at a million chunks)."""
        rest = (self.session, self.sessions, self.source, self.path_prefix, self.since, self.until)
        if any(value is not None for value in rest):
            return self.accept
        layers = self.layers
        if self.include_superseded:
            return (lambda chunk: chunk.layer in layers) if layers is not None else _any_chunk
        if layers is None:
            return _live
        return lambda chunk: chunk.live and chunk.layer in layers


def _any_chunk(chunk: Chunk) -> bool:
    return True


def _live(chunk: Chunk) -> bool:
    return chunk.live


@dataclass(frozen=True, slots=True)
class Hit:
    """One search result and where it is written."""

    path: str
    line_start: int
    line_end: int
    snippet: str
    score: float
    layer: str
    session: str | None
    created_at: datetime | None
    source: str
    ref: str | None
    text: str

    @property
    def citation(self) -> str:
        if not self.line_start:
            return self.path
        lines = (
            f"{self.line_start}"
            if self.line_start == self.line_end
            else (f"{self.line_start}-{self.line_end}")
        )
        return f"{self.path}:{lines}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "citation": self.citation,
            "snippet": self.snippet,
            "score": round(self.score, 6),
            "layer": self.layer,
            "session": self.session,
            "created_at": self.created_at.isoformat() if self.created_at else None,
            "source": self.source,
            "ref": self.ref,
        }


Ranked = list[tuple[int, float]]  # (chunk id, score), best first


@runtime_checkable
class CandidateSource(Protocol):
    """An index that finds a search's candidate lists itself (``postgres.index``:
    in SQL) instead of the RAM followers ``Lexical`` and ``Vectors``."""

    def finds(self, vector: np.ndarray | None) -> tuple[bool, bool]:
        """Whether ``candidates`` looks for the word list, and for the vector
        list, of a search with this query vector (both False: it need not be
        called)."""
        ...

    def candidates(
        self, query: str, vector: np.ndarray | None, limit: int, filters: Filters
    ) -> tuple[Ranked | None, Ranked | None]:
        """The ``limit`` best chunks for the words of ``query`` and for
        likeness to ``vector`` (its embedding; None: no vector list) that
        ``filters`` accept, each list best first; None for a list: let the RAM
        follower find it (a backend that cannot, or whose list came out short).
        Called on a worker thread while the caller ranks in RAM what it does
        not find: it must only read."""
        ...


_WORKERS: ThreadPoolExecutor | None = None
_WORKERS_LOCK = threading.Lock()


def _in_background(call: Callable[[], _T]) -> Future[_T]:
    """``call`` on a worker thread (BM25 ranks in RAM while the query is
    embedded or the backend's query runs on the server: two cores, both busy)."""
    global _WORKERS
    with _WORKERS_LOCK:
        if _WORKERS is None:
            _WORKERS = ThreadPoolExecutor(max_workers=8, thread_name_prefix="memstrata-sql")
    return _WORKERS.submit(call)


def hybrid(
    index: Index,
    query: str,
    k: int,
    filters: Filters,
    *,
    lexical: Lexical,
    embed: Callable[[str], np.ndarray] | None = None,
    vectors: Vectors | None = None,
    weights: Weights = Weights(),  # noqa: B008 - frozen
    now: datetime | None = None,
    line_of: Callable[[Chunk], tuple[int, int]] | None = None,
    why: Why | None = None,
) -> list[Hit]:
    """The ``k`` best chunks for ``query`` that ``filters`` accept (``why``: ``index.why``)."""
    chunks = index.chunks
    wide = max(weights.candidates, 4 * k)
    terms = query_terms(query)
    stems = stemmed(terms)
    embedding = embed is not None and vectors is not None and bool(index.vectors) and weights.vector
    wider = bool(weights.expand) and answer_type(query) != 0  # not for a "when" question
    names = lexical.speakers(index) if embedding or wider else frozenset()
    extra = expansion(query, names) if wider else []

    def bm25() -> Ranked:
        return lexical.top(
            index, stems, wide, k1=weights.k1, b=weights.b, extra=extra, weight=weights.expand or 0
        )

    source = index if isinstance(index, CandidateSource) else None
    # What the embedder reads: the query without the speakers' names (they
    # are in every turn's "Speaker: text"; BM25 and the speaker factor read them)
    said = without_names(query, terms, names) if embedding else query
    early: Future[Ranked] | None = None
    if embedding and len(chunks) >= OVERLAP_ABOVE and not (source and source.finds(None)[0]):
        early = _in_background(bm25)  # BM25 ranks while the query is embedded
    vector = embed(said) if embedding and embed is not None else None
    found: Ranked | None = None
    near: Ranked | None = None
    finds = source.finds(vector) if source is not None else (False, False)
    words_in_sql = False
    if source is not None and any(finds):  # lists from the backend (SQL); None: from RAM
        if early is not None or finds[0]:  # nothing left to rank here: ask on this thread
            found, near = source.candidates(query, vector, wide, filters)
            words_in_sql = found is not None
        else:  # SQL on a worker while BM25 ranks here
            pending = _in_background(lambda: source.candidates(query, vector, wide, filters))
            found = bm25()
            near = pending.result()[1]
    if early is not None:
        found = early.result()
    if found is None:
        found = bm25()
    accept = filters.acceptor()
    get = chunks.get
    words = [(cid, score) for cid, score in found if (c := get(cid)) is not None and accept(c)]
    nearest: list[tuple[int, float]] = []
    if vector is not None and near is not None:
        nearest = [(cid, s) for cid, s in near if (c := get(cid)) is not None and accept(c)]
    elif vector is not None and vectors is not None:
        nearest = _nearest(index, vectors, vector, wide, accept, filters.layers)
    strength = relevance(lexical, stems, words, nearest, index, here=not words_in_sql)
    RELEVANCE.set(strength)
    floors = (weights.floor_lexical, weights.floor_vector) if vector is not None else None
    if not strength.passes(*(floors or (weights.floor_lexical_alone, 0.0))):
        return []  # nothing relevant: nothing rather than noise
    fused: dict[int, float] = {}
    for weight, ranked in ((weights.bm25, words), (weights.vector, nearest)):
        if not ranked:
            continue
        top = max(score for _, score in ranked)
        low = min(score for _, score in ranked) if weights.fusion == "minmax" else 0.0
        span = top - low
        if weights.fusion == "minmax" and span > 0:  # ``fused_part`` written out (hot)
            lift = 1 - FLOOR_PART
            for cid, score in ranked:
                part = FLOOR_PART + lift * (score - low) / span
                fused[cid] = fused.get(cid, 0.0) + weight * part
            continue
        for rank, (cid, score) in enumerate(ranked, start=1):
            part = fused_part(weights.fusion, rank, score, low, span)
            fused[cid] = fused.get(cid, 0.0) + weight * part
    if weights.neighbours or weights.session:
        fused = _in_context(index, fused, accept, weights)
    scored = _factored(index, query, terms, fused, k, weights, now)
    if why is not None:
        why.finish(index, query, (words, nearest), fused, scored[:k], weights, now)
    return [_hit(chunks[cid], score, line_of) for score, cid in scored[:k]]


def vectors_in_ram(index: Index, dim: int) -> bool:
    """Whether searches of ``index`` rank its vectors in RAM (not a backend's
    ANN index, e.g. PostgreSQL's HNSW above a size: its matrix is then built
    only if a search ever needs it, a filter leaving the SQL list short)."""
    if not index.vectors:
        return False
    if isinstance(index, CandidateSource):
        import numpy as np

        return not index.finds(np.zeros(dim, dtype=np.float32))[1]
    return True


def fused_part(fusion: str, rank: int, score: float, low: float, span: float) -> float:
    """What a candidate at ``rank`` with ``score`` adds to its fused score, before
    its list's weight: ``"rrf"`` by rank; ``"minmax"`` its score scaled over the
    list's ``low`` and ``span``, the lowest adding ``FLOOR_PART`` (every
    candidate was found) and a lone one 1."""
    if fusion == "rrf":
        return 1.0 / (RRF_K + rank)
    return FLOOR_PART + (1 - FLOOR_PART) * (score - low) / span if span > 0 else 1.0


def _factored(
    index: Index,
    query: str,
    terms: list[str],
    fused: dict[int, float],
    k: int,
    weights: Weights,
    now: datetime | None,
) -> list[tuple[float, int]]:
    """``fused`` with each chunk's factors (step 4), best first (ties: the
    older id first), diversified (step 5) when asked. Only the head that can
    reach the top ``k`` is factored: every factor is at most ``_ceiling``, so
    once a base score times it falls below the k-th result, no later one
    (smaller) can enter it; the result is the same as factoring every one.
    (On the hot path: a million-chunk search has ~1,300 candidates.)"""
    chunks = index.chunks
    named = set(terms) if weights.speaker else set()
    mentions = dates_in(query) if weights.date else []
    answer = answer_type(query) if weights.when else None
    half_life = weights.recency_half_life_days if now is not None else 0.0
    diversity = weights.diversity or (weights.gather if weights.gather and gathers(query) else 0.0)
    marks = index.marks
    ceiling = _ceiling(weights, bool(named), answer is not None, bool(mentions))
    order = sorted(fused.items(), key=itemgetter(1), reverse=True)
    prune = ceiling is not None and (not order or order[-1][1] >= 0.0)
    scored: list[tuple[float, int]] = []
    best: list[float] = []  # the k best factored scores so far (a min-heap)
    check_at = k
    for cid, score in order:
        if prune and len(best) >= k and score * ceiling < best[0]:  # type: ignore[operator]
            if not diversity:
                break
            if len(scored) >= check_at:  # diversified, the k-th may be lower: look
                check_at = 2 * len(scored)
                kept = diversify(sorted(scored, key=_best_first), chunks, diversity, k)
                if len(kept) >= k and score * ceiling < kept[-1][0]:  # type: ignore[operator]
                    break
        chunk = chunks[cid]
        score *= SOURCE_WEIGHT.get(chunk.source, 1.0) * LAYER_WEIGHT.get(chunk.layer, 1.0)
        if named and chunk.layer == "transcripts" and chunk.title.lower() in named:
            score *= 1.0 + weights.speaker
        if answer is not None and says(marks, cid, chunk.text, answer):
            score *= 1.0 + weights.when
        if mentions and chunk.created_at is not None:
            closeness = max(m.matches(chunk.created_at.date()) for m in mentions)
            score *= 1.0 + weights.date * closeness / 2
        if half_life and now is not None and chunk.created_at is not None:
            age_days = max((now - chunk.created_at).total_seconds(), 0.0) / 86400
            score *= 0.9 + 0.1 * 0.5 ** (age_days / half_life)
        scored.append((score, cid))
        if len(best) < k:
            heapq.heappush(best, score)
        elif score > best[0]:
            heapq.heapreplace(best, score)
    scored.sort(key=_best_first)
    if diversity:
        scored = diversify(scored, chunks, diversity, k)
    return scored


def _best_first(pair: tuple[float, int]) -> tuple[float, int]:
    return (-pair[0], pair[1])


def _ceiling(weights: Weights, named: bool, answer: bool, mentions: bool) -> float | None:
    """The most ``_factored``'s factors can multiply a score by (a hair over,
    against rounding; recency is at most 1), or None where a boost below -1
    would make a factor negative (no bound then)."""
    boosts = (
        weights.speaker if named else 0.0,
        weights.when if answer else 0.0,
        weights.date if mentions else 0.0,  # closeness / 2 is at most 1
    )
    if min(boosts) < -1.0:
        return None
    ceiling = _WEIGHTS_CEILING
    for boost in boosts:
        ceiling *= max(1.0 + boost, 1.0)
    return ceiling * (1.0 + 1e-9)


def _nearest(
    index: Index,
    vectors: Vectors,
    query: np.ndarray,
    wide: int,
    accept: Callable[[Chunk], bool],
    layers: Collection[str] | None = None,
) -> list[tuple[int, float]]:
    """The ``wide`` chunks most like ``query`` that ``accept`` takes (the matrix
    ranks only ``layers``' rows, and is asked for more while the other filters
    leave too few), a cosine <= 0 being no likeness."""
    chunks = index.chunks
    ask = wide + wide // 2
    while True:
        found = vectors.top(index, query, ask, layers)
        get = chunks.get
        kept = [
            (cid, score)
            for cid, score in found
            if score > 0 and (chunk := get(cid)) is not None and accept(chunk)
        ]
        if len(kept) >= wide or len(found) < ask or found[-1][1] <= 0 or ask >= len(chunks):
            return kept[:wide]
        ask *= 4


def _in_context(
    index: Index, fused: dict[int, float], accept: Callable[[Chunk], bool], weights: Weights
) -> dict[int, float]:
    """Scores with the conversation context added (transcript chunks only).
    (On the hot path of every search: few passes, each chunk checked once.)"""
    chunks = index.chunks
    turns: dict[int, tuple[str, str] | None] = {}  # transcript candidates: their session
    best_of_session: dict[tuple[str, str], float] = {}
    for cid, score in fused.items():
        chunk = chunks[cid]
        if chunk.layer == "transcripts":
            if chunk.session:
                key = turns[cid] = (chunk.path, chunk.session)
                if score > best_of_session.get(key, 0.0):
                    best_of_session[key] = score
            else:
                turns[cid] = None
    if not turns:
        return fused
    out = dict(fused)
    context = dict(turns)  # every transcript chunk that gets a score: its session
    if weights.neighbours:
        share = weights.neighbours
        neighbours = index.neighbours
        accepted: dict[int, bool] = {}
        for cid in turns:
            score = fused[cid] * share
            for other in neighbours(cid):
                ok = accepted.get(other)
                if ok is None:
                    ok = other in turns  # a candidate: the filters took it already
                    if not ok:
                        chunk = chunks[other]
                        ok = accept(chunk)
                        if ok and chunk.layer == "transcripts":
                            context[other] = (chunk.path, chunk.session) if chunk.session else None
                    accepted[other] = ok
                if ok:
                    out[other] = out.get(other, 0.0) + score
    # Context reorders turns among themselves; it must not lift them over other
    # layers' chunks: the best turn keeps the score it had without context.
    before = max(fused[cid] for cid in turns)
    bonus = weights.session
    after = 0.0
    for cid, session in context.items():
        score = out[cid]
        if bonus and session is not None:
            score += bonus * best_of_session.get(session, 0.0)
            out[cid] = score
        if score > after:
            after = score
    if before > 0 and after > 0:
        scale = before / after
        for cid in context:
            out[cid] *= scale
    return out


def _hit(chunk: Chunk, score: float, line_of: Callable[[Chunk], tuple[int, int]] | None) -> Hit:
    start, end = line_of(chunk) if line_of is not None else (chunk.line_start, chunk.line_end)
    return Hit(
        path=chunk.path,
        line_start=start,
        line_end=end,
        snippet=snippet(chunk.text),
        score=score,
        layer=chunk.layer,
        session=chunk.session,
        created_at=chunk.created_at,
        source=chunk.source,
        ref=chunk.ref,
        text=chunk.text,
    )


def snippet(text: str, limit: int = SNIPPET_CHARS) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"


def ranked_ids(hits: Sequence[Hit]) -> list[str]:
    return [hit.ref or hit.citation for hit in hits]
