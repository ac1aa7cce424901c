"""A content-hash cache of vectors: a text embedded once is not sent to the model again.

Agents repeat themselves ("I see.", "Done.", the same tool result), and every
sync of the index embeds the chunks that have no vector yet: without a cache
each repeat costs a model run. ``VectorCache.embed(embedder, texts)`` answers
what it holds and embeds only the rest, in one call.

Invariants:

* a vector is keyed by the embedder's ``name`` and the BLAKE2b-128 digest of
  the text's UTF-8 bytes (lone surrogates passed through, never an error). Two
  embedders of one name give the same vector for the same text (the
  ``Embedder`` contract), so a hit is the vector the model would give, to its
  float rounding;
* bounded: at most ``size`` vectors (``size`` 0: no cache), the least recently
  used dropped first; a vector is stored as a read-only copy, so a caller who
  changes the returned rows changes nothing in the cache;
* rows come back in input order; a text repeated within one call is embedded
  once;
* safe from several threads: the table is read and written under a lock, the
  model runs outside it (two threads missing the same text may both embed it;
  either vector is the text's).
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ..errors import InvalidInput
from .onnx import check_texts

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from ..model import Embedder

__all__ = ["DEFAULT_CACHE_SIZE", "VectorCache"]

DEFAULT_CACHE_SIZE = 1024  # 1.5 MB of 384-dimension vectors, per Memory (a server holds many)


def _key(name: str, text: str) -> tuple[str, bytes]:
    data = text.encode("utf-8", "surrogatepass")
    return name, hashlib.blake2b(data, digest_size=16).digest()


class VectorCache:
    """The last ``size`` vectors embedded through it (see the module)."""

    def __init__(self, size: int = DEFAULT_CACHE_SIZE) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 0:
            raise InvalidInput(f"size must be a whole number >= 0, not {size!r}")
        self.size = size
        self.hits = 0
        self.misses = 0
        self._table: OrderedDict[tuple[str, bytes], NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._table)

    def embed(self, embedder: Embedder, texts: Sequence[str]) -> NDArray[np.float32]:
        """``embedder.embed(texts)``, the texts this cache holds not embedded again."""
        import numpy as np

        items = check_texts(texts)
        keys = [_key(embedder.name, text) for text in items]
        out = np.zeros((len(items), embedder.dim), dtype=np.float32)
        missing: dict[tuple[str, bytes], list[int]] = {}
        with self._lock:
            for row, key in enumerate(keys):
                vector = self._table.get(key)
                if vector is None:
                    missing.setdefault(key, []).append(row)
                else:
                    self._table.move_to_end(key)
                    out[row] = vector
            self.hits += len(items) - sum(len(rows) for rows in missing.values())
            self.misses += len(missing)
        if not missing:
            return out
        matrix = embedder.embed([items[rows[0]] for rows in missing.values()])
        for (_, rows), vector in zip(missing.items(), matrix, strict=True):
            out[rows] = vector
        self._store(list(missing), matrix)
        return out

    def _store(self, keys: list[tuple[str, bytes]], matrix: NDArray[np.float32]) -> None:
        if not self.size:
            return
        with self._lock:
            for key, vector in zip(keys[-self.size :], matrix[-self.size :], strict=True):
                kept = vector.copy()
                kept.flags.writeable = False
                self._table[key] = kept
                self._table.move_to_end(key)
            while len(self._table) > self.size:
                self._table.popitem(last=False)
