"""The hybrid search's hot-path shortcuts give exactly what the plain
computation gives: factoring only the head that can reach the top k
(``_factored``), the context pass that checks each neighbour once
(``_in_context``), ``Filters.acceptor`` and the mirror's neighbour slices.

The references below are the straightforward loops the shortcuts replaced
(every candidate factored, every chunk of the result looked at again)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata.index import hybrid as H
from memstrata.index.answers import answer_type, gathers, says
from memstrata.index.chunks import Chunk
from memstrata.index.dates import dates_in
from memstrata.index.mirror import Mirror
from memstrata.index.relevance import diversify

LAYERS = ("transcripts", "facts", "daily_notes", "semantic")
SOURCES = ("user", "agent", "tool", "import")
NAMES = ("alice", "bob", "carol")
BASE = datetime(2023, 5, 1, tzinfo=UTC)
QUERIES = (
    "what did alice say about the trip",
    "when did bob go to Paris on 3 May 2023",
    "how many cats does carol have",
    "where is the meeting in May 2023",
    "who wrote the report",
    "plain words only",
    "what trips have alice and bob both taken",  # gathers: diversity ``gather``
)


@st.composite
def workspaces(draw: st.DrawFn) -> SimpleNamespace:
    """Chunks in a few files (line order = neighbours), scores for some."""
    files = draw(st.integers(1, 4))
    chunks: dict[int, Chunk] = {}
    order: dict[str, list[int]] = {}
    cid = 0
    for f in range(files):
        layer = draw(st.sampled_from(LAYERS))
        path = f"{layer}/f{f}.md"
        for line in range(draw(st.integers(1, 12))):
            cid += draw(st.integers(1, 3))
            chunks[cid] = Chunk(
                path=path,
                layer=layer,
                line_start=line + 1,
                line_end=line + 1,
                text=draw(st.sampled_from(("yesterday 3 cats", "in Paris with Bob", "hello"))),
                title=draw(st.sampled_from(("Alice", "Bob", "Carol", ""))),
                session=draw(st.sampled_from((None, f"s{f}", "shared"))),
                created_at=draw(st.sampled_from((None, BASE, BASE + timedelta(days=2)))),
                source=draw(st.sampled_from(SOURCES)),
                live=draw(st.booleans()),
            )
            order.setdefault(path, []).append(cid)
    picked = draw(st.lists(st.sampled_from(sorted(chunks)), unique=True, min_size=1))
    # ties on purpose: scores from a small set
    fused = {c: draw(st.sampled_from((0.0, 0.1, 0.25, 0.5, 0.5, 1.0, 1.7))) for c in picked}
    return SimpleNamespace(chunks=chunks, order=order, fused=fused)


def _index(ws: SimpleNamespace) -> SimpleNamespace:
    def neighbours(cid: int, reach: int = 1) -> list[int]:
        ids = ws.order[ws.chunks[cid].path]
        here = ids.index(cid)
        return [
            ids[n]
            for n in range(max(here - reach, 0), min(here + reach + 1, len(ids)))
            if n != here
        ]

    return SimpleNamespace(chunks=ws.chunks, marks={}, neighbours=neighbours)


def _factored_reference(index, query, terms, fused, k, weights, now):  # type: ignore[no-untyped-def]
    chunks = index.chunks
    named = set(terms) if weights.speaker else set()
    mentions = dates_in(query) if weights.date else []
    answer = answer_type(query) if weights.when else None
    scored = []
    for cid, score in fused.items():
        chunk = chunks[cid]
        score *= H.SOURCE_WEIGHT.get(chunk.source, 1.0) * H.LAYER_WEIGHT.get(chunk.layer, 1.0)
        if named and chunk.layer == "transcripts" and chunk.title.lower() in named:
            score *= 1.0 + weights.speaker
        if answer is not None and says(index.marks, cid, chunk.text, answer):
            score *= 1.0 + weights.when
        if mentions and chunk.created_at is not None:
            closeness = max(m.matches(chunk.created_at.date()) for m in mentions)
            score *= 1.0 + weights.date * closeness / 2
        if weights.recency_half_life_days and now is not None and chunk.created_at is not None:
            age_days = max((now - chunk.created_at).total_seconds(), 0.0) / 86400
            score *= 0.9 + 0.1 * 0.5 ** (age_days / weights.recency_half_life_days)
        scored.append((score, cid))
    scored.sort(key=lambda pair: (-pair[0], pair[1]))
    diversity = weights.diversity or (weights.gather if gathers(query) else 0.0)
    if diversity:
        scored = diversify(scored, chunks, diversity, k)
    return scored


def _in_context_reference(index, fused, filters, weights):  # type: ignore[no-untyped-def]
    chunks = index.chunks
    turns = {c: chunks[c] for c in fused if chunks[c].layer == "transcripts"}
    best: dict[tuple[str, str], float] = {}
    for cid, chunk in turns.items():
        if chunk.session:
            key = (chunk.path, chunk.session)
            best[key] = max(best.get(key, 0.0), fused[cid])
    if not turns:
        return fused
    out = dict(fused)
    if weights.neighbours:
        for cid in turns:
            for other in index.neighbours(cid):
                if filters.accept(chunks[other]):
                    out[other] = out.get(other, 0.0) + fused[cid] * weights.neighbours
    before = max(fused[c] for c in turns)
    context = {}
    for cid, score in out.items():
        chunk = chunks[cid]
        if chunk.layer != "transcripts":
            continue
        if weights.session and chunk.session:
            score += weights.session * best.get((chunk.path, chunk.session), 0.0)
        context[cid] = score
    after = max(context.values(), default=0.0)
    if before > 0 and after > 0:
        for cid, score in context.items():
            out[cid] = score * (before / after)
    else:
        out.update(context)
    return out


# many examples (the shortcuts' edge cases are rare), never timed
MANY = settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

weights_strategy = st.builds(
    H.Weights,
    speaker=st.sampled_from((0.0, 0.5, 2.0)),
    when=st.sampled_from((0.0, 0.6)),
    date=st.sampled_from((0.0, 2.0)),
    diversity=st.sampled_from((0.0, 0.3, 0.9)),
    gather=st.sampled_from((0.0, 0.2)),
    recency_half_life_days=st.sampled_from((0.0, 1.0)),
    neighbours=st.sampled_from((0.0, 0.3, 1.5)),
    session=st.sampled_from((0.0, 0.7)),
)


@MANY
@given(
    ws=workspaces(),
    weights=weights_strategy,
    query=st.sampled_from(QUERIES),
    k=st.integers(1, 6),
)
def test_factoring_the_head_gives_the_full_ranking(ws, weights, query, k) -> None:  # type: ignore[no-untyped-def]
    index = _index(ws)
    terms = query.lower().split()
    now = BASE + timedelta(days=5)
    fast = H._factored(index, query, terms, dict(ws.fused), k, weights, now)
    index.marks.clear()
    full = _factored_reference(index, query, terms, dict(ws.fused), k, weights, now)
    assert fast[:k] == full[:k]


@MANY
@given(
    ws=workspaces(),
    weights=weights_strategy,
    layers=st.sampled_from((None, frozenset({"transcripts", "facts"}))),
    superseded=st.booleans(),
)
def test_context_pass_matches_the_plain_loops(ws, weights, layers, superseded) -> None:  # type: ignore[no-untyped-def]
    index = _index(ws)
    filters = H.Filters(layers=layers, include_superseded=superseded)
    # the candidates passed the filters (hybrid filters both lists first)
    fused = {c: s for c, s in ws.fused.items() if filters.accept(ws.chunks[c])}
    fast = H._in_context(index, dict(fused), filters.acceptor(), weights)
    assert fast == _in_context_reference(index, dict(fused), filters, weights)


@given(
    ws=workspaces(),
    layers=st.sampled_from((None, frozenset({"facts"}), frozenset())),
    superseded=st.booleans(),
    session=st.sampled_from((None, "s0")),
    source=st.sampled_from((None, "tool")),
)
def test_acceptor_agrees_with_accept(ws, layers, superseded, session, source) -> None:  # type: ignore[no-untyped-def]
    filters = H.Filters(
        layers=layers, include_superseded=superseded, session=session, source=source
    )
    accept = filters.acceptor()
    assert [accept(c) for c in ws.chunks.values()] == [
        filters.accept(c) for c in ws.chunks.values()
    ]


@given(
    lines=st.lists(st.integers(1, 50), min_size=1, max_size=15),
    later=st.lists(st.integers(1, 50), max_size=5),
    gone=st.integers(0, 20),
    reach=st.integers(1, 3),
)
def test_mirror_neighbours_are_the_chunks_around_in_line_order(lines, later, gone, reach) -> None:  # type: ignore[no-untyped-def]
    """... asked again after chunks came and went (those of reach 1 are kept
    between searches until a chunk changes)."""
    mirror = Mirror()

    def add(cid: int, line: int) -> None:
        chunk = Chunk(path="t.md", layer="transcripts", line_start=line, line_end=line, text="x")
        mirror._mapped(cid, chunk)

    def check() -> None:
        ordered = sorted(mirror.chunks, key=lambda c: (mirror.chunks[c].line_start, c))
        for cid in mirror.chunks:
            here = ordered.index(cid)
            around = range(max(here - reach, 0), min(here + reach + 1, len(ordered)))
            assert mirror.neighbours(cid, reach) == [ordered[n] for n in around if n != here]
            assert mirror.neighbours(cid) == [
                ordered[n] for n in (here - 1, here + 1) if 0 <= n < len(ordered)
            ]

    for cid, line in enumerate(lines, start=1):
        add(cid, line)
    check()
    for cid, line in enumerate(later, start=len(lines) + 1):
        add(cid, line)
    if gone in mirror.chunks:
        mirror._unmapped(gone)
    check()
