"""``GlobalFile``: the ``global`` tenant's MEMORY.md as another tenant reads it
(``memory.shared``: a group's context and gate take global's live facts).

* **Read by the reader's own tenant.** Each call is a transaction of its own
  (a pooled connection, never the writer lock's transaction) with the
  reader's tenant set and ``READ_GLOBAL_SETTING`` on, local to that
  transaction. Migration ``0007_global_memory`` (``schema``) adds one policy,
  for reads only, on ``memstrata_volume`` and ``memstrata_volume_parts``:
  the rows of tenant ``global`` at path ``MEMORY.md``, when a tenant is set
  and the setting is on. Every other row of ``global`` stays hidden (its
  journal, transcripts, notes ...), other tenants' rows too, and nothing of
  ``global`` can be written: its ``WITH CHECK`` and ``USING`` for writes are
  the tenant policy's.
* **The change marker is the file's ``inode``** (a fresh sequence value at
  every write of the file, ``volume``): ``stat`` is one indexed row lookup,
  and ``memory.shared`` reads the bytes again only when it changed.
* The ``global`` tenant's own writes reach its MEMORY.md at its next
  checkpoint (``Memory.flush``, close), as for a reader of the file in a
  folder. Errors are ``memstrata.errors`` (``connect.errors``).
"""

from __future__ import annotations

from typing import Any

from ..storage.volume import Stat
from ..storage.workspace import MEMORY_MD
from .connect import Database
from .schema import GLOBAL_TENANT, READ_GLOBAL_SETTING
from .volume import PostgresVolume

__all__ = ["GlobalFile", "global_file"]

_STAT = "SELECT size, mtime_ns, inode FROM memstrata_volume WHERE tenant = %s AND path = %s"
_READ = (
    "SELECT f.content || coalesce((SELECT string_agg(p.data, ''::bytea ORDER BY p.seq) "
    "FROM memstrata_volume_parts p WHERE p.tenant = f.tenant AND p.path = f.path), ''::bytea) "
    "FROM memstrata_volume f WHERE f.tenant = %s AND f.path = %s"
)


class GlobalFile:
    """The ``global`` tenant's MEMORY.md, read by ``tenant`` on ``database``."""

    def __init__(self, database: Database, tenant: str) -> None:
        self.database = database
        self.tenant = tenant

    def stat(self, rel: str) -> Stat | None:
        row = self._one(rel, _STAT, "stat the global memory")
        return None if row is None else Stat(int(row[0]), int(row[1]), int(row[2]))

    def read(self, rel: str) -> bytes | None:
        row = self._one(rel, _READ, "read the global memory")
        return None if row is None else bytes(row[0])

    def _one(self, rel: str, query: str, doing: str) -> tuple[Any, ...] | None:
        if rel != MEMORY_MD:  # the one file of global another tenant may read
            return None
        with self.database.transaction(self.tenant, doing) as conn:
            conn.execute("SELECT set_config(%s, 'on', true)", (READ_GLOBAL_SETTING,))
            return conn.execute(query, (GLOBAL_TENANT, rel)).fetchone()


def global_file(volume: object) -> GlobalFile | None:
    """The reader of global memory for the tenant of ``volume`` (None when it is
    not a tenant's volume, or is ``global``'s own)."""
    if not isinstance(volume, PostgresVolume) or volume.tenant == GLOBAL_TENANT:
        return None
    return GlobalFile(volume.lock.database, volume.tenant)
