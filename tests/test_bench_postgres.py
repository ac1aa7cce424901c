"""``memstrata bench search --backend URL`` and the PostgreSQL search bench
(``benchmarks.postgres_search``) at a toy size: every phase runs and reports,
and a database the bench did not start keeps its HNSW index and is left
without the bench's tenants."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner

import postgres_server
from memstrata.benchmarks import postgres_search
from memstrata.benchmarks.corpus import Corpus
from memstrata.cli import cli


def test_bench_search_with_a_backend_runs_the_postgres_bench(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[tuple[int, dict[str, Any]]] = []

    def fake(items: int, **options: Any) -> dict[str, Any]:
        calls.append((items, options))
        return {"items": items}

    monkeypatch.setattr(postgres_search, "run", fake)
    args = ["bench", "search", "--items", "7", "--queries", "3", "--embedder", "hash"]
    result = CliRunner().invoke(cli, [*args, "--backend", "postgresql://u@h/db"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"items": 7}
    assert calls[0][0] == 7 and calls[0][1]["url"] == "postgresql://u@h/db"
    assert calls[0][1]["queries"] == 3 and calls[0][1]["embedder"] == "hash"
    CliRunner().invoke(cli, [*args, "--backend", "embedded"])
    assert calls[1][1]["url"] is None  # the bench starts its own server


def test_the_corpus_is_the_same_for_a_seed_and_its_vectors_are_unit() -> None:
    import numpy as np

    one, two = Corpus(4100), Corpus(4100)
    assert one.chunks(150, 260) == two.chunks(150, 260)
    assert one.chunks(150, 260) == one.chunks(0, 300)[150:260]  # whatever the slice
    assert np.array_equal(one.vectors(1990, 2300), two.vectors(1990, 2300))
    assert np.array_equal(one.vectors(1990, 2300), one.vectors(0, 4100)[1990:2300])
    assert np.allclose(np.linalg.norm(one.vectors(0, 300), axis=1), 1.0, atol=1e-5)
    paths = [path for path, _ in one.files(0, 600)]
    assert len(paths) == len(set(paths)) == 3
    assert len(one.vectors(4000, 4100)) == 100


@pytest.mark.slow
def test_the_bench_runs_every_phase_on_a_shared_database() -> None:
    url = postgres_server.app_url()
    report = postgres_search.run(
        300, url=url, queries=4, ef_values=(40,), clients=2, seconds=0.5,
        embedder="hash", small=200, log=lambda _: None,
    )  # fmt: skip
    assert report["load"]["hnsw_dropped_for_load"] is False  # not its server: left alone
    assert "hnsw_build" not in report["load"]
    for row in report["recall"]:
        assert 0.0 <= row["recall_at_10"] <= 1.0
    assert {"mirror", "hnsw", "sql"} <= set(report["search"])
    assert report["concurrency"]["errors"] == 0 and report["concurrency"]["searches"] > 0
    assert report["file_backend"]["chunks"] == 300
    with psycopg.connect(postgres_server.admin_url()) as conn:
        left = conn.execute(
            "SELECT count(*) FROM memstrata_chunks WHERE tenant LIKE 'bench-300%'"
        ).fetchone()
        assert left == (0,)  # its tenants emptied
        assert conn.execute(
            "SELECT 1 FROM pg_indexes WHERE indexname = 'memstrata_vectors_hnsw'"
        ).fetchone()
