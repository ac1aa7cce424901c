"""``memstrata doctor`` on a database: the server, the role, the schema, the
tenant's rows and files, read-only, each problem named with its fix."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from click.testing import CliRunner

import postgres_server
from memstrata import Memory
from memstrata.cli import cli
from memstrata.doctor import Finding, Level
from memstrata.doctor.database import diagnose_database
from memstrata.postgres.lock import PostgresLock
from memstrata.postgres.volume import PostgresVolume

psycopg = pytest.importorskip("psycopg")


def by_check(findings: list[Finding]) -> dict[str, list[Finding]]:
    out: dict[str, list[Finding]] = {}
    for finding in findings:
        out.setdefault(finding.check, []).append(finding)
    return out


@pytest.fixture
def url() -> str:
    return postgres_server.app_url()


@pytest.fixture
def group(url: str) -> Iterator[str]:
    """A tenant with a workspace, a fact and a turn."""
    name = postgres_server.tenant("doc")
    with Memory.open(url, name) as memory:
        memory.remember("The staging database is pg-staging-3")
        memory.record_turn("s1", user="hello there", assistant="hi")
    yield name


def rows_of(url: str, tenant: str) -> list[Any]:
    """Everything the tenant's rows hold, to compare before and after."""
    with psycopg.connect(url, autocommit=True) as conn, conn.transaction():
        conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (tenant,))
        return [
            conn.execute(
                "SELECT path, content, parts FROM memstrata_volume ORDER BY path"
            ).fetchall(),
            conn.execute("SELECT lsn, data::text FROM memstrata_journal ORDER BY lsn").fetchall(),
            conn.execute("SELECT base_lsn, epoch FROM memstrata_journal_state").fetchall(),
        ]


def test_a_healthy_tenant_is_all_ok_and_nothing_is_written(url: str, group: str) -> None:
    before = rows_of(url, group)
    findings = diagnose_database(url, group)
    assert rows_of(url, group) == before
    assert all(f.level in (Level.OK, Level.INFO) for f in findings), findings
    checks = by_check(findings)
    for name in ("database", "role", "schema", "isolation", "vector index", "journal", "index",
                 "lock", "snapshot", "MEMORY.md", "transcripts", "quarantine"):  # fmt: skip
        assert name in checks, name
    assert "pgvector" in checks["database"][0].message
    assert "1 live" in checks["snapshot"][0].message
    assert "password" not in json.dumps([f.to_dict() for f in findings])


def test_the_cli_reports_a_database_and_fails_on_a_missing_tenant(url: str, group: str) -> None:
    runner = CliRunner()
    done = runner.invoke(cli, ["doctor", "-w", url, "-g", group, "--json"])
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["workspace"] and "password" not in report["workspace"]
    assert {f["check"] for f in report["findings"]} >= {"schema", "isolation", "snapshot"}
    missing = runner.invoke(cli, ["doctor", "-w", url, "-g", postgres_server.tenant("none")])
    assert missing.exit_code == 1
    assert "no memstrata workspace" in missing.output and "memstrata init" in missing.output


def test_a_hand_edit_of_memory_md_is_named(url: str, group: str) -> None:
    volume = PostgresVolume(url, group)
    try:
        text = (volume.read("MEMORY.md") or b"").decode()
        volume.write("MEMORY.md", (text + "- I moved to Porto\n").encode())
    finally:
        volume.close()
    found = by_check(diagnose_database(url, group))["MEMORY.md"]
    assert [f.level for f in found] == [Level.INFO]
    assert "edited by hand" in found[0].message


def test_a_writer_holding_the_tenant_is_named(url: str, group: str) -> None:
    lock = PostgresLock(url, group)
    try:
        with lock:
            found = by_check(diagnose_database(url, group))["lock"]
            assert found[0].level is Level.INFO and "holds the tenant" in found[0].message
    finally:
        lock.close()
    assert by_check(diagnose_database(url, group))["lock"][0].level is Level.OK


def test_a_server_that_cannot_be_reached_is_one_finding(tmp_path: Any) -> None:
    dead = f"postgresql://memstrata:secret@/nowhere?host={tmp_path}&connect_timeout=2"
    findings = diagnose_database(dead, "g")
    assert [(f.level, f.check) for f in findings] == [(Level.ERROR, "database")]
    assert "secret" not in findings[0].message
    done = CliRunner().invoke(cli, ["doctor", "-w", dead, "-g", "g"])
    assert done.exit_code == 1 and "cannot connect" in done.output
    assert "Traceback" not in done.output and "secret" not in done.output


def test_a_table_without_row_level_security_is_an_error(url: str, group: str) -> None:
    admin = postgres_server.admin_url()
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute("ALTER TABLE memstrata_volume NO FORCE ROW LEVEL SECURITY")
        try:
            found = by_check(diagnose_database(url, group))["isolation"]
        finally:
            conn.execute("ALTER TABLE memstrata_volume FORCE ROW LEVEL SECURITY")
    assert found[0].level is Level.ERROR and "memstrata_volume" in found[0].message
    assert by_check(diagnose_database(url, group))["isolation"][0].level is Level.OK


def test_a_role_that_bypasses_row_level_security_is_an_error(group: str) -> None:
    findings = diagnose_database(postgres_server.admin_url(), group)
    role = by_check(findings)["role"]
    assert role[0].level is Level.ERROR and "bypasses row-level security" in role[0].message
    assert "snapshot" not in by_check(findings)  # its files are not read through it
