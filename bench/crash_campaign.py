"""SIGKILL crash campaign: kill a writer at random moments, then check nothing acknowledged is lost.

Each round starts a child that opens the workspace and writes in a loop,
printing every text only after ``remember``/``forget`` returned; the parent
kills it with SIGKILL after a random number of acknowledged lines (0-60),
after a random sleep (0-150 ms), or while it is still starting up / opening.
Rounds alternate plain fsynced writes, group commit (``sync=False``),
checkpoints every 7 records (so kills land inside checkpoints) and forgets.
After each kill the parent checks the files (MEMORY.md decodes and parses,
the snapshot loads, complete audit lines are JSON, ``doctor`` reports no
error), reopens the workspace and checks every acknowledged text is there and
no acknowledged forget was undone, and that open had nothing to repair but a
torn journal tail.

Run::

    .venv/bin/python bench/crash_campaign.py --rounds 1000 --json bench/results/crash_campaign.json

Prints one JSON object; exits 1 if anything was lost, undone, corrupt or
repaired (``notices``), or if a child died before it was killed.
"""

from __future__ import annotations

import argparse
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memstrata import Memory

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from attacks.common import file_problems  # noqa: E402 - the campaign's check of files

# A copy of the child in tests/test_crash.py (tests import nothing from bench/).
CHILD = r"""
import os, sys
from memstrata import Memory

ws, mode = sys.argv[1], sys.argv[2].split()
memory = Memory.open(ws, **({"checkpoint_every_updates": 7} if "cp" in mode else {}))
print("open", flush=True)
kept, sync = [], "nosync" not in mode
for i in range(20_000):
    item = memory.remember(f"fact {os.getpid()}-{i} {'x' * (1 + i % 40)}", sync=sync)
    print("R", item.text, flush=True)
    kept.append(item)
    if "forget" in mode and i % 3 == 2:
        gone = kept.pop(len(kept) // 2)
        print("f", gone.text, flush=True)
        memory.forget(gone.id)
        print("F", gone.text, flush=True)
"""
MODES = ("sync", "cp", "forget", "cp forget", "nosync", "nosync cp")


def kill_round(ws: Path, mode: str, rng: random.Random, early_kill: bool) -> tuple[bytes, str]:
    """Run one child, SIGKILL it at a random moment; its stdout and, if it died alone, stderr."""
    how = rng.choice(["lines", "sleep", "opening"] if early_kill else ["lines", "sleep"])
    command = [sys.executable, "-c", CHILD, str(ws), mode]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        seen = b""
        try:
            if how == "opening":
                time.sleep(rng.uniform(0.05, 0.2))
            else:
                seen = proc.stdout.readline()
                if how == "lines":
                    for _ in range(rng.randint(0, 60) if seen else 0):
                        line = proc.stdout.readline()
                        if not line:
                            break
                        seen += line
                elif seen:
                    time.sleep(rng.uniform(0.0, 0.15))
        finally:
            proc.send_signal(signal.SIGKILL)
        output = seen + proc.stdout.read()  # not communicate(): keep what readline buffered
        err = proc.stderr.read().decode(errors="replace")
    return output, "" if proc.returncode == -signal.SIGKILL else err or f"exit {proc.returncode}"


def campaign(args: argparse.Namespace, base: Path) -> dict[str, Any]:
    rng = random.Random(args.seed)
    result: dict[str, Any] = {"rounds": 0, "acknowledged": 0, "lost": 0, "corrupt_files": 0}
    result |= {"seconds": 0.0, "resurrected": 0, "notices": 0, "child_errors": 0}
    result["seed"] = args.seed
    result["problems"] = []
    problems: list[str] = result["problems"]
    started = time.perf_counter()
    remembered: set[str] = set()
    forgotten: set[str] = set()
    forgetting: set[str] = set()
    lost: set[str] = set()
    ws = base
    for round_no in range(args.rounds):
        if args.rounds_per_workspace and round_no % args.rounds_per_workspace == 0:
            ws = base / f"ws-{round_no // args.rounds_per_workspace:04d}"
            remembered, forgotten, forgetting = set(), set(), set()
        fresh = not (ws / "memory" / "LTM_SNAPSHOT.json").exists()
        mode = MODES[round_no % len(MODES)]
        output, error = kill_round(ws, mode, rng, early_kill=not fresh)
        if error:
            result["child_errors"] += 1
            problems.append(f"round {round_no}: the child died by itself: {error[-500:]}")
        for raw in output.splitlines(keepends=True):
            kind, _, text = raw.decode().rstrip("\n").partition(" ")
            if not raw.endswith(b"\n") or kind not in ("R", "f", "F"):
                continue  # "open", or a line cut by the kill (not acknowledged)
            {"R": remembered, "f": forgetting, "F": forgotten}[kind].add(text)
            if kind != "f":  # "f" announces a forget that may not have returned
                result["acknowledged"] += 1
        bad = file_problems(ws)
        result["corrupt_files"] += len(bad)
        problems += [f"round {round_no} ({mode}): {message}" for message in bad]
        with Memory.open(ws) as memory:
            texts = {item.text for item in memory.list()}
            # A kill may leave a torn journal tail; any other repair means something broke.
            notices = [notice for notice in memory.notices if "torn" not in notice]
        result["notices"] += len(notices)
        problems += [f"round {round_no} ({mode}): open said {notice!r}" for notice in notices]
        missing = (remembered - forgetting) - texts - lost
        undone = forgotten & texts
        lost |= missing
        result["resurrected"] += len(undone)
        forgotten -= undone  # count each once
        if missing or undone:
            examples = f"lost {sorted(missing)[:3]}, undone {sorted(undone)[:3]}"
            problems.append(f"round {round_no} ({mode}): {examples}")
        result["rounds"] += 1
    result["lost"] = len(lost)
    result["seconds"] = round(time.perf_counter() - started, 1)
    del problems[20:]
    return result


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=1000, help="kills to run (default 1000)")
    parser.add_argument(
        "--workspace", type=Path, help="run here instead of in a temporary folder (kept)"
    )
    parser.add_argument("--json", type=Path, help="also write the result to this file")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: random)")
    parser.add_argument(
        "--rounds-per-workspace",
        type=int,
        default=100,
        help="start a fresh workspace (ws-NNNN under the folder) every N rounds, so that "
        "rounds stay fast as items pile up; 0: one workspace for all rounds (default 100)",
    )
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.rounds_per_workspace < 0:
        parser.error("--rounds must be >= 1 and --rounds-per-workspace >= 0")
    if args.seed is None:
        args.seed = random.randrange(2**32)
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.workspace is not None:
        result = campaign(args, args.workspace.expanduser())
    else:
        with tempfile.TemporaryDirectory(prefix="memstrata-crash-") as folder:
            result = campaign(args, Path(folder) / "ws")
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    failed = ("lost", "corrupt_files", "resurrected", "notices", "child_errors")
    return 1 if any(result[key] for key in failed) else 0


if __name__ == "__main__":
    sys.exit(main())
