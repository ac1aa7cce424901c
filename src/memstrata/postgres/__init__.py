"""The PostgreSQL backend: the ``Index`` and ``FactStore`` seams, and the
engine's ``Volume``, ``Log`` and ``Lock``, on a shared database, tenants
(groups) kept apart by row-level security.

Nothing here imports the driver when the package is imported: ``psycopg``,
``psycopg_pool`` and ``pgvector`` (the ``postgres`` extra) are imported when a
``Database`` is opened, and a missing one raises ``BackendUnavailable`` with
the install hint. ``import memstrata`` never imports this package.

* ``connect`` -- one connection pool per URL, the tenant set in every
  transaction, the driver's errors mapped onto ``memstrata.errors``.
* ``schema`` -- named, ordered, recorded migrations under an advisory lock;
  the row-level security policies.
* ``index`` -- ``PostgresIndex``: chunks (``tsvector``, GIN), vectors
  (``vector(384)``, HNSW, cosine), the RAM mirror and change log.
* ``facts`` -- ``PostgresFactStore``: long-term facts, forgotten facts, lsn.
* ``lock`` -- ``PostgresLock``: the workspace lock, a transaction holding an
  advisory lock; the volume and journal calls of its holder run in it.
* ``volume`` -- ``PostgresVolume``: a workspace's files as rows.
* ``journal`` -- ``PostgresJournal``: the engine's record log as rows.
* ``tenant`` -- ``TenantFiles``: the lock, volume and journal of one tenant,
  bound together.
"""

from __future__ import annotations

__all__ = ["INSTALL_HINT"]

INSTALL_HINT = "pip install 'memstrata[postgres]'"
