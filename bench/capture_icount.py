"""Capture's scan counted in instructions, not timed: a count does not move
with the machine's load, so two trees compare on a shared machine.

For each ``--src`` (a ``src`` folder holding ``memstrata``), under
``valgrind --tool=callgrind`` with ``PYTHONHASHSEED=0`` and a rule cache of its
own (warmed by a first run): the bench messages (``bench_capture.py``'s 2,000
texts of 200 characters) scanned once, then ``1 + --passes`` times; the
difference divided by ``--passes`` x the messages is the steady state's
instructions a scan. ``--rules-only`` (the default) scans with
``learned=False``; ``--learned`` with the scorer. Needs ``valgrind``.

Run (the tree before against this one)::

    .venv/bin/python bench/capture_icount.py --src OLD/src src --json /tmp/icount.json
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from benchutil import emit, machine

BENCH = Path(__file__).resolve().parent
WORKER = r"""
import sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from bench_capture import LOCOMO, corpus_texts, locomo_texts, to_200
from memstrata.capture import rulecache
from memstrata.capture.scan import scan
rulecache.use_dir(Path(sys.argv[2]))
learned, passes = sys.argv[3] == "learned", int(sys.argv[4])
texts = to_200(corpus_texts() + locomo_texts(LOCOMO), 2000)
print(len(texts))
for _ in range(passes):
    for text in texts:
        scan(text, learned=learned)
"""


def _instructions(src: Path, cache: Path, mode: str, passes: int) -> tuple[int, int]:
    """(instructions, messages) of one worker run under callgrind."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "callgrind.out"
        env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
        command = [
            "valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
            sys.executable, "-c", WORKER, str(BENCH), str(cache), mode, str(passes),
        ]  # fmt: skip
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        found = re.search(r"^(?:summary|totals): (\d+)", out.read_text(), re.MULTILINE)
        if found is None:
            raise SystemExit(f"no instruction total in callgrind's output for {src}")
        return int(found.group(1)), int(done.stdout.split()[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--src", nargs="+", required=True, type=Path)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--learned", action="store_true", help="scan with the scorer on")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    mode = "learned" if args.learned else "rules"
    trees = []
    for src in args.src:
        with tempfile.TemporaryDirectory() as cache:
            subprocess.run(  # warm its rule cache outside the count
                [sys.executable, "-c", WORKER, str(BENCH), cache, mode, "1"],
                env={**os.environ, "PYTHONPATH": str(src.resolve())},
                capture_output=True,
                check=True,
            )
            once, messages = _instructions(src.resolve(), Path(cache), mode, 1)
            more, _ = _instructions(src.resolve(), Path(cache), mode, 1 + args.passes)
        per_scan = (more - once) / (args.passes * messages)
        trees.append({"src": str(src), "instructions_per_scan": round(per_scan)})
        print(f"{src}: {per_scan / 1e6:.3f} M instructions a scan", file=sys.stderr, flush=True)
    emit({"machine": machine(), "mode": mode, "passes": args.passes, "trees": trees}, args.json)


if __name__ == "__main__":
    main()
