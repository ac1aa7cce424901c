"""``PostgresLock``: the writer lock of one tenant's workspace, a
``storage.lock.Lock``, and the transaction every write under it joins.

* **Held = one open transaction.** The outermost ``with lock:`` borrows a
  pooled connection, begins a transaction with the tenant set (as
  ``connect.Database.transaction`` does) and takes
  ``pg_advisory_xact_lock(hashtextextended('memstrata.workspace/<tenant>',
  0))``, waiting at most ``timeout`` seconds (``lock_timeout``; then
  ``Conflict``, as ``WorkspaceLock``). PostgreSQL frees the advisory lock with
  the transaction: when its holder commits, rolls back, or dies (a killed
  process's connection closes, its transaction is rolled back), so a killed
  writer never leaves the tenant locked, nor half of its writes.
* **Re-entrant in one thread**, other threads of the process wait (a
  ``threading.RLock``), at most ``timeout`` seconds too.
* **One write = one transaction.** While the lock is held, the volume and
  journal bound to it (``connection``) run in its transaction when called
  from the holding thread, each call in a savepoint of its own (a call that
  fails undoes only itself, as a failed file write leaves the others); from
  any other thread, or while the lock is not held, each call is a short
  transaction of its own. What is written under the lock is visible to
  others when the outermost ``with`` ends: that is when it is acknowledged.
* **The outermost exit commits**, also when the block raised a Python
  exception: what the engine appended and applied in RAM must not vanish (a
  file journal's line stays written too). Only a transaction that a database
  error left aborted is rolled back, raising ``StorageError``; a commit that
  fails (the connection lost) raises ``StorageError`` too. Either way the
  writes of the transaction are gone while RAM may hold them: ``lost`` counts
  such transactions and every callable in ``on_abort`` is called (in the
  releasing thread, after the rollback; it must not raise).
  ``PostgresJournal`` registers one that puts its RAM back and sets ``gap``,
  which makes the engine reload its state from the database. A commit lost
  with its connection may in truth have succeeded: reloading is right then
  too.
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING

from ..errors import Conflict, InvalidInput, MemstrataError, StorageError
from .connect import Database, check_tenant, errors

if TYPE_CHECKING:
    from .connect import Connection

__all__ = ["PostgresLock", "bind"]

_LOCK_KEY = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_TRY_LOCK_KEY = "SELECT pg_try_advisory_xact_lock(hashtextextended(%s, 0))"


class PostgresLock:
    """The writer lock of ``tenant`` on the database at ``db`` (a URL, or an
    open ``Database`` the caller keeps); use as a context manager."""

    def __init__(self, db: str | Database, tenant: str, *, timeout: float = 30.0) -> None:
        self.tenant = check_tenant(tenant)
        self.timeout = timeout
        self._owned = isinstance(db, str)
        self.database = Database.shared(db) if isinstance(db, str) else db
        self.where = f"{self.database.location}, tenant {tenant!r}"
        self.lost = 0  # transactions rolled back or not committed (see the module)
        self.on_abort: list[Callable[[], object]] = []
        self.generation = 0  # outermost acquisitions so far: names the current transaction
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._owner: int | None = None  # the holding thread's ident
        self._conn: Connection | None = None
        self._stack: contextlib.ExitStack | None = None
        self._closed = False

    def __repr__(self) -> str:
        return f"PostgresLock({self.where})"

    def __enter__(self) -> PostgresLock:
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

    def joined(self) -> bool:
        """Whether calls from this thread run in the lock's transaction."""
        return self._conn is not None and self._owner == threading.get_ident()

    def held_elsewhere(self) -> bool:
        """Whether another thread of this process holds the lock now."""
        owner = self._owner
        return owner is not None and owner != threading.get_ident()

    # -- taking and giving back ------------------------------------------------------

    def acquire(self) -> None:
        """Take the lock, waiting at most ``timeout`` seconds."""
        if not self._thread_lock.acquire(timeout=max(self.timeout, 0)):
            raise Conflict(f"workspace is busy in this process for over {self.timeout:g}s")
        try:
            if self._closed:
                raise Conflict(f"the lock of {self.where} was closed")
            if self._depth == 0:
                self._begin()
        except BaseException:
            self._thread_lock.release()
            raise
        self._depth += 1

    def release(self) -> None:
        """Give the lock back: the outermost release commits (see the module)."""
        if self._depth > 1:
            self._depth -= 1
            self._thread_lock.release()
            return
        try:
            self._end()
        finally:
            self._depth = 0
            self._thread_lock.release()

    def close(self) -> None:
        """Later acquires fail; the shared pool is let go of when this lock
        opened it (the lock must not be held)."""
        self._closed = True
        if self._owned:
            self._owned = False
            self.database.release()

    def _begin(self) -> None:
        stack = contextlib.ExitStack()
        conn = stack.enter_context(
            self.database.transaction(self.tenant, "take the workspace lock")
        )
        try:
            self._wait_for_lock(conn)
        except BaseException as exc:
            stack.__exit__(type(exc), exc, exc.__traceback__)  # rolled back
            raise
        self._stack, self._conn = stack, conn
        self.generation += 1
        self._owner = threading.get_ident()

    def _wait_for_lock(self, conn: Connection) -> None:
        key = f"memstrata.workspace/{self.tenant}"
        busy = Conflict(
            f"workspace is locked by another writer for more than {self.timeout:g}s: {self.where}"
        )
        try:
            with errors("take the workspace lock", self.where):
                if self.timeout <= 0:  # lock_timeout 0 would wait forever
                    row = conn.execute(_TRY_LOCK_KEY, (key,)).fetchone()
                    if row is None or not row[0]:
                        raise busy
                    return
                wait = f"{max(1, math.ceil(self.timeout * 1000))}ms"
                conn.execute("SELECT set_config('lock_timeout', %s, true)", (wait,))
                conn.execute(_LOCK_KEY, (key,))
                conn.execute("SET LOCAL lock_timeout TO DEFAULT")
        except Conflict as exc:
            if exc is busy:
                raise
            raise busy from exc

    def _end(self) -> None:
        stack, conn = self._stack, self._conn
        self._owner = self._conn = self._stack = None
        assert stack is not None and conn is not None
        if conn.info.transaction_status.name == "INERROR":
            failure = StorageError(
                f"a database error aborted the workspace's transaction ({self.where}): "
                "its writes are rolled back"
            )
            with contextlib.suppress(MemstrataError):
                stack.__exit__(StorageError, failure, None)  # rolls back
            self._aborted()
            raise failure
        try:
            stack.close()  # commits
        except MemstrataError as exc:
            self._aborted()
            raise StorageError(
                f"cannot commit the workspace's writes ({self.where}): {exc}"
            ) from exc

    def _aborted(self) -> None:
        self.lost += 1
        for callback in list(self.on_abort):
            callback()

    # -- the connection calls run on -------------------------------------------------

    @contextlib.contextmanager
    def connection(self, doing: str) -> Iterator[Connection]:
        """Where one call of a volume or journal runs: a savepoint in the lock's
        transaction when this thread holds the lock, else a transaction of its
        own. Driver errors come out as ``memstrata.errors``."""
        conn = self._conn
        if conn is not None and self._owner == threading.get_ident():
            with errors(doing, self.where), conn.transaction():
                yield conn
            return
        with self.database.transaction(self.tenant, doing) as own:
            yield own


def bind(db: str | Database, tenant: str, lock: PostgresLock | None) -> tuple[PostgresLock, bool]:
    """The lock a volume or journal of ``tenant`` runs through: ``lock``, which
    must be of the same tenant and database, or a new one of its own (True)."""
    if lock is None:
        return PostgresLock(db, tenant), True
    url = db if isinstance(db, str) else db.url
    if lock.tenant != check_tenant(tenant) or lock.database.url != url:
        raise InvalidInput(f"the lock given is of another tenant or database: {lock.where}")
    return lock, False
