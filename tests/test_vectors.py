"""The RAM vector matrix (index.search.Vectors): exact below the projection
threshold, and the reduced first pass keeps the exact top k above it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memstrata.index import vectors as search
from memstrata.index.chunks import Chunk
from memstrata.index.hybrid import Vectors
from memstrata.index.sqlite import FileState, Index
from memstrata.index.vectors import largest

DIM = 384


def unit(rows: np.ndarray) -> np.ndarray:
    return (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)


def structured(count: int, seed: int) -> np.ndarray:
    """Vectors near a 40-dimensional subspace, like sentence embeddings."""
    rng = np.random.default_rng(seed)
    topics = rng.normal(size=(40, DIM))
    weights = rng.normal(size=(count, 40))
    return unit(weights @ topics + 0.3 * rng.normal(size=(count, DIM)))


def filled(tmp_path: Path, matrix: np.ndarray, name: str = "a") -> Index:
    index = Index(tmp_path / f"{name}.sqlite")
    chunks = [
        Chunk(path="semantic/a.md", layer="semantic", line_start=n, line_end=n, text=f"c{n}")
        for n in range(len(matrix))
    ]
    ids = index.replace("semantic/a.md", chunks, FileState(1, 1, "x"))
    index.set_vectors("test", {cid: matrix[n].tobytes() for n, cid in enumerate(ids)})
    return index


def exact(index: Index, query: np.ndarray, limit: int) -> list[int]:
    ids = list(index.vectors)
    matrix = np.stack([np.frombuffer(index.vectors[cid], dtype=np.float32) for cid in ids])
    order = np.argsort(-(matrix @ query), kind="stable")[:limit]
    return [ids[n] for n in order]


def test_below_the_threshold_the_scan_is_exact(tmp_path: Path) -> None:
    index = filled(tmp_path, structured(800, 1))
    vectors = Vectors()
    for query in structured(20, 2):
        found = [cid for cid, _ in vectors.top(index, query, 50)]
        assert found == exact(index, query, 50)
    assert not vectors.projected


def test_the_projected_scan_keeps_the_exact_top_and_takes_in_new_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(search, "PROJECT_ABOVE", 1000)
    monkeypatch.setattr(search, "_FIT_SAMPLE", 1000)
    index = filled(tmp_path, structured(3000, 3))
    vectors = Vectors()
    agree = []
    for query in structured(40, 4):
        found = [cid for cid, _ in vectors.top(index, query, 50)]
        agree.append(len(set(found) & set(exact(index, query, 50))) / 50)
    assert vectors.projected
    assert np.mean(agree) >= 0.98
    # a vector added after the fit is found by its own direction
    new = structured(1, 5)[0]
    chunk = Chunk(path="semantic/b.md", layer="semantic", line_start=1, line_end=1, text="new")
    (cid,) = index.replace("semantic/b.md", [chunk], FileState(2, 2, "y"))
    index.set_vectors("test", {cid: new.tobytes()})
    assert vectors.top(index, new, 5)[0][0] == cid


def layered(tmp_path: Path, matrix: np.ndarray, every: int) -> tuple[Index, set[int]]:
    """``matrix`` in ``semantic/a.md``, every ``every``-th row a daily note
    instead; the ids of the daily notes."""
    index = Index(tmp_path / "layered.sqlite")
    daily = [n for n in range(len(matrix)) if n % every == 0]
    rest = [n for n in range(len(matrix)) if n % every]
    ids: dict[int, int] = {}
    for path, layer, rows in (
        ("semantic/a.md", "semantic", rest),
        ("daily/2026-11-28.md", "daily_notes", daily),
    ):
        chunks = [
            Chunk(path=path, layer=layer, line_start=n, line_end=n, text=f"c{n}") for n in rows
        ]
        made = index.replace(path, chunks, FileState(1, 1, path))
        ids.update(zip(rows, made, strict=True))
    index.set_vectors("test", {cid: matrix[n].tobytes() for n, cid in ids.items()})
    return index, {ids[n] for n in daily}


@pytest.mark.parametrize("projected", [False, True])
def test_a_search_of_some_layers_ranks_only_their_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, projected: bool
) -> None:
    """The best rows of the layers asked for, all of them, though the other
    layers' rows are closer (so a filtered search need not ask again)."""
    if projected:
        monkeypatch.setattr(search, "PROJECT_ABOVE", 1000)
        monkeypatch.setattr(search, "_FIT_SAMPLE", 1000)
    index, daily = layered(tmp_path, structured(3000, 6), every=7)
    vectors = Vectors()
    agree = []
    for query in structured(20, 7):
        found = vectors.top(index, query, 50, layers={"daily_notes"})
        ids = [cid for cid, _ in found]
        assert len(ids) == 50 and set(ids) <= daily
        scores = [score for _, score in found]
        assert scores == sorted(scores, reverse=True)
        best = [cid for cid in exact(index, query, len(index.vectors)) if cid in daily][:50]
        if projected:
            agree.append(len(set(ids) & set(best)) / 50)
        else:
            assert ids == best
    assert vectors.projected == projected
    if projected:
        assert np.mean(agree) >= 0.98
    # every row of the layer when it has fewer than asked; none of a layer it lacks
    assert (
        set(cid for cid, _ in vectors.top(index, structured(1, 8)[0], 5000, {"daily_notes"}))
        == daily
    )
    assert vectors.top(index, structured(1, 8)[0], 10, {"episodic"}) == []
    # all the layers there are: the same as no filter
    query = structured(1, 9)[0]
    both = vectors.top(index, query, 30, {"daily_notes", "semantic"})
    assert both == vectors.top(index, query, 30)
    # a row added after the layers were read is ranked with its own layer
    new = structured(1, 10)[0]
    chunk = Chunk(
        path="daily/2026-11-29.md", layer="daily_notes", line_start=1, line_end=1, text="n"
    )
    (cid,) = index.replace("daily/2026-11-29.md", [chunk], FileState(2, 2, "z"))
    index.set_vectors("test", {cid: new.tobytes()})
    assert vectors.top(index, new, 5, {"daily_notes"})[0][0] == cid
    assert cid not in {found for found, _ in vectors.top(index, new, 50, {"semantic"})}


def test_searches_from_several_threads_while_vectors_are_written(tmp_path: Path) -> None:
    """A shared matrix (the memory service's clients, the bench's) is caught up
    and ranked by one thread at a time: a search racing another one's growth
    of the matrix raised IndexError before."""
    import threading

    index = filled(tmp_path, structured(64, 5))
    vectors = Vectors()
    errors: list[BaseException] = []
    queries = structured(8, 6)
    done = threading.Event()

    def search() -> None:
        while not done.is_set():
            try:
                for query in queries:
                    vectors.top(index, query, 10)
            except BaseException as exc:  # noqa: BLE001 - the test reports any
                errors.append(exc)
                return

    readers = [threading.Thread(target=search) for _ in range(4)]
    for thread in readers:
        thread.start()
    try:
        for n in range(60):  # each file's vectors grow the matrix past its rows
            path = f"semantic/w{n}.md"
            chunks = [Chunk(path, "semantic", k, k, f"w{n} {k}") for k in range(1, 9)]
            ids = index.replace(path, chunks, FileState(1, 1, path))
            fresh = structured(8, 100 + n)
            index.set_vectors("test", {cid: fresh[k].tobytes() for k, cid in enumerate(ids)})
    finally:
        done.set()
        for thread in readers:
            thread.join()
    assert errors == []
    assert len(vectors.top(index, queries[0], 600)) == 64 + 60 * 8


@settings(max_examples=60, deadline=None)
@given(
    size=st.sampled_from([10, 1_000, 65_537, 100_000, 140_000]),
    count=st.integers(1, 3_000),
    seed=st.integers(0, 2**16),
)
def test_largest_gives_the_count_largest_values(size: int, count: int, seed: int) -> None:
    """The cut by a sample must never lose one of the ``count`` largest."""
    count = min(count, size)
    values = np.random.default_rng(seed).permutation(size).astype(np.float32)  # distinct
    found = largest(values, count)
    assert len(found) == count
    assert set(found.tolist()) == set(np.argsort(values)[size - count :].tolist())


def test_largest_falls_back_when_the_sample_cuts_too_high() -> None:
    """The sampled places hold the largest values: fewer than ``count`` pass
    the cut, and the whole array is partitioned instead."""
    size = 100_000
    values = np.zeros(size, dtype=np.float32)
    step = size // 4096
    values[::step] = np.arange(1, len(values[::step]) + 1, dtype=np.float32) + 1e6
    values[1::step][:2_000] = np.arange(2_000, dtype=np.float32) + 1_000  # not sampled
    found = largest(values, 3_000)
    assert set(found.tolist()) == set(np.argsort(values, kind="stable")[size - 3_000 :].tolist())
