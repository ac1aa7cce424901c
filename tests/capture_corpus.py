"""The labelled capture corpus's messages for tests that compare two ways of
scanning: every folder but the held-out ``unseen*`` sets, whose messages are
never read one by one (a failing assertion prints its text)."""

from __future__ import annotations

import json
from pathlib import Path

CORPUS = Path(__file__).parent / "data" / "capture"


def open_texts() -> list[str]:
    """Every message of the corpus outside the held-out sets, in file order."""
    out = []
    for path in sorted(CORPUS.rglob("*.jsonl")):
        if path.relative_to(CORPUS).parts[0].startswith("unseen"):
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append(str(json.loads(line)["text"]))
    return out
