"""``memstrata doctor`` on a database: the server, the connecting role, the
schema and one tenant, in plain words.

Invariants:

* Read-only. The checks of the server, the role and the schema run on one
  connection with ``default_transaction_read_only`` on; no migration runs
  (``Database`` migrates, so the tenant's files are read through one only
  when none is pending). The writer lock is looked up in ``pg_locks``, never
  taken.
* Every failure to reach or read the database is a finding, not an
  exception; the URL's password is never printed (``location_of``).
* The tenant's files (the facts' snapshot, MEMORY.md, lessons, transcripts,
  the quarantine) are checked by ``doctor.diagnose_files``, the folder's
  checks on the tenant's volume.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..postgres.connect import (
    TENANT_SETTING,
    TIMEOUT_SECONDS,
    Database,
    _driver,
    check_tenant,
    location_of,
)
from ..postgres.index import ANN_ABOVE, ANN_SHARE
from ..postgres.schema import HNSW_EF_CONSTRUCTION, HNSW_M, MIGRATIONS
from ..postgres.volume import PostgresVolume
from ..postgres.workspace import DEFAULT_TENANT
from ..storage.access import check_group
from ..storage.workspace import Workspace
from . import Finding, Level, diagnose_files

if TYPE_CHECKING:
    from psycopg import Connection

__all__ = ["diagnose_database"]

# Tables that hold no tenant's rows (every other memstrata_ table must be isolated).
_SHARED_TABLES = frozenset({"memstrata_migrations"})
# A granted advisory lock on the tenant's writer key, by the key's two halves.
_LOCK_HOLDER = """
SELECT l.pid FROM pg_locks l, (SELECT hashtextextended(%s, 0) AS key) k
WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
  AND l.classid::bigint = (k.key >> 32) & 4294967295
  AND l.objid::bigint = k.key & 4294967295
LIMIT 1
"""


def diagnose_database(url: str, group: str | None) -> list[Finding]:
    """Every finding about the database at ``url`` and the tenant of ``group``
    (None: the default tenant), most basic first."""
    if group is not None:
        check_group(group)
    tenant = check_tenant(group or DEFAULT_TENANT)
    where = location_of(url)
    psycopg, _ = _driver()
    try:
        conn = psycopg.connect(url, autocommit=True, connect_timeout=TIMEOUT_SECONDS)
    except psycopg.Error as exc:
        return [Finding(Level.ERROR, "database", f"cannot connect to {where}: {_first(exc)}")]
    try:
        with conn:
            conn.execute("SET default_transaction_read_only = on")
            findings = [_server(conn, where), _role(conn)]
            schema, current = _migrations(conn)
            findings += schema
            if current:
                findings += [*_isolation(conn), _hnsw(conn), *_tenant(conn, tenant)]
    except psycopg.Error as exc:
        return [Finding(Level.ERROR, "database", f"cannot read {where}: {_first(exc)}")]
    if not current or any(f.level is Level.ERROR for f in findings):
        return findings
    return findings + _files(url, group, tenant)


def _first(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _server(conn: Connection[Any], where: str) -> Finding:
    version = conn.execute("SHOW server_version").fetchone()
    vector = conn.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()
    shown = f"PostgreSQL {version[0] if version else '?'} at {where}"
    if vector is None:
        return Finding(
            Level.WARN,
            "database",
            f"{shown}, without the pgvector extension: the first open creates it, which needs "
            "a role allowed to (or `CREATE EXTENSION vector` by an administrator)",
        )
    return Finding(Level.OK, "database", f"{shown}, pgvector {vector[0]}")


def _role(conn: Connection[Any]) -> Finding:
    row = conn.execute(
        "SELECT current_user, rolsuper OR rolbypassrls FROM pg_roles WHERE rolname = current_user"
    ).fetchone()
    if row is not None and row[1]:
        return Finding(
            Level.ERROR,
            "role",
            f"{row[0]} bypasses row-level security (SUPERUSER or BYPASSRLS): tenants would see "
            "each other, so memstrata refuses to open; connect as a role without them",
        )
    name = row[0] if row else "?"
    return Finding(Level.OK, "role", f"{name}: bound by row-level security")


def _migrations(conn: Connection[Any]) -> tuple[list[Finding], bool]:
    """The schema's findings, and whether it is current (no migration pending)."""
    known = [name for name, _ in MIGRATIONS]
    table = conn.execute("SELECT to_regclass('memstrata_migrations')").fetchone()
    done = []
    if table is not None and table[0] is not None:
        done = [r[0] for r in conn.execute("SELECT name FROM memstrata_migrations ORDER BY name")]
    if done != known[: len(done)]:
        unknown = [name for name in done if name not in known]
        return [
            Finding(
                Level.ERROR,
                "schema",
                f"the database's migrations {done} are not a prefix of this memstrata's "
                f"{known}" + (f" (unknown: {unknown}: a newer memstrata?)" if unknown else ""),
            )
        ], False
    pending = known[len(done) :]
    if not pending:
        return [Finding(Level.OK, "schema", f"{len(done)} migrations, the last {done[-1]}")], True
    rebuild = (
        "; 0006_hnsw builds the vector index again (about 20 minutes at a million vectors "
        "on two cores: run it at a quiet hour)"
        if "0006_hnsw" in pending and done
        else ""
    )
    return [
        Finding(
            Level.WARN,
            "schema",
            f"{len(pending)} migration(s) pending ({', '.join(pending)}): the next open applies "
            f"them, in one transaction{rebuild}",
        )
    ], False


def _isolation(conn: Connection[Any]) -> list[Finding]:
    rows = conn.execute(
        "SELECT c.relname, c.relrowsecurity, c.relforcerowsecurity, "
        "EXISTS (SELECT FROM pg_policy p WHERE p.polrelid = c.oid) "
        "FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        "WHERE c.relkind = 'r' AND c.relname LIKE 'memstrata\\_%' "
        "AND n.nspname = current_schema() ORDER BY c.relname"
    ).fetchall()
    open_tables = [
        name
        for name, enabled, forced, policy in rows
        if name not in _SHARED_TABLES and not (enabled and forced and policy)
    ]
    if open_tables:
        return [
            Finding(
                Level.ERROR,
                "isolation",
                f"row-level security is off (or not forced, or without a policy) on "
                f"{', '.join(open_tables)}: a query there may read every tenant's rows; "
                "restore it: ALTER TABLE … ENABLE ROW LEVEL SECURITY, FORCE ROW LEVEL SECURITY",
            )
        ]
    tenants = sum(1 for name, *_ in rows if name not in _SHARED_TABLES)
    return [
        Finding(Level.OK, "isolation", f"row-level security enabled and forced on {tenants} tables")
    ]


def _hnsw(conn: Connection[Any]) -> Finding:
    row = conn.execute(
        "SELECT i.indisvalid, pg_get_indexdef(i.indexrelid), pg_relation_size(i.indexrelid) "
        "FROM pg_index i WHERE i.indexrelid = to_regclass('memstrata_vectors_hnsw')"
    ).fetchone()
    if row is None:
        return Finding(
            Level.ERROR,
            "vector index",
            "the HNSW index memstrata_vectors_hnsw is missing: vector search reads every row; "
            "recreate it (docs/postgres.md#search)",
        )
    valid, definition, size = row
    if not valid:
        return Finding(
            Level.ERROR,
            "vector index",
            "the HNSW index is invalid (a build was interrupted): "
            "REINDEX INDEX CONCURRENTLY memstrata_vectors_hnsw",
        )
    wanted = f"m='{HNSW_M}'" in definition and f"ef_construction='{HNSW_EF_CONSTRUCTION}'" in (
        definition
    )
    if not wanted:
        return Finding(
            Level.WARN,
            "vector index",
            f"the HNSW index was built with other parameters than m {HNSW_M}, ef_construction "
            f"{HNSW_EF_CONSTRUCTION} (fewer of the exact nearest found); migration 0006 builds "
            "it again",
        )
    return Finding(
        Level.OK,
        "vector index",
        f"HNSW, m {HNSW_M}, ef_construction {HNSW_EF_CONSTRUCTION}, {size / 2**20:.1f} MiB",
    )


def _tenant(conn: Connection[Any], tenant: str) -> list[Finding]:
    """The tenant's journal, index and writer, read with the tenant set."""
    findings = []
    with conn.transaction():
        conn.execute("SELECT set_config(%s, %s, true)", (TENANT_SETTING, tenant))
        base = conn.execute("SELECT base_lsn FROM memstrata_journal_state").fetchone()
        waiting = conn.execute(
            "SELECT count(*) FROM memstrata_journal WHERE lsn > %s", (base[0] if base else 0,)
        ).fetchone()
        chunks = conn.execute("SELECT count(*) FROM memstrata_chunks").fetchone()
        vectors = conn.execute("SELECT count(*) FROM memstrata_vectors").fetchone()
        everyone = conn.execute(
            "SELECT reltuples FROM pg_class WHERE oid = to_regclass('memstrata_vectors_hnsw')"
        ).fetchone()
    lsn = base[0] if base else 0
    findings.append(
        Finding(
            Level.OK,
            "journal",
            f"{waiting[0] if waiting else 0} record(s) after checkpoint lsn {lsn} wait for the "
            "next checkpoint",
        )
    )
    held = vectors[0] if vectors else 0
    total = float(everyone[0]) if everyone else -1.0
    by_index = held > ANN_ABOVE and (total <= 0 or held >= ANN_SHARE * total)
    findings.append(
        Finding(
            Level.OK,
            "index",
            f"{chunks[0] if chunks else 0} chunk(s), {held} vector(s); the vector list comes "
            + ("from the HNSW index" if by_index else "from RAM (exact at this size)"),
        )
    )
    holder = conn.execute(_LOCK_HOLDER, (f"memstrata.workspace/{tenant}",)).fetchone()
    if holder is None:
        findings.append(Finding(Level.OK, "lock", "no writer holds the tenant"))
    else:
        findings.append(
            Finding(
                Level.INFO,
                "lock",
                f"a writer holds the tenant now (server process {holder[0]}); that is normal",
            )
        )
    return findings


def _files(url: str, group: str | None, tenant: str) -> list[Finding]:
    """The tenant's files, checked as a folder's are."""
    database = Database(url)  # nothing pending: it migrates nothing
    try:
        volume = PostgresVolume(database, tenant)
        try:
            workspace = Workspace.on(volume, group, url)
            if not workspace.exists():
                hint = f" --group {group}" if group else ""
                return [
                    Finding(
                        Level.ERROR,
                        "workspace",
                        f"no memstrata workspace for tenant {tenant!r}; create it with "
                        f"`memstrata init --workspace URL{hint}`",
                    )
                ]
            return diagnose_files(workspace)
        finally:
            volume.close()
    finally:
        database.close()
