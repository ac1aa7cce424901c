"""The ``Index`` contract (``memstrata.index.protocol``): every backend passes
these. A new backend adds itself to ``BACKENDS`` (and, if several handles can
share one index, to ``SHARED``)."""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import postgres_server
from fakes import InMemoryIndex
from memstrata.embed import HashEmbedder
from memstrata.errors import MemstrataError
from memstrata.index.chunks import Chunk
from memstrata.index.hybrid import Filters, Hit, Vectors, Weights, hybrid
from memstrata.index.lexical import Lexical
from memstrata.index.protocol import FileState, Index, IndexStatus
from memstrata.index.sqlite import Index as SqliteIndex
from memstrata.postgres.index import PostgresIndex

Factory = Callable[[Path], Index]


def postgres(folder: Path, search: str = "mirror") -> Index:
    """The index of the folder's own tenant on the session's PostgreSQL (a skip
    without one): handles made for one folder share it, as SQLite's share a file.
    ``search``: where its search candidates come from (RAM, SQL)."""
    tenant = "t-" + hashlib.sha256(str(folder).encode()).hexdigest()[:16]
    return PostgresIndex(postgres_server.app_url(), tenant, search=search)


BACKENDS: dict[str, Factory] = {
    "sqlite": lambda folder: SqliteIndex(folder / "index.sqlite"),
    "memory": lambda folder: InMemoryIndex(),
    "postgres": postgres,
    "postgres-sql": lambda folder: postgres(folder, "sql"),
    "postgres-hnsw": lambda folder: postgres(folder, "hnsw"),
}
# Backends several handles (processes, clients) can share: a second handle on the same index.
SHARED: dict[str, Factory] = {
    "sqlite": BACKENDS["sqlite"],
    "postgres": postgres,
    "postgres-sql": BACKENDS["postgres-sql"],
}


# Backends whose word candidates are not the RAM BM25's (``postgres.candidates``:
# ts_rank_cd over the tsvector column): their scores and order differ, what they
# find does not.
RANKED_IN_SQL = frozenset({"postgres-sql"})


def usable() -> dict[str, Factory]:
    """The backends that can run here (PostgreSQL only when its server started)."""
    return {
        name: make
        for name, make in sorted(BACKENDS.items())
        if not name.startswith("postgres") or postgres_server.available()
    }


VEC = b"\x00\x00\x80\x3f" * 4
OTHER_VEC = VEC[::-1]
STATE = FileState(10, 1, "a")


@pytest.fixture(params=sorted(BACKENDS))
def make(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Callable[[], Index]]:
    opened: list[Index] = []

    def factory() -> Index:
        index = BACKENDS[request.param](tmp_path)
        opened.append(index)
        return index

    yield factory
    for index in opened:
        index.close()


@pytest.fixture
def index(make: Callable[[], Index]) -> Index:
    return make()


def notes(path: str, *texts: str, layer: str = "semantic") -> list[Chunk]:
    return [Chunk(path, layer, n, n, text) for n, text in enumerate(texts, start=1)]


def fact(ref: str, text: str) -> Chunk:
    return Chunk("MEMORY.md", "long_term", 0, 0, text, title="facts", ref=ref)


def view(index: Index) -> dict[str, Any]:
    """What a caller can see, without the ids (each backend picks its own)."""
    order = sorted(index.chunks)
    return {
        "chunks": [index.chunks[cid] for cid in order],
        "vectors": [index.vectors.get(cid) for cid in order],
        "unembedded": [cid in index.unembedded for cid in order],
        "files": dict(index.files),
        "by_path": {
            path: index.path_chunks(path) for path in {c.path for c in index.chunks.values()}
        },
    }


class Follower:
    """What a follower of a change log (``Lexical``, ``Vectors``) holds: it
    applies the entries since its place, or starts over from the current map
    when they hold a clear (0)."""

    def __init__(self) -> None:
        self.held: set[int] = set()
        self.seen = 0

    def catch_up(self, log: Sequence[tuple[int, int]], current: Iterable[int]) -> set[int]:
        changes = log[self.seen :]
        self.seen = len(log)
        if any(op == 0 for op, _ in changes):
            self.held = set(current)
            return self.held
        for op, cid in changes:
            if op > 0 and cid in current:
                self.held.add(cid)
            elif op < 0:
                self.held.discard(cid)
        return self.held


def assert_consistent(index: Index) -> None:
    assert set(index.unembedded) == set(index.chunks) - set(index.vectors)
    assert set(index.vectors) <= set(index.chunks)
    assert Follower().catch_up(index.chunk_log, index.chunks) == set(index.chunks)
    assert Follower().catch_up(index.vector_log, index.vectors) == set(index.vectors)


# -- chunks in ---------------------------------------------------------------------------


def test_it_is_an_index(index: Index) -> None:
    assert isinstance(index, Index)
    empty = index.status()
    assert isinstance(empty, IndexStatus)
    assert (empty.chunks, empty.files, empty.vectors) == (0, 0, 0)


def test_replace_makes_a_files_chunks_and_records_its_state(index: Index) -> None:
    ids = index.replace("semantic/a.md", notes("semantic/a.md", "alpha", "beta"), STATE)
    assert [index.chunks[cid].text for cid in ids] == ["alpha", "beta"]
    assert index.files == {"semantic/a.md": STATE}
    again = FileState(20, 2, "b")
    new = index.replace("semantic/a.md", notes("semantic/a.md", "gamma"), again)
    assert [index.chunks[cid].text for cid in new] == ["gamma"]  # ids may be used again
    assert [c.text for c in index.path_chunks("semantic/a.md")] == ["gamma"]
    assert index.files == {"semantic/a.md": again}
    index.replace("semantic/a.md", notes("semantic/a.md", "delta"), STATE, append=True)
    assert [c.text for c in index.path_chunks("semantic/a.md")] == ["gamma", "delta"]
    index.replace("semantic/b.md", notes("semantic/b.md", "other"), STATE)
    index.replace("semantic/a.md", [], None)
    assert index.path_chunks("semantic/a.md") == []
    assert [c.text for c in index.chunks.values()] == ["other"]
    assert list(index.files) == ["semantic/b.md"]
    assert_consistent(index)


def test_replace_refs_swaps_only_those_refs(index: Index) -> None:
    index.replace_refs("MEMORY.md", [], [fact("f1", "one"), fact("f2", "two"), fact("f3", "3")])
    index.replace_refs("MEMORY.md", ["f2", "f3", "gone"], [fact("f2", "two again")])
    texts = sorted(c.text for c in index.path_chunks("MEMORY.md"))
    assert texts == ["one", "two again"]
    assert "MEMORY.md" not in index.files  # facts come from the store, not a file state
    assert_consistent(index)


def test_status_counts_what_it_holds(index: Index) -> None:
    ids = index.replace("semantic/a.md", notes("semantic/a.md", "alpha", "beta"), STATE)
    index.set_vectors("m", {ids[0]: VEC})
    status = index.status()
    assert (status.chunks, status.files, status.vectors, status.vector_model) == (2, 1, 1, "m")
    assert status.location and status.bytes > 0


def test_neighbours_follow_line_order(index: Index) -> None:
    turns = [Chunk("sessions/s.jsonl", "transcripts", line, line, f"t{line}") for line in (3, 1, 2)]
    ids = index.replace("sessions/s.jsonl", turns, STATE)
    by_line = {index.chunks[cid].line_start: cid for cid in ids}
    assert index.neighbours(by_line[2]) == [by_line[1], by_line[3]]
    assert index.neighbours(by_line[1]) == [by_line[2]]
    assert index.neighbours(by_line[1], reach=2) == [by_line[2], by_line[3]]
    assert index.neighbours(max(ids) + 100) == []


# -- vectors ------------------------------------------------------------------------------


def test_vectors_follow_their_chunks(index: Index) -> None:
    ids = index.replace("semantic/a.md", notes("semantic/a.md", "alpha", "beta"), STATE)
    assert set(index.unembedded) == set(ids) and index.vector_model is None
    index.set_vectors("m", {ids[0]: VEC, max(ids) + 100: VEC})  # an id that is gone: skipped
    assert dict(index.vectors) == {ids[0]: VEC}
    assert set(index.unembedded) == {ids[1]} and index.vector_model == "m"
    index.set_vectors("m", {ids[0]: OTHER_VEC, ids[1]: VEC})
    assert dict(index.vectors) == {ids[0]: OTHER_VEC, ids[1]: VEC}
    new = index.replace("semantic/a.md", notes("semantic/a.md", "alpha"), STATE)
    assert not index.vectors and set(index.unembedded) == set(new)  # a vector goes with its chunk
    assert_consistent(index)


def test_another_model_drops_every_vector_of_the_old_one(index: Index) -> None:
    ids = index.replace("semantic/a.md", notes("semantic/a.md", "alpha", "beta"), STATE)
    index.set_vectors("m", dict.fromkeys(ids, VEC))
    index.set_vectors("n", {ids[0]: OTHER_VEC})
    assert dict(index.vectors) == {ids[0]: OTHER_VEC} and index.vector_model == "n"
    assert set(index.unembedded) == {ids[1]}
    assert_consistent(index)


def test_drop_empties_everything_and_counts_a_reset(index: Index) -> None:
    ids = index.replace("semantic/a.md", notes("semantic/a.md", "alpha"), STATE)
    index.set_vectors("m", dict.fromkeys(ids, VEC))
    resets = index.resets
    index.drop()
    assert not index.chunks and not index.files and not index.vectors and not index.unembedded
    assert index.resets > resets
    assert_consistent(index)
    index.replace("semantic/a.md", notes("semantic/a.md", "again"), STATE)  # usable after
    assert len(index.chunks) == 1


# -- transactions and other writers ----------------------------------------------------------


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_a_transaction_that_raises_leaves_nothing_of_it(
    index: Index, error: type[BaseException]
) -> None:
    ids = index.replace("semantic/a.md", notes("semantic/a.md", "alpha"), STATE)
    index.set_vectors("m", dict.fromkeys(ids, VEC))
    before = view(index)
    with pytest.raises(error), index.transaction():
        new = index.replace("semantic/a.md", notes("semantic/a.md", "beta"), FileState(2, 2, "b"))
        index.set_vectors("n", dict.fromkeys(new, OTHER_VEC))
        index.replace_refs("MEMORY.md", [], [fact("f1", "one")])
        with index.transaction():  # a nested one joins the outer one
            index.replace("semantic/c.md", notes("semantic/c.md", "gamma"), STATE)
        raise error
    assert view(index) == before
    assert_consistent(index)
    index.replace("semantic/b.md", notes("semantic/b.md", "usable"), STATE)
    assert len(index.chunks) == 2


def test_writes_in_one_transaction_commit_together(index: Index) -> None:
    with index.transaction():
        index.replace("semantic/a.md", notes("semantic/a.md", "alpha"), STATE)
        index.replace_refs("MEMORY.md", [], [fact("f1", "one")])
    index.refresh()
    assert sorted(c.text for c in index.chunks.values()) == ["alpha", "one"]


def test_refresh_alone_changes_nothing(index: Index) -> None:
    index.replace("semantic/a.md", notes("semantic/a.md", "alpha"), STATE)
    before = view(index)
    index.refresh()
    assert view(index) == before


@pytest.mark.parametrize("backend", sorted(SHARED))
def test_refresh_takes_in_what_another_handle_wrote(tmp_path: Path, backend: str) -> None:
    first, second = SHARED[backend](tmp_path), SHARED[backend](tmp_path)
    try:
        second.replace("semantic/a.md", notes("semantic/a.md", "alpha"), STATE)
        first.refresh()
        assert view(first) == view(second)
        assert_consistent(first)
    finally:
        first.close()
        second.close()


# -- hits out -----------------------------------------------------------------------------

EMBEDDER = HashEmbedder(64)
CORPUS = {
    "semantic/facts.md": ["Alice lives in Lisbon", "The car is a blue Volvo", "Bob likes tea"],
    "notes/zettel/garden.md": ["Tomatoes need full sun", "Basil grows well next to tomatoes"],
}
TURNS = [
    ("Caroline", "Did you go to the pottery class?"),
    ("Melanie", "Yes, I made a bowl for my sister"),
    ("Caroline", "What colour was it?"),
]


def filled(index: Index) -> None:
    for path, texts in CORPUS.items():
        layer = "semantic" if path.startswith("semantic") else "notebook"
        index.replace(path, notes(path, *texts, layer=layer), STATE)
    turns = [
        Chunk("sessions/s1.jsonl", "transcripts", n, n, text, title=who, session="s1")
        for n, (who, text) in enumerate(TURNS, start=1)
    ]
    index.replace("sessions/s1.jsonl", turns, STATE)
    index.replace_refs("MEMORY.md", [], [fact("m1", "Favourite drink is green tea")])
    embed(index)


def embed(index: Index) -> None:
    ids = sorted(index.unembedded)
    rows = EMBEDDER.embed([index.chunks[cid].body for cid in ids])
    index.set_vectors(EMBEDDER.name, {cid: rows[n].tobytes() for n, cid in enumerate(ids)})


def search(
    index: Index, query: str, k: int = 3, filters: Filters | None = None, **weights: float
) -> list[Hit]:
    return hybrid(
        index,
        query,
        k,
        filters or Filters(),
        lexical=Lexical(),
        embed=lambda text: EMBEDDER.embed([text])[0],
        vectors=Vectors(),
        weights=Weights(**weights),
    )


def test_hybrid_search_over_it_finds_the_right_chunk(index: Index) -> None:
    filled(index)
    assert search(index, "where does Alice live")[0].text == "Alice lives in Lisbon"
    assert search(index, "what car")[0].text == "The car is a blue Volvo"
    garden = Filters(layers=frozenset({"notebook"}))
    assert [h.text for h in search(index, "tomatoes", 5, garden)] == [
        "Tomatoes need full sun",
        "Basil grows well next to tomatoes",
    ]
    bowl = search(index, "pottery bowl sister")
    assert bowl[0].text == "Yes, I made a bowl for my sister" and bowl[0].session == "s1"
    drink = search(index, "favourite drink", filters=Filters(layers=frozenset({"long_term"})))
    assert [(h.text, h.ref) for h in drink] == [("Favourite drink is green tea", "m1")]


def test_a_search_follows_writes_made_after_it_started(index: Index) -> None:
    filled(index)
    lexical, vectors = Lexical(), Vectors()

    def top(query: str) -> str:
        hits = hybrid(
            index,
            query,
            1,
            Filters(),
            lexical=lexical,
            embed=lambda text: EMBEDDER.embed([text])[0],
            vectors=vectors,
        )
        return hits[0].text if hits else ""

    assert top("Lisbon") == "Alice lives in Lisbon"
    index.replace("semantic/facts.md", notes("semantic/facts.md", "Alice moved to Porto"), STATE)
    embed(index)
    assert "Lisbon" not in top("Lisbon")
    assert top("Porto") == "Alice moved to Porto"
    with pytest.raises(RuntimeError), index.transaction():
        index.replace("semantic/facts.md", [], None)
        raise RuntimeError
    assert top("Porto") == "Alice moved to Porto"  # the rollback is followed too


QUESTIONS = ("Alice tea", "tomatoes sun", "what colour")


def test_every_backend_answers_a_search_alike(tmp_path: Path) -> None:
    found, plain = {}, []
    for name, factory in usable().items():
        folder = tmp_path / name
        folder.mkdir()
        index = factory(folder)
        filled(index)
        found[name] = [search(index, q, 5) for q in QUESTIONS]
        if name == "sqlite":  # BM25's query expansion is in RAM only (index.expand)
            plain = [search(index, q, 5, expand=0.0) for q in QUESTIONS]
        index.close()
    assert len({repr(hits) for name, hits in found.items() if name not in RANKED_IN_SQL}) == 1
    # words ranked in SQL: the same chunks found, with the same citations
    cited = {
        name: [{hit.to_dict()["citation"] for hit in hits} for hits in answers]
        for name, answers in found.items()
        if name in RANKED_IN_SQL
    }
    assert all(
        seen == [{hit.to_dict()["citation"] for hit in hits} for hits in plain]
        for seen in cited.values()
    )


# -- random sequences: every backend shows the same state ------------------------------------

PATHS = ("semantic/a.md", "semantic/b.md")
words = st.sampled_from(["alpha", "beta", "gamma", "delta", "tea", "sun"])
texts = st.lists(words, min_size=1, max_size=3).map(" ".join)
chunk_texts = st.lists(texts, max_size=3)
operations = st.lists(
    st.one_of(
        st.tuples(
            st.just("replace"),
            st.sampled_from(PATHS),
            chunk_texts,
            st.booleans(),
            st.booleans(),
        ),
        st.tuples(
            st.just("refs"),
            st.lists(st.sampled_from(["f1", "f2", "f3"]), max_size=2),
            st.lists(st.tuples(st.sampled_from(["f1", "f2", "f3"]), texts), max_size=2),
        ),
        st.tuples(st.just("vectors"), st.sampled_from(["m", "n"]), st.lists(st.integers(0, 8))),
        st.tuples(st.just("drop")),
        st.tuples(st.just("fail"), st.sampled_from(PATHS), chunk_texts),
    ),
    max_size=12,
)


def run(index: Index, operation: tuple[Any, ...]) -> None:
    kind = operation[0]
    if kind == "replace":
        _, path, bodies, append, forget = operation
        state = None if forget else FileState(len(bodies), 1, "".join(bodies))
        index.replace(path, notes(path, *bodies), state, append=append)
    elif kind == "refs":
        _, refs, facts = operation
        index.replace_refs("MEMORY.md", refs, [fact(ref, text) for ref, text in facts])
    elif kind == "vectors":
        _, model, places = operation
        order = sorted(index.chunks)
        chosen = {order[p] for p in places if p < len(order)}
        index.set_vectors(model, dict.fromkeys(chosen, VEC if model == "m" else OTHER_VEC))
    elif kind == "drop":
        index.drop()
    else:
        _, path, bodies = operation
        try:
            with index.transaction():
                index.replace(path, notes(path, *bodies), STATE)
                index.drop()
                raise MemstrataError("abandoned")
        except MemstrataError:
            pass


@settings(max_examples=60)
@given(operations, st.sampled_from(["alpha tea", "gamma", "sun delta"]))
def test_a_random_sequence_leaves_every_backend_alike(
    steps: list[tuple[Any, ...]], query: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        indexes = {}
        for name, factory in usable().items():
            (Path(folder) / name).mkdir()
            indexes[name] = factory(Path(folder) / name)
        followers = {name: (Follower(), Follower()) for name in indexes}
        try:
            for step in steps:
                for name, index in indexes.items():
                    run(index, step)
                    chunks, vectors = followers[name]
                    assert chunks.catch_up(index.chunk_log, index.chunks) == set(index.chunks)
                    assert vectors.catch_up(index.vector_log, index.vectors) == set(index.vectors)
                views = [view(index) for index in indexes.values()]
                assert all(seen == views[0] for seen in views)
            for index in indexes.values():
                assert_consistent(index)
            # BM25 alone: these vectors are not the query embedder's; no relevance
            # floor (a backend ranking in SQL has no lexical ceiling: docs/search.md)
            # (nor BM25's query expansion, which only RAM's BM25 does: index.expand)
            off = Weights(floor_lexical=0.0, floor_vector=0.0, floor_lexical_alone=0.0, expand=0.0)
            answers = {
                name: hybrid(index, query, 5, Filters(), lexical=Lexical(), weights=off)
                for name, index in indexes.items()
            }
            assert len({repr(v) for n, v in answers.items() if n not in RANKED_IN_SQL}) == 1
            bm25 = [(h.path, h.line_start, h.text, h.ref) for h in answers["sqlite"]]
            for name in RANKED_IN_SQL & set(answers):  # other scores, chunks that match
                found = [(h.path, h.line_start, h.text, h.ref) for h in answers[name]]
                # (minmax fusion drops a list's weakest: ties differ, so counts may)
                assert bool(found) == bool(bm25)
                assert all(set(text.split()) & set(query.split()) for _, _, text, _ in found)
        finally:
            for index in indexes.values():
                index.close()
