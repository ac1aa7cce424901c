"""Each backend is its Protocol for the type checker too: the assignments below
are checked by ``mypy --strict`` (``test_the_type_checker_agrees``), so a
signature that drifts from the Protocol fails here, not in a later backend."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fakes import InMemoryFactStore, InMemoryIndex
from memstrata.index.protocol import Index
from memstrata.index.sqlite import Index as SqliteIndex
from memstrata.postgres.facts import PostgresFactStore
from memstrata.postgres.index import PostgresIndex
from memstrata.stores.longterm import LongTermStore
from memstrata.stores.protocol import FactStore

ROOT = Path(__file__).resolve().parents[2]


def test_each_index_is_an_index(tmp_path: Path) -> None:
    embedded: Index = SqliteIndex(tmp_path / "index.sqlite")
    fake: Index = InMemoryIndex()
    try:
        assert isinstance(embedded, Index) and isinstance(fake, Index)
    finally:
        embedded.close()
        fake.close()


def test_each_fact_store_is_a_fact_store() -> None:
    embedded: FactStore = LongTermStore()
    fake: FactStore = InMemoryFactStore()
    assert isinstance(embedded, FactStore) and isinstance(fake, FactStore)


def test_each_postgres_backend_is_its_protocol(postgres_url: str) -> None:
    index: Index = PostgresIndex(postgres_url, "conformance")
    store: FactStore = PostgresFactStore(postgres_url, "conformance")
    try:
        assert isinstance(index, Index) and isinstance(store, FactStore)
    finally:
        index.close()
        store.close()  # type: ignore[attr-defined]


def test_what_is_no_backend_is_not_one() -> None:
    assert not isinstance(object(), Index) and not isinstance(object(), FactStore)
    assert not isinstance(LongTermStore(), Index) and not isinstance(InMemoryIndex(), FactStore)


@pytest.mark.slow
def test_the_type_checker_agrees() -> None:
    pytest.importorskip("mypy")
    env = {**os.environ, "MYPYPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT / "tests")])}
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-warn-unused-configs", __file__],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
