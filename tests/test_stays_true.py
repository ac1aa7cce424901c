"""Issue 17, "Memory that stays true": corrections that stick, no noise stored
as facts, a context that never passes its budget, empty input refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memstrata import InvalidInput, Memory
from memstrata.cli import cli
from memstrata.context import Message

# -- 4. empty input is one clear error everywhere ---------------------------------------

EMPTY = ["", " ", "\n\t  \n", "\u2028"]


@pytest.mark.parametrize("text", EMPTY)
def test_observe_of_empty_text_is_refused_like_remember(memory: Memory, text: str) -> None:
    with pytest.raises(InvalidInput, match="text is empty"):
        memory.remember(text)
    with pytest.raises(InvalidInput, match="text is empty"):
        memory.observe(text)
    with pytest.raises(InvalidInput, match="text is empty"):
        memory.observe(text, source="tool")  # whatever the source
    assert memory.session_state() == [] and memory.list() == []


@pytest.mark.parametrize("text", ["", "   "])
@pytest.mark.parametrize("command", ["observe", "remember"])
def test_the_cli_refuses_empty_text_in_one_line(ws: Path, command: str, text: str) -> None:
    runner = CliRunner()
    assert runner.invoke(cli, ["init", "-w", str(ws)]).exit_code == 0
    result = runner.invoke(cli, [command, "-w", str(ws), text])
    assert result.exit_code == 1, result.output
    assert result.output.strip() == "Error: text is empty"
    with Memory.open(ws) as memory:
        assert memory.list() == []


# -- 1. a corrected fact stays corrected ------------------------------------------------

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent_loop.py"
OLD = "Remember that the staging database is pg-staging-2."
FIX = "Actually, the staging database is pg-staging-3, not pg-staging-2."


def _live_part(ws: Path) -> str:
    return (ws / "MEMORY.md").read_text(encoding="utf-8").split("## Superseded")[0]


@pytest.fixture(scope="module")
def looped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The workspace ``examples/agent_loop.py --workspace`` leaves behind."""
    ws = tmp_path_factory.mktemp("loop") / "ws"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "window  compacted" in done.stdout  # the re-capture before a compaction ran
    return ws


def test_the_agent_loop_leaves_one_live_staging_fact_the_corrected_one(looped: Path) -> None:
    with Memory.open(looped) as memory:
        staging = [item for item in memory.list() if "staging database" in item.text]
        assert [item.text for item in staging] == [FIX]
        built = memory.build_context("Which database does staging use?", budget_tokens=800)
    live = _live_part(looped)
    assert "pg-staging-2" not in live.replace(FIX, "")
    lines = [line for line in built.text.splitlines() if "pg-staging-2" in line]
    assert lines and all("pg-staging-3" in line for line in lines)


def _talk(memory: Memory, said: list[str]) -> None:
    """``said`` through a small window of session ``s``, then small talk
    until every message of ``said`` but the first left it in a compaction."""
    window = memory.window("s", limit_tokens=60)
    for n, text in enumerate([*said, *(f"and the next thing, number {n}" for n in range(40))]):
        window.add(Message("user", text))
        window.add(Message("assistant", "Noted."))
        if n >= len(said) and not {m.content for m in window.messages} & set(said[1:]):
            return
    raise AssertionError("the window never let the messages go")


def test_recapture_before_a_compaction_resurrects_no_superseded_or_forgotten_fact(
    memory: Memory,
) -> None:
    memory.observe(OLD, session="s")
    memory.observe(FIX, session="s")
    [gone] = memory.observe("I prefer tabs over spaces.", session="s")
    assert gone.item_id is not None
    memory.forget(gone.item_id)
    _talk(memory, ["hello", OLD, "I prefer tabs over spaces.", FIX])
    assert [item.text for item in memory.list()] == [FIX]
    # and the session state was not given the same lines a second time
    texts = [entry.text for entry in memory.session_state("s")]
    assert len(texts) == len(set(texts))


def test_recapture_still_keeps_a_fact_never_observed(memory: Memory) -> None:
    _talk(memory, ["hello", "My name is Sarvar."])
    assert [item.text for item in memory.list()] == ["My name is Sarvar."]


def test_a_compaction_summary_restates_no_superseded_fact_as_live(memory: Memory) -> None:
    for said in [OLD, FIX, "Let's go with PostgreSQL 16 for the ledger.", "Where were we?"]:
        memory.observe(said, session="s")
        memory.record_turn("s", user=said, assistant="Noted.")
    summary = memory.compact_session("s")
    live = [line for line in summary.summary.splitlines() if "pg-staging-2" in line]
    assert all("pg-staging-3" in line or "~~" in line for line in live), live
    items = memory.list()
    assert [item.text for item in items if "staging" in item.text] == [FIX]
    assert {item.category for item in items} <= {"remember", "correction", "decision", "fact"}
    assert not any("Where were we" in item.text for item in items)


def test_recovery_reads_the_session_state_as_text_after_build_context_read_it(
    memory: Memory,
) -> None:
    # one file, read as entries by build_context and as text by recovery: two cache slots
    memory.observe("Remember that the demo is on Friday", session="s")
    memory.build_context("demo", session="s", budget_tokens=500)
    assert "demo is on Friday" in memory.recovery_context("s")
