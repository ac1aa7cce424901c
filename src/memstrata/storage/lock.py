"""The writer lock of one workspace, shared by threads and processes.

Invariants:

* At most one holder at a time per workspace across processes
  (``fcntl.flock`` on ``.memstrata/lock``; the kernel drops it when the
  holder dies, so a killed writer never leaves the workspace locked).
* Re-entrant inside one ``WorkspaceLock`` object: nested ``with lock:`` in
  the same thread does not deadlock; other threads wait.
* **Fair between processes.** A waiter first takes a turnstile
  (``.memstrata/lock.gate``), then the lock, then frees the turnstile. While
  a waiter holds the turnstile, the holder cannot take the lock again after
  releasing it (it waits at the turnstile), so a process that writes in a
  tight loop hands the workspace over instead of starving the others into a
  timeout. A waiter at the turnstile polls the lock every 0.1-2 ms (it is
  next); the others poll the turnstile from 0.5 ms, backing off to 50 ms.
  Uncontended, the turnstile costs two ``flock`` calls.
* While held, the file holds the holder's pid (for ``doctor``); the pid is
  informative only, the kernel lock is the truth.
"""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path
from types import TracebackType
from typing import Protocol

from ..errors import Conflict, StorageError

__all__ = ["Lock", "ReadOnlyLock", "WorkspaceLock", "lock_holder"]

_GATE_POLL_SECONDS = 0.0005  # waiting at the turnstile, backing off to ...
_MAX_POLL_SECONDS = 0.05
_NEXT_POLL_SECONDS = 0.0001  # the waiter holding the turnstile
_NEXT_MAX_POLL_SECONDS = 0.002


class Lock(Protocol):
    """The writer lock of one workspace (``WorkspaceLock``, or
    ``postgres.lock.PostgresLock``: a transaction holding an advisory lock,
    committed when the outermost ``with`` ends). Re-entrant in one thread;
    ``Conflict`` after ``timeout`` seconds of waiting."""

    timeout: float

    @property
    def held(self) -> bool: ...

    def __enter__(self) -> object: ...

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...

    def close(self) -> None: ...


class WorkspaceLock:
    """Exclusive writer lock; use as a context manager."""

    def __init__(self, path: Path, *, timeout: float = 30.0) -> None:
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._gate_fd: int | None = None
        self._closed = False

    def __enter__(self) -> WorkspaceLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    @property
    def held(self) -> bool:
        """True while this object holds the lock (in any thread)."""
        return self._depth > 0

    def acquire(self) -> None:
        """Take the lock, waiting at most ``timeout`` seconds."""
        if not self._thread_lock.acquire(timeout=self.timeout):
            raise Conflict(f"workspace is busy in this process for over {self.timeout:g}s")
        if self._closed:
            self._thread_lock.release()
            raise Conflict(f"the lock of {self.path.parent.parent} was closed")
        if self._depth == 0:
            try:
                self._take_file_lock()
            except BaseException:
                self._thread_lock.release()
                raise
        self._depth += 1

    def release(self) -> None:
        """Give the lock back (the outermost release frees it for others)."""
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
        self._thread_lock.release()

    def close(self) -> None:
        """Close the lock file (the lock must not be held); later acquires fail."""
        self._closed = True
        for fd in (self._fd, self._gate_fd):
            if fd is not None:
                os.close(fd)
        self._fd = self._gate_fd = None

    def _take_file_lock(self) -> None:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        if self._gate_fd is None:
            gate = self.path.with_name(self.path.name + ".gate")
            self._gate_fd = os.open(gate, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = time.monotonic() + self.timeout
        self._poll(self._gate_fd, deadline, _GATE_POLL_SECONDS, _MAX_POLL_SECONDS)
        try:
            self._poll(self._fd, deadline, _NEXT_POLL_SECONDS, _NEXT_MAX_POLL_SECONDS)
        finally:
            fcntl.flock(self._gate_fd, fcntl.LOCK_UN)
        os.pwrite(self._fd, f"{os.getpid():>10}\n".encode(), 0)  # fixed width: no truncate

    def _poll(self, fd: int, deadline: float, delay: float, longest: float) -> None:
        """Take ``flock`` on ``fd``, retrying with backoff until ``deadline``."""
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    holder = lock_holder(self.path)
                    who = f" (held by pid {holder})" if holder else ""
                    raise Conflict(
                        f"workspace is locked by another writer{who} "
                        f"for more than {self.timeout:g}s: {self.path.parent.parent}"
                    ) from None
                time.sleep(delay)
                delay = min(delay * 2, longest)


class ReadOnlyLock(WorkspaceLock):
    """The lock of a workspace that cannot be written: taking it is refusing a
    write. ``where`` names the workspace (default: the folder of ``path``)."""

    def __init__(self, path: Path, *, timeout: float = 30.0, where: str | None = None) -> None:
        super().__init__(path, timeout=timeout)
        self.where = str(path.parent.parent) if where is None else where

    def acquire(self) -> None:
        raise StorageError(
            f"the workspace at {self.where} is read-only: reads work, writes are refused"
        )

    def release(self) -> None:  # never acquired
        raise AssertionError("a read-only lock is never held")


def lock_holder(path: Path) -> int | None:
    """The pid of the process holding the lock at ``path``, or None if free."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except FileNotFoundError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            text = os.pread(fd, 11, 0).decode("ascii", "replace").strip()
            return int(text) if text.isdigit() else -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
