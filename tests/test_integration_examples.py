"""Each integration's example runs end to end with its scripted model (no network)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SOURCE = Path(__file__).resolve().parent.parent / "src"


def _run(name: str, ws: Path) -> str:
    env = {**os.environ, "PYTHONPATH": str(SOURCE), "PYTHONWARNINGS": "error::DeprecationWarning"}
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / name), "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_langgraph_example(tmp_path: Path) -> None:
    pytest.importorskip("langgraph", reason="needs memstrata[integrations]")
    out = _run("langgraph_store.py", tmp_path / "ws")
    recalled = out.split("memories for 'What do you know about my food and my pet?':")[1]
    assert "Neapolitan pizza" in recalled and "Miso" in recalled
    assert "namespaces: [('memories', 'ana')]" in out
    assert list((tmp_path / "ws" / "semantic").glob("langgraph.memories.ana.*.md"))


def test_the_openai_agents_example(tmp_path: Path) -> None:
    pytest.importorskip("agents", reason="needs memstrata[integrations]")
    out = _run("openai_agents_session.py", tmp_path / "ws")
    assert "agent: It is sunny and 24 C in Lisbon today, Ana." in out
    assert "items of history from memstrata" in out
    assert (tmp_path / "ws" / "sessions" / "ana-chat.jsonl").exists()


def test_the_anthropic_memory_tool_example(tmp_path: Path) -> None:
    pytest.importorskip("anthropic", reason="needs memstrata[integrations]")
    out = _run("anthropic_memory_tool.py", tmp_path / "ws")
    assert "claude: Got it: green tea, no sugar." in out
    assert "File created successfully" in out
    saved = tmp_path / "ws" / "notes" / "inbox" / "preferences.md"
    assert "green tea" in saved.read_text()
