"""A workspace on PostgreSQL: what ``Memory.open("postgresql://…", group)`` runs on.

The tenant is the group (``main`` when none is given). The engine and every
part are the same code as on a folder; only the seams differ:

* files (``TenantFiles.volume``): each file of the workspace is rows of the
  tenant (``volume``), so MEMORY.md, notes, transcripts, lessons and the
  audit logs read exactly as in a folder and ``memstrata export`` writes them
  out byte for byte;
* the journal (``TenantFiles.journal``) is the tenant's record rows, and the
  writer lock (``TenantFiles.lock``) a transaction holding the tenant's
  advisory lock: one write of the engine is one transaction, acknowledged
  when it commits;
* the search index is ``PostgresIndex`` (chunks with a ``tsvector`` and a
  ``vector(384)``), shared by every process of the tenant.

Row-level security keeps tenants apart in every table (``schema``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from ..config import Settings
from ..index.protocol import Index
from ..storage.access import check_group
from ..storage.journal import Log
from ..storage.lock import Lock
from ..storage.workspace import Workspace
from .connect import Database, check_tenant
from .index import PostgresIndex
from .tenant import TenantFiles

__all__ = ["DEFAULT_TENANT", "Opened", "open_workspace"]

DEFAULT_TENANT = "main"


@dataclass(frozen=True, slots=True)
class Opened:
    """The seams of one tenant's workspace, and how to let go of them."""

    workspace: Workspace
    journal: Log
    lock: Lock
    open_index: Callable[[object], Index]  # given the engine, which it does not need
    close: Callable[[], None]


def open_workspace(url: str, group: str | None, settings: Settings) -> Opened:
    """The workspace of ``group`` on the database at ``url`` (see the module)."""
    if group is not None:  # the same names as groups in a folder
        check_group(group)
    tenant = check_tenant(group or DEFAULT_TENANT)
    database = Database.shared(url)
    try:
        files = TenantFiles(database, tenant, timeout=settings.lock_timeout_seconds)
    except BaseException:
        database.release()
        raise

    def open_index(engine: object) -> Index:
        return PostgresIndex(database, tenant)

    def close() -> None:
        with contextlib.suppress(Exception):
            files.close()
        database.release()

    workspace = Workspace.on(files.volume, group, url)
    return Opened(workspace, files.journal, files.lock, open_index, close)
