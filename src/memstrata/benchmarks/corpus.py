"""A synthetic corpus of N chunks for search benchmarks at scale (1M chunks
cannot be embedded with the real model on two cores): text that reads like
chat turns, vectors with the neighbourhood structure of embeddings, and
queries that relate to both. Deterministic for a seed; made in slices, so
a million chunks never need to be held at once.

* **Text**: sentences walked from a bigram chain of English prose (the words
  of Python's own documentation, ``pydoc_data.topics``: a Zipf distribution,
  function words included), 8-24 words, with two words put in: one of the
  chunk's topic's words and an entity name (50,000 made-up names, Zipf
  distributed, a topic's own five names most of the time) -- the long tail of
  rare words a real memory has (people, projects, identifiers).
* **Vectors**: NOT embeddings of the text. Unit vectors drawn around
  ``CLUSTERS`` random centres: ``centre + 0.8 * B_c z + 0.3 * e`` normalised,
  with ``B_c`` a random 12-dimensional basis of the cluster and ``e``
  isotropic noise -- neighbours are decided in a low-dimensional space, as
  with real embeddings (isotropic noise alone would make every point of a
  cluster about as near as every other, and the "exact top 10" a lottery).
  Cosine within a cluster ~0.6, between clusters ~0.
* **Chunks**: transcript turns (a file of ``TURNS_PER_FILE`` turns is one
  session, the speaker its title), every 20th file a semantic note file.
* **Queries**: a question naming a topic word and an entity of a random
  cluster, its vector a fresh draw from that cluster.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from ..index.chunks import Chunk

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CLUSTERS", "DIM", "TURNS_PER_FILE", "Corpus", "Query"]

DIM = 384
CLUSTERS = 2000
TURNS_PER_FILE = 200
VECTOR_BLOCK = 2000
SUBSPACE = 12
ENTITIES = 50_000
SPEAKERS = ["Dilnoza", "Sardor", "Aziz", "Malika", "Timur", "Olga", "Wei", "Lena", "Omar", "Nadia"]
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"] + ["sh", "ch", "an", "or", "el"]
_START = datetime(2024, 1, 1, tzinfo=UTC)
_ASK = ["What did {s} say about {t} and {e}?", "When did {s} mention {e} and the {t}?",
        "Where is the {t} that {e} {w}?", "How did {e} handle {t} {w}?"]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Query:
    text: str
    cluster: int


class Corpus:
    """``count`` chunks (see the module); every slice the same for a seed."""

    def __init__(self, count: int, seed: int = 7) -> None:
        import numpy as np

        self.count = count
        self.seed = seed
        rng = np.random.default_rng(seed)
        self._words, self._next, self._cum = _chain()
        names = _names(rng, ENTITIES + 5000)
        self._entities = names[:ENTITIES]
        topic_pool = names[ENTITIES:]
        ranks = np.arange(1, ENTITIES + 1, dtype=np.float64)
        weights = ranks**-1.1
        self._entity_p = weights / weights.sum()
        self._topics = rng.choice(len(topic_pool), (CLUSTERS, 3))
        self._topic_words = topic_pool
        self._own = rng.choice(ENTITIES, (CLUSTERS, 5), p=self._entity_p)
        centres = rng.standard_normal((CLUSTERS, DIM)).astype(np.float32)
        self._centres = centres / np.linalg.norm(centres, axis=1, keepdims=True)
        basis = rng.standard_normal((CLUSTERS, DIM, SUBSPACE), dtype=np.float32)
        self._basis = basis / np.float32(np.sqrt(DIM))  # columns of norm ~1
        self._cluster_of = rng.integers(0, CLUSTERS, count)

    # -- chunks ----------------------------------------------------------------------

    def chunks(self, start: int, stop: int) -> list[Chunk]:
        """Chunks ``start`` .. ``stop - 1`` (their file and place follow from the
        number); each the same whatever the slice (made by whole files)."""
        out: list[Chunk] = []
        for first in range(start - start % TURNS_PER_FILE, stop, TURNS_PER_FILE):
            made = self._file_chunks(first, min(first + TURNS_PER_FILE, self.count))
            out += made[max(start - first, 0) : stop - first]
        return out

    def _file_chunks(self, start: int, stop: int) -> list[Chunk]:
        import numpy as np

        rng = np.random.default_rng((self.seed, start, stop))
        texts = self._sentences(rng, stop - start)
        clusters = self._cluster_of[start:stop]
        topics = self._topics[clusters, rng.integers(0, 3, stop - start)]
        own = rng.random(stop - start) < 0.7
        entities = np.where(
            own,
            self._own[clusters, rng.integers(0, 5, stop - start)],
            rng.choice(ENTITIES, stop - start, p=self._entity_p),
        )
        out = []
        for offset, words in enumerate(texts):
            number = start + offset
            at = int(rng.integers(0, len(words) + 1))
            words.insert(at, str(self._topic_words[topics[offset]]))
            words.insert(
                int(rng.integers(0, len(words) + 1)), str(self._entities[entities[offset]]).title()
            )
            out.append(self._chunk(number, " ".join(words).capitalize() + "."))
        return out

    def _chunk(self, number: int, text: str) -> Chunk:
        file, place = divmod(number, TURNS_PER_FILE)
        when = _START + timedelta(minutes=number)
        if file % 20 == 19:
            return Chunk(f"semantic/notes-{file:06d}.md", "semantic", place + 1, place + 1, text,
                         title=f"Notes {file}", created_at=when, ref=f"n{number}")  # fmt: skip
        speaker = SPEAKERS[(file + place) % len(SPEAKERS)]
        return Chunk(f"sessions/bench-{file:06d}.jsonl", "transcripts", place + 1, place + 1, text,
                     title=speaker, session=f"bench-{file:06d}", created_at=when,
                     source="user" if place % 2 == 0 else "agent", ref=f"t{number}#m")  # fmt: skip

    def files(self, start: int, stop: int) -> Iterator[tuple[str, list[Chunk]]]:
        """The chunks ``start`` .. ``stop - 1`` grouped by file, in order."""
        for first in range(start, stop, TURNS_PER_FILE):
            chunks = self.chunks(first, min(first + TURNS_PER_FILE, stop))
            yield chunks[0].path, chunks

    def _sentences(self, rng: np.random.Generator, count: int) -> list[list[str]]:
        """``count`` walks of 8-24 words on the bigram chain, as word lists."""
        import numpy as np

        lengths = rng.integers(8, 25, count)
        current = rng.integers(0, len(self._words), count)
        steps = [current]
        followers, cum = self._next, self._cum
        for _ in range(int(lengths.max()) - 1):
            known = cum[current + 1] - cum[current]
            picked = cum[current] + (rng.random(count) * known).astype(np.int64)
            restart = rng.integers(0, len(self._words), count)
            current = np.where(
                known > 0, followers[np.minimum(picked, len(followers) - 1)], restart
            )
            steps.append(current)
        matrix = np.stack(steps, axis=1)
        words = self._words
        return [[words[w] for w in row[:n]] for row, n in zip(matrix, lengths, strict=True)]

    # -- vectors ---------------------------------------------------------------------

    def vectors(self, start: int, stop: int) -> np.ndarray:
        """The unit vectors of chunks ``start`` .. ``stop - 1`` (float32); each
        the same whatever the slice (drawn by blocks of ``VECTOR_BLOCK``)."""
        import numpy as np

        parts = []
        for first in range(start - start % VECTOR_BLOCK, stop, VECTOR_BLOCK):
            end = min(first + VECTOR_BLOCK, self.count)
            block = self._draw(self._cluster_of[first:end], (self.seed, 1, first, end))
            parts.append(block[max(start - first, 0) : stop - first])
        return np.concatenate(parts) if parts else np.empty((0, DIM), dtype=np.float32)

    def _draw(self, clusters: np.ndarray, key: tuple[int, ...]) -> np.ndarray:
        import numpy as np

        rng = np.random.default_rng(key)
        out = np.empty((len(clusters), DIM), dtype=np.float32)
        for first in range(0, len(clusters), 4096):
            part = clusters[first : first + 4096]
            z = rng.standard_normal((len(part), SUBSPACE), dtype=np.float32) / np.sqrt(SUBSPACE)
            spread = np.einsum("nds,ns->nd", self._basis[part], z)
            noise = rng.standard_normal((len(part), DIM), dtype=np.float32) / np.sqrt(DIM)
            drawn = self._centres[part] + np.float32(0.8) * spread + np.float32(0.3) * noise
            out[first : first + len(part)] = drawn / np.linalg.norm(drawn, axis=1, keepdims=True)
        return out

    # -- queries ---------------------------------------------------------------------

    def queries(self, count: int, seed: int = 11) -> tuple[list[Query], np.ndarray]:
        """``count`` questions and their vectors (each near its cluster's chunks)."""
        import numpy as np

        rng = np.random.default_rng((self.seed, seed))
        clusters = rng.integers(0, CLUSTERS, count)
        common = [w for w in self._words[50:400] if len(w) > 3]
        out = []
        for cluster in clusters:
            ask = _ASK[int(rng.integers(0, len(_ASK)))]
            out.append(Query(ask.format(
                s=SPEAKERS[int(rng.integers(0, len(SPEAKERS)))],
                t=self._topic_words[self._topics[cluster, int(rng.integers(0, 3))]],
                e=str(self._entities[self._own[cluster, int(rng.integers(0, 5))]]).title(),
                w=common[int(rng.integers(0, len(common)))],
            ), int(cluster)))  # fmt: skip
        return out, self._draw(clusters, (self.seed, 2, seed))


def _names(rng: np.random.Generator, count: int) -> list[str]:
    """``count`` distinct made-up words of 2-4 syllables."""
    out: dict[str, None] = {}
    while len(out) < count:
        parts = rng.choice(len(_SYLLABLES), (count, 4))
        sizes = rng.integers(2, 5, count)
        for row, size in zip(parts, sizes, strict=True):
            out.setdefault("".join(_SYLLABLES[s] for s in row[:size]))
            if len(out) == count:
                break
    return list(out)


def _chain() -> tuple[list[str], np.ndarray, np.ndarray]:
    """The bigram chain of the prose: words, and for each word its followers
    (``next[cum[w]:cum[w+1]]``, one entry per occurrence)."""
    import pydoc_data.topics

    import numpy as np

    text = " ".join(pydoc_data.topics.topics.values())
    tokens = [word.lower() for word in re.findall(r"[A-Za-z]{1,20}", text)]
    words = sorted(set(tokens))
    number = {word: n for n, word in enumerate(words)}
    ids = np.array([number[w] for w in tokens], dtype=np.int64)
    order = np.argsort(ids[:-1], kind="stable")
    followers = ids[1:][order]
    counts = np.bincount(ids[:-1], minlength=len(words))
    cum = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return words, followers, cum
