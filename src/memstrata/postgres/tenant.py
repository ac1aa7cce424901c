"""``TenantFiles``: the three engine seams of one tenant, bound together.

``lock`` (a ``PostgresLock``), ``volume`` (a ``PostgresVolume``) and
``journal`` (a ``PostgresJournal``) share one database handle and the lock's
transaction: inside ``with files.lock:`` every volume and journal call of the
holding thread runs in that one transaction, committed when the outermost
``with`` ends (see ``lock``). Outside it, each call is a transaction of its
own. ``close`` closes the journal and the lock, and lets go of the pool when
this object opened it (given a URL).
"""

from __future__ import annotations

from .connect import Database
from .journal import PostgresJournal
from .lock import PostgresLock
from .volume import PostgresVolume

__all__ = ["TenantFiles"]


class TenantFiles:
    """The lock, files and journal of ``tenant`` on the database at ``db`` (a
    URL, or an open ``Database`` the caller keeps)."""

    def __init__(self, db: str | Database, tenant: str, *, timeout: float = 30.0) -> None:
        self.lock = PostgresLock(db, tenant, timeout=timeout)
        self.tenant = self.lock.tenant
        self.database = self.lock.database
        self.volume = PostgresVolume(self.database, tenant, lock=self.lock)
        self.journal = PostgresJournal(self.database, tenant, lock=self.lock)

    def __repr__(self) -> str:
        return f"TenantFiles({self.lock.where})"

    def close(self) -> None:
        """Close the journal and the lock (which must not be held)."""
        self.journal.close()
        self.volume.close()
        self.lock.close()
