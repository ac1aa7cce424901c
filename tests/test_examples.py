"""The example agent loop runs end to end with the scripted model."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "agent_loop.py"
KEY = "sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk"


def test_the_agent_loop_captures_compacts_recovers_and_summarizes(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), "--workspace", str(ws)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "capture correction (supersedes" in out
    assert "window  compacted" in out and "window  recovery" in out
    assert "From memory:" in out and "pg-staging-3" in out.split("From memory:")[1]
    assert "summary of turns 1-8 -> summaries/example.md" in out
    assert (ws / "sessions" / "example.jsonl").exists()
    for path in ws.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path
