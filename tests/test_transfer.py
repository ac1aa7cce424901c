"""Export and import (``memory.transfer``): a workspace moved as its files,
between folders and PostgreSQL tenants, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import postgres_server
from memstrata import Memory
from memstrata.cli import cli
from memstrata.errors import InvalidInput
from memstrata.memory.transfer import movable

FAST = {"embedder": "none"}


def _files(folder: Path) -> dict[str, bytes]:
    """Every file of a workspace folder that travels (see ``movable``)."""
    return {
        rel: path.read_bytes()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and movable(rel := path.relative_to(folder).as_posix())
    }


def _fill(folder: Path, facts: list[str], notes: list[str], turns: list[str]) -> None:
    with Memory.open(folder, **FAST) as memory:
        for text in facts:
            memory.remember(text)
        for n, text in enumerate(notes):
            memory.notes.create(f"note {n}", text)
        for text in turns:
            memory.record_turn("s-1", user=text, assistant="noted")
        memory.core.write("user", "Ada, a pilot.\n")
        if facts:
            first = memory.list()[-1]
            memory.supersede(first.id, first.text + " (updated)")


def test_folder_to_folder_round_trip_is_byte_identical(tmp_path: Path) -> None:
    _fill(tmp_path / "a", ["I live in Tashkent", "I prefer green tea"], ["see [[x]]"], ["hi"])
    with Memory.open(tmp_path / "a", read_only=True, **FAST) as source:
        expected = [item.text for item in source.list(include_superseded=True)]
    with Memory.open(tmp_path / "b", **FAST) as target:
        report = target.import_from(tmp_path / "a")
        assert "MEMORY.md" in report.updated and "sessions/s-1.jsonl" in report.created
        assert [item.text for item in target.list(include_superseded=True)] == expected
        assert target.search("Tashkent")  # the index re-read what came in
        target.export_to(tmp_path / "c")
    assert _files(tmp_path / "c") == _files(tmp_path / "a")


def test_import_is_idempotent_and_a_dry_run_changes_nothing(tmp_path: Path) -> None:
    _fill(tmp_path / "a", ["I live in Tashkent"], [], [])
    with Memory.open(tmp_path / "b", **FAST) as target:
        before = _files(tmp_path / "b")
        dry = target.import_from(tmp_path / "a", dry_run=True)
        assert dry.dry_run and dry.updated and _files(tmp_path / "b") == before
        target.import_from(tmp_path / "a")
        again = target.import_from(tmp_path / "a")
        assert (again.created, again.updated, again.bytes) == ([], [], 0)
        assert "MEMORY.md" in again.unchanged


def test_export_never_overwrites(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with (
        Memory.open(tmp_path / "ws", **FAST) as memory,
        pytest.raises(InvalidInput, match="already holds files"),
    ):
        memory.export_to(tmp_path / "out")
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"


def test_the_cli_moves_a_workspace_through_postgres(tmp_path: Path) -> None:
    url = postgres_server.app_url()
    tenant = postgres_server.tenant()
    _fill(tmp_path / "a", ["My name is Ada"], ["a note"], ["hello"])
    runner = CliRunner()
    args = ["import", str(tmp_path / "a"), "--into", url, "--group", tenant, "--json"]
    done = runner.invoke(cli, args)
    assert done.exit_code == 0, done.output
    assert "MEMORY.md" in json.loads(done.output)["updated"]
    again = runner.invoke(cli, args)
    assert json.loads(again.output)["bytes"] == 0
    out = tmp_path / "out"
    done = runner.invoke(cli, ["export", "-w", url, "-g", tenant, "--to", str(out), "--json"])
    assert done.exit_code == 0, done.output
    assert _files(out) == _files(tmp_path / "a")
    with Memory.open(out, **FAST) as back:  # an ordinary workspace again
        assert [item.text for item in back.list()] == ["My name is Ada (updated)"]


_TEXT = st.text(
    st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=60
).filter(str.strip)


@pytest.mark.slow
@settings(
    max_examples=100,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(
    facts=st.lists(_TEXT, max_size=6, unique_by=str.casefold),
    notes=st.lists(_TEXT, max_size=3),
    turns=st.lists(_TEXT, max_size=3),
)
def test_files_postgres_files_is_byte_identical(
    tmp_path_factory: pytest.TempPathFactory,
    facts: list[str],
    notes: list[str],
    turns: list[str],
) -> None:
    """The bar: 100 generated workspaces, each imported into a fresh tenant
    and exported again, give back every file byte for byte."""
    url = postgres_server.app_url()
    base = tmp_path_factory.mktemp("round")
    try:
        _fill(base / "a", facts, notes, turns)
    except InvalidInput:  # a text memstrata refuses (e.g. only a secret): not a workspace
        return
    with Memory.open(url, postgres_server.tenant(), **FAST) as tenant:
        tenant.import_from(base / "a")
        tenant.export_to(base / "b")
    assert _files(base / "b") == _files(base / "a")
