"""Anthropic memory-tool commands through the journal: create, insert and
str_replace on a workspace, each staged, logged with fsync and renamed into
place (``Documents.edit_file``) before it answers.

Run::

    .venv/bin/python bench/bench_memory_tool.py --json bench/results/memory_tool.json
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchutil import emit, machine, percentiles
from memstrata import Memory
from memstrata.tools.memory_tool import MemoryToolHandler


def timed(
    count: int, command: Callable[[int], dict[str, object]], tool: MemoryToolHandler
) -> list[float]:
    """Milliseconds of each of ``count`` commands; each must succeed."""
    times = []
    for number in range(count):
        began = time.perf_counter()
        answer = tool.handle(command(number))
        times.append((time.perf_counter() - began) * 1000)
        if answer.startswith("Error"):
            raise SystemExit(f"command {number} failed: {answer}")
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the report to this file")
    parser.add_argument("--count", type=int, default=500)
    args = parser.parse_args()
    report: dict[str, Any] = {"machine": machine(), "count": args.count}
    with tempfile.TemporaryDirectory() as tmp, Memory.open(tmp, embedder="none") as memory:
        tool = MemoryToolHandler(memory)
        report["create_ms"] = percentiles(
            timed(
                args.count,
                lambda n: {
                    "command": "create",
                    "path": f"/memories/notes/inbox/n{n}.md",
                    "file_text": f"note {n}\n",
                },
                tool,
            )
        )
        tool.handle({"command": "create", "path": "/memories/memory/log.md", "file_text": ""})
        report["insert_ms"] = percentiles(
            timed(
                args.count,
                lambda n: {
                    "command": "insert",
                    "path": "/memories/memory/log.md",
                    "insert_line": 0,
                    "insert_text": f"entry {n}",
                },
                tool,
            )
        )
        report["str_replace_ms"] = percentiles(
            timed(
                args.count,
                lambda n: {
                    "command": "str_replace",
                    "path": "/memories/memory/log.md",
                    "old_str": f"entry {n}\n",
                    "new_str": f"done {n}\n",
                },
                tool,
            )
        )
    emit(report, args.json)


if __name__ == "__main__":
    main()
