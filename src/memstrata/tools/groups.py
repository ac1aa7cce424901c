"""``GroupTools(root, main)``: the memory tools for callers in groups (seed
001). Every call names the caller's group; an optional ``group`` argument
names another group, which the rules of ``access.Groups`` allow or refuse (a
refusal is an ``Error: …`` saying why, never an empty result). A non-main
group's search also looks in ``global`` (which it may read), each hit saying
its group. Each group's memory opens with that group's own
``memstrata.toml``, the settings given to ``GroupTools`` over it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import load_settings, workspace_location
from ..errors import MemstrataError, NotFound
from ..memory import Memory
from ..storage.access import GLOBAL, Groups
from ..storage.workspace import Workspace
from .calls import WRITES, Answer, arguments_of, call, refusal, success

__all__ = ["GroupTools"]

GLOBAL_RECHECK_SECONDS = 10.0  # how long a database's missing global group is believed
NOWHERE = "/dev/null/memstrata"  # the groups' "folder" when they are tenants of a database


class GroupTools:
    """The memory tools for callers in groups under one root (see the module)."""

    def __init__(self, root: Path | str, main: str, **settings: Any) -> None:
        """``root``: the folder of the groups, or a ``postgresql://`` URL (each
        group a tenant, kept apart by the database; the same rules here).
        ``settings`` (e.g. from the environment) apply over each group's own
        ``memstrata.toml`` (in a folder)."""
        found = workspace_location(root)
        self.url = found if isinstance(found, str) else None
        self.groups = Groups(Path(NOWHERE) if isinstance(found, str) else found, main)
        self._settings = settings
        self._open: dict[str, Memory] = {}
        self._lock = threading.Lock()
        self._no_global_until = 0.0  # (a database) global was missing: look again then

    def adopt(self, memory: Memory) -> None:
        """Use the already open ``memory`` for its group (a server's own)."""
        if memory.workspace.group is None:
            raise ValueError("only a group's memory can be adopted")
        with self._lock:
            self._open[memory.workspace.group] = memory

    def memory(self, group: str) -> Memory:
        """The open memory of ``group`` (opened on first use with its own
        ``memstrata.toml``; no rules applied here)."""
        with self._lock:
            found = self._open.get(group)
            if found is None:
                if self.url is not None:
                    found = Memory.open(self.url, group, **self._settings)
                else:
                    path = Workspace.locate(self.groups.root, group).path
                    settings = {**load_settings(path), **self._settings}
                    found = Memory.open(self.groups.root, group, **settings)
                self._open[group] = found
            return found

    def _has_global(self) -> bool:
        """Whether the ``global`` group exists (non-main searches look there too)."""
        if self.url is None:
            return (self.groups.root / "groups" / GLOBAL).is_dir()
        if GLOBAL in self._open:
            return True
        # On a database, finding out is opening it: not on every search of every group.
        if time.monotonic() < self._no_global_until:
            return False
        try:
            self._open_existing(GLOBAL)
        except NotFound:
            self._no_global_until = time.monotonic() + GLOBAL_RECHECK_SECONDS
            return False
        return True

    def _open_existing(self, group: str) -> None:
        assert self.url is not None
        memory = Memory.open(self.url, group, create=False, **self._settings)
        with self._lock:
            if group in self._open:
                memory.close()
            else:
                self._open[group] = memory

    def dispatch(self, name: str, arguments: Mapping[str, Any] | str | None, *, group: str) -> str:
        """Run tool ``name`` for a caller in ``group``; the result as text."""
        return self.answer(name, arguments, group=group).text

    def answer(self, name: str, arguments: Mapping[str, Any] | str | None, *, group: str) -> Answer:
        """Run tool ``name`` for a caller in ``group``; the result as text, refusals flagged."""
        try:
            given = arguments_of(arguments)
            target = given.pop("group", None)
            if target is not None and not isinstance(target, str):
                raise ValueError("group must be a string")
            acting = self.groups.check(group, target, write=name in WRITES)
            result = call(self.memory(acting), name, given)
            if name == "memory_search" and target is None and acting != GLOBAL:
                result = self._with_global(acting, result, given)
        except (MemstrataError, ValueError) as exc:
            return refusal(exc)
        return success(result)

    def _with_global(
        self, acting: str, result: dict[str, Any], given: Mapping[str, Any]
    ) -> dict[str, Any]:
        """A search's hits in ``acting``'s memory and in ``global``'s, best first."""
        hits = [{**hit, "group": acting} for hit in result["hits"]]
        if self._has_global():
            shared = call(self.memory(GLOBAL), "memory_search", given)
            hits += [{**hit, "group": GLOBAL} for hit in shared["hits"]]
            hits.sort(key=lambda hit: -hit["score"])
            hits = hits[: given.get("k") or 8]
        return {**result, "hits": hits}

    def flush(self) -> None:
        """Make every open group's memory durable now (``Memory.flush``)."""
        with self._lock:
            opened = list(self._open.values())
        for memory in opened:
            memory.flush()

    def close(self) -> None:
        with self._lock:
            for memory in self._open.values():
                memory.close()
            self._open.clear()
