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
  read and edit it, and it is searched like every other memory file.
* the **group** is the memstrata group the store was opened on
  (``MemstrataStore.open(path, group="alice")``), or, with ``groups=True``,
  the namespace's first label: ``("alice", "memories")`` lives in
  ``path/groups/alice`` (a label that is no group name is refused on write),
  so each tenant is a workspace of its own, as memstrata's groups are; a
  read of a group that does not exist creates nothing.
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
* Reads parse a namespace file again only when its size, mtime or inode
  changed (a hand edit is seen at the next call; one that keeps all three,
  within the file system's clock tick, is not).
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
import copy
import logging
import os
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from ..capture.secrets import redact_value
from ..errors import InvalidInput, NotFound
from ..memory import Memory
from ..memory.search import MAX_K
from ..model import now
from ..storage.access import Groups, check_group
from ..storage.volume import Stat
from ..storage.workspace import GROUP_NAME, Workspace
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
    """A LangGraph store on one memstrata workspace, or on one group per first
    namespace label (see the module)."""

    supports_ttl = False

    def __init__(self, memory: Memory, *, owns: bool = False) -> None:
        self.memory = memory
        self._places = _Places(memory, owns)
        self._lock = threading.Lock()
        # Namespace files as last read, by (workspace, path): read again when their Stat changes.
        self._read: dict[tuple[int, str], tuple[Stat, files.Parsed | None]] = {}

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        group: str | None = None,
        *,
        groups: bool = False,
        **settings: Any,
    ) -> MemstrataStore:
        """A store on the workspace at ``path`` (``group``: that tenant), which it
        closes on ``close()``. ``groups=True``: each namespace's first label is
        the group it lives in (``path/groups/<label>``, opened when first used)."""
        if groups and group is not None:
            raise InvalidInput("give group= or groups=True, not both")
        store = cls(Memory.open(path, group, **settings), owns=True)
        if groups:
            workspace = store.memory.workspace
            if workspace.url is not None:
                store.close()
                raise InvalidInput("groups=True needs a workspace folder, not a database")
            store._places = _Places(store.memory, True, Path(workspace.root), settings)
        return store

    def close(self) -> None:
        """Close the workspaces this store opened."""
        self._places.close()
        self._read.clear()

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
        namespace = tuple(op.namespace)
        memory = self._places.of(namespace, create=False)
        rel = files.file_of(namespace)
        stat = memory.workspace.volume.stat(rel) if memory else None
        parsed = self._parsed(memory, rel, stat) if memory and stat else None
        entry = parsed.entries.get(op.key) if parsed else None
        return None if entry is None else _item(namespace, entry)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        found = [f for f in self._files(prefix) if f.parsed.namespace[: len(prefix)] == prefix]
        candidates = [
            (number, entry)
            for number, file in enumerate(found)
            for entry in file.parsed.entries.values()
            if files.matches_filter(entry.value, op.filter)
        ]
        scores = _scores(op, found, candidates) if op.query else {}
        ranked = sorted(
            (c for c in candidates if (c[0], c[1].key) in scores),
            key=lambda c: -scores[(c[0], c[1].key)],
        )
        rest = [c for c in candidates if (c[0], c[1].key) not in scores]
        window = (ranked + rest)[op.offset : op.offset + op.limit]
        return [
            _search_item(found[number].parsed.namespace, entry, scores.get((number, entry.key)))
            for number, entry in window
        ]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        found = {file.parsed.namespace for file in self._files(()) if file.parsed.entries}
        conditions = op.match_conditions or ()
        chosen = [ns for ns in found if all(_matches(c, ns) for c in conditions)]
        if op.max_depth is not None:
            chosen = list({ns[: op.max_depth] for ns in chosen})
        return sorted(chosen)[op.offset : op.offset + op.limit]

    # -- files --------------------------------------------------------------------------

    def _write(self, pending: dict[tuple[str, ...], list[PutOp]]) -> None:
        """Apply the pending puts, one journaled write per namespace file."""
        for namespace, puts in pending.items():
            creates = any(put.value is not None for put in puts)
            memory = self._places.of(namespace, create=creates)
            if memory is None:
                continue  # only deletes, in a group that does not exist: nothing to do

            def edit(
                old: str | None,
                namespace: tuple[str, ...] = namespace,
                puts: list[PutOp] = puts,
            ) -> str | None:
                return _applied(namespace, old, puts)

            # NotFound: only deletes, in a namespace that has no file: nothing to do
            with contextlib.suppress(NotFound):
                memory.documents.edit_file(files.file_of(namespace), edit)
        pending.clear()

    def _files(self, prefix: tuple[str, ...]) -> list[_File]:
        """Every namespace file of the workspaces that may hold ``prefix``, read."""
        out = []
        for memory in self._places.under(prefix):
            for rel, stat in memory.workspace.volume.list(files.FOLDER):
                if files.is_store_file(rel):
                    parsed = self._parsed(memory, rel, stat)
                    if parsed is not None:
                        out.append(_File(memory, rel, parsed))
        return out

    def _parsed(self, memory: Memory, rel: str, stat: Stat) -> files.Parsed | None:
        """The namespace file ``rel`` of ``memory`` as it is at ``stat``."""
        known = self._read.get((id(memory), rel))
        if known is not None and known[0] == stat:
            return known[1]
        parsed = _read(memory, rel)
        self._read[(id(memory), rel)] = (stat, parsed)
        return parsed


@dataclass(frozen=True, slots=True)
class _File:
    """A namespace file as read: its workspace, its path there, its contents."""

    memory: Memory
    rel: str
    parsed: files.Parsed


class _Places:
    """Which workspace holds a namespace: the one given, or (``root`` set) the
    group named by the namespace's first label, opened when first needed."""

    def __init__(
        self,
        memory: Memory,
        owns: bool,
        root: Path | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        self.memory, self.owns, self.root = memory, owns, root
        self.settings = settings or {}
        self.opened: dict[str, Memory] = {}

    def of(self, namespace: tuple[str, ...], *, create: bool) -> Memory | None:
        """The workspace of ``namespace`` (None: its group does not exist and
        ``create`` is false)."""
        if self.root is None:
            return self.memory
        group = namespace[0] if namespace else ""
        if not GROUP_NAME.fullmatch(group):
            if create:
                check_group(group)  # raises InvalidInput, naming the rule
            return None
        if group not in self.opened:
            if not create and not Workspace.locate(self.root, group).exists():
                return None
            self.opened[group] = Memory.open(self.root, group, **self.settings)
        return self.opened[group]

    def under(self, prefix: tuple[str, ...]) -> list[Memory]:
        """The workspaces that may hold a namespace starting with ``prefix``."""
        if self.root is None:
            return [self.memory]
        if prefix and prefix[0] != "*":
            found = self.of(prefix, create=False)
            return [found] if found else []
        names = Groups(self.root, "main").names()
        return [memory for name in names if (memory := self.of((name,), create=False))]

    def close(self) -> None:
        for memory in self.opened.values():
            memory.close()
        self.opened.clear()
        if self.owns:
            self.memory.close()


def _read(memory: Memory, rel: str) -> files.Parsed | None:
    data = memory.workspace.volume.read(rel)
    if data is None:
        return None
    parsed = files.parse(data.decode("utf-8", "replace"))
    if parsed is not None and parsed.skipped:
        log.warning("%s: unreadable item(s) left out: %s", rel, ", ".join(parsed.skipped))
    return parsed


def _scores(
    op: SearchOp, found: list[_File], candidates: list[tuple[int, files.Entry]]
) -> dict[tuple[int, str], float]:
    """The hybrid search's best score of each candidate it found for the query
    (one search per workspace), keyed by (file number, key)."""
    if not candidates or not op.query or not op.query.strip():
        return {}
    wanted = {(number, entry.key) for number, entry in candidates if entry.indexed}
    numbers = {(id(file.memory), file.rel): number for number, file in enumerate(found)}
    memories = {id(file.memory): file.memory for file in found}
    k = min(MAX_K, max(100, 10 * (op.offset + op.limit)))
    scores: dict[tuple[int, str], float] = {}
    for memory in memories.values():
        for hit in memory.search(op.query, k=k, layers=["semantic"]):
            number = numbers.get((id(memory), hit.path))
            key = (
                None
                if number is None
                else found[number].parsed.key_at(hit.line_start, hit.line_end)
            )
            if number is not None and key is not None and (number, key) in wanted:
                scores[(number, key)] = max(scores.get((number, key), hit.score), hit.score)
    return scores


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
    """The caller's own copy (the entry stays cached, unchanged)."""
    return Item(
        value=copy.deepcopy(entry.value),
        key=entry.key,
        namespace=namespace,
        created_at=entry.created_at,
        updated_at=entry.updated_at,
    )


def _search_item(namespace: tuple[str, ...], entry: files.Entry, score: float | None) -> SearchItem:
    value = copy.deepcopy(entry.value)  # the caller's own copy, as in _item
    return SearchItem(namespace, entry.key, value, entry.created_at, entry.updated_at, score=score)


def _matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[-len(path) :]
    if not path:
        return True
    return all(want in ("*", got) for want, got in zip(path, part, strict=True))
