"""``MemstrataStore``: a LangGraph ``BaseStore`` whose items are workspace files.

Install with ``pip install 'memstrata[integrations]'`` (it needs ``langgraph``).

    from memstrata.integrations.langgraph import MemstrataStore

    store = MemstrataStore.open("~/agent-memory")        # or MemstrataStore(memory)
    store.put(("users", "u1"), "prefs", {"food": "pizza"})
    store.search(("users",), query="what food do they like?")

How LangGraph's model maps onto memstrata:

* a **namespace** is one markdown file of the workspace's semantic layer,
  ``semantic/langgraph.<labels>.<hash>.md`` (``integrations.kv_files``), with
  one section per **key** holding the value as a JSON block: a person can
  read and edit it, and it is searched like every other memory file. The
  store's **group** is the memstrata group it was opened on (one workspace
  per tenant: ``MemstrataStore.open(path, group="alice")``).
* ``put``/``delete`` are journaled document writes (``Memory.documents``):
  durable (fsynced) when they return, decided under the workspace lock on the
  file as it is then (two processes never lose each other's keys), and
  redacted: every string of a value passes ``capture.secrets`` first, so a
  secret never reaches disk (the value read back holds the redaction mark).
  Consecutive puts of one batch to one namespace are one write.
* ``search`` with a ``query`` is memstrata's hybrid search (BM25 and the
  local embedder, fused) over the namespace files; items it ranks come first
  by score, then the other items that match (``score`` None), as
  LangGraph's in-memory store does. ``filter`` takes LangGraph's operators.
  ``index=False`` keeps an item out of the ranking; a list of fields is taken
  as the whole value (memstrata indexes whole blocks).
* Ops of one ``batch`` run in order (a get after a put sees it); results are
  in the order of the ops. ``abatch`` runs ``batch`` on a worker thread.
* TTLs are not supported (``supports_ttl`` is False): LangGraph refuses a
  ``ttl`` before it reaches the store.
* Errors are memstrata's (``MemstrataError``) or LangGraph's
  ``InvalidNamespaceError`` for a bad namespace.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from ..capture.secrets import redact_value
from ..errors import InvalidInput, NotFound
from ..memory import Memory
from ..memory.search import MAX_K
from ..model import now
from . import kv_files as files
from . import require

require("langgraph.store.base")

from langgraph.store.base import (  # noqa: E402
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

__all__ = ["MemstrataStore"]

log = logging.getLogger("memstrata")


class MemstrataStore(BaseStore):
    """A LangGraph store on one memstrata workspace (see the module)."""

    supports_ttl = False

    def __init__(self, memory: Memory, *, owns: bool = False) -> None:
        self.memory = memory
        self._owns = owns
        self._lock = threading.Lock()

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], group: str | None = None, **settings: Any
    ) -> MemstrataStore:
        """A store on the workspace at ``path`` (``group``: that tenant), which it
        closes on ``close()``."""
        return cls(Memory.open(path, group, **settings), owns=True)

    def close(self) -> None:
        """Close the workspace if this store opened it."""
        if self._owns:
            self.memory.close()

    def __enter__(self) -> MemstrataStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- BaseStore ------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order; one result per op (``None`` for a put)."""
        todo = list(ops)
        for op in todo:
            validate_op_namespace(op)
        with self._lock:
            return self._run(todo)

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """``batch`` on a worker thread."""
        return await asyncio.to_thread(self.batch, list(ops))

    # -- ops ----------------------------------------------------------------------------

    def _run(self, ops: list[Op]) -> list[Result]:
        results: list[Result] = []
        pending: dict[tuple[str, ...], list[PutOp]] = {}
        for op in ops:
            if isinstance(op, PutOp):
                pending.setdefault(tuple(op.namespace), []).append(op)
                results.append(None)
                continue
            self._write(pending)
            if isinstance(op, GetOp):
                results.append(self._get(op))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise InvalidInput(f"unknown store operation {type(op).__name__}")
        self._write(pending)
        return results

    def _get(self, op: GetOp) -> Item | None:
        parsed = self._read(files.file_of(tuple(op.namespace)))
        entry = parsed.entries.get(op.key) if parsed else None
        return None if entry is None else _item(tuple(op.namespace), entry)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        candidates: list[tuple[str, files.Parsed, files.Entry]] = []
        for rel, parsed in self._namespaces():
            if parsed.namespace[: len(prefix)] != prefix:
                continue
            for entry in parsed.entries.values():
                if files.matches_filter(entry.value, op.filter):
                    candidates.append((rel, parsed, entry))
        scores = self._scores(op, candidates) if op.query else {}
        ranked = sorted(
            (c for c in candidates if (c[0], c[2].key) in scores),
            key=lambda c: -scores[(c[0], c[2].key)],
        )
        rest = [c for c in candidates if (c[0], c[2].key) not in scores]
        window = (ranked + rest)[op.offset : op.offset + op.limit]
        return [
            _search_item(parsed.namespace, entry, scores.get((rel, entry.key)))
            for rel, parsed, entry in window
        ]

    def _scores(
        self, op: SearchOp, candidates: list[tuple[str, files.Parsed, files.Entry]]
    ) -> dict[tuple[str, str], float]:
        """The hybrid search's best score of each candidate it found for the query."""
        if not candidates or not op.query or not op.query.strip():
            return {}
        wanted = {(rel, entry.key) for rel, _, entry in candidates if entry.indexed}
        by_file = {rel: parsed for rel, parsed, _ in candidates}
        k = min(MAX_K, max(100, 10 * (op.offset + op.limit)))
        scores: dict[tuple[str, str], float] = {}
        for hit in self.memory.search(op.query, k=k, layers=["semantic"]):
            parsed = by_file.get(hit.path)
            key = parsed.key_at(hit.line_start, hit.line_end) if parsed else None
            if key is not None and (hit.path, key) in wanted:
                scores[(hit.path, key)] = max(scores.get((hit.path, key), hit.score), hit.score)
        return scores

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {parsed.namespace for _, parsed in self._namespaces() if parsed.entries}
        conditions = op.match_conditions or ()
        chosen = [ns for ns in found if all(_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # -- files --------------------------------------------------------------------------

    def _write(self, pending: dict[tuple[str, ...], list[PutOp]]) -> None:
        """Apply the pending puts, one journaled write per namespace file."""
        for namespace, puts in pending.items():
            rel = files.file_of(namespace)

            def edit(
                old: str | None,
                namespace: tuple[str, ...] = namespace,
                puts: list[PutOp] = puts,
            ) -> str | None:
                return _applied(namespace, old, puts)

            # NotFound: only deletes, in a namespace that has no file: nothing to do
            with contextlib.suppress(NotFound):
                self.memory.documents.edit_file(rel, edit)
        pending.clear()

    def _read(self, rel: str) -> files.Parsed | None:
        data = self.memory.workspace.volume.read(rel)
        if data is None:
            return None
        parsed = files.parse(data.decode("utf-8", "replace"))
        if parsed is not None and parsed.skipped:
            log.warning("%s: unreadable item(s) left out: %s", rel, ", ".join(parsed.skipped))
        return parsed

    def _namespaces(self) -> list[tuple[str, files.Parsed]]:
        """Every namespace file of the workspace, read, in path order."""
        out = []
        for rel, _ in self.memory.workspace.volume.list(files.FOLDER):
            if files.is_store_file(rel):
                parsed = self._read(rel)
                if parsed is not None:
                    out.append((rel, parsed))
        return out


def _applied(namespace: tuple[str, ...], old: str | None, puts: list[PutOp]) -> str | None:
    """The file text after ``puts`` (``None``: no item is left, delete the file)."""
    parsed = files.parse(old) if old is not None else None
    if old is not None and (parsed is None or parsed.namespace != namespace):
        raise InvalidInput(f"{files.file_of(namespace)} is not this namespace's store file")
    entries = dict(parsed.entries) if parsed else {}
    for put in puts:
        if put.value is None:
            entries.pop(put.key, None)
            continue
        value, _ = redact_value(dict(put.value))
        stamp = now()
        previous = entries.get(put.key)
        if previous is not None and stamp <= previous.updated_at:
            stamp = previous.updated_at + timedelta(microseconds=1)
        created = previous.created_at if previous else stamp
        entries[put.key] = files.Entry(put.key, value, created, stamp, put.index is not False)
    if not entries:
        return None
    return files.render(namespace, list(entries.values()))


def _item(namespace: tuple[str, ...], entry: files.Entry) -> Item:
    return Item(
        value=entry.value,
        key=entry.key,
        namespace=namespace,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
    )


def _search_item(namespace: tuple[str, ...], entry: files.Entry, score: float | None) -> SearchItem:
    return SearchItem(
        namespace, entry.key, entry.value, entry.created_at, entry.updated_at, score=score
    )


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))
