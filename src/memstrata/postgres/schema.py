"""The PostgreSQL schema: named, ordered, recorded migrations and the
row-level security that keeps tenants apart.

* **Migrations** (``MIGRATIONS``) are named and ordered; each runs once and is
  recorded in ``memstrata_migrations``. The pending ones run in ONE
  transaction under a transaction-level advisory lock (``MIGRATION_LOCK``),
  which first reads again which are done: two processes migrating at once run
  each migration once (the second waits, then finds them done), and a failed
  migration leaves nothing of itself. A database whose recorded migrations
  are not a prefix of this code's (a newer memstrata migrated it) is refused
  with ``Corrupt``.
* **Every table that holds a tenant's data** carries ``tenant text not null``
  and has row-level security ENABLED and FORCED (the owner is bound too) with
  one policy, ``tenant = nullif(current_setting('memstrata.tenant', true),
  '')``, for reads (``USING``) and writes (``WITH CHECK``): without the
  setting (NULL, or '' on a connection that set it once) no row is seen and
  none can be written; a ``CHECK`` keeps ``''`` out of every tenant column.
  ``memstrata_migrations`` holds no tenant data (migration names only) and is
  the one table without a policy.
* **The service's tokens** (``memstrata_tokens``, migration ``0005_tokens``)
  are a tenant's rows like any other, with one more policy, for reads only:
  the row whose ``digest`` is the transaction's ``memstrata.token_digest``
  setting, unless revoked. That is how ``tokens.tenant_of`` finds a token's
  tenant without knowing it first; a query without that setting (or with the
  digest of no live token) sees no token of any tenant, and only the owner of
  a token can compute its digest.
* **Global memory** (``0007_global_memory``): the ``global`` tenant's
  MEMORY.md rows (``memstrata_volume`` and its parts), and no other row of
  it, are readable by a transaction that has a tenant set and
  ``memstrata.read_global`` on (``shared``), as a group in a folder reads
  ``groups/global/MEMORY.md``; one more policy, for reads only. No query that
  does not turn the setting on sees them, and no tenant can write them.
* **pgvector** (``CREATE EXTENSION vector``) needs a superuser on a server
  where it is not trusted: the administrator creates it once per database
  (``IF NOT EXISTS`` then does nothing for the app's role).
* **The index's change log** (``memstrata_changes``): triggers append the
  chunk id of every chunk and vector inserted, updated or deleted, and the
  path of every file state written or deleted, whoever writes (cascades too),
  with the row's tenant. ``seq`` is an identity: it never goes back, and
  writers of one tenant are serialized (``index`` takes a per-tenant advisory
  lock), so a tenant's ``seq`` order is its commit order.
  ``memstrata_index_state.floor`` is the seq below which a tenant's log is
  incomplete (pruned or emptied by ``drop``): a reader whose place is below it
  loads everything again.
* **A workspace's files and journal** (``0004_files``): ``memstrata_volume``
  and ``memstrata_volume_parts`` (``volume``), ``memstrata_journal`` and
  ``memstrata_journal_state`` (``journal``); see ``_FILES``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ..errors import Corrupt

if TYPE_CHECKING:
    from .connect import Connection

__all__ = [
    "GLOBAL_TENANT",
    "HNSW_EF_CONSTRUCTION",
    "HNSW_M",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "READ_GLOBAL_SETTING",
    "TENANT_TABLES",
    "VECTOR_DIM",
    "migrate",
]

# pg_advisory_xact_lock key of the migrations ("memstrata" in ASCII, as an int)
MIGRATION_LOCK = 0x6D656D7374726174
VECTOR_DIM = 384  # the default embedder's; other sizes are kept as bytes only

TENANT_TABLES: tuple[str, ...] = (
    "memstrata_facts",
    "memstrata_forgotten",
    "memstrata_fact_state",
    "memstrata_files",
    "memstrata_chunks",
    "memstrata_vectors",
    "memstrata_changes",
    "memstrata_index_state",
    "memstrata_volume",
    "memstrata_volume_parts",
    "memstrata_journal",
    "memstrata_journal_state",
)
# An unset setting reads as NULL in a session that never set it, and as '' in
# one that did (a pooled connection): both must match no row.
_TENANT = "nullif(current_setting('memstrata.tenant', true), '')"


def _isolated(*tables: str) -> str:
    """Row-level security on ``tables``: enabled, forced, one tenant policy."""
    return "\n".join(
        f"""
        ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
        ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
        CREATE POLICY tenant_only ON {table}
            USING (tenant = {_TENANT}) WITH CHECK (tenant = {_TENANT});
        """
        for table in tables
    )


_FACTS = """
CREATE TABLE memstrata_facts (
    tenant text NOT NULL CHECK (tenant <> ''),
    id text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,  -- the order first put
    item jsonb NOT NULL,                       -- Item.to_dict()
    key text,                                  -- the de-duplication key, live items only
    PRIMARY KEY (tenant, id)
);
CREATE INDEX memstrata_facts_order ON memstrata_facts (tenant, seq);
CREATE INDEX memstrata_facts_key ON memstrata_facts (tenant, key) WHERE key IS NOT NULL;
CREATE TABLE memstrata_forgotten (
    tenant text NOT NULL CHECK (tenant <> ''),
    id text NOT NULL,
    entry jsonb NOT NULL,                      -- Forgotten.to_dict()
    at timestamptz NOT NULL,
    PRIMARY KEY (tenant, id)
);
CREATE TABLE memstrata_fact_state (
    tenant text PRIMARY KEY CHECK (tenant <> ''),
    lsn bigint NOT NULL DEFAULT 0
);
"""

_INDEX = f"""
CREATE TABLE memstrata_files (
    tenant text NOT NULL CHECK (tenant <> ''),
    path text NOT NULL,
    size bigint NOT NULL,
    mtime_ns bigint NOT NULL,
    sha256 text NOT NULL,
    indexed_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant, path)
);
CREATE TABLE memstrata_chunks (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant text NOT NULL CHECK (tenant <> ''),
    path text NOT NULL,
    layer text NOT NULL,
    line_start integer NOT NULL,
    line_end integer NOT NULL,
    text text NOT NULL,
    title text NOT NULL DEFAULT '',
    session text,
    created_at text,                           -- ISO 8601 as given (exact round trip)
    source text NOT NULL,
    ref text,
    live boolean NOT NULL DEFAULT true,
    tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', title || ' ' || text)) STORED
);
CREATE INDEX memstrata_chunks_path ON memstrata_chunks (tenant, path);
CREATE INDEX memstrata_chunks_ref ON memstrata_chunks (tenant, ref);
CREATE INDEX memstrata_chunks_tsv ON memstrata_chunks USING gin (tsv);
CREATE TABLE memstrata_vectors (
    chunk_id bigint PRIMARY KEY REFERENCES memstrata_chunks (id) ON DELETE CASCADE,
    tenant text NOT NULL CHECK (tenant <> ''),
    model text NOT NULL,
    vec bytea NOT NULL,                        -- float32 bytes, exactly as stored
    embedding vector({VECTOR_DIM})                 -- the same, when it has {VECTOR_DIM} dimensions
);
CREATE INDEX memstrata_vectors_hnsw ON memstrata_vectors
    USING hnsw (embedding vector_cosine_ops);
CREATE TABLE memstrata_changes (
    seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant text NOT NULL CHECK (tenant <> ''),
    chunk_id bigint,
    path text
);
CREATE INDEX memstrata_changes_tenant ON memstrata_changes (tenant, seq);
CREATE TABLE memstrata_index_state (
    tenant text PRIMARY KEY CHECK (tenant <> ''),
    floor bigint NOT NULL DEFAULT 0
);
"""


# A workspace's files (``volume.PostgresVolume``) and its journal
# (``journal.PostgresJournal``). Paths sort and compare by code point
# (COLLATE "C"), as Python sorts them. A file is its ``content`` followed by
# its ``parts`` in ``seq`` order: ``append`` adds a part (its cost is the bytes
# appended), ``write`` replaces the content and drops the parts. ``inode``
# takes a fresh value of ``memstrata_volume_inode`` at every write (``seq`` of
# a part too), so a file's ``Stat`` changes whenever its bytes do. A journal
# record's ``data`` is ``json`` (not ``jsonb``): its text, key order included,
# is kept as written.
_FILES = """
CREATE SEQUENCE memstrata_volume_inode;
CREATE TABLE memstrata_volume (
    tenant text NOT NULL CHECK (tenant <> ''),
    path text COLLATE "C" NOT NULL,
    content bytea NOT NULL,
    size bigint NOT NULL,                      -- of content and parts
    line_ended boolean NOT NULL,               -- the last byte is a line break
    parts integer NOT NULL DEFAULT 0,          -- how many parts follow the content
    mtime_ns bigint NOT NULL,                  -- the database's clock at the last write
    inode bigint NOT NULL,
    PRIMARY KEY (tenant, path)
);
CREATE TABLE memstrata_volume_parts (
    tenant text NOT NULL CHECK (tenant <> ''),
    path text COLLATE "C" NOT NULL,
    seq bigint NOT NULL,
    data bytea NOT NULL,
    PRIMARY KEY (tenant, path, seq),
    FOREIGN KEY (tenant, path) REFERENCES memstrata_volume (tenant, path)
        ON DELETE CASCADE ON UPDATE CASCADE
);
CREATE TABLE memstrata_journal (
    tenant text NOT NULL CHECK (tenant <> ''),
    lsn bigint NOT NULL,
    op text NOT NULL,
    data json NOT NULL,                        -- the record as the file journal writes it
    PRIMARY KEY (tenant, lsn)
);
CREATE TABLE memstrata_journal_state (
    tenant text PRIMARY KEY CHECK (tenant <> ''),
    base_lsn bigint NOT NULL,                  -- every record up to it is checkpointed
    epoch bigint NOT NULL DEFAULT 1,           -- +1 at every reset
    header json NOT NULL
);
"""


def _logged(what: str, table: str, key: str, column: str) -> str:
    """A trigger that logs every row of ``table`` written or deleted, by its
    ``key``, in the tenant's change log (``memstrata_changes.column``)."""
    return f"""
CREATE FUNCTION memstrata_{what}_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('DELETE', 'UPDATE') THEN
        INSERT INTO memstrata_changes (tenant, {column}) VALUES (OLD.tenant, OLD.{key});
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO memstrata_changes (tenant, {column}) VALUES (NEW.tenant, NEW.{key});
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER memstrata_{what}_changed AFTER INSERT OR UPDATE OR DELETE ON {table}
    FOR EACH ROW EXECUTE FUNCTION memstrata_{what}_changed();
"""


# The HNSW index's build parameters (migration 0006): pgvector's defaults
# (m 16, ef_construction 64, as 0003 built it) kept at most 0.92 of the exact
# top 10 at one million chunks whatever ef_search; these keep 0.998 of it
# (docs/postgres.md, "Search": measured on this project's 2-core machine).
HNSW_M = 24
HNSW_EF_CONSTRUCTION = 128
# Built again only where it was built otherwise: on a database that holds
# vectors already this takes a while (a million: ~20 minutes on two cores,
# with maintenance_work_mem large enough to hold the graph: ~3 GB).
_HNSW = f"""
DO $$
BEGIN
    IF NOT EXISTS (
        SELECT FROM pg_indexes WHERE indexname = 'memstrata_vectors_hnsw'
        AND indexdef LIKE '%m=''{HNSW_M}''%ef_construction=''{HNSW_EF_CONSTRUCTION}''%'
    ) THEN
        DROP INDEX IF EXISTS memstrata_vectors_hnsw;
        CREATE INDEX memstrata_vectors_hnsw ON memstrata_vectors
            USING hnsw (embedding vector_cosine_ops)
            WITH (m = {HNSW_M}, ef_construction = {HNSW_EF_CONSTRUCTION});
    END IF;
END $$;
"""

MIGRATIONS: tuple[tuple[str, str], ...] = (
    ("0001_pgvector", "CREATE EXTENSION IF NOT EXISTS vector"),
    (
        "0002_facts",
        _FACTS + _isolated("memstrata_facts", "memstrata_forgotten", "memstrata_fact_state"),
    ),
    (
        "0003_index",
        _INDEX
        + _logged("chunk", "memstrata_chunks", "id", "chunk_id")
        + _logged("vector", "memstrata_vectors", "chunk_id", "chunk_id")
        + _logged("file", "memstrata_files", "path", "path")
        + _isolated(
            "memstrata_files",
            "memstrata_chunks",
            "memstrata_vectors",
            "memstrata_changes",
            "memstrata_index_state",
        ),
    ),
    (
        "0004_files",
        _FILES
        + _isolated(
            "memstrata_volume",
            "memstrata_volume_parts",
            "memstrata_journal",
            "memstrata_journal_state",
        ),
    ),
)


def migrate(conn: Connection) -> list[str]:
    """Run the migrations the database lacks (see the module invariants);
    returns the names run now."""
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        conn.execute(
            "CREATE TABLE IF NOT EXISTS memstrata_migrations ("
            "name text PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        rows = conn.execute("SELECT name FROM memstrata_migrations ORDER BY name").fetchall()
        pending = _pending([row[0] for row in rows])
        for name, sql in pending:
            conn.execute(sql.encode())
            conn.execute("INSERT INTO memstrata_migrations (name) VALUES (%s)", (name,))
    return [name for name, _ in pending]


def _pending(done: Sequence[Any]) -> Sequence[tuple[str, str]]:
    names = [name for name, _ in MIGRATIONS]
    if list(done) != names[: len(done)]:
        raise Corrupt(
            f"the database's memstrata migrations {list(done)} are not a prefix of {names} "
            "(a newer memstrata migrated it?)"
        )
    return MIGRATIONS[len(done) :]


# -- 0005: the memory service's bearer tokens (appended: each migration keeps its place) ----

TOKEN_DIGEST_SETTING = "memstrata.token_digest"

_TOKENS = (
    """
CREATE TABLE memstrata_tokens (
    id text PRIMARY KEY,                       -- random, not secret: names it in list/revoke
    tenant text NOT NULL CHECK (tenant <> ''),
    digest text NOT NULL UNIQUE,               -- sha256 of the token (tokens.digest_of)
    label text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz
);
CREATE INDEX memstrata_tokens_tenant ON memstrata_tokens (tenant, created_at);
"""
    + _isolated("memstrata_tokens")
    + f"""
CREATE POLICY by_digest ON memstrata_tokens FOR SELECT
    USING (revoked_at IS NULL
           AND digest = nullif(current_setting('{TOKEN_DIGEST_SETTING}', true), ''));
"""
)

MIGRATIONS += (("0005_tokens", _TOKENS), ("0006_hnsw", _HNSW))
TENANT_TABLES += ("memstrata_tokens",)


# -- 0007: global memory, readable by every tenant (the file mode's group rule) --------------

GLOBAL_TENANT = "global"
READ_GLOBAL_SETTING = "memstrata.read_global"

# For reads only, and only where a transaction asks for it (``postgres.shared``
# sets READ_GLOBAL_SETTING): every other query of a tenant, which relies on the
# tenant policy alone to pick its rows, never sees a row of ``global``. Writes
# stay under the tenant policy (a permissive SELECT policy adds no write).
_SHARED_ROW = f"""
    tenant = '{GLOBAL_TENANT}' AND path = 'MEMORY.md'
    AND {_TENANT} IS NOT NULL
    AND current_setting('{READ_GLOBAL_SETTING}', true) = 'on'
"""
_GLOBAL_MEMORY = f"""
CREATE POLICY global_memory ON memstrata_volume FOR SELECT USING ({_SHARED_ROW});
CREATE POLICY global_memory ON memstrata_volume_parts FOR SELECT USING ({_SHARED_ROW});
"""

MIGRATIONS += (("0007_global_memory", _GLOBAL_MEMORY),)
