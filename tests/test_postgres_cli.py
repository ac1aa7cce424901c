"""The CLI on a workspace in PostgreSQL: ``--workspace postgresql://…`` and
``MEMSTRATA_DATABASE_URL`` name the database, ``--group`` the tenant."""

from __future__ import annotations

import json

from click.testing import CliRunner

import postgres_server
from memstrata import Memory
from memstrata.cli import cli


def test_remember_search_and_list_on_a_database() -> None:
    url, tenant = postgres_server.app_url(), postgres_server.tenant()
    runner = CliRunner()
    base = ["-w", url, "-g", tenant]
    assert runner.invoke(cli, ["init", *base]).exit_code == 0
    done = runner.invoke(cli, ["remember", *base, "My sister Lola lives in Lisbon"])
    assert done.exit_code == 0, done.output
    found = runner.invoke(cli, ["search", *base, "Lisbon", "--json"])
    assert found.exit_code == 0, found.output
    assert "Lola" in found.output and "MEMORY.md" in found.output
    env = {"MEMSTRATA_DATABASE_URL": url, "MEMSTRATA_HOME": "/nonexistent"}
    listed = runner.invoke(cli, ["list", "-g", tenant, "--json"], env=env)
    assert listed.exit_code == 0, listed.output
    assert [item["text"] for item in json.loads(listed.output)] == [
        "My sister Lola lives in Lisbon"
    ]
    other = runner.invoke(cli, ["list", "-g", postgres_server.tenant(), "--json"], env=env)
    assert other.exit_code == 1 and "no memstrata workspace" in other.output


def test_scan_reads_the_tenants_own_rule_packs() -> None:
    """`scan` on a database: the packs are the tenant's rules/ files (it said
    "needs a folder" before)."""
    url, tenant = postgres_server.app_url(), postgres_server.tenant()
    runner = CliRunner()
    base = ["-w", url, "-g", tenant]
    assert runner.invoke(cli, ["init", *base]).exit_code == 0
    pack = (
        'language = "en"\n[[rule]]\nname = "zorb"\ncategory = "decision"\n'
        "pattern = '\\bship it on\\b'\ntriggers = [\"ship it\"]\n"
    )
    with Memory.open(url, tenant) as memory:
        memory.workspace.volume.write("rules/zorb.toml", pack.encode())
    done = runner.invoke(cli, ["scan", *base, "We ship it on Fridays.", "--json"])
    assert done.exit_code == 0, done.output
    assert "decision" in [e["category"] for e in json.loads(done.output)]
    plain = runner.invoke(cli, ["scan", "We ship it on Fridays.", "--json"])  # no packs
    assert "decision" not in [e["category"] for e in json.loads(plain.output)]
