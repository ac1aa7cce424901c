"""The events of one workspace's ``Engine``: how the parts of ``Memory`` hear
of each other's work without importing each other.

* ``notify(*events)`` tells the subscribers (the search index marks paths
  dirty), then the write hooks; a hook that raises is logged and never undoes
  the durable write it heard of. Call it with the workspace lock released: a
  hook may read memory.
* ``turn_recorded(turn)`` tells the turn listeners (the automatic session
  summary) of a durable transcript turn.
* ``closing()`` runs before the closing checkpoint, ``closed()`` after it,
  even when it failed (a full disk must not keep the index open).
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable
from typing import Any

from ..model import WriteEvent

__all__ = ["Events", "WriteHook"]

log = logging.getLogger("memstrata")

WriteHook = Callable[[WriteEvent], None]


class Events:
    """Listeners of one engine, called in the order they were added."""

    def __init__(self) -> None:
        self.hooks: builtins.list[WriteHook] = []
        self._subscribers: builtins.list[Callable[[tuple[WriteEvent, ...]], None]] = []
        self._turn_listeners: builtins.list[Callable[[Any], None]] = []
        self._closing: builtins.list[Callable[[], None]] = []
        self._closed: builtins.list[Callable[[], None]] = []

    def subscribe(self, listener: Callable[[tuple[WriteEvent, ...]], None]) -> None:
        """Call ``listener`` with the events of every write, before the write hooks."""
        self._subscribers.append(listener)

    def on_turn(self, listener: Callable[[Any], None]) -> None:
        """Call ``listener`` after every durable transcript turn (outside the lock)."""
        self._turn_listeners.append(listener)

    def on_close(
        self, *, closing: Callable[[], None] | None = None, closed: Callable[[], None] | None = None
    ) -> None:
        """Call ``closing`` before the closing checkpoint, ``closed`` after it (always)."""
        if closing is not None:
            self._closing.append(closing)
        if closed is not None:
            self._closed.append(closed)

    def notify(self, *events: WriteEvent) -> None:
        """Tell the subscribers, then the write hooks (see the module)."""
        for subscriber in self._subscribers:
            subscriber(events)
        for event in events:
            for hook in builtins.list(self.hooks):
                try:
                    hook(event)
                except Exception:  # a hook's failure must not undo a durable write
                    log.exception("memstrata: write hook %r failed on %s", hook, event.kind)

    def turn_recorded(self, turn: Any) -> None:
        """Tell the turn listeners of a durable turn."""
        for listener in self._turn_listeners:
            listener(turn)

    def closing(self) -> None:
        for listener in self._closing:
            listener()

    def closed(self) -> None:
        for listener in self._closed:
            listener()
