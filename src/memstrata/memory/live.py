"""Live files (``Memory.watch_files``): a long-running process (the MCP
server, an agent holding a ``Memory``) takes in hand edits of MEMORY.md and
of the other searchable files within a second, without a restart.

A daemon thread polls, every ``interval`` seconds, the stat (size, mtime,
inode) of MEMORY.md and of every searchable file (``index.chunks
.searchable_files``: the layers' folders, not followed through links). Polling
needs no dependency, works on every file system (network mounts, containers,
where inotify does not) and costs one ``stat`` per file per tick.

* **MEMORY.md** changed: ``Engine.flush`` takes the edit in through the same
  checked path as at open and at a checkpoint (``HandEdits.take_in``: the
  hand-edit merge, the damage checks, quarantine of a damaging save, a save
  still in progress left for the deferred checkpoint), under the writer lock.
* **Another searchable file** changed, appeared or went: it is marked for the
  search index (``Searcher.files_changed``), which re-chunks it at the next
  search, as for a file this process wrote.
* Errors in the thread are logged, never raised (there is no caller); the
  thread goes on with the next tick.
* ``stop`` (called by ``Memory.close`` before its closing checkpoint) ends the
  thread and joins it: no thread outlives the ``Memory``. A read-only memory
  cannot take edits in and a database has no files to poll: there
  ``watch_files`` starts nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable

from ..errors import MemstrataError
from ..index.chunks import searchable_files
from ..storage.volume import Stat
from .engine import Engine

__all__ = ["DEFAULT_INTERVAL", "LiveFiles"]

log = logging.getLogger("memstrata")

DEFAULT_INTERVAL = 0.2  # seconds between polls: an edit is taken in well within a second
MEMORY_MD = "MEMORY.md"

Snapshot = dict[str, tuple[int, int, int]]


def _key(stat: Stat) -> tuple[int, int, int]:
    return (stat.size, stat.mtime_ns, stat.inode)


class LiveFiles:
    """The polling thread of one ``Memory`` (see the module)."""

    def __init__(
        self,
        engine: Engine,
        files_changed: Callable[[Iterable[str]], None],
        interval: float = DEFAULT_INTERVAL,
    ) -> None:
        if not interval > 0:
            raise ValueError("interval must be > 0")
        self.engine = engine
        self.files_changed = files_changed
        self.interval = interval
        self.polls = 0  # completed polls (tests wait on it)
        self._stop = threading.Event()
        self._memory_md = self._stat_memory_md()
        self._files = self._stat_files()
        self._thread = threading.Thread(target=self._run, name="memstrata-live-files", daemon=True)

    def start(self) -> None:
        self._thread.start()

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """End the thread and wait for it (idempotent; a no-op on the thread itself)."""
        self._stop.set()
        if self._thread.is_alive() and threading.current_thread() is not self._thread:
            self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.poll()
            except MemstrataError as exc:
                if not self.engine.closed:
                    log.warning("memstrata: taking in an edited file failed: %s", exc)
            except Exception:  # a watcher has no caller: log it and keep watching
                log.exception("memstrata: the live-files watcher failed; it goes on")
            self.polls += 1

    def poll(self) -> None:
        """One look at the files; take in what changed since the last look."""
        if self.engine.closed:
            return
        memory_md = self._stat_memory_md()
        if memory_md != self._memory_md:
            self.engine.flush()  # takes the hand edit in (or defers a save in progress)
            self._memory_md = self._stat_memory_md()  # after our own rendering, if any
        files = self._stat_files()
        if files != self._files:
            changed = {rel for rel in files.keys() | self._files.keys()}
            changed = {rel for rel in changed if files.get(rel) != self._files.get(rel)}
            self._files = files
            self.files_changed(sorted(changed))

    def _stat_memory_md(self) -> tuple[int, int, int] | None:
        stat = self.engine.workspace.volume.stat(MEMORY_MD)
        return None if stat is None else _key(stat)

    def _stat_files(self) -> Snapshot:
        return {rel: _key(stat) for rel, stat in searchable_files(self.engine.workspace)}
