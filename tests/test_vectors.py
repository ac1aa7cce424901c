"""The RAM vector matrix (index.search.Vectors): exact below the projection
threshold, and the reduced first pass keeps the exact top k above it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memstrata.index import vectors as search
from memstrata.index.chunks import Chunk
from memstrata.index.hybrid import Vectors
from memstrata.index.sqlite import FileState, Index

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
