"""What every attack of the reliability campaign shares: tallies, children, file checks.

An ``Attack`` is one row of the campaign's table. Each try runs inside
``attack.attempt(label, seed)``: the try passes unless something was lost,
leaked, raised a raw (non-memstrata) exception or otherwise broke a promise,
and an exception that escapes the block is counted (never propagated), so one
bad try never stops the campaign.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from types import TracebackType
from typing import Any

import memstrata
from memstrata.doctor import Level, diagnose
from memstrata.errors import MemstrataError
from memstrata.storage.workspace import Workspace
from memstrata.stores import markdown
from memstrata.stores.longterm import Snapshot

Progress = Callable[[str], None]
MAX_FAILURES = 200  # failures kept per attack (the counts hold them all)
MAX_PROBLEMS = 8  # problems kept per failed try
CHILD_TIMEOUT = 120.0  # a child still running after this long is killed and reported


def quiet(_: str) -> None:
    """A progress callback that says nothing."""


def rounds(default: int, scale: float, *, least: int = 1) -> int:
    """``default`` rounds scaled, at least ``least``."""
    return max(least, round(default * scale))


def seed_for(seed: int, name: str) -> int:
    """A seed of its own for each attack (the same for the same campaign seed)."""
    return Random(f"{seed}:{name}").randrange(2**32)


def describe(exc: BaseException) -> str:
    """``module.Type: message (file:line)`` of an exception, for a report."""
    kind = type(exc)
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        last = frames[-1]
        where = f" ({Path(last.filename).name}:{last.lineno})"
    text = " ".join(str(exc).split())[:240]
    return f"{kind.__module__}.{kind.__qualname__}: {text}{where}"


def is_raw(exc: BaseException) -> bool:
    """True for an exception memstrata did not raise on purpose."""
    return not isinstance(exc, MemstrataError)


@dataclass
class Attack:
    """One row of the table: tries, how many passed, what was lost or leaked."""

    name: str
    tries: int = 0
    passed: int = 0
    lost: int = 0
    leaked: int = 0
    errors: int = 0  # raw exceptions (not a MemstrataError)
    counts: Counter[str] = field(default_factory=Counter)
    failures: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None
    seconds: float = 0.0
    note: str | None = None
    seed: int = 0

    def attempt(self, label: str, seed: int) -> Try:
        return Try(self, label, seed)

    @property
    def failed(self) -> bool:
        return bool(self.tries - self.passed or self.lost or self.leaked or self.errors)

    def to_dict(self) -> dict[str, Any]:
        return {
            "attack": self.name,
            "tries": self.tries,
            "passed": self.passed,
            "lost": self.lost,
            "leaked": self.leaked,
            "raw_errors": self.errors,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 1),
            "seed": self.seed,
            "counts": dict(sorted(self.counts.items())),
            "note": self.note,
            "failures": self.failures,
        }


class Try:
    """One try of an attack; a context manager that counts what escapes it."""

    def __init__(self, attack: Attack, label: str, seed: int) -> None:
        self.attack = attack
        self.label = label
        self.seed = seed
        self.problems: list[str] = []

    def lose(self, count: int, what: str) -> None:
        if count:
            self.attack.lost += count
            self.problems.append(f"lost {count}: {what}")

    def leak(self, count: int, what: str) -> None:
        if count:
            self.attack.leaked += count
            self.problems.append(f"leaked {count}: {what}")

    def raw(self, what: str) -> None:
        self.attack.errors += 1
        self.attack.counts["raw_errors"] += 1
        self.problems.append(f"raw exception: {what}")

    def fail(self, kind: str, what: str) -> None:
        """A broken promise other than a loss or a leak (counted under ``kind``)."""
        self.attack.counts[kind] += 1
        self.problems.append(f"{kind}: {what}")

    def exception(self, exc: BaseException, where: str, *, kind: str = "refused") -> None:
        """Count an exception: raw, or a MemstrataError where none was due."""
        if is_raw(exc):
            self.raw(f"{where}: {describe(exc)}")
        else:
            self.fail(kind, f"{where}: {describe(exc)}")

    def call(self, where: str, function: Callable[[], Any], *, kind: str = "refused") -> Any:
        """``function()``, or None after counting what it raised."""
        try:
            return function()
        except Exception as exc:  # noqa: BLE001 - every exception is a finding here
            self.exception(exc, where, kind=kind)
            return None

    def __enter__(self) -> Try:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool:
        if exc is not None and not isinstance(exc, Exception):
            return False  # KeyboardInterrupt and friends stop the campaign
        if exc is not None:
            self.exception(exc, "the try itself", kind="aborted")
        self.attack.tries += 1
        if not self.problems:
            self.attack.passed += 1
        elif len(self.attack.failures) < MAX_FAILURES:
            # What was lost or leaked first: it must never be cut off.
            shown = sorted(self.problems, key=lambda p: not p.startswith(("lost", "leaked")))
            self.attack.failures.append(
                {"try": self.label, "seed": self.seed, "problems": shown[:MAX_PROBLEMS]}
            )
        else:
            self.attack.counts["failures_not_shown"] += 1
        return True


# -- children ------------------------------------------------------------------


def child_env() -> dict[str, str]:
    """The environment of a child: it imports the same memstrata as this process."""
    env = dict(os.environ)
    src = str(Path(memstrata.__file__).resolve().parent.parent)
    parts = [src, *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != src]]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


# The last line a child prints on stderr when an exception ends it.
CHILD_EPILOGUE = r"""
def _report(exc):
    import traceback
    from memstrata.errors import MemstrataError
    traceback.print_exc()
    kind = "memstrata" if isinstance(exc, MemstrataError) else "raw"
    message = " ".join(str(exc).split())[:240]
    sys.stderr.write(f"\nX {kind} {type(exc).__module__}.{type(exc).__qualname__}: {message}\n")
"""


@dataclass
class ChildRun:
    """What a child printed and how it ended."""

    lines: list[str]  # complete stdout lines after "open"
    error: str  # "" when it was killed (or ended) as planned
    raw: bool  # the error is a raw exception


def _watchdog(proc: subprocess.Popen[bytes]) -> threading.Timer:
    timer = threading.Timer(CHILD_TIMEOUT, proc.kill)  # killing an ended child is harmless
    timer.daemon = True
    timer.start()
    return timer


def child_error(stderr: bytes, returncode: int | None) -> tuple[str, bool]:
    """The end of a failed child's stderr, and whether it was a raw exception."""
    text = stderr.decode(errors="replace").strip()
    last = [line for line in text.splitlines() if line.startswith("X ")]
    if last:
        return last[-1][2:], last[-1].startswith("X raw")
    return f"exit {returncode}: {text[-400:]}", "Traceback" in text


def kill_child(command: list[str], rng: Random, *, acks: int, sleep: float) -> ChildRun:
    """Run ``command`` and SIGKILL it at a random moment: after a random number
    (<= ``acks``) of lines, after a random sleep (<= ``sleep`` s) or while it
    is still opening. Only lines ending in a newline are returned."""
    how = rng.choice(["lines", "lines", "sleep", "opening"])
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env()
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        timer = _watchdog(proc)
        seen = b""
        try:
            if how == "opening":
                time.sleep(rng.uniform(0.05, 0.5))
            else:
                seen = proc.stdout.readline()
                if how == "lines":
                    for _ in range(rng.randint(0, acks) if seen else 0):
                        line = proc.stdout.readline()
                        if not line:
                            break
                        seen += line
                elif seen:
                    time.sleep(rng.uniform(0.0, sleep))
        finally:
            proc.send_signal(signal.SIGKILL)
            timer.cancel()
        output = seen + proc.stdout.read()  # not communicate(): keep what readline buffered
        stderr = proc.stderr.read()
    lines = [raw.decode() for raw in output.splitlines(keepends=True) if raw.endswith(b"\n")]
    lines = [line.rstrip("\n") for line in lines if line != "open\n"]
    if proc.returncode == -signal.SIGKILL:
        return ChildRun(lines, "", False)
    error, raw = child_error(stderr, proc.returncode)
    return ChildRun(lines, error or f"exit {proc.returncode}", raw)


def run_child(command: list[str], *, stdin: str | None = None) -> ChildRun:
    """Run ``command`` to its end (bounded by the watchdog)."""
    try:
        done = subprocess.run(
            command,
            input=stdin.encode() if stdin is not None else None,
            capture_output=True,
            env=child_env(),
            timeout=CHILD_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return ChildRun([], f"still running after {CHILD_TIMEOUT:.0f} s (killed)", False)
    lines = [line for line in done.stdout.decode(errors="replace").splitlines() if line != "open"]
    if done.returncode == 0:
        return ChildRun(lines, "", False)
    error, raw = child_error(done.stderr, done.returncode)
    return ChildRun(lines, error, raw)


def acks(lines: list[str]) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(tag, data)`` of a child's ``TAG {json}`` lines (others are skipped)."""
    for line in lines:
        tag, _, payload = line.partition(" ")
        if tag in ("A", "B") and payload.startswith("{"):
            try:
                yield tag, json.loads(payload)
            except ValueError:
                continue


# -- files ---------------------------------------------------------------------


def file_problems(ws: Path) -> list[str]:
    """Files left unreadable: MEMORY.md, the snapshot, audit lines, and ``doctor``'s errors.

    A torn last audit line is allowed (the next checkpoint sets it aside).
    """
    bad = []
    try:
        parsed = markdown.parse((ws / "MEMORY.md").read_bytes())
        if parsed.bad:
            bad.append(f"MEMORY.md: {len(parsed.bad)} undecodable line(s)")
    except FileNotFoundError:
        pass
    snapshot = ws / "memory" / "LTM_SNAPSHOT.json"
    if snapshot.exists():
        try:
            Snapshot.load(snapshot)
        except MemstrataError as exc:
            bad.append(f"snapshot: {exc}")
    audit = ws / "memory" / "LTM_AUDIT.jsonl"
    if audit.exists():
        for number, line in enumerate(audit.read_bytes().split(b"\n")[:-1], start=1):
            try:
                json.loads(line)
            except ValueError:
                bad.append(f"LTM_AUDIT.jsonl line {number} is not JSON")
                break
    return bad + doctor_errors(ws)


def doctor_errors(ws: Path, group: str | None = None) -> list[str]:
    """What ``doctor`` reports as ERROR (a raw exception from it is one too)."""
    try:
        findings = diagnose(Workspace.locate(ws, group))
    except Exception as exc:  # noqa: BLE001 - doctor must not raise either
        return [f"doctor raised {describe(exc)}"]
    return [f"doctor: {f.check}: {f.message}" for f in findings if f.level is Level.ERROR]


def tree(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, tuple[int, str]]:
    """Every file under ``root`` (symlinks not followed): relative path -> (size, sha256)."""
    found: dict[str, tuple[int, str]] = {}
    for folder, dirs, files in os.walk(root):
        here = Path(folder).relative_to(root).as_posix()
        prefix = "" if here == "." else here + "/"
        dirs[:] = [d for d in dirs if not (prefix + d + "/").startswith(skip) or not skip]
        for name in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder, name)
            relative = path.relative_to(root).as_posix()
            if relative.startswith(skip):
                continue
            if path.is_symlink():
                found[relative] = (-1, os.readlink(path))
                continue
            try:
                data = path.read_bytes()
            except OSError:
                continue
            found[relative] = (len(data), hashlib.sha256(data).hexdigest())
    return found


def tree_changes(
    before: dict[str, tuple[int, str]], after: dict[str, tuple[int, str]]
) -> list[str]:
    """Paths added, removed or changed between two ``tree`` results."""
    changed = [f"+{p}" for p in sorted(after.keys() - before.keys())]
    changed += [f"-{p}" for p in sorted(before.keys() - after.keys())]
    changed += [f"~{p}" for p in sorted(before.keys() & after.keys()) if before[p] != after[p]]
    return changed


def backdate(path: Path, seconds: float = 10.0) -> None:
    """Make a file look written a while ago (not a save in progress)."""
    if path.exists():
        stamp = time.time() - seconds
        os.utime(path, (stamp, stamp))


def python() -> str:
    return sys.executable
