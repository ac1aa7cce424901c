"""The search calls of ``Memory`` (issue 5): ``search``, ``reindex``, ``gate``,
on top of ``index`` (the derived index) and ``Engine`` (store and hooks).

* **Derived and lazy.** The index (``.memstrata/index.sqlite``) is opened at
  the first search. Every search first brings it up to date: files written
  through this ``Memory`` (its write hooks mark them) are indexed at once;
  every searchable file is checked by size and mtime, and by SHA-256 when
  those changed, at the first search after open and then at most every
  ``RESCAN_SECONDS`` (so hand edits and other processes' writes are found);
  an append-only file that only grew (transcripts, daily notes) has only its
  new lines chunked. Long-term facts come from the RAM store: those the
  engine's change log names since the last sync (the whole store is compared
  only at the first sync), so a hand edit of MEMORY.md taken in at open is
  searchable and a write costs the index only the facts it touched.
* **Embeddings** are computed in batches for chunks that have none, before
  the search that needs them. If the embedder cannot load, search runs on
  BM25 alone and says so: a warning in the log (once), a notice in
  ``status()``, and ``index_status()["embedder"]`` names the reason.
* Searches of one ``Memory`` are serialised (one index connection); they
  never take the workspace's writer lock.
* **Several processes** share the index file: a sync first takes in what the
  others indexed (``Index.refresh``) and the store what they wrote; facts are
  indexed under the index's write lock from the store as it is then, so the
  last process to index a fact indexes its latest state. An index found
  damaged is replaced by an empty one and the sync runs again on it.
* **Bounded work.** ``k`` is a whole number >= 1; above ``MAX_K`` it is
  clamped to ``MAX_K`` (a search never ranks more than that). A query longer
  than ``MAX_QUERY_CHARS`` is refused (``InvalidInput``).
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import hashlib
import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from ..context.tokens import EstimateCounter
from ..errors import BackendUnavailable, InvalidInput
from ..index import expand, windows
from ..index.chunks import Chunk, chunk_file, fact_chunks, layer_of
from ..index.chunks import searchable_files as list_searchable
from ..index.hybrid import Filters, Hit, Vectors, Weights, hybrid, vectors_in_ram
from ..index.lexical import Lexical
from ..index.protocol import Index as IndexProtocol
from ..index.sqlite import FileState, Index, IndexCorrupt, Stale
from ..index.why import Why
from ..model import Item, WriteEvent, now, valid_text
from ..storage.layers import SEARCHABLE
from .citations import FactLines
from .engine import Engine
from .queries import distinct, prompt_tail, session_list
from .shared import GlobalMemory, interleaved

if TYPE_CHECKING:
    import numpy as np

    from ..embed import Embedder
    from ..embed.cache import VectorCache

__all__ = ["IndexOpener", "IndexReport", "Searcher"]

log = logging.getLogger("memstrata")

RESCAN_SECONDS = 10.0
MAX_K = 1000
MAX_QUERY_CHARS = 4000
EMBED_BATCH = 256
_STALE_TRIES = 5  # an append decided again at most this often, then Conflict
_APPEND_ONLY = ("transcripts", "daily_notes")
LAYERS = SEARCHABLE  # storage.layers.LAYERS: the layers with files

# What a search looks in unless asked for more: not the files that are in every
# prompt anyway (core, working memory). The session state is: its decisions and
# specific values are what an agent looks up ("which port did we pick?"), and
# an agent with many sessions does not have every one in its prompt.
DEFAULT_LAYERS = LAYERS - {"core", "working"}

# Layers found by BM25 alone: none. Daily notes and summaries/ are embedded
# like every searchable layer ("veterinarian appointment for my dog" finds
# "My golden retriever Rex needs his shots" in a daily note); a body the batch
# already embeds (a repeated exchange) is embedded once.
UNEMBEDDED: frozenset[str] = frozenset()

Progress = Callable[[str, int, int], None]  # (stage, done, total)


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What a sync or ``reindex`` did."""

    files_indexed: int
    files_removed: int
    chunks: int
    vectors: int
    embedder: str
    seconds: float

    def to_dict(self) -> dict[str, Any]:
        return {
            "files_indexed": self.files_indexed,
            "files_removed": self.files_removed,
            "chunks": self.chunks,
            "vectors": self.vectors,
            "embedder": self.embedder,
            "seconds": round(self.seconds, 3),
        }


class Searcher:
    """Hybrid search over every searchable file of the workspace (a part of
    ``Memory``: it holds the engine and hears of every write through it)."""

    def __init__(
        self,
        engine: Engine,
        open_index: IndexOpener | None = None,
        shared: GlobalMemory | None = None,
    ) -> None:
        self.engine = engine
        # The backend: by default the workspace's SQLite file; any ``Index``
        # (``index.protocol``) will do, e.g. a test's in-memory one.
        self._open_index = open_index or _open_sqlite
        self._search_state: _SearchState | None = None
        self._global = shared or GlobalMemory(engine.workspace)  # one per Memory: the facade's
        engine.events.subscribe(self._mark_dirty)
        engine.events.on_close(closed=self.close)

    # -- public ------------------------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        layers: Iterable[str] | None = None,
        session: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        source: str | None = None,
        include_superseded: bool = False,
        weights: Weights | None = None,
        why: Why | None = None,
        sessions: Iterable[str] | None = None,
    ) -> builtins.list[Hit]:
        """The ``k`` best chunks for ``query`` (BM25 and vectors fused), each with
        its path, line range, snippet, score, layer and times. ``layers``
        defaults to every layer but those in every prompt (core, working);
        the session state is searched. ``k`` above ``MAX_K`` is taken as
        ``MAX_K``. ``session`` keeps one session's chunks, ``sessions`` those
        of any of a list of sessions (NanoClaw searches a list of chats).
        ``why`` (an ``index.why.Why``) is filled with why each hit ranked
        where it did."""
        if not isinstance(query, str) or not query.strip():
            raise InvalidInput("the query must be a non-empty string")
        if len(query) > MAX_QUERY_CHARS:
            raise InvalidInput(
                f"the query is {len(query)} characters; the limit is {MAX_QUERY_CHARS}"
            )
        query = valid_text(query)
        if isinstance(k, bool) or not isinstance(k, int) or k < 1:
            raise InvalidInput(f"k must be a whole number >= 1, not {k!r}")
        k = min(k, MAX_K)
        wanted = DEFAULT_LAYERS if layers is None else frozenset(layers)
        if wanted is not None and wanted - LAYERS:
            unknown = ", ".join(sorted(wanted - LAYERS))
            raise InvalidInput(f"unknown layer {unknown}; known: {', '.join(sorted(LAYERS))}")
        chosen = session_list(sessions)
        filters = Filters(
            wanted, session, since, until, source, None, include_superseded, sessions=chosen
        )
        self.engine.check_open()
        state = self._searcher()
        with state.lock:
            self._sync(state)
            embed = self._query_embedder(state)
            embed = functools.lru_cache(maxsize=1)(embed) if embed else None  # asked again
            return distinct(
                lambda asked: hybrid(
                    state.index,
                    query,
                    asked,
                    filters,
                    embed=embed,
                    vectors=state.vectors,
                    lexical=state.lexical,
                    weights=self._weights(weights),
                    now=now(),
                    line_of=state.fact_lines.lines_of(self.engine),
                    why=why,
                ),
                k,
                why,
            )

    def reindex(
        self, *, full: bool = False, progress: Progress | None = None, warm: bool = False
    ) -> IndexReport:
        """Bring the index up to date with every file now (``full``: drop it and
        rebuild it from the files); ``warm``: also build what searches keep in
        RAM (the BM25 postings, the vector matrix), for a process that will
        search next (a server), so that its first search does not."""
        self.engine.check_open()
        state = self._searcher()
        with state.lock:
            if full:
                with contextlib.suppress(IndexCorrupt):  # then it was replaced by an empty one
                    state.index.drop()
                state.facts_generation = None  # compare the whole store again
            state.last_scan = 0.0
            report = self._sync(state, progress=progress)
            if warm:
                state.lexical.warm(state.index)
                if expand.weight_for(self.engine.settings.embedder):
                    expand.warm()  # the list of nearest words BM25's query expansion reads
                if state.embedder is not None and vectors_in_ram(state.index, state.embedder.dim):
                    state.vectors.warm(state.index, state.embedder.dim)
            return report

    def index_status(self) -> dict[str, Any]:
        """Index size, chunks, vectors, embedder (and the weight of a turn's
        window in its vector), and files changed since the last sync (without
        syncing)."""
        self.engine.check_open()
        state = self._searcher()
        with state.lock:
            self._embedder(state)  # so that the status tells whether it loads
            stale = sum(1 for _ in self._changed_files(state))
            status = state.index.status()
            return {
                "path": status.location,
                "bytes": status.bytes,
                "chunks": status.chunks,
                "vectors": status.vectors,
                "embedder": state.embedder_name,
                # a transcript turn's vector: its own and its window's, by this weight
                "context_vectors": self._window_weight() if state.embedder is not None else 0.0,
                "stale_files": stale,
            }

    def gate(self, prompt: str, budget_tokens: int, *, k: int = 20) -> builtins.list[Hit]:
        """Retrieval-gated injection (seed 001): the memory chunks most relevant to
        the tail of ``prompt`` (chat-log noise stripped), the group's and the
        ``global`` group's (layer ``global``) in turn, best first, within
        ``budget_tokens`` (len/4 per chunk)."""
        if not isinstance(prompt, str):
            raise InvalidInput(f"prompt must be a string, not {type(prompt).__name__}")
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int):
            raise InvalidInput("budget_tokens must be a whole number")
        tail = prompt_tail(prompt)
        if not tail or budget_tokens <= 0:
            return []
        hits = self.search(tail, k=k, layers=("long_term", "semantic", "notebook", "lessons"))
        hits = interleaved(hits, self._global.hits(tail, k))  # seed 001: group + global
        chosen, used = [], 0
        counter = EstimateCounter()
        for hit in hits:
            cost = max(counter.count(hit.text), 1)
            if used + cost > budget_tokens:
                continue
            chosen.append(hit)
            used += cost
        return chosen

    def close(self) -> None:
        """Let go of the index (the engine calls it after its closing checkpoint)."""
        state, self._search_state = self._search_state, None
        if state is not None:
            state.index.close()

    # -- write events --------------------------------------------------------------

    def files_changed(self, paths: Iterable[str]) -> None:
        """Files edited by someone else (``live.LiveFiles``): indexed at the next
        search, as the files this process writes are."""
        state = self._search_state
        if state is not None:
            with state.dirty_lock:
                state.dirty.update(paths)

    def _mark_dirty(self, events: tuple[WriteEvent, ...]) -> None:
        state = self._search_state
        if state is not None:
            with state.dirty_lock:
                state.dirty.update(event.path for event in events if event.path)

    # -- internals -----------------------------------------------------------------

    def _searcher(self) -> _SearchState:
        if self._search_state is None:
            self._search_state = _SearchState(self._open_index(self.engine))
        return self._search_state

    def _sync(self, state: _SearchState, progress: Progress | None = None) -> IndexReport:
        try:
            return self._sync_once(state, progress)
        except IndexCorrupt:  # it was replaced by an empty index: fill that one
            return self._sync_once(state, progress)

    def _sync_once(self, state: _SearchState, progress: Progress | None) -> IndexReport:
        started = time.perf_counter()
        index = state.index
        index.refresh()  # what other processes indexed
        if index.resets != state.resets:  # emptied or loaded again: compare everything
            state.resets = index.resets
            state.facts_generation = None
            state.last_scan = 0.0
        with state.dirty_lock:
            dirty, state.dirty = state.dirty, set()
        try:
            return self._sync_files(state, dirty, progress, started)
        except BaseException:
            with state.dirty_lock:  # not indexed: the next sync tries them again
                state.dirty |= dirty
            raise

    def _sync_files(
        self, state: _SearchState, dirty: set[str], progress: Progress | None, started: float
    ) -> IndexReport:
        index = state.index
        indexed = removed = 0
        full_scan = time.monotonic() - state.last_scan >= RESCAN_SECONDS
        paths = self._changed_files(state) if full_scan else self._dirty_files(dirty)
        todo = list(paths)
        for number, (relative, present) in enumerate(todo, start=1):
            if progress is not None:
                progress("files", number, len(todo))
            if not present:
                index.replace(relative, [], None)
                removed += 1
            elif self._index_file(state, relative):
                indexed += 1
        if full_scan:
            state.last_scan = time.monotonic()
        self._sync_facts(state)
        vectors = self._embed_missing(state, progress)
        return IndexReport(
            indexed,
            removed,
            len(index.chunks),
            vectors,
            state.embedder_name,
            time.perf_counter() - started,
        )

    def _changed_files(self, state: _SearchState) -> Iterable[tuple[str, bool]]:
        """Every searchable file whose size or mtime differ from the index
        (``True``: to index), and every indexed file that is gone (``False``)."""
        seen = set()
        for relative, info in list_searchable(self.engine.workspace):
            seen.add(relative)
            known = state.index.files.get(relative)
            if known is None or (known.size, known.mtime_ns) != (info.size, info.mtime_ns):
                yield relative, True
        for relative in list(state.index.files):
            if relative not in seen:
                yield relative, False

    def _dirty_files(self, dirty: set[str]) -> Iterable[tuple[str, bool]]:
        volume = self.engine.workspace.volume
        for relative in sorted(dirty):
            if relative == "MEMORY.md" or layer_of(relative) is None:
                continue
            yield relative, volume.stat(relative) is not None

    def _index_file(self, state: _SearchState, relative: str) -> bool:
        """(Re)chunk one file; False when its content had not changed. An append
        decided on what another process has re-indexed meanwhile is decided again."""
        for _ in range(_STALE_TRIES - 1):
            with contextlib.suppress(Stale):
                return self._index_file_once(state, relative)
        return self._index_file_once(state, relative)

    def _index_file_once(self, state: _SearchState, relative: str) -> bool:
        index = state.index
        volume = self.engine.workspace.volume
        info = volume.stat(relative)
        data = None if info is None else volume.read(relative)
        if info is None or data is None:
            index.replace(relative, [], None)
            return True
        known = index.files.get(relative)
        # one pass: the hash of what was indexed before, then of the whole file
        hashing = hashlib.sha256(data[: known.size] if known is not None else b"")
        before = hashing.hexdigest()
        hashing.update(data[known.size :] if known is not None else data)
        digest = hashing.hexdigest()
        fresh = FileState(len(data), info.mtime_ns, digest)
        if known is not None and known.sha256 == digest:
            index.replace(relative, [], fresh, append=True)
            return False
        layer = layer_of(relative)
        if (
            known is not None
            and layer in _APPEND_ONLY
            and len(data) > known.size
            and data[known.size - 1 : known.size] == b"\n"
            and before == known.sha256
        ):
            offset = data[: known.size].count(b"\n")
            tail = chunk_file(relative, data[known.size :])
            if layer == "daily_notes":
                tail = [c for c in tail if c.title]  # a tail without its heading: re-chunk
                if not tail:
                    index.replace(relative, chunk_file(relative, data), fresh)
                    return True
            moved = [_shift(chunk, offset) for chunk in tail]
            index.replace(relative, moved, fresh, append=True)
            return True
        index.replace(relative, chunk_file(relative, data), fresh)
        return True

    def _sync_facts(self, state: _SearchState) -> None:
        """Long-term items changed since the last sync, from the engine's change
        log of item ids; the whole store is compared with the index only at the
        first sync and after the store (or its log) or the index was started
        again. The store catches up with the journal under the index's write
        lock: a fact another process changes after that is indexed after this."""
        self.engine.refresh()
        with self.engine.state:
            if (state.facts_generation, state.facts_seen) == (
                self.engine.fact_generation,
                len(self.engine.fact_changes),
            ):
                return
        with state.index.transaction():
            self.engine.catch_up(repair=False)
            with self.engine.state:
                generation, seen = self.engine.fact_generation, len(self.engine.fact_changes)
                refs, changed = self._changed_facts(state)
            if refs:
                state.index.replace_refs("MEMORY.md", refs, fact_chunks(changed, {}))
        state.facts_generation, state.facts_seen = generation, seen  # once committed

    def _changed_facts(self, state: _SearchState) -> tuple[builtins.list[str], builtins.list[Item]]:
        """The refs to index again since the last sync, and the live items among them."""
        items = self.engine.store.items
        if state.facts_generation != self.engine.fact_generation:
            indexed = {c.ref: c for c in state.index.path_chunks("MEMORY.md") if c.ref}
            changed = [
                item
                for key, item in items.items()
                if (chunk := indexed.get(key)) is None
                or (chunk.text, chunk.title, chunk.live) != (item.text, item.category, item.is_live)
            ]
            return [item.id for item in changed] + [r for r in indexed if r not in items], changed
        touched = dict.fromkeys(self.engine.fact_changes[state.facts_seen :])
        return list(touched), [items[key] for key in touched if key in items]

    # -- embeddings ----------------------------------------------------------------

    def _embedder(self, state: _SearchState) -> Embedder | None:
        chosen = self.engine.settings.embedder
        if state.embedder is None and state.embedder_error is None:
            if not isinstance(chosen, str):  # the caller's object (embed.plugged_embedder)
                state.embedder, state.embedder_name = chosen, chosen.name
                return chosen
            if chosen == "none":
                state.embedder_error = state.embedder_name = "none (BM25 only, by setting)"
                return None
            try:
                from ..embed import load_embedder

                settings = self.engine.settings
                state.embedder = load_embedder(
                    chosen,
                    model=settings.embed_model,
                    tokenizer=settings.embed_tokenizer,
                )
                state.embedder_name = state.embedder.name
            except (BackendUnavailable, ImportError) as exc:
                state.embedder_error = str(exc)
                state.embedder_name = f"unavailable: {exc}"
                self.engine.notice(f"search runs on BM25 alone: {exc}")  # logged as a warning
        return state.embedder

    def _embed_missing(self, state: _SearchState, progress: Progress | None) -> int:
        embedder = self._embedder(state)
        index = state.index
        if embedder is None:
            return len(index.vectors)
        weight = self._window_weight()
        name = windows.model_name(embedder.name, weight)
        if index.vector_model not in (None, name):
            index.set_vectors(name, {})  # another model's vectors: drop them
        missing = {cid for cid in index.unembedded if index.chunks[cid].layer not in UNEMBEDDED}
        if weight and missing:
            # the turns whose next turn has just arrived: their window is new
            missing |= windows.stale_before(index, missing)
        todo = sorted(missing)
        if state.vector_cache is None:
            from ..embed.cache import VectorCache  # not at import: the CLI starts fast

            state.vector_cache = VectorCache()
        done = 0
        for start in range(0, len(todo), EMBED_BATCH):
            # a chunk another process removed meanwhile is gone from the mirror
            batch = [cid for cid in todo[start : start + EMBED_BATCH] if cid in index.chunks]
            texts = [index.chunks[c].body for c in batch]
            around = [windows.window_text(index, c) for c in batch] if weight else []
            extra = [(row, text) for row, text in enumerate(around) if text is not None]
            # repeated texts ("ok", "I see."), in the batch or seen before: embedded once
            matrix = state.vector_cache.embed(embedder, texts + [text for _, text in extra])
            if extra:  # the turn's vector and its window's, mixed (index.windows)
                own = matrix[: len(batch)].copy()
                rows = [row for row, _ in extra]
                own[rows] = windows.mix(own[rows], matrix[len(batch) :], weight)
                matrix = own
            index.set_vectors(name, {cid: matrix[row].tobytes() for row, cid in enumerate(batch)})
            done += len(batch)
            if progress is not None:
                progress("vectors", done, len(todo))
        return len(index.vectors)

    def _weights(self, weights: Weights | None) -> Weights:
        """``weights`` (or the defaults) with BM25's query expansion the
        embedder's when not given (``index.expand.weight_for``)."""
        weights = weights or Weights()
        if weights.expand is not None:
            return weights
        return replace(weights, expand=expand.weight_for(self.engine.settings.embedder))

    def _window_weight(self) -> float:
        """The weight of a transcript turn's window in its vector (``index.windows``)."""
        settings = self.engine.settings
        return windows.weight_for(settings.context_vectors, settings.embedder)

    def _query_embedder(self, state: _SearchState) -> Callable[[str], np.ndarray] | None:
        embedder = self._embedder(state)
        if embedder is None:
            return None

        def embed(text: str) -> np.ndarray:
            vector: np.ndarray = embedder.embed([text])[0]
            return vector

        return embed


IndexOpener = Callable[[Engine], IndexProtocol]


def _open_sqlite(engine: Engine) -> IndexProtocol:
    """The workspace's own index file (``.memstrata/index.sqlite`` in its
    folder on this machine); a workspace with no folder here (a database
    volume) needs the ``IndexOpener`` of its backend."""
    volume = engine.workspace.volume
    folder = volume.local
    if folder is None:
        raise BackendUnavailable(
            f"the workspace at {volume.where} has no folder on this machine for a search "
            "index file: open it with the index of its backend (open_index=...)"
        )
    index = Index(folder / ".memstrata" / "index.sqlite", read_only=engine.read_only)
    if index.rebuilt:
        log.info("memstrata: building the search index of %s", volume.where)
    return index


class _SearchState:
    """The open index of one ``Memory`` and what its syncs remember."""

    def __init__(self, index: IndexProtocol) -> None:
        self.index = index
        self.lock = threading.RLock()
        self.dirty_lock = threading.Lock()
        self.dirty: set[str] = set()
        self.last_scan = 0.0
        self.facts_generation: int | None = None  # of the engine's change log, when synced
        self.facts_seen = 0  # place in that log
        self.resets = index.resets  # of the index's mirror, when synced
        self.vectors = Vectors()
        self.lexical = Lexical()
        self.vector_cache: VectorCache | None = None  # texts embedded lately (embed.cache)
        self.embedder: Embedder | None = None
        self.embedder_error: str | None = None
        self.embedder_name = "not loaded yet"
        self.fact_lines = FactLines()  # MEMORY.md's line of each fact, for citations


def _shift(chunk: Chunk, offset: int) -> Chunk:
    return replace(chunk, line_start=chunk.line_start + offset, line_end=chunk.line_end + offset)
