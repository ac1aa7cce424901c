"""Foundation benchmark: write latency, open, checkpoint and list cost of ``Memory``.

Measures, on a real workspace on disk (warm page cache):

* ``remember_fsync_ms``: each ``remember(sync=True)`` (one fdatasync) on a
  workspace that already holds ~1k items, default settings (so a checkpoint
  runs every 1000 records and lands in the tail);
* ``remember_group_commit``: ``remember(sync=False)`` with the default
  ``flush_every_updates`` (an fdatasync every 20 records), throughput and
  per-call latency;
* ``open_ms``: ``Memory.open`` of a cleanly closed (checkpointed) workspace
  of 1k and ``--items`` items, median of ``--runs`` opens;
* ``open_ms_with_journal``: ``Memory.open`` when ~1000 records are still in
  the journal on top of ``--items`` checkpointed items (written by a child
  process that leaves with ``os._exit`` so no checkpoint runs; each open is
  measured in a forked child that also leaves without closing);
* ``checkpoint_ms``: a ``flush()`` that renders MEMORY.md and the snapshot
  at 1k and ``--items`` items (median);
* ``list_ms``: ``Memory.list(limit=20)`` at ``--items`` items (RAM read, median);
* ``build_seconds``: building the ``--items`` workspace through
  ``remember(sync=False)`` with no checkpoint and no group-commit fsync until
  the final ``flush()``.

Texts are generated sentences (names, preferences, projects, dates) that are
unique after ``normalize_text``, so de-duplication keeps every one.

Run::

    .venv/bin/python bench/bench_foundation.py --json bench/results/foundation.json

``--profile`` also prints a cProfile of one open at ``--items`` items to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from memstrata import Memory
from memstrata.model import normalize_text

SMALL = 1000
JOURNAL_RECORDS = 1000
LIST_RUNS = 20

# Settings for bulk loading: no timed or counted checkpoint, no group-commit
# fsync; one flush() at the end makes everything durable.
BULK: dict[str, Any] = {
    "checkpoint_every_updates": 10**9,
    "checkpoint_interval_seconds": 0.0,
    "flush_every_updates": 10**9,
    "flush_interval_seconds": 1e9,
}

# -- realistic, unique texts ---------------------------------------------------


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


FIRST = _words(
    "Alice Bob Carla Dmitri Elena Farid Grace Hiro Ines Jamal Keiko Liam Maya Nikolai "
    "Olga Pedro Quinn Rosa Sarvar Tomas Uma Victor Wen Ximena Yusuf Zoe Amir Bianca "
    "Chen Dilnoza Emil Fatima Gabriel Hana Ivan Julia Kofi Lena Marco Nadia"
)
LAST = _words(
    "Smith Ivanova Tanaka Garcia Okafor Novak Rahimov Muller Rossi Kim Silva Haddad "
    "Larsen Petrov Nguyen Dubois Kowalski Yilmaz Costa Schmidt Ahmed Lopez Sato Berg "
    "Fischer Moreau Horvat Jensen Khan Walsh"
)
DRINKS = (
    "black coffee",
    "green tea",
    "oat milk lattes",
    "sparkling water",
    "espresso",
    "chai",
    "hot chocolate",
    "mint tea",
    "cold brew",
    "orange juice",
)
DAYPARTS = ("morning", "afternoon", "evening", "late night", "weekend")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
CUISINES = (
    "Uzbek",
    "Japanese",
    "Italian",
    "Mexican",
    "Ethiopian",
    "Thai",
    "Georgian",
    "Lebanese",
    "Korean",
    "Peruvian",
)
EDITORS = ("VS Code", "Neovim", "Emacs", "PyCharm", "Helix", "Zed", "Sublime Text")
THEMES = ("dark mode", "light mode", "high-contrast mode", "solarized colors", "large fonts")
PROJECTS = _words(
    "Atlas Borealis Cobalt Delta Ember Falcon Granite Harbor Iris Juniper Kestrel Lumen "
    "Meridian Nimbus Orion Pylon Quartz Riverbed Sierra Tundra"
)
COMPONENTS = (
    "billing service",
    "search index",
    "mobile app",
    "auth gateway",
    "data pipeline",
    "admin dashboard",
    "notification worker",
    "reporting API",
)
TECH = (
    "PostgreSQL",
    "SQLite",
    "Redis",
    "Kafka",
    "Rust",
    "Go",
    "Python",
    "TypeScript",
    "Kubernetes",
    "gRPC",
    "GraphQL",
    "DuckDB",
)
CITIES = (
    "Tashkent",
    "Berlin",
    "Lisbon",
    "Osaka",
    "Nairobi",
    "Toronto",
    "Warsaw",
    "Austin",
    "Seoul",
    "Bogota",
    "Tbilisi",
    "Oslo",
)
COMPANIES = ("Acme", "Globex", "Initech", "Umbrella", "Hooli", "Stark Labs", "Wayne Data")
RELATIONS = ("manager", "sister", "brother", "mentor", "dog", "cat", "best friend", "partner")
TASKS = (
    "renew the TLS certificate",
    "send the invoice",
    "book the flights",
    "review the design doc",
    "back up the laptop",
    "update the on-call rota",
    "file the expense report",
    "call the landlord",
)
LESSONS = (
    "always pin dependency versions",
    "test migrations on a copy of production data",
    "write the rollback plan before the rollout",
    "small pull requests get reviewed faster",
    "measure before optimizing",
    "never deploy on a Friday afternoon",
)
COMMUTES = ("bike", "metro", "bus", "car", "foot", "tram", "scooter")
START = date(2023, 1, 1)


def _day(rng: random.Random) -> str:
    day = START + timedelta(days=rng.randrange(4 * 365))
    return f"{day:%B} {day.day}, {day.year}"


def _name(rng: random.Random) -> str:
    return f"{rng.choice(FIRST)} {rng.choice(LAST)}"


_TEMPLATES: tuple[tuple[str, Callable[[random.Random], str]], ...] = (
    ("preference", lambda r: f"{_name(r)} prefers {r.choice(DRINKS)} in the {r.choice(DAYPARTS)}"),
    (
        "preference",
        lambda r: (
            f"{_name(r)} likes {r.choice(CUISINES)} food, especially on {r.choice(WEEKDAYS)}s"
        ),
    ),
    ("preference", lambda r: f"{_name(r)} uses {r.choice(EDITORS)} with {r.choice(THEMES)}"),
    ("proper_noun", lambda r: f"{_name(r)}'s {r.choice(RELATIONS)} is called {r.choice(FIRST)}"),
    (
        "proper_noun",
        lambda r: (
            f"{_name(r)} works at {r.choice(COMPANIES)} in {r.choice(CITIES)} since {_day(r)}"
        ),
    ),
    (
        "project",
        lambda r: (
            f"Project {r.choice(PROJECTS)} {r.choice(COMPONENTS)} is owned by {_name(r)} "
            f"and runs on {r.choice(TECH)}"
        ),
    ),
    (
        "specific_value",
        lambda r: (
            f"The {r.choice(PROJECTS)} {r.choice(COMPONENTS)} release is planned for {_day(r)}"
        ),
    ),
    ("specific_value", lambda r: f"{_name(r)}'s birthday is on {_day(r)}"),
    (
        "decision",
        lambda r: (
            f"On {_day(r)} we decided to move the {r.choice(PROJECTS)} "
            f"{r.choice(COMPONENTS)} from {r.choice(TECH)} to {r.choice(TECH)}"
        ),
    ),
    ("remember", lambda r: f"Remind {_name(r)} to {r.choice(TASKS)} before {_day(r)}"),
    (
        "lesson",
        lambda r: (
            f"Lesson from the {r.choice(PROJECTS)} {r.choice(COMPONENTS)} incident on "
            f"{_day(r)}: {r.choice(LESSONS)}"
        ),
    ),
    (
        "fact",
        lambda r: f"{_name(r)} lives in {r.choice(CITIES)} and commutes by {r.choice(COMMUTES)}",
    ),
)


class Texts:
    """Deterministic generator of sentences that are unique after normalization."""

    def __init__(self, seed: int = 20240607) -> None:
        self._rng = random.Random(seed)
        self._seen: set[str] = set()

    def next(self) -> tuple[str, str]:
        """One (text, category) never returned before (as ``normalize_text`` sees it)."""
        for _ in range(100):
            category, make = self._rng.choice(_TEMPLATES)
            text = make(self._rng)
            key = normalize_text(text)
            if key not in self._seen:
                self._seen.add(key)
                return text, category
        raise RuntimeError("text space exhausted; add words to the lists")

    def take(self, count: int) -> list[tuple[str, str]]:
        return [self.next() for _ in range(count)]


# -- measuring -----------------------------------------------------------------


def progress(message: str) -> None:
    print(f"[bench] {message}", file=sys.stderr, flush=True)


@contextmanager
def phase(message: str) -> Iterator[None]:
    progress(f"{message} ...")
    started = time.perf_counter()
    yield
    progress(f"{message}: done in {time.perf_counter() - started:.1f}s")


def ms(ns: int | float) -> float:
    return round(ns / 1e6, 3)


def latency(samples_ns: list[int]) -> dict[str, Any]:
    """n, p50, p99 and mean (milliseconds) of per-call samples."""
    if len(samples_ns) < 2:
        value = ms(samples_ns[0]) if samples_ns else 0.0
        return {"n": len(samples_ns), "p50": value, "p99": value, "mean": value, "max": value}
    cuts = statistics.quantiles(samples_ns, n=100, method="inclusive")
    return {
        "n": len(samples_ns),
        "p50": ms(cuts[49]),
        "p99": ms(cuts[98]),
        "mean": ms(statistics.fmean(samples_ns)),
        "max": ms(max(samples_ns)),
    }


def settle() -> None:
    """Free what earlier phases left (a closed Memory sits in a reference cycle)."""
    gc.collect()


def timed_open(path: Path, **settings: Any) -> tuple[int, Memory]:
    started = time.perf_counter_ns()
    memory = Memory.open(path, **settings)
    return time.perf_counter_ns() - started, memory


def median_open_ms(path: Path, runs: int) -> float:
    """Median time of open on a cleanly closed workspace (each open is closed again)."""
    samples = []
    for _ in range(runs):
        settle()
        elapsed, memory = timed_open(path)
        memory.close()
        del memory
        samples.append(elapsed)
    return ms(statistics.median(samples))


def build(path: Path, texts: Texts, count: int) -> float:
    """Fill a new workspace with ``count`` items through the public API; seconds taken."""
    batch = texts.take(count)
    started = time.perf_counter()
    with Memory.open(path, **BULK) as memory:
        for text, category in batch:
            memory.remember(text, category=category, sync=False)
        memory.flush()
        live = len(memory.list())
    seconds = time.perf_counter() - started
    if live != count:
        raise RuntimeError(f"expected {count} items in {path}, found {live}")
    return round(seconds, 3)


def checkpoint_ms(path: Path, texts: Texts, runs: int) -> float:
    """Median time of a flush() that checkpoints one new record on top of the workspace."""
    samples = []
    settle()
    with Memory.open(path, **BULK) as memory:
        for text, category in texts.take(runs):
            memory.remember(text, category=category, sync=False)
            started = time.perf_counter_ns()
            memory.flush()
            samples.append(time.perf_counter_ns() - started)
    return ms(statistics.median(samples))


def remember_fsync(path: Path, texts: Texts, n: int) -> dict[str, Any]:
    batch = texts.take(n)
    samples = []
    settle()
    with Memory.open(path) as memory:
        for text, category in batch:
            started = time.perf_counter_ns()
            memory.remember(text, category=category, sync=True)
            samples.append(time.perf_counter_ns() - started)
    return latency(samples)


def remember_group_commit(path: Path, texts: Texts, n: int) -> dict[str, Any]:
    batch = texts.take(n)
    samples = []
    settle()
    with Memory.open(path) as memory:
        first = time.perf_counter_ns()
        for text, category in batch:
            started = time.perf_counter_ns()
            memory.remember(text, category=category, sync=False)
            samples.append(time.perf_counter_ns() - started)
        total = time.perf_counter_ns() - first
    stats = latency(samples)
    return {
        "n": n,
        "per_second": round(n / (total / 1e9), 1),
        "p50_ms": stats["p50"],
        "p99_ms": stats["p99"],
        "mean_ms": stats["mean"],
    }


def list_ms(path: Path, runs: int) -> float:
    settle()
    samples = []
    with Memory.open(path) as memory:
        for _ in range(runs):
            started = time.perf_counter_ns()
            found = memory.list(limit=20)
            samples.append(time.perf_counter_ns() - started)
            if len(found) != 20:
                raise RuntimeError(f"list(limit=20) returned {len(found)} items")
    return ms(statistics.median(samples))


def in_child(task: Callable[[], Any]) -> Any:
    """Run ``task`` in a forked child that leaves with ``os._exit`` (no close, no atexit).

    The child's result comes back as JSON through a pipe.
    """
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        code = 1
        try:
            os.close(read_end)
            payload = json.dumps(task()).encode()
            with os.fdopen(write_end, "wb") as out:
                out.write(payload)
            code = 0
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as source:
        payload = source.read()
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or not payload:
        raise RuntimeError("benchmark child process failed (see its traceback above)")
    return json.loads(payload)


def leave_journal(path: Path, texts: Texts, count: int) -> None:
    """Append ``count`` records that stay in the journal (a child exits without closing)."""
    batch = texts.take(count)

    def write() -> int:
        memory = Memory.open(path, **BULK)
        for index, (text, category) in enumerate(batch):
            memory.remember(text, category=category, sync=index == len(batch) - 1)
        return memory.status().journal_records

    pending = in_child(write)
    if pending != count:
        raise RuntimeError(f"expected {count} journal records, the child left {pending}")


def open_with_journal_ms(path: Path, runs: int) -> float:
    """Median open time with the journal left in place (each open in a child, not closed)."""

    def measure() -> dict[str, int]:
        elapsed, memory = timed_open(path, **BULK)
        return {"ns": elapsed, "journal": memory.status().journal_records}

    samples = []
    settle()
    for _ in range(runs):
        result = in_child(measure)
        if result["journal"] != JOURNAL_RECORDS:
            raise RuntimeError(f"open found {result['journal']} journal records")
        samples.append(result["ns"])
    return ms(statistics.median(samples))


def profile_open(path: Path, top: int = 20) -> None:
    settle()
    profiler = cProfile.Profile()
    profiler.enable()
    memory = Memory.open(path)
    profiler.disable()
    memory.close()
    del memory
    for key in ("cumulative", "tottime"):
        progress(f"cProfile of one open of {path.name}, sorted by {key}:")
        pstats.Stats(profiler, stream=sys.stderr).sort_stats(key).print_stats(top)


# -- machine -------------------------------------------------------------------


def cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def filesystem(path: Path) -> dict[str, str]:
    """Type and mount point of the file system holding ``path`` (best effort)."""
    try:
        out = subprocess.run(
            ["df", "-PT", str(path)], capture_output=True, text=True, check=True, timeout=10
        ).stdout.splitlines()
        fields = out[-1].split()
        return {"type": fields[1], "mount": fields[-1], "device": fields[0]}
    except (OSError, subprocess.SubprocessError, IndexError):
        pass
    best: dict[str, str] = {"type": "unknown", "mount": "", "device": ""}
    try:
        resolved = str(path.resolve())
        with open("/proc/mounts", encoding="utf-8") as mounts:
            for line in mounts:
                device, mount, kind = line.split()[:3]
                inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best["mount"]):
                    best = {"type": kind, "mount": mount, "device": device}
    except OSError:
        pass
    return best


def machine(path: Path) -> dict[str, Any]:
    fs = filesystem(path)
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "filesystem": fs["type"],
        "mount": fs["mount"],
        "platform": platform.platform(),
    }


# -- main ----------------------------------------------------------------------


def run(base: Path, args: argparse.Namespace) -> dict[str, Any]:
    big = args.items
    small_ws, fsync_ws, group_ws, big_ws = (
        base / "small",
        base / "fsync",
        base / "group",
        base / "large",
    )
    texts = Texts()
    result: dict[str, Any] = {
        "machine": machine(base),
        "config": {"items": big, "n": args.n, "runs": args.runs, "workspace": str(base)},
    }

    with phase(f"building 3 workspaces of {SMALL} items"):
        for path in (small_ws, fsync_ws, group_ws):
            build(path, texts, SMALL)

    with phase(f"remember(sync=True) x{args.n} on {SMALL} items"):
        result["remember_fsync_ms"] = remember_fsync(fsync_ws, texts, args.n)
    with phase(f"remember(sync=False) x{args.n} on {SMALL} items"):
        result["remember_group_commit"] = remember_group_commit(group_ws, texts, args.n)

    with phase(f"building {big} items"):
        result["build_seconds"] = build(big_ws, texts, big)

    with phase(f"open x{args.runs} at {SMALL} and {big} items"):
        result["open_ms"] = {
            str(SMALL): median_open_ms(small_ws, args.runs),
            str(big): median_open_ms(big_ws, args.runs),
        }
    if args.profile:
        profile_open(big_ws)

    with phase(f"list(limit=20) x{LIST_RUNS} at {big} items"):
        result["list_ms"] = {str(big): list_ms(big_ws, LIST_RUNS)}

    with phase(f"checkpoint x{args.runs} at {SMALL} and {big} items"):
        result["checkpoint_ms"] = {
            str(SMALL): checkpoint_ms(small_ws, texts, args.runs),
            str(big): checkpoint_ms(big_ws, texts, args.runs),
        }

    with phase(f"open x{args.runs} at {big} items + {JOURNAL_RECORDS} journal records"):
        leave_journal(big_ws, texts, JOURNAL_RECORDS)
        result["open_ms_with_journal"] = {str(big): open_with_journal_ms(big_ws, args.runs)}

    return result


def positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, not {number}")
    return number


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--json", type=Path, help="also write the result to this file")
    parser.add_argument("--items", type=positive, default=100_000, help="the large size")
    parser.add_argument("--n", type=positive, default=2000, help="samples per latency phase")
    parser.add_argument("--runs", type=positive, default=5, help="repeats of open/checkpoint")
    parser.add_argument(
        "--workspace",
        type=Path,
        help="empty folder to work in, kept afterwards (default: a temporary folder "
        "under /tmp, removed at the end)",
    )
    parser.add_argument(
        "--profile", action="store_true", help="print a cProfile of one large open to stderr"
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.workspace is not None:
        base = args.workspace.expanduser().resolve()
        base.mkdir(parents=True, exist_ok=True)
        if any(base.iterdir()):
            print(f"error: {base} is not empty", file=sys.stderr)
            return 2
    else:
        base = Path(tempfile.mkdtemp(prefix="memstrata-bench-", dir="/tmp"))
    started = time.perf_counter()
    try:
        result = run(base, args)
    finally:
        if args.workspace is None:
            shutil.rmtree(base, ignore_errors=True)
    result["total_seconds"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
