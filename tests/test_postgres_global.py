"""Global memory on PostgreSQL (issue 19, seed 001; issue 15 item 3): every
tenant's context and gate take the ``global`` tenant's live facts, read
through the database; the one policy that allows it shows ``global``'s
MEMORY.md and nothing else of it, never another tenant, and writes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import psycopg
import pytest

import postgres_server
from memstrata import Memory
from memstrata.errors import AccessDenied
from memstrata.postgres.connect import Database
from memstrata.postgres.schema import TENANT_TABLES

GLOBAL = "global"
FAST = {"embedder": "none"}


@pytest.fixture
def fresh_global(postgres_url: str) -> Iterator[str]:
    """An empty ``global`` tenant, emptied again after the test."""
    postgres_server.drop_tenant(GLOBAL)
    yield postgres_url
    postgres_server.drop_tenant(GLOBAL)


class Counting:
    """A source of global's MEMORY.md that counts its calls."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.stats, self.reads = inner, 0, 0

    def stat(self, rel: str) -> Any:
        self.stats += 1
        return self.inner.stat(rel)

    def read(self, rel: str) -> Any:
        self.reads += 1
        return self.inner.read(rel)


def _global_section(memory: Memory, prompt: str) -> str | None:
    context = memory.build_context(prompt, budget_tokens=2000)
    for section in context.sections:
        if section.name == "Global memory":
            assert section.sources == ("groups/global/MEMORY.md",)
            return section.text
    return None


def test_a_tenants_context_and_gate_take_global_memory_labelled(fresh_global: str) -> None:
    url = fresh_global
    team = postgres_server.tenant("team")
    with Memory.open(url, GLOBAL, **FAST) as shared:
        shared.remember("The office wifi password rotates every Monday")
        for number in range(40):  # more than a small budget takes: gated by the prompt
            shared.remember(f"Meeting room {number} on floor {number} has a projector and a view")
        shared.flush()
        with Memory.open(url, team, **FAST) as memory:
            memory.remember("Alice prefers short standups")
            text = _global_section(memory, "when does the wifi password rotate?")
            assert text is not None and "wifi password rotates" in text
            hits = memory.gate("when does the wifi password rotate?", 500)
            assert any(hit.layer == "global" and "wifi" in hit.text for hit in hits)
            assert any(hit.citation.startswith("groups/global/MEMORY.md:") for hit in hits)
            # unchanged: one stat per call, not read again (the inode is the marker)
            reader = memory._prompts.global_memory  # noqa: SLF001
            counted = reader._volume = Counting(reader._volume)  # noqa: SLF001
            memory.build_context("wifi", budget_tokens=2000)
            assert (counted.stats, counted.reads) == (1, 0)
            small = memory.build_context("wifi password", budget_tokens=1000)
            assert "wifi password" in small.text and "more fact(s) in" in small.text  # gated
            assert (counted.stats, counted.reads) == (2, 0)
            memory.gate("wifi", 500)
            assert (counted.stats, counted.reads) == (3, 0)
            # changed: seen at global's next flush, as a folder's reader of the file
            shared.remember("Deploys are frozen on Fridays")
            shared.flush()
            text = _global_section(memory, "are deploys frozen on fridays?")
            assert text is not None and "Deploys are frozen on Fridays" in text
            assert counted.reads == 1
        own = _global_section(shared, "wifi")  # global is not its own global memory
        assert own is None


def test_a_tenant_without_global_memory_has_no_global_section(fresh_global: str) -> None:
    with Memory.open(fresh_global, postgres_server.tenant("team"), **FAST) as memory:
        memory.remember("Alice prefers short standups")
        assert _global_section(memory, "standups") is None


def _seen(
    conn: psycopg.Connection[tuple[object, ...]],
    tenant: str | None,
    *,
    read_global: bool,
    table: str = "memstrata_volume",
) -> set[tuple[str, str]]:
    with conn.transaction():
        if tenant is not None:
            conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (tenant,))
        if read_global:
            conn.execute("SELECT set_config('memstrata.read_global', 'on', true)")
        column = "path" if table.startswith("memstrata_volume") else "''"
        query = f"SELECT DISTINCT tenant, {column} FROM {table}"  # noqa: S608
        return {(str(t), str(p)) for t, p in conn.execute(query)}


def test_the_policy_shows_globals_memory_md_only_and_no_other_tenant(fresh_global: str) -> None:
    url = fresh_global
    ann, bob = postgres_server.tenant("ann"), postgres_server.tenant("bob")
    for name in (GLOBAL, ann, bob):
        with Memory.open(url, name, **FAST) as memory:
            memory.remember(f"{name} keeps the spare keys")
            memory.record_turn("chat", user=f"hello from {name}", assistant="hi")
            memory.flush()
    with psycopg.connect(url, autocommit=True) as conn:
        own = _seen(conn, ann, read_global=False)
        assert {tenant for tenant, _ in own} == {ann} and (ann, "MEMORY.md") in own
        # with the setting on: ann's rows, and global's MEMORY.md; none of bob's
        assert _seen(conn, ann, read_global=True) == own | {(GLOBAL, "MEMORY.md")}
        assert _seen(conn, None, read_global=True) == set()  # no tenant set: nothing
        for table in TENANT_TABLES:
            if table in ("memstrata_volume", "memstrata_volume_parts"):
                continue
            seen = _seen(conn, ann, read_global=True, table=table)
            assert {tenant for tenant, _ in seen} <= {ann}, table
        global_rows = _seen(conn, GLOBAL, read_global=False)
        assert len(global_rows) > 1  # global has more files than MEMORY.md: hidden from ann
    database = Database.shared(url)
    try:
        with database.transaction(ann, "write global's memory") as conn:
            conn.execute("SELECT set_config('memstrata.read_global', 'on', true)")
            changed = conn.execute(
                "UPDATE memstrata_volume SET content = 'x' WHERE tenant = %s", (GLOBAL,)
            )
            assert changed.rowcount == 0
            gone = conn.execute("DELETE FROM memstrata_volume WHERE tenant = %s", (GLOBAL,))
            assert gone.rowcount == 0
        with pytest.raises(AccessDenied):  # noqa: SIM117
            with database.transaction(ann, "add to global's memory") as conn:
                conn.execute("SELECT set_config('memstrata.read_global', 'on', true)")
                conn.execute(
                    "INSERT INTO memstrata_volume_parts (tenant, path, seq, data) "
                    "VALUES (%s, 'MEMORY.md', 1, 'x')",
                    (GLOBAL,),
                )
    finally:
        database.release()
    with Memory.open(url, bob, **FAST) as memory:  # global's memory is intact
        text = _global_section(memory, "spare keys")
        assert text is not None and "global keeps the spare keys" in text
        assert f"{ann} keeps" not in text
