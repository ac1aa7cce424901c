"""Search candidates found in SQL (``PostgresIndex(search="sql" | "hnsw")``,
``postgres.candidates``): the same hits and citations as the RAM mirror where
the lists agree, the filters SQL checks equal to the RAM ones, the tenant's
policy not costing recall, and a short list left to RAM."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import numpy as np
import pytest

import postgres_server
from memstrata.errors import InvalidInput
from memstrata.index import hybrid as hybrid_module
from memstrata.index.chunks import Chunk
from memstrata.index.hybrid import Filters, Hit, Vectors, Weights, hybrid
from memstrata.index.lexical import Lexical
from memstrata.index.protocol import FileState
from memstrata.postgres import candidates, schema
from memstrata.postgres.index import PostgresIndex

DIM = 384
STATE = FileState(1, 1, "x")
SMALL = Weights(candidates=6)  # k=1: lists of 6, within what a small tenant holds


@pytest.fixture
def url() -> str:
    return postgres_server.app_url()


@pytest.fixture
def opened() -> Iterator[list[PostgresIndex]]:
    handles: list[PostgresIndex] = []
    yield handles
    for handle in handles:
        handle.close()


def open_index(
    opened: list[PostgresIndex], url: str, tenant: str, search: str, share: float = 0.0
) -> PostgresIndex:
    index = PostgresIndex(url, tenant, search=search, ann_above=0, ann_share=share)  # any size
    opened.append(index)
    return index


def unit(rng: np.random.Generator, count: int, around: np.ndarray | None = None) -> np.ndarray:
    vectors = rng.standard_normal((count, DIM)).astype(np.float32)
    if around is not None:
        vectors = vectors * np.float32(0.05) + around
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)


def turns(path: str, texts: list[str], **fields: object) -> list[Chunk]:
    return [
        Chunk(path, str(fields.get("layer", "transcripts")), n, n, text,
              title=str(fields.get("title", "Ann")), session=fields.get("session", "s1"),  # type: ignore[arg-type]
              source=str(fields.get("source", "user")), live=bool(fields.get("live", True)))
        for n, text in enumerate(texts, start=1)
    ]  # fmt: skip


def fill(index: PostgresIndex, vectors: np.ndarray, prefix: str = "sessions/a") -> list[int]:
    """One file per 20 chunks, each chunk's text naming its number; their vectors."""
    ids: list[int] = []
    for start in range(0, len(vectors), 20):
        path = f"{prefix}{start}.jsonl"
        texts = [f"turn {n} about tea and cake number{n}" for n in range(start, start + 20)]
        ids += index.replace(path, turns(path, texts[: len(vectors) - start]), STATE)
    index.set_vectors("m", {cid: vectors[n].tobytes() for n, cid in enumerate(ids)})
    return ids


def search(index: PostgresIndex, query: str, vector: np.ndarray, k: int = 1) -> list[Hit]:
    return hybrid(index, query, k, Filters(), lexical=Lexical(), embed=lambda _: vector,
                  vectors=Vectors(), weights=SMALL)  # fmt: skip


def test_the_mode_and_ef_search_are_checked(url: str) -> None:
    with pytest.raises(InvalidInput):
        PostgresIndex(url, postgres_server.tenant(), search="elastic")
    for bad in (0, 1001, True, 2.5):
        with pytest.raises(InvalidInput):
            PostgresIndex(url, postgres_server.tenant(), ef_search=bad)  # type: ignore[arg-type]


def test_the_vector_list_from_hnsw_is_the_exact_one_and_so_are_the_hits(
    url: str, opened: list[PostgresIndex]
) -> None:
    rng = np.random.default_rng(1)
    tenant = postgres_server.tenant()
    index = open_index(opened, url, tenant, "hnsw")
    vectors = unit(rng, 200)
    ids = fill(index, vectors)
    mirror = open_index(opened, url, tenant, "mirror")
    for query in unit(rng, 10):
        _, near = index.candidates("tea", query, 6, Filters())
        assert near is not None  # from SQL
        exact = np.argsort(-(vectors @ query))[:6]
        assert [cid for cid, _ in near] == [ids[n] for n in exact]
        assert [s for _, s in near] == pytest.approx([float(vectors[n] @ query) for n in exact])
        found, expected = search(index, "cake", query), search(mirror, "cake", query)
        assert [h.citation for h in found] == [h.citation for h in expected]
        assert [h.score for h in found] == pytest.approx([h.score for h in expected])


def test_a_mixed_vector_is_scored_by_inner_product_as_in_ram(
    url: str, opened: list[PostgresIndex]
) -> None:
    """A transcript turn's stored vector is its unit vector mixed with its
    window's (``index.windows``), shorter than 1: SQL scores it as the RAM
    matrix does, by inner product (the mix of the two cosines), not by cosine."""
    rng = np.random.default_rng(11)
    tenant = postgres_server.tenant()
    index = open_index(opened, url, tenant, "hnsw")
    vectors = (0.4 * unit(rng, 120) + 0.6 * unit(rng, 120)).astype(np.float32)
    assert float(np.linalg.norm(vectors, axis=1).max()) < 0.99
    ids = fill(index, vectors)
    mirror = open_index(opened, url, tenant, "mirror")
    for query in unit(rng, 5):
        _, near = index.candidates("tea", query, 6, Filters())
        assert near is not None
        assert [s for _, s in near] == pytest.approx(
            [float(vectors[ids.index(cid)] @ query) for cid, _ in near], abs=1e-5
        )
        found, expected = search(index, "cake", query), search(mirror, "cake", query)
        assert [h.citation for h in found] == [h.citation for h in expected]
        assert [h.score for h in found] == pytest.approx([h.score for h in expected])


@pytest.mark.parametrize("filters", [Filters(), Filters(include_superseded=True)])
def test_the_query_plan_reads_the_hnsw_index_in_order(
    url: str, opened: list[PostgresIndex], filters: Filters
) -> None:
    """Many small tenants: the planner guesses the policy keeps few rows, and
    would sort them all after a scan of every tenant's vectors."""
    rng = np.random.default_rng(2)
    for _ in range(5):
        fill(open_index(opened, url, postgres_server.tenant(), "hnsw"), unit(rng, 40))
    index = open_index(opened, url, postgres_server.tenant(), "hnsw")
    fill(index, unit(rng, 400))
    sql, params = candidates.nearest_sql(filters)
    with index._db.transaction(index.tenant, "explain") as conn:  # noqa: SLF001
        conn.execute("ANALYZE memstrata_vectors")
        conn.execute("ANALYZE memstrata_chunks")
        candidates.settings(conn, 100)
        vector = unit(rng, 1)[0]
        plan = conn.execute(("EXPLAIN " + sql).encode(), (vector, *params, vector, 250)).fetchall()
    text = "\n".join(row[0] for row in plan)
    assert "Index Scan using memstrata_vectors_hnsw" in text and "Sort" not in text


def test_a_short_vector_list_is_left_to_the_ram_matrix(
    url: str, opened: list[PostgresIndex]
) -> None:
    rng = np.random.default_rng(3)
    index = open_index(opened, url, postgres_server.tenant(), "sql")
    vectors = unit(rng, 4)
    fill(index, vectors)
    query = unit(rng, 1)[0]
    words, near = index.candidates("tea", query, 6, Filters())
    assert near is None and words is not None and len(words) == 4
    hits = search(index, "tea", query, k=4)  # the RAM matrix found them
    best = int(np.argmax(vectors @ query))
    assert f"turn {best} " in hits[0].text or len(hits) == 4


def test_the_tenant_filter_does_not_cost_recall(url: str, opened: list[PostgresIndex]) -> None:
    """A small tenant whose vectors sit among a bigger one's: HNSW finds the
    big one's first, the policy drops them, the iterative scan goes on."""
    rng = np.random.default_rng(4)
    centre = unit(rng, 1)[0]
    big = open_index(opened, url, postgres_server.tenant("big"), "hnsw")
    fill(big, unit(rng, 2000, around=centre))
    small = open_index(opened, url, postgres_server.tenant("small"), "hnsw")
    vectors = unit(rng, 40, around=centre)
    ids = fill(small, vectors)
    shares = []
    for query in unit(rng, 20, around=centre):
        _, near = small.candidates("tea", query, 6, Filters())
        assert near is not None and len(near) == 6  # a full list, all of its own
        exact = {ids[n] for n in np.argsort(-(vectors @ query))[:6]}
        shares.append(len(exact & {cid for cid, _ in near}) / 6)
    assert np.mean(shares) >= 0.95


@pytest.mark.parametrize(
    "filters",
    [
        Filters(),
        Filters(include_superseded=True),
        Filters(layers=frozenset({"semantic"})),
        Filters(layers=frozenset({"transcripts", "notebook"}), session="s2"),
        Filters(source="agent"),
        Filters(path_prefix="notes/"),
        Filters(path_prefix="notes/%_"),  # no LIKE patterns
    ],
)
def test_filters_in_sql_are_the_filters_in_ram(
    url: str, opened: list[PostgresIndex], filters: Filters
) -> None:
    rng = np.random.default_rng(5)
    centre = unit(rng, 1)[0]
    index = open_index(opened, url, postgres_server.tenant(), "sql")
    shapes = [
        ("sessions/a.jsonl", {"session": "s1"}),
        ("sessions/b.jsonl", {"session": "s2", "source": "agent"}),
        ("semantic/c.md", {"layer": "semantic", "session": None}),
        ("notes/%_d.md", {"layer": "notebook", "session": "s2"}),
        ("notes/e.md", {"layer": "notebook", "live": False, "source": "agent"}),
    ]
    for path, fields in shapes:
        index.replace(path, turns(path, ["tea for two", "green tea"], **fields), STATE)
    ids = sorted(index.chunks)
    index.set_vectors(
        "m", {cid: v.tobytes() for cid, v in zip(ids, unit(rng, len(ids), centre), strict=True)}
    )
    wanted = {cid for cid, chunk in index.chunks.items() if filters.accept(chunk)}
    words, near = index.candidates("tea", unit(rng, 1, centre)[0], len(wanted) or 1, filters)
    assert words is not None and {cid for cid, _ in words} == wanted
    if wanted:
        assert near is not None and {cid for cid, _ in near} == wanted


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ("what is the TEA?", {"green tea", "tea for two"}),
        ("two", {"tea for two"}),
        ("what is it", set()),  # only function words: kept, and nothing says them
        ("for", {"tea for two"}),
        ("C++ & it's 'quoted' \\ back|slash: <-> !", set()),
        ("", set()),
        ("чай", {"зелёный чай"}),
    ],
)
def test_words_in_sql_match_whole_words(
    url: str, opened: list[PostgresIndex], query: str, found: set[str]
) -> None:
    index = open_index(opened, url, postgres_server.tenant(), "sql")
    texts = ["green tea", "tea for two", "teapot", "зелёный чай"]
    index.replace("semantic/a.md", turns("semantic/a.md", texts), STATE)
    words, _ = index.candidates(query, None, 10, Filters())
    assert words is not None
    assert {index.chunks[cid].text for cid, _ in words} == found


def test_words_are_ranked_by_cover_density_and_shorter_chunks_first(
    url: str, opened: list[PostgresIndex]
) -> None:
    index = open_index(opened, url, postgres_server.tenant(), "sql")
    texts = ["tea and some cake", "tea", "cake", "a long story of tea and more words here"]
    index.replace("semantic/a.md", turns("semantic/a.md", texts), STATE)
    words, _ = index.candidates("tea cake", None, 10, Filters())
    assert words is not None
    ranked = [index.chunks[cid].text for cid, _ in words]
    assert ranked[0] == "tea and some cake"  # both words
    assert ranked.index("tea") < ranked.index("a long story of tea and more words here")


def test_rows_another_writer_added_are_ignored_until_followed(
    url: str, opened: list[PostgresIndex]
) -> None:
    rng = np.random.default_rng(6)
    tenant = postgres_server.tenant()
    reader = open_index(opened, url, tenant, "sql")
    writer = open_index(opened, url, tenant, "mirror")
    vectors = unit(rng, 10)
    fill(writer, vectors)
    reader.refresh()
    writer.replace("semantic/new.md", turns("semantic/new.md", ["tea ceremony"]), STATE)
    words, _ = reader.candidates("ceremony", None, 10, Filters())
    assert words is not None and len(words) == 1 and words[0][0] not in reader.chunks
    assert search(reader, "ceremony", vectors[0], k=5)  # no KeyError: the row is dropped
    reader.refresh()
    assert "tea ceremony" in [h.text for h in search(reader, "ceremony", vectors[0], k=5)]


def test_the_hnsw_index_has_the_schemas_build_parameters(
    url: str, opened: list[PostgresIndex]
) -> None:
    index = open_index(opened, url, postgres_server.tenant(), "hnsw")  # migrated
    with index._db.transaction(index.tenant, "read the index") as conn:  # noqa: SLF001
        row = conn.execute(
            "SELECT indexdef FROM pg_indexes WHERE indexname = 'memstrata_vectors_hnsw'"
        ).fetchone()
    assert row is not None
    assert f"m='{schema.HNSW_M}'" in row[0] and "vector_cosine_ops" in row[0]
    assert f"ef_construction='{schema.HNSW_EF_CONSTRUCTION}'" in row[0]
    assert (schema.HNSW_M, schema.HNSW_EF_CONSTRUCTION) == (24, 128)


def test_migration_0006_leaves_an_index_built_with_its_parameters_alone(
    url: str, opened: list[PostgresIndex]
) -> None:
    """A database that holds a million vectors must not spend twenty minutes
    building again the index it has."""
    index = open_index(opened, url, postgres_server.tenant(), "hnsw")
    sql = dict(schema.MIGRATIONS)["0006_hnsw"]
    found = "SELECT relfilenode FROM pg_class WHERE relname = 'memstrata_vectors_hnsw'"
    with index._db.transaction(index.tenant, "migrate again") as conn:  # noqa: SLF001
        before = conn.execute(found).fetchone()
        conn.execute(sql.encode())
        assert conn.execute(found).fetchone() == before


def test_a_tenant_with_a_small_share_of_the_index_searches_its_vectors_in_ram(
    url: str, opened: list[PostgresIndex]
) -> None:
    """The index holds every tenant's vectors: one with a few percent of them
    would have pgvector scan through the others' for nothing."""
    rng = np.random.default_rng(7)
    big = open_index(opened, url, postgres_server.tenant("big"), "hnsw", share=0.05)
    fill(big, unit(rng, 3000))
    small = open_index(opened, url, postgres_server.tenant("small"), "hnsw", share=0.05)
    fill(small, unit(rng, 60))
    with small._db.transaction(small.tenant, "analyze") as conn:  # noqa: SLF001
        conn.execute("ANALYZE memstrata_vectors")
    big._all_vectors = small._all_vectors = (-1.0, -1e9)  # noqa: SLF001 - read again now
    query = unit(rng, 1)[0]
    assert small.finds(query) == (False, False)
    assert big.finds(query) == (False, True)
    _, near = small.candidates("tea", query, 6, Filters())
    assert near is None  # the RAM matrix's


@pytest.mark.parametrize("mode", ["mirror", "hnsw", "sql"])
def test_bm25_ranked_while_the_query_is_embedded_gives_the_same_hits(
    url: str, opened: list[PostgresIndex], monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """Above OVERLAP_ABOVE chunks BM25 ranks on a worker thread during the
    query's embedding (and the SQL list is then asked on this thread): the
    hits are those of the serial order, in every mode."""
    rng = np.random.default_rng(3)
    index = open_index(opened, url, postgres_server.tenant(), mode)
    fill(index, unit(rng, 120))
    embedded: list[str] = []
    ranked_on: list[str] = []
    top = Lexical.top

    def spied(self: Lexical, *args: object, **kwargs: object) -> object:
        ranked_on.append(threading.current_thread().name)
        return top(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Lexical, "top", spied)

    def run(overlap_above: int, query: str, vector: np.ndarray) -> list[tuple[str, float]]:
        monkeypatch.setattr(hybrid_module, "OVERLAP_ABOVE", overlap_above)

        def embed(text: str) -> np.ndarray:
            embedded.append(text)
            return vector

        hits = hybrid(index, query, 5, Filters(), lexical=Lexical(), embed=embed,
                      vectors=Vectors(), weights=SMALL)  # fmt: skip
        return [(hit.citation, hit.score) for hit in hits]

    for n, vector in enumerate(unit(rng, 6)):
        query = f"cake number{n * 7}"
        serial, overlapped = run(10**9, query, vector), run(0, query, vector)
        assert [c for c, _ in overlapped] == [c for c, _ in serial]
        assert [s for _, s in overlapped] == pytest.approx([s for _, s in serial])
    assert len(embedded) == 12  # both orders embedded every query
    on_workers = [name.startswith("memstrata-sql") for name in ranked_on]
    if mode == "sql":  # words from SQL: no BM25 in RAM to overlap
        assert ranked_on == []
    else:  # serial: here; overlapped: on a worker
        assert on_workers == [False, True] * 6


@pytest.mark.parametrize(("above", "built"), [(0, False), (10**9, True)])
def test_a_warm_reindex_builds_the_ram_matrix_only_where_searches_use_it(
    url: str, monkeypatch: pytest.MonkeyPatch, above: int, built: bool
) -> None:
    """A server warms its index before the first search; where the vector
    list comes from HNSW the RAM matrix (1.5 GB at a million) is not built."""
    import functools

    from memstrata import Memory
    from memstrata.postgres import workspace as pg_workspace

    made = functools.partial(PostgresIndex, ann_above=above, ann_share=0.0)
    monkeypatch.setattr(pg_workspace, "PostgresIndex", made)
    with Memory.open(url, postgres_server.tenant("warm"), embedder="minilm") as memory:
        for n in range(5):
            memory.remember(f"Fact number {n} about the garden")
        memory.reindex(warm=True)
        state = memory._search._searcher()  # noqa: SLF001 - what the warm built
        assert (state.vectors._matrix is not None) is built  # noqa: SLF001
        assert [h.text for h in memory.search("garden fact number 3", k=1)]
