"""Tenants on one PostgreSQL cannot see each other, and the database enforces
it (row-level security), not the queries: through the backends' API, through
raw queries with another tenant set, and with no tenant set at all.

Also: what opening a ``Database`` refuses (a role that bypasses row-level
security, an unreachable server, no driver), and migrations run at once."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime

import psycopg
import pytest

import postgres_server
from memstrata.errors import AccessDenied, BackendUnavailable, InvalidInput
from memstrata.index.chunks import Chunk
from memstrata.index.protocol import FileState
from memstrata.model import Item
from memstrata.postgres.connect import Database
from memstrata.postgres.facts import PostgresFactStore
from memstrata.postgres.index import PostgresIndex
from memstrata.postgres.schema import MIGRATIONS, TENANT_TABLES, migrate
from memstrata.storage.journal import Record
from memstrata.stores.longterm import OP_PUT

T0 = datetime(2026, 1, 1, tzinfo=UTC)
STATE = FileState(1, 1, "a")
VEC = b"\x00\x00\x80\x3f" * 384  # a 384-d vector: the vector(384) column is filled too


def fact(item_id: str, text: str) -> Item:
    return Item(id=item_id, text=text, created_at=T0, updated_at=T0, valid_from=T0)


@pytest.fixture
def two_tenants(postgres_url: str) -> Iterator[tuple[str, str]]:
    """Two fresh tenants, each with a fact, a file's chunks and a vector."""
    names = postgres_server.tenant("ann"), postgres_server.tenant("bob")
    for name in names:
        store = PostgresFactStore(postgres_url, name)
        store.apply(Record(1, OP_PUT, {"items": [fact("m1", f"{name} likes tea").to_dict()]}))
        store.close()
        index = PostgresIndex(postgres_url, name)
        ids = index.replace(
            "semantic/a.md", [Chunk("semantic/a.md", "semantic", 1, 1, name)], STATE
        )
        index.set_vectors("m", dict.fromkeys(ids, VEC))
        index.close()
    yield names


def test_neither_tenant_sees_the_other_through_the_backends(
    postgres_url: str, two_tenants: tuple[str, str]
) -> None:
    for name in two_tenants:
        store = PostgresFactStore(postgres_url, name)
        index = PostgresIndex(postgres_url, name)
        try:
            assert [i.text for i in store.items.values()] == [f"{name} likes tea"]
            assert store.lsn == 1
            assert [c.text for c in index.chunks.values()] == [name]
            assert len(index.vectors) == 1 and set(index.files) == {"semantic/a.md"}
        finally:
            store.close()
            index.close()


def _counts(conn: psycopg.Connection[tuple[object, ...]]) -> dict[str, int]:
    counts = {}
    for table in TENANT_TABLES:
        row = conn.execute(f"SELECT count(*) FROM {table}").fetchone()  # noqa: S608
        assert row is not None
        counts[table] = int(row[0])
    return counts


def test_a_raw_query_sees_only_the_tenant_set_and_nothing_without_one(
    postgres_url: str, two_tenants: tuple[str, str]
) -> None:
    ann, bob = two_tenants
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert set(_counts(conn).values()) == {0}  # no tenant set: nothing at all
        for name in (ann, bob):
            with conn.transaction():
                conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (name,))
                tenants = {
                    row[0]
                    for table in TENANT_TABLES
                    for row in conn.execute(f"SELECT DISTINCT tenant FROM {table}")  # noqa: S608
                }
                assert tenants == {name}
                texts = conn.execute("SELECT text FROM memstrata_chunks").fetchall()
                assert texts == [(name,)]
                embedded = conn.execute(
                    "SELECT count(*) FROM memstrata_vectors WHERE embedding IS NOT NULL"
                ).fetchone()
                assert embedded == (1,)
        assert set(_counts(conn).values()) == {0}  # the setting ended with the transaction
        conn.execute("SELECT set_config('memstrata.tenant', '', false)")  # set, but empty
        assert set(_counts(conn).values()) == {0}
    with psycopg.connect(postgres_server.admin_url(), autocommit=True) as admin:
        rows = admin.execute(
            "SELECT count(*) FROM memstrata_chunks WHERE tenant = ANY(%s)", ([ann, bob],)
        ).fetchone()
        assert rows == (2,)  # the rows are there: the policy hid them


def test_a_tenant_cannot_write_rows_of_another(
    postgres_url: str, two_tenants: tuple[str, str]
) -> None:
    ann, bob = two_tenants
    database = Database.shared(postgres_url)
    try:
        with pytest.raises(AccessDenied, match="row-level security"):  # noqa: SIM117
            with database.transaction(ann, "write as another tenant") as conn:
                conn.execute(
                    "INSERT INTO memstrata_fact_state (tenant, lsn) VALUES (%s, 9) "
                    "ON CONFLICT (tenant) DO UPDATE SET lsn = 9",
                    (bob,),
                )
        with database.transaction(ann, "update another tenant") as conn:
            done = conn.execute("UPDATE memstrata_chunks SET text = 'x' WHERE tenant = %s", (bob,))
            assert done.rowcount == 0
        with pytest.raises(AccessDenied):  # noqa: SIM117
            with database.transaction(None, "write without a tenant") as conn:
                conn.execute("INSERT INTO memstrata_fact_state (tenant, lsn) VALUES ('', 1)")
    finally:
        database.release()
    store = PostgresFactStore(postgres_url, bob)
    assert store.lsn == 1 and [i.text for i in store.items.values()] == [f"{bob} likes tea"]
    store.close()


def test_every_tenant_table_has_row_level_security_enabled_and_forced(postgres_url: str) -> None:
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
            "WHERE relname LIKE 'memstrata%%' AND relkind = 'r' ORDER BY relname"
        ).fetchall()
    secured = {name for name, enabled, forced in rows if enabled and forced}
    assert secured == set(TENANT_TABLES)
    assert {name for name, _, _ in rows} == {*TENANT_TABLES, "memstrata_migrations"}


def test_a_role_that_bypasses_row_level_security_is_refused() -> None:
    with pytest.raises(AccessDenied, match="bypasses row-level security"):
        Database(postgres_server.admin_url())


def test_two_writers_of_one_tenant_see_each_others_facts(postgres_url: str) -> None:
    name = postgres_server.tenant()
    first, second = PostgresFactStore(postgres_url, name), PostgresFactStore(postgres_url, name)
    try:
        first.apply(Record(1, OP_PUT, {"items": [fact("m1", "one").to_dict()]}))
        second.apply(Record(2, OP_PUT, {"items": [fact("m2", "two").to_dict()]}))
        assert list(second.items) == ["m1", "m2"]  # decided on what the first wrote
        first.apply(Record(2, OP_PUT, {"items": [fact("m3", "a replay").to_dict()]}))
        assert "m3" not in first.items  # lsn 2 was applied already (by the other)
        first.apply(Record(3, OP_PUT, {"items": [fact("m3", "three").to_dict()]}))
        assert list(first.items) == ["m1", "m2", "m3"] and first.lsn == 3
    finally:
        first.close()
        second.close()


def test_migrations_run_once_when_two_connections_migrate_at_once() -> None:
    database = f"mig_{postgres_server.tenant('x').replace('-', '_')}"
    admin = postgres_server.admin_url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {database} OWNER {postgres_server.APP_ROLE}")
    url = admin.replace("postgres@/memstrata_test", f"{postgres_server.APP_ROLE}@/{database}")
    with psycopg.connect(admin.replace("/memstrata_test", f"/{database}"), autocommit=True) as c:
        c.execute("CREATE EXTENSION vector")
    ran: list[list[str]] = []
    start = threading.Barrier(2)

    def run() -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            start.wait()
            ran.append(migrate(conn))

    threads = [threading.Thread(target=run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    names = [name for name, _ in MIGRATIONS]
    assert sorted(ran, key=len) == [[], names]  # one ran them all, the other none
    with psycopg.connect(url, autocommit=True) as conn:
        recorded = [r[0] for r in conn.execute("SELECT name FROM memstrata_migrations")]
    assert sorted(recorded) == names


def test_an_unreachable_server_is_backend_unavailable(tmp_path: object) -> None:
    with pytest.raises(BackendUnavailable):
        Database(f"postgresql://nobody@/nothing?host={tmp_path}&connect_timeout=2")


def test_a_tenant_must_be_a_name(postgres_url: str) -> None:
    for bad in ("", "  ", "a\x00b", "x" * 201):
        with pytest.raises(InvalidInput):
            PostgresIndex(postgres_url, bad)


def test_without_the_driver_opening_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now fails
    with pytest.raises(BackendUnavailable, match=r"pip install 'memstrata\[postgres\]'"):
        Database("postgresql://nobody@/nothing")


@pytest.mark.slow
def test_importing_memstrata_imports_no_driver() -> None:
    code = (
        "import sys, memstrata, memstrata.postgres, memstrata.postgres.index, "
        "memstrata.postgres.facts\n"
        "assert not {'psycopg', 'psycopg_pool', 'pgvector'} & set(sys.modules), sys.modules"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
