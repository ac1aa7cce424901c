"""Issue 17, "Memory that stays true": corrections that stick, no noise stored
as facts, a context that never passes its budget, empty input refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from memstrata import InvalidInput, Memory
from memstrata.cli import cli

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
