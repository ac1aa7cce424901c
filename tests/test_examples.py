"""The example agent loop runs end to end with the scripted model."""

from __future__ import annotations

from pathlib import Path

KEY = "sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk"


def test_the_agent_loop_captures_compacts_recovers_and_summarizes(
    agent_loop: tuple[Path, str],
) -> None:
    ws, out = agent_loop  # run once for the session (conftest), exit status checked there
    assert "capture correction (supersedes" in out
    assert "window  compacted" in out and "window  recovery" in out
    assert "From memory:" in out and "pg-staging-3" in out.split("From memory:")[1]
    assert "summary of turns 1-8 -> summaries/example.md" in out
    assert (ws / "sessions" / "example.jsonl").exists()
    for path in ws.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
