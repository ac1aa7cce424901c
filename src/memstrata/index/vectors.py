"""``Vectors``: an index's vectors as one float32 matrix in RAM, ranked by
cosine for a search's vector list (``hybrid``), on every backend that does
not find that list itself (``hybrid.CandidateSource``).

Invariants: the matrix follows the index's change log (a vector added is a
row appended, one removed a row blanked; rebuilt when the index was cleared
or a quarter of the rows are blank), so a search sees what the index holds
once it has caught up; ids of blank rows are -1 and never returned. Each row
also knows its chunk's layer (a chunk's layer never changes), so a search
restricted to some layers ranks only their rows.
"""

from __future__ import annotations

import threading
from collections.abc import Collection
from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import blas
from .protocol import Index

if TYPE_CHECKING:
    import numpy as np

__all__ = ["OVERSAMPLE", "PROJECTED_DIM", "PROJECT_ABOVE", "Vectors"]


# Past this many vectors a scan first ranks them in a PCA-reduced space of
# PROJECTED_DIM dimensions, then re-scores the best OVERSAMPLE x limit exactly
# (a 100k x 384 scan reads 154 MB: ~5 ms here; the reduced one 26 MB, and it
# keeps 99.97 % of the exact top 300 on LoCoMo's turns).
PROJECT_ABOVE = 20_000
PROJECTED_DIM = 64
OVERSAMPLE = 3
_FIT_SAMPLE = 4096


class Vectors:
    """The index's vectors as one float32 matrix in RAM, kept up to date from
    the index's change log: new vectors are appended (the matrix grows by
    doubling), removed ones are blanked; it is rebuilt only when the index was
    cleared or a quarter of its rows are blank.

    Past ``PROJECT_ABOVE`` vectors it also keeps their projection on the top
    ``PROJECTED_DIM`` principal directions (fitted on a sample, again when the
    matrix has doubled since), and ``top`` scans that, then ranks the best
    ``OVERSAMPLE * limit`` rows by their exact cosine: the result is exact
    unless a row of the true top ``limit`` falls below ``OVERSAMPLE * limit``
    in the reduced ranking (``memstrata bench search`` reports how often).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._matrix: np.ndarray | None = None
        self._ids: np.ndarray | None = None  # row -> chunk id (-1: blank)
        self._layers: np.ndarray | None = None  # row -> layer code (-1: blank)
        self._codes: dict[str, int] = {}  # layer -> code
        self._changes = 0  # rows changed so many times (the masks' key)
        self._masks: dict[frozenset[int], tuple[int, _Outside | None]] = {}
        self._rows: dict[int, int] = {}  # chunk id -> row
        self._used = 0
        self._blank = 0
        self._seen = 0  # place in index.vector_log
        self._basis: np.ndarray | None = None  # dim x PROJECTED_DIM
        self._reduced: np.ndarray | None = None  # row -> projection
        self._fitted_at = 0  # rows when the basis was fitted

    @property
    def projected(self) -> bool:
        return self._reduced is not None

    def _rebuild(self, index: Index, dim: int) -> None:
        import numpy as np

        count = len(index.vectors)
        self._matrix = np.zeros((max(count, 64), dim), dtype=np.float32)
        self._ids = np.full(max(count, 64), -1, dtype=np.int64)
        self._layers = np.full(max(count, 64), -1, dtype=np.int16)
        self._rows = {}
        for row, (cid, vec) in enumerate(index.vectors.items()):
            self._matrix[row] = np.frombuffer(vec, dtype=np.float32)
            self._ids[row] = cid
            self._layers[row] = self._code(index, cid)
            self._rows[cid] = row
        self._used, self._blank = count, 0
        self._seen = len(index.vector_log)
        self._changes += 1
        self._basis = self._reduced = None
        self._project()

    def _project(self) -> None:
        """Fit the basis and project every row, when there are enough rows."""
        import numpy as np

        matrix = self._matrix
        if matrix is None or self._used < PROJECT_ABOVE or matrix.shape[1] <= PROJECTED_DIM:
            return
        rows = np.random.default_rng(0).choice(self._used, _FIT_SAMPLE, replace=False)
        _, _, directions = np.linalg.svd(matrix[np.sort(rows)], full_matrices=False)
        self._basis = np.ascontiguousarray(directions[:PROJECTED_DIM].T, dtype=np.float32)
        self._reduced = np.ascontiguousarray(matrix @ self._basis)
        self._fitted_at = self._used

    def _catch_up(self, index: Index, dim: int) -> None:
        import numpy as np

        log = index.vector_log
        changes = log[self._seen :]
        if (
            self._matrix is None
            or self._matrix.shape[1] != dim
            or any(op == 0 for op, _ in changes)
        ):
            self._rebuild(index, dim)
            return
        assert self._ids is not None and self._layers is not None
        for op, cid in changes:
            if op < 0:
                row = self._rows.pop(cid, None)
                if row is not None:
                    self._ids[row] = -1
                    self._layers[row] = -1
                    self._matrix[row] = 0.0
                    if self._reduced is not None:
                        self._reduced[row] = 0.0
                    self._blank += 1
            elif cid in index.vectors and cid not in self._rows:
                if self._used == len(self._ids):
                    self._grow(len(self._ids) * 2, dim)
                vector = np.frombuffer(index.vectors[cid], dtype=np.float32)
                self._matrix[self._used] = vector
                if self._reduced is not None and self._basis is not None:
                    self._reduced[self._used] = vector @ self._basis
                self._ids[self._used] = cid
                self._layers[self._used] = self._code(index, cid)
                self._rows[cid] = self._used
                self._used += 1
        if changes:
            self._changes += 1
        self._seen = len(log)
        if self._blank * 4 > max(self._used, 64):
            self._rebuild(index, dim)
        elif self._reduced is None or self._used >= 2 * self._fitted_at:
            self._project()

    def _code(self, index: Index, cid: int) -> int:
        """The code of chunk ``cid``'s layer (-1: no such chunk)."""
        chunk = index.chunks.get(cid)
        if chunk is None:
            return -1
        return self._codes.setdefault(chunk.layer, len(self._codes))

    def _grow(self, rows: int, dim: int) -> None:
        import numpy as np

        assert self._matrix is not None and self._ids is not None and self._layers is not None
        used = self._used
        # A zeroed block (calloc: its pages are mapped when first written) and
        # one copy of the rows in use. ``np.resize`` wrote every new row twice
        # (by repetition, then zeros): 0.5-1 s at 100k x 384 under load, paid
        # by the search after the write that crossed the size.
        self._matrix = _grown(self._matrix, used, rows)
        self._ids = np.concatenate([self._ids, np.full(rows - used, -1)])
        self._layers = np.concatenate([self._layers, np.full(rows - used, -1, dtype=np.int16)])
        if self._reduced is not None:
            self._reduced = _grown(self._reduced, used, rows)

    def warm(self, index: Index, dim: int) -> None:
        """Take in every change of ``index`` now (the first search need not)."""
        with self._lock, index.lock:
            self._catch_up(index, dim)

    def top(
        self,
        index: Index,
        query: np.ndarray,
        limit: int,
        layers: Collection[str] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``limit`` rows most like ``query`` as ``(chunk id, cosine)``, best
        first, among the chunks of ``layers`` (None: all). Safe from several
        threads: one at a time catches up (holding the index's lock, as its
        writers do) and ranks."""
        with self._lock:
            with index.lock:
                self._catch_up(index, query.shape[0])
            with blas.limited():  # (see index.blas)
                return self._top(query, limit, layers)

    def _outside(self, layers: Collection[str]) -> _Outside | None:
        """The rows outside ``layers`` (None: there are none). Kept per layer
        set until the rows change: a search does not read every row's layer
        (the default search leaves out only the few chunks of ``core``)."""
        import numpy as np

        assert self._layers is not None
        codes = frozenset(self._codes[layer] for layer in layers if layer in self._codes)
        known = self._masks.get(codes)
        if known is None or known[0] != self._changes:
            used = self._used
            mask = ~np.isin(self._layers[:used], list(codes))
            rows = np.flatnonzero(mask)
            outside = _Outside(mask, rows) if len(rows) else None
            known = self._masks[codes] = (self._changes, outside)
        return known[1]

    def _top(
        self, query: np.ndarray, limit: int, layers: Collection[str] | None = None
    ) -> list[tuple[int, float]]:
        import numpy as np

        assert self._matrix is not None and self._ids is not None and self._layers is not None
        used = self._used
        if not used:
            return []
        outside = self._outside(layers) if layers is not None else None  # (and blank rows)
        if outside is not None:
            inside = used - len(outside.rows)  # (the mask is as long as the rows in use)
            if not inside:
                return []
            limit = min(limit, inside)
        limit = min(limit, used)
        wide = min(limit * OVERSAMPLE, used)
        if self._reduced is not None and self._basis is not None and wide < used:
            rough = self._reduced[:used] @ (query @ self._basis)
            if outside is not None:
                rough[outside.rows] = -np.inf
            rows = largest(rough, wide)
            scores = self._matrix[rows] @ query
            if outside is not None:
                scores[outside.mask[rows]] = -np.inf
        else:
            rows = np.arange(used)
            scores = self._matrix[:used] @ query
            if outside is not None:
                scores[outside.rows] = -np.inf
        best = np.argpartition(-scores, limit - 1)[:limit]
        best = best[np.argsort(-scores[best])]
        found = zip(self._ids[rows[best]].tolist(), scores[best].tolist(), strict=True)
        return [(cid, score) for cid, score in found if cid >= 0 and score > -np.inf]


@dataclass(frozen=True, slots=True)
class _Outside:
    """The rows outside a search's layers, as a mask over the rows in use (to
    test the rows a scan picked) and as their places (to blank a whole scan's
    scores: usually a few rows, where a mask would touch every one)."""

    mask: np.ndarray
    rows: np.ndarray


def _grown(matrix: np.ndarray, used: int, rows: int) -> np.ndarray:
    """``matrix``'s first ``used`` rows at the top of ``rows`` rows, the rest zero."""
    import numpy as np

    out = np.zeros((rows, matrix.shape[1]), dtype=matrix.dtype)
    out[:used] = matrix[:used]
    return out


_SAMPLE = 4096


def largest(values: np.ndarray, count: int) -> np.ndarray:
    """The places of ``values``' ``count`` largest (in no order; ``0 < count <=
    len``). A large array is first cut at a value that a strided sample of
    ``_SAMPLE`` puts above ~4 x ``count`` of them (one vectorised comparison),
    and only what passes is partitioned; if fewer than ``count`` pass, the
    whole array is. Either way the ``count`` largest, as one ``argpartition``
    of the whole gives them (which of several equal values at the edge is
    taken may differ)."""
    import numpy as np

    size = len(values)
    if size > 16 * _SAMPLE and size > 32 * count:
        sample = values[:: size // _SAMPLE]
        keep = max(1, 4 * count * len(sample) // size)
        cut = np.partition(sample, len(sample) - keep)[len(sample) - keep]
        passed = np.flatnonzero(values >= cut)
        if len(passed) >= count:
            return passed[
                np.argpartition(values[passed], len(passed) - count)[len(passed) - count :]
            ]
    return np.argpartition(values, size - count)[size - count :]
