"""``memstrata import KIND SOURCE`` and ``memstrata export KIND DEST`` (issue 19
§1): the CLI forms next to the whole-workspace copy, the exporters, and
export -> import -> export giving the same generic JSONL."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import postgres_server
from memstrata import Memory
from memstrata.cli import cli
from memstrata.importers import import_source
from memstrata.importers.export import export_jsonl, export_markdown
from test_importers import miqi_source, q15_source, tree

FAST = {"embedder": "none"}


def invoke(*args: str) -> Any:
    done = CliRunner().invoke(cli, list(args))
    assert done.exit_code == 0, done.output
    return json.loads(done.output) if "--json" in args else done.output


def test_import_kind_source_reports_and_a_second_run_adds_nothing(tmp_path: Path) -> None:
    source, ws = tmp_path / "miqi", tmp_path / "ws"
    miqi_source(source)
    before = tree(source)
    dry = invoke("import", "miqi", str(source), "--into", str(ws), "--dry-run", "--json")
    assert dry["dry_run"] and dry["counts"] == {"fact": 6, "turn": 3, "document": 1, "skipped": 3}
    assert not ws.exists()  # a dry run makes nothing, not even the workspace
    done = invoke("import", "miqi", str(source), "--into", str(ws), "--json")
    assert done["counts"] == dry["counts"]
    again = invoke("import", "miqi", str(source), "--into", str(ws), "--json")
    assert again["taken"] == [] and len(again["skipped"]) == 13
    assert tree(source) == before
    text = invoke("import", "miqi", str(source), "--into", str(ws))
    flat = "".join(text.split())  # (the console wraps long lines)
    assert "took0fact(s),0turn(s),0document(s);skipped13" in flat
    assert "alreadyinmemoryasm" in flat


def test_import_dir_and_import_memstrata_dir_are_the_workspace_copy(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "a", **FAST) as memory:
        memory.remember("I live in Tashkent")
    bare = invoke("import", str(tmp_path / "a"), "--into", str(tmp_path / "b"), "--json")
    assert "MEMORY.md" in bare["created"] + bare["updated"]
    named = invoke(
        "import", "memstrata", str(tmp_path / "a"), "--into", str(tmp_path / "b"), "--json"
    )
    assert named["bytes"] == 0 and "MEMORY.md" in named["unchanged"]


def test_import_q15_move_on_the_cli(tmp_path: Path) -> None:
    source, ws = tmp_path / "q15", tmp_path / "ws"
    q15_source(source)
    done = invoke("import", "q15", str(source), "--into", str(ws), "--move", "--json")
    assert len(done["moved"]) == 3
    assert sorted(tree(source / "history" / "turns")) == ["2026/03/01/0004.json"]


def test_cli_import_errors_are_one_line(tmp_path: Path) -> None:
    runner = CliRunner()
    unknown = runner.invoke(cli, ["import", "letta", str(tmp_path), "--into", str(tmp_path / "w")])
    assert unknown.exit_code == 1 and "unknown import kind 'letta'" in unknown.output
    move = runner.invoke(cli, ["import", str(tmp_path), "--move"])
    assert move.exit_code == 2 and "--move is for" in move.output
    both = runner.invoke(cli, ["export", "jsonl", str(tmp_path / "x"), "--to", str(tmp_path)])
    assert both.exit_code == 2 and "destination once" in both.output
    bad = runner.invoke(cli, ["export", "csv", str(tmp_path / "x")])
    assert bad.exit_code == 2 and "unknown export kind" in bad.output


def test_export_jsonl_and_openclaw_layout(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with Memory.open(ws, **FAST) as memory:
        memory.remember("I prefer tea", category="preference")
        memory.remember("Alice is my sister", user="u1", session="s1")
        memory.documents.edit_file("memory/2026-01-01.md", lambda _: "# day\n\nline\n")
    out = invoke("export", "jsonl", str(tmp_path / "facts.jsonl"), "-w", str(ws), "--json")
    assert out["lines"] == 2
    lines = [json.loads(line) for line in (tmp_path / "facts.jsonl").read_text().splitlines()]
    assert {line["text"] for line in lines} == {"I prefer tea", "Alice is my sister"}
    [sister] = [line for line in lines if line.get("user") == "u1"]
    assert sister["session"] == "s1"
    again = CliRunner().invoke(
        cli, ["export", "jsonl", str(tmp_path / "facts.jsonl"), "-w", str(ws)]
    )
    assert again.exit_code == 1 and "already exists" in again.output  # never overwritten
    invoke("export", "openclaw", str(tmp_path / "claw"), "-w", str(ws))
    assert sorted(tree(tmp_path / "claw")) == ["MEMORY.md", "memory/2026-01-01.md"]
    assert (tmp_path / "claw" / "memory" / "2026-01-01.md").read_text() == "# day\n\nline\n"
    with Memory.open(tmp_path / "back", **FAST) as back:  # and back in: the same facts
        report = import_source("openclaw", tmp_path / "claw", back)
        assert report.counts()["fact"] == 2
        assert {item.text for item in back.list()} == {"I prefer tea", "Alice is my sister"}
    invoke("export", "--to", str(tmp_path / "copy"), "-w", str(ws))  # the whole-workspace form
    assert (tmp_path / "copy" / "MEMORY.md").exists()


_WORD = st.text(st.characters(categories=("L", "N"), codec="utf-8"), min_size=1, max_size=12)
_FACT = st.fixed_dictionaries(
    {
        "text": st.lists(_WORD, min_size=1, max_size=6).map(" ".join),
        "category": st.sampled_from(["fact", "preference", "decision", "Travel plans"]),
        "created_at": st.datetimes(
            min_value=datetime(2000, 1, 1), max_value=datetime(2035, 1, 1), timezones=st.just(UTC)
        ),
        "user": st.none() | st.sampled_from(["ada", "bob"]),
        "session": st.none() | st.sampled_from(["s1", "telegram:1"]),
    }
)


@pytest.mark.slow
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
@given(facts=st.lists(_FACT, max_size=8))
def test_export_import_export_of_the_generic_jsonl_is_identical(
    tmp_path_factory: pytest.TempPathFactory, facts: list[dict[str, Any]]
) -> None:
    root = tmp_path_factory.mktemp("round")
    with Memory.open(root / "a", **FAST) as memory:
        for fact in facts:
            memory.remember(
                fact["text"],
                category=fact["category"],
                user=fact["user"],
                session=fact["session"],
                at=fact["created_at"],
            )
        first = export_jsonl(memory, root / "one.jsonl")
    with Memory.open(root / "b", **FAST) as memory:
        report = import_source("jsonl", root / "one.jsonl", memory)
        assert report.skipped == [] and len(report.taken) == len(first)
        second = export_jsonl(memory, root / "two.jsonl")
    assert (root / "two.jsonl").read_bytes() == (root / "one.jsonl").read_bytes()
    assert second == first


def test_import_into_postgresql_and_export_the_openclaw_layout(tmp_path: Path) -> None:
    url = postgres_server.app_url()
    tenant = postgres_server.tenant("imports")
    source = tmp_path / "miqi"
    miqi_source(source)
    args = ["import", "miqi", str(source), "--into", url, "--group", tenant, "--json"]
    done = invoke(*args)
    assert done["counts"] == {"fact": 6, "turn": 3, "document": 1, "skipped": 3}
    assert invoke(*args)["taken"] == []
    with Memory.open(url, tenant, **FAST) as memory:
        assert len(memory.list()) == 6
        assert [t.text_of("user") for t in memory.sessions.turns("telegram:12345")] == [
            "weather in Paris?",
            "thanks",
        ]
        written = export_markdown(memory, tmp_path / "out")
    assert "MEMORY.md" in written and "memory/2026-02-13.md" in written


def test_progress_is_reported_per_item_and_shown_only_on_a_terminal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io
    import sys

    from memstrata.cli.importers import _progress

    source = tmp_path / "many.jsonl"
    source.write_text("".join(json.dumps({"text": f"fact number {n}"}) + "\n" for n in range(150)))
    seen: list[tuple[int, int]] = []
    with Memory.open(tmp_path / "ws", **FAST) as memory:
        import_source(
            "jsonl", source, memory, progress=lambda done, total: seen.append((done, total))
        )
    assert seen == [(n, 150) for n in range(1, 151)]
    with _progress(as_json=False) as bar:
        assert bar is None  # not a terminal (pytest's stderr)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(sys, "stderr", Terminal())
    with _progress(as_json=True) as bar:
        assert bar is None  # --json: nothing but the JSON
    with _progress(as_json=False) as bar:
        assert bar is not None
        for done in range(1, 151):
            bar(done, 150)
