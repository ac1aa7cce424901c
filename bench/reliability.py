"""Reliability campaign: every class of attack on real workspaces, with counts.

"Files are the truth, and nothing acknowledged is ever lost" (issue #13),
tried by eight classes of attack, each in temporary folders:

1. ``kill``      SIGKILL during every kind of write (remember, observe,
                 record_turn, the memory tool, supersede, forget, restore,
                 checkpoints, reindex/search)
2. ``mix``       several processes / threads writing and searching at once
3. ``editor``    in-place editor saves of MEMORY.md during checkpoints
4. ``damage``    damaged files of every kind, opened, read, written, reopened
5. ``diskfull``  a full disk (a small tmpfs; root only)
6. ``readonly``  a read-only workspace (a read-only bind mount as root, and
                 ``read_only=True``)
7. ``paths``     hostile paths through every entry point
8. ``secrets``   secrets through every write channel, then every byte on disk
                 scanned

The attacks live in ``tests/attacks/`` (the test suite runs short versions of
them: ``tests/test_reliability.py``). Prints progress on stderr, then a table
``attack | tries | passed | lost | leaked | raw``; ``--json`` writes one
object per attack with the failures (what was lost or leaked, and the seed of
the try). Exits 1 if anything was lost or leaked, raised a raw (non-memstrata)
exception, or any other try failed. The note column says why a class was
skipped and counts what else was seen (refusals and the like).

``--seed N`` runs every try again with the same random choices (what a SIGKILL,
a thread or an editor meets still depends on timing); ``--only`` picks classes.

Run::

    .venv/bin/python bench/reliability.py --json bench/results/reliability.json
    .venv/bin/python bench/reliability.py --only kill,editor --rounds-scale 0.2 --seed 7
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from attacks import CLASSES, Attack, run_class  # noqa: E402
from benchutil import machine  # noqa: E402


def say(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def table(attacks: list[Attack]) -> str:
    """The results as a Markdown table."""
    rows = [
        "| attack | tries | passed | lost | leaked | raw | note |",
        "|---|---:|---:|---:|---:|---:|---|",
    ]
    for a in attacks:
        note = f"skipped: {a.skipped}" if a.skipped else (a.note or "")
        extra = {k: v for k, v in a.counts.items() if v and k != "raw_errors"}
        if extra:
            shown = ", ".join(f"{k} {v}" for k, v in sorted(extra.items()))
            note = f"{note}; {shown}" if note else shown
        rows.append(
            f"| {a.name} | {a.tries} | {a.passed} | {a.lost} | {a.leaked} | {a.errors} | {note} |"
        )
    return "\n".join(rows)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", type=Path, help="write the results here")
    parser.add_argument(
        "--rounds-scale",
        type=float,
        default=1.0,
        help="multiply every class's number of tries (default 1: about 10-15 minutes)",
    )
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument(
        "--only", default=None, help=f"comma-separated classes: {','.join(CLASSES)}"
    )
    parser.add_argument(
        "--workspace", type=Path, help="work here instead of in a temporary folder (kept)"
    )
    args = parser.parse_args(argv)
    args.classes = list(CLASSES) if args.only is None else args.only.split(",")
    unknown = [name for name in args.classes if name not in CLASSES]
    if unknown:
        parser.error(f"unknown class {', '.join(unknown)}; known: {', '.join(CLASSES)}")
    if args.rounds_scale <= 0:
        parser.error("--rounds-scale must be > 0")
    if args.seed is None:
        args.seed = random.randrange(2**32)
    return args


def campaign(args: argparse.Namespace, base: Path) -> list[Attack]:
    attacks: list[Attack] = []
    for name in args.classes:
        say(f"class {name} (seed {args.seed}, scale {args.rounds_scale})")
        attacks += run_class(name, base, args.rounds_scale, args.seed, say)
    return attacks


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.perf_counter()
    if args.workspace is not None:
        attacks = campaign(args, args.workspace.expanduser())
    else:
        with tempfile.TemporaryDirectory(prefix="memstrata-reliability-") as folder:
            attacks = campaign(args, Path(folder))
    failed = [a.name for a in attacks if a.failed]
    report: dict[str, Any] = {
        "seed": args.seed,
        "rounds_scale": args.rounds_scale,
        "classes": args.classes,
        "seconds": round(time.perf_counter() - started, 1),
        "machine": machine(),
        "failed": failed,
        "attacks": [a.to_dict() for a in attacks],
    }
    print(table(attacks))
    print(
        f"\nseed {args.seed}; {len(failed)} of {len(attacks)} attacks failed; {report['seconds']} s"
    )
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
