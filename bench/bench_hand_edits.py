"""Open of a MEMORY.md with N hand-written lines (issue #13 item 8: 100k in <= 5 s).

Two cases: a fresh folder with only a hand-written MEMORY.md (no snapshot), and
N lines appended by hand to a workspace memstrata already keeps (taken in as
a proposal: merged, journaled, checkpointed).

Run::

    .venv/bin/python bench/bench_hand_edits.py --lines 100000 --json bench/results/hand_edits.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import tempfile
import time
from pathlib import Path

from memstrata import Memory


def _lines(n: int) -> str:
    return "".join(f"- hand written fact number {i} about topic {i * 31 % 977}\n" for i in range(n))


def measure(root: Path, n: int, case: str) -> dict[str, float | int | str]:
    ws = root / case
    if case == "fresh":
        ws.mkdir()
        (ws / "MEMORY.md").write_text("# MEMORY.md\n\n## Facts\n" + _lines(n))
    else:
        with Memory.open(ws, embedder="none") as memory:
            memory.remember("seed fact")
        path = ws / "MEMORY.md"
        path.write_text(path.read_text() + "\n## Facts\n" + _lines(n))
        stamp = time.time() - 10  # a finished save, not one in progress
        os.utime(path, (stamp, stamp))
    started = time.perf_counter()
    memory = Memory.open(ws, embedder="none")
    opened = time.perf_counter() - started
    items = memory.status().items
    memory.close()
    return {"case": case, "lines": n, "open_s": round(opened, 3), "items": items}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=100_000)
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="memstrata-hand-"))
    try:
        results = [measure(root, args.lines, case) for case in ("fresh", "append")]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    report = {"results": results, "max_rss_mb": rss, "cpus": os.cpu_count()}
    text = json.dumps(report, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
