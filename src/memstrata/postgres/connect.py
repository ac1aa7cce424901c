"""Connections to PostgreSQL: one pool per URL, the tenant in every transaction.

* **The driver is optional.** ``psycopg``, ``psycopg_pool`` and ``pgvector``
  are imported when a ``Database`` opens; a missing one raises
  ``BackendUnavailable`` naming ``INSTALL_HINT``.
* **One pool per URL** (``Database.shared``): every handle on the same URL
  borrows from the same ``psycopg_pool.ConnectionPool``; the pool closes with
  its last handle (``release``). Connections run in autocommit mode, so no
  statement runs outside an explicit ``transaction``.
* **The tenant is set per transaction**, never per session:
  ``transaction(tenant)`` runs ``SELECT set_config('memstrata.tenant', %s,
  true)`` first, so the setting ends with the transaction and a pooled
  connection carries no tenant to its next borrower. The row-level security
  policies (``schema``) compare every row's ``tenant`` with it: a transaction
  without a tenant sees no row and can write none.
* **Isolation is the database's.** A role that bypasses row-level security
  (``SUPERUSER`` or ``BYPASSRLS``) would see every tenant: opening a
  ``Database`` as one raises ``AccessDenied``. The app's role may own the
  tables: ``FORCE ROW LEVEL SECURITY`` binds the owner too.
* **Errors.** No ``psycopg`` exception leaves this package: ``errors`` maps
  each onto ``memstrata.errors`` (``mapped``): an unreachable server is
  ``BackendUnavailable``, a lock or serialization failure ``Conflict``, a
  refused privilege ``AccessDenied``, bad data ``InvalidInput``, a missing
  table ``Corrupt``, anything else ``StorageError``. A transaction whose
  connection broke inside it is never passed off as committed, even when its
  block carried on after the failed statement: ``BackendUnavailable``.
* The schema is migrated (``schema.migrate``) once per pool, before its first
  connection is lent.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from ..errors import (
    AccessDenied,
    BackendUnavailable,
    Conflict,
    Corrupt,
    InvalidInput,
    MemstrataError,
    StorageError,
)
from . import INSTALL_HINT

if TYPE_CHECKING:
    import psycopg
    from psycopg_pool import ConnectionPool

    Connection = psycopg.Connection[tuple[Any, ...]]

__all__ = ["TENANT_SETTING", "Database", "check_tenant", "close_all", "errors", "mapped"]

TENANT_SETTING = "memstrata.tenant"
MAX_TENANT = 200
POOL_SIZE = 8
TIMEOUT_SECONDS = 10.0

# SQLSTATE classes and codes -> the error of memstrata's tree that stands for them.
_BY_CODE: dict[str, type[MemstrataError]] = {
    "40001": Conflict,  # serialization_failure
    "40P01": Conflict,  # deadlock_detected
    "55P03": Conflict,  # lock_not_available
    "57014": Conflict,  # query_canceled (statement timeout)
    "42501": AccessDenied,  # insufficient_privilege, a policy's WITH CHECK too
    "42P01": Corrupt,  # undefined_table: not the schema it should be
    "42703": Corrupt,  # undefined_column
    "42883": Corrupt,  # undefined_function (pgvector missing)
    "XX001": Corrupt,  # data_corrupted
    "XX002": Corrupt,  # index_corrupted
    "3D000": BackendUnavailable,  # invalid_catalog_name: no such database
}
_BY_CLASS: dict[str, type[MemstrataError]] = {
    "08": BackendUnavailable,  # connection exception
    "57": BackendUnavailable,  # operator intervention (shutdown)
    "28": AccessDenied,  # invalid authorization
    "22": InvalidInput,  # data exception (bad text, out of range)
    "23": Conflict,  # integrity constraint: it changed under us
    "53": StorageError,  # insufficient resources (disk full)
}

_SHARED: dict[str, Database] = {}
_SHARED_LOCK = threading.Lock()


def _driver() -> tuple[Any, Any]:
    """``(psycopg, psycopg_pool)``, or ``BackendUnavailable`` with the hint."""
    try:
        import pgvector.psycopg  # noqa: F401 - the adapter the pool registers
        import psycopg
        import psycopg_pool
    except ImportError as exc:
        raise BackendUnavailable(
            f"the PostgreSQL backend needs its driver ({exc.name or exc}): {INSTALL_HINT}"
        ) from exc
    return psycopg, psycopg_pool


def check_tenant(tenant: str) -> str:
    """``tenant`` if it can name a tenant (non-empty text, no NUL, not too long)."""
    if not isinstance(tenant, str) or not tenant.strip():
        raise InvalidInput("a tenant (group) must be a non-empty name")
    if "\x00" in tenant or len(tenant) > MAX_TENANT:
        raise InvalidInput(f"a tenant name must be at most {MAX_TENANT} characters, without NUL")
    return tenant


def location_of(url: str) -> str:
    """``url`` without its password (for messages and ``status``)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "postgresql://?"
    host = parts.hostname or ""
    user = f"{parts.username}@" if parts.username else ""
    port = f":{parts.port}" if parts.port else ""
    return urlunsplit((parts.scheme, f"{user}{host}{port}", parts.path, parts.query, ""))


def mapped(exc: BaseException, doing: str, where: str) -> MemstrataError:
    """The error of memstrata's tree that stands for a driver's ``exc``."""
    code = getattr(exc, "sqlstate", None) or ""
    kind = _BY_CODE.get(code) or _BY_CLASS.get(code[:2])
    if kind is None:
        name = type(exc).__name__
        if name in {"PoolTimeout", "TooManyRequests", "PoolClosed"} or (
            name == "OperationalError" and not code
        ):
            kind = BackendUnavailable
        else:
            kind = StorageError
    detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return kind(f"cannot {doing} ({where}): {detail}")


@contextlib.contextmanager
def errors(doing: str, where: str) -> Iterator[None]:
    """Map the driver's exceptions raised inside onto ``memstrata.errors``."""
    psycopg, pool = _driver()
    try:
        yield
    except (psycopg.Error, pool.PoolTimeout, pool.PoolClosed) as exc:
        raise mapped(exc, doing, where) from exc


class Database:
    """A connection pool on one URL, the schema migrated, lending transactions
    with the tenant set (see the module invariants)."""

    def __init__(self, url: str, *, max_size: int = POOL_SIZE) -> None:
        psycopg, pool = _driver()
        self.url = url
        self.location = location_of(url)
        self._users = 0
        with errors("connect", self.location):
            with psycopg.connect(url, autocommit=True, connect_timeout=TIMEOUT_SECONDS) as conn:
                _refuse_bypass(conn, self.location)
                from .schema import migrate

                migrate(conn)
            self._pool: ConnectionPool[Any] = pool.ConnectionPool(
                url,
                min_size=1,
                max_size=max_size,
                timeout=TIMEOUT_SECONDS,
                kwargs={"autocommit": True},
                configure=_configure,
                open=False,
            )
            self._pool.open(wait=True, timeout=TIMEOUT_SECONDS)

    @classmethod
    def shared(cls, url: str) -> Database:
        """The pool of ``url`` (opened on first use); ``release`` when done."""
        with _SHARED_LOCK:
            found = _SHARED.get(url)
            if found is None:
                found = _SHARED[url] = cls(url)
            found._users += 1
            return found

    def limit(self, max_size: int) -> None:
        """Hold at most ``max_size`` connections (at least 2: a writer holds one
        for its transaction while its index write takes another)."""
        self._pool.resize(min_size=1, max_size=max(2, max_size))

    def release(self) -> None:
        """A handle is done with the shared pool: the last one closes it."""
        with _SHARED_LOCK:
            self._users -= 1
            if self._users > 0:
                return
            if _SHARED.get(self.url) is self:
                del _SHARED[self.url]
        self.close()

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._pool.close()

    @contextlib.contextmanager
    def transaction(
        self, tenant: str | None, doing: str, *, snapshot: bool = False
    ) -> Iterator[Connection]:
        """One transaction on a pooled connection with ``tenant`` set (None: no
        tenant, the proof that a query sees nothing without one); ``snapshot``:
        every statement sees the same snapshot (REPEATABLE READ). Commits when
        the block ends, rolls back on any exception; ``BackendUnavailable``
        when the connection was lost inside the block, even if the block went
        on after the failed statement (see ``_lost``)."""
        with errors(doing, self.location), self._pool.connection() as conn, conn.transaction():
            if snapshot:
                conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if tenant is not None:
                conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant))
            yield conn
            if conn.closed:
                raise _lost(doing, self.location)


def _lost(doing: str, where: str) -> BackendUnavailable:
    """The connection broke inside a transaction whose block carried on (a
    caller that turned the failed statement into a notice). The driver ends
    the block of a broken connection without a word and without a commit:
    the block's writes are gone, and the caller must hear it."""
    return BackendUnavailable(
        f"cannot {doing} ({where}): the connection was lost, nothing of the transaction "
        "was committed"
    )


def close_all() -> None:
    """Close every shared pool (at exit of a process or a test session)."""
    with _SHARED_LOCK:
        found = list(_SHARED.values())
        _SHARED.clear()
    for database in found:
        database.close()


def _refuse_bypass(conn: Connection, where: str) -> None:
    row = conn.execute(
        "SELECT rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if row is not None and row[0]:
        raise AccessDenied(
            f"{where}: the role bypasses row-level security (SUPERUSER or BYPASSRLS), so "
            "tenants would see each other; connect as a role without them"
        )


def _configure(conn: Connection) -> None:
    """Each new pooled connection: pgvector's types (the schema made them)."""
    from pgvector.psycopg import register_vector

    register_vector(conn)
