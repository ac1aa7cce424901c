"""The memories a multi-tenant service holds open, and which tenant a call
may act on.

* ``Tenants(open_memory, max_open)`` lends each tenant's ``Memory``
  (``lease``): opened by ``open_memory(group)`` on first use, once however
  many calls arrive at once (a per-tenant lock), then kept open for the next
  calls. Beyond ``max_open`` memories the least recently used idle ones are
  closed; a memory in use is never closed under its call. A failed open is
  not kept: the next call tries again.
* ``close()`` (at shutdown, once no request runs) closes every memory, each
  one's failure logged and the others still closed; a lease after it raises
  ``BackendUnavailable``.
* ``acting_group(caller, target, write=, main=)``: a caller acts on its own
  tenant; it may read ``global``; another tenant, or writing ``global``,
  only when it is the main group (``main``; None: no tenant is). The rules
  of ``access.Groups``, with no main group unless one is named.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import AccessDenied, BackendUnavailable, InvalidInput, MemstrataError
from ..memory import Memory
from ..storage.access import GLOBAL, Groups, check_group

__all__ = ["DEFAULT_MAX_OPEN", "Tenants", "acting_group"]

DEFAULT_MAX_OPEN = 100
log = logging.getLogger("memstrata")


@dataclass
class _Entry:
    memory: Memory | None = None
    users: int = 0
    opening: threading.Lock = field(default_factory=threading.Lock)


class Tenants:
    """The open memories of the tenants (see the module)."""

    def __init__(self, open_memory: Callable[[str], Memory], max_open: int = DEFAULT_MAX_OPEN):
        if max_open < 1:
            raise InvalidInput("max_open must be at least 1")
        self._open_memory = open_memory
        self._max_open = max_open
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, _Entry] = OrderedDict()  # least recently used first
        self._closed = False

    @contextmanager
    def lease(self, group: str) -> Iterator[Memory]:
        """``group``'s memory for the time of one call."""
        entry = self._take(group)
        try:
            with entry.opening:
                if entry.memory is None:
                    entry.memory = self._open_memory(group)
                memory = entry.memory
            yield memory
        finally:
            self._give_back(group, entry)

    def open_count(self) -> int:
        with self._lock:
            return sum(1 for entry in self._entries.values() if entry.memory is not None)

    def close(self) -> None:
        """Close every memory (see the module)."""
        with self._lock:
            self._closed = True
            entries = list(self._entries.items())
            self._entries.clear()
        for group, entry in entries:
            if entry.users:
                log.warning("memstrata: closing the memory of %r while a call uses it", group)
        _close_all(entries)

    def _take(self, group: str) -> _Entry:
        with self._lock:
            if self._closed:
                raise BackendUnavailable("the memory service is shutting down")
            entry = self._entries.get(group)
            if entry is None:
                entry = self._entries[group] = _Entry()
            self._entries.move_to_end(group)
            entry.users += 1
            evicted = self._evict()
        _close_all(evicted)
        return entry

    def _give_back(self, group: str, entry: _Entry) -> None:
        with self._lock:
            entry.users -= 1
            if entry.memory is None and entry.users == 0 and self._entries.get(group) is entry:
                del self._entries[group]  # a failed open is not kept
            evicted = self._evict()
        _close_all(evicted)

    def _evict(self) -> list[tuple[str, _Entry]]:
        """Take the least recently used idle entries beyond the cap out (under the lock)."""
        evicted: list[tuple[str, _Entry]] = []
        excess = len(self._entries) - self._max_open
        for name, idle in list(self._entries.items()):
            if excess <= 0:
                break
            if idle.users == 0:
                del self._entries[name]
                evicted.append((name, idle))
                excess -= 1
        return evicted


def _close_all(entries: list[tuple[str, _Entry]]) -> None:
    for group, entry in entries:
        _close(group, entry)


def _close(group: str, entry: _Entry) -> None:
    with entry.opening:
        memory, entry.memory = entry.memory, None
    if memory is None:
        return
    try:
        memory.close()
    except MemstrataError as exc:
        log.warning("memstrata: closing the memory of %r failed: %s", group, exc)


def acting_group(caller: str, target: str | None, *, write: bool, main: str | None) -> str:
    """The tenant a call of ``caller`` acts on (see the module)."""
    if target is None or target == caller:
        return caller
    if main is not None:
        return Groups(Path(), main).check(caller, target, write=write)
    check_group(target)
    if target == GLOBAL and not write:
        return GLOBAL
    verb = "write" if write else "read"
    raise AccessDenied(
        f"group {caller!r} may not {verb} group {target!r}: a token reaches its own group's "
        f"memory and reads {GLOBAL!r}; this service names no main group"
    )
