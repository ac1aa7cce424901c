"""Classes 5 and 6: a full disk, and a workspace that cannot be written.

**Disk full** (root only: a 2 MB tmpfs). A ballast file leaves a random few
hundred KB free; the agent then writes (remember, big facts, record_turn,
observe, the memory tool, flush, search) until the disk refuses a dozen times
in a row. Every call must either succeed or raise ``StorageError``; then the
ballast is removed, and the workspace must open, hold every acknowledged
write, and work (write, flush, search, reopen; ``doctor`` has no error).

**Read-only.** A populated workspace seen through a read-only bind mount
(root only), and one opened with ``read_only=True``: every read must work
(search may still fail on a read-only index until another change lands: it
is counted as ``search_errors``), every write must fail with ``StorageError``
(the memory tool: an ``Error:`` answer), and no byte on disk may change.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

from memstrata import Memory
from memstrata.errors import MemstrataError, StorageError
from memstrata.tools import dispatch
from memstrata.tools.memory_tool import MemoryToolHandler

from .common import (
    Attack,
    Progress,
    Try,
    child_env,
    describe,
    doctor_errors,
    is_raw,
    python,
    rounds,
    seed_for,
    tree,
    tree_changes,
)

CLI = "import sys; from memstrata.cli import main; sys.argv[0] = 'memstrata'; sys.exit(main())"


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(command), capture_output=True, text=True, check=False)


def _can_mount() -> str | None:
    """Why mounts cannot be made here (None: they can be tried)."""
    if os.geteuid() != 0:
        return "needs root (mount)"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "mount(8) is not installed"
    return None


@contextlib.contextmanager
def mounted(*args: str, target: Path) -> Iterator[str | None]:
    """``mount ARGS TARGET`` for the block; yields why it failed (None: mounted)."""
    target.mkdir(parents=True, exist_ok=True)
    done = _run("mount", *args, str(target))
    try:
        yield None if done.returncode == 0 else f"mount failed: {done.stderr.strip()}"
    finally:
        if done.returncode == 0 and _run("umount", str(target)).returncode != 0:
            _run("umount", "-l", str(target))  # something still holds it: detach it anyway


# -- disk full ---------------------------------------------------------------------


@dataclass
class Written:
    """What the agent acknowledged on the full disk."""

    facts: dict[str, str] = field(default_factory=dict)
    turns: set[str] = field(default_factory=set)
    docs: dict[str, str] = field(default_factory=dict)
    refused: int = 0  # StorageError


def _ballast(disk: Path, leave: int) -> Path:
    path = disk / "ballast"
    stats = os.statvfs(disk)
    free = stats.f_bavail * stats.f_frsize
    with open(path, "wb") as out:
        out.write(b"\0" * max(free - leave, 0))
    return path


def _write_until_full(memory: Memory, rng: Random, attempt: Try) -> Written:
    written = Written()
    handler = MemoryToolHandler(memory)
    refused_in_a_row = 0
    for i in range(600):
        op = rng.choice(["remember", "big", "turn", "observe", "doc", "flush", "search"])
        try:
            if op in ("remember", "big"):
                pad = "y" * (rng.randrange(2000, 3900) if op == "big" else rng.randrange(1, 40))
                item = memory.remember(f"full disk fact {i} {pad}")
                written.facts[item.id] = item.text
            elif op == "turn":
                turn = memory.record_turn(
                    "full", user=f"turn {i} " + "z" * rng.randrange(3000), assistant="ok"
                )
                written.turns.add(turn.text_of("user"))
            elif op == "observe":
                for capture in memory.observe(f"Remember that disk item {i} is ready"):
                    if capture.item_id:
                        written.facts[capture.item_id] = memory.get(capture.item_id).text
            elif op == "doc":
                path, text = f"memory/full-{i}.md", f"# doc {i}\n" + "w" * rng.randrange(5000)
                answer = handler.handle(
                    {"command": "create", "path": f"/memories/{path}", "file_text": text}
                )
                if answer.startswith("Error"):
                    if "No space" not in answer and "space" not in answer.lower():
                        attempt.fail("refused", f"memory tool: {answer[:200]}")
                    raise StorageError(answer)
                written.docs[path] = text
            elif op == "flush":
                memory.flush()
            else:
                memory.search(f"full disk fact {rng.randrange(i + 1)}")
            refused_in_a_row = 0
        except StorageError:
            written.refused += 1
            refused_in_a_row += 1
            if refused_in_a_row >= 12:
                break
        except Exception as exc:  # noqa: BLE001 - a finding
            attempt.exception(exc, op)
    return written


def _check_written(ws: Path, written: Written, attempt: Try) -> None:
    with Memory.open(ws, embedder="none") as memory:
        live = {item.id: item.text for item in memory.list()}
        said = (
            {t.text_of("user") for t in memory.sessions.turns("full")} if written.turns else set()
        )
        attempt.call("remember after", lambda: memory.remember("written after space was freed"))
        attempt.call("flush after", memory.flush)
        hits = attempt.call("search after", lambda: memory.search("written after space was freed"))
        if hits == []:
            attempt.fail("stale_index", "search does not find the fact written after")
    missing = [t for k, t in written.facts.items() if live.get(k) != t]
    attempt.lose(len(missing), f"facts {[t[:40] for t in missing[:3]]}")
    attempt.lose(len(written.turns - said), "turns")
    for path, text in written.docs.items():
        if not (ws / path).exists() or (ws / path).read_text() != text:
            attempt.lose(1, f"document {path}")
    with Memory.open(ws, embedder="none") as memory:
        if "written after space was freed" not in {item.text for item in memory.list()}:
            attempt.lose(1, "the fact written after space was freed")
    for problem in doctor_errors(ws):
        attempt.fail("doctor", problem)


def disk_full_round(disk: Path, number: int, rng: Random, attempt: Try) -> Written:
    ws = disk / f"ws-{number}"
    try:
        try:
            memory = Memory.open(
                ws, embedder="none", checkpoint_every_updates=rng.choice([5, 40, 1000])
            )
        except StorageError:  # the disk was full before the round began: refused, in one line
            attempt.attack.counts["open_refused"] += 1
            return Written()
        ballast = _ballast(disk, rng.randrange(30_000, 400_000))
        try:
            written = _write_until_full(memory, rng, attempt)
        finally:
            try:
                memory.close()
            except StorageError:
                attempt.attack.counts["close_refused"] += 1
            finally:
                ballast.unlink()
        _check_written(ws, written, attempt)
    finally:
        shutil.rmtree(ws, ignore_errors=True)  # the next round needs the space
    return written


def run_disk_full(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 5: ``8 * scale`` rounds on a 2 MB tmpfs."""
    attack = Attack("diskfull/tmpfs 2 MB", seed=seed_for(seed, "diskfull"))
    started = time.perf_counter()
    attack.skipped = _can_mount()
    if attack.skipped is None:
        rng = Random(attack.seed)
        with mounted("-t", "tmpfs", "-o", "size=2m", "tmpfs", target=base / "disk") as failed:
            attack.skipped = failed
            for number in range(0 if failed else rounds(8, scale)):
                round_seed = rng.randrange(2**32)
                with attack.attempt(f"round {number}", round_seed) as attempt:
                    written = disk_full_round(base / "disk", number, Random(round_seed), attempt)
                    attack.counts["acknowledged"] += len(written.facts) + len(written.turns)
                    attack.counts["storage_errors"] += written.refused
                say(f"diskfull round {number}: {attack.passed}/{attack.tries} passed")
    attack.seconds = time.perf_counter() - started
    return [attack]


# -- read-only --------------------------------------------------------------------


def populate(ws: Path) -> None:
    with Memory.open(ws, embedder="none") as memory:
        memory.remember("My name is Dilnoza", category="proper_noun")
        keep = memory.remember("I prefer tea over coffee", category="preference")
        gone = memory.remember("a fact that was forgotten")
        memory.forget(gone.id)
        memory.record_turn("s1", user="we deploy on Fridays", assistant="noted")
        memory.documents.edit_file("memory/notes.md", lambda _: "# notes\nline one\n")
        memory.record_tool_failure("grep", {"q": "x"}, "grep failed")
        memory.search("tea")  # the index is on disk
        memory.remember("written after the index was built")
        del keep


def _cli(ws: Path, *args: str) -> str:
    """Run the CLI; its stdout, or StorageError/RuntimeError with its stderr."""
    done = subprocess.run(
        [python(), "-c", CLI, *args, "-w", str(ws)],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    if "Traceback" in done.stderr:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    if done.returncode != 0:
        raise StorageError(done.stderr.strip())
    return done.stdout


def _tool(memory: Memory, command: dict[str, Any]) -> str:
    """A memory-tool command; an ``Error:`` answer raised as StorageError."""
    answer = MemoryToolHandler(memory).handle(command)
    if answer.startswith("Error"):
        raise StorageError(answer)
    return answer


def _dispatch(memory: Memory, name: str, arguments: dict[str, Any]) -> str:
    answer = dispatch(memory, name, arguments)
    if answer.startswith("Error"):
        raise StorageError(answer)
    return answer


def reads(memory: Memory) -> dict[str, Callable[[], Any]]:
    item = memory.list()[0] if memory.list() else None
    return {
        "list": memory.list,
        "get": lambda: memory.get(item.id if item else "x"),
        "status": memory.status,
        "build_context": lambda: memory.build_context("who am I?", budget_tokens=500),
        "search": lambda: memory.search("tea"),
        "index_status": memory.index_status,
        "turns": lambda: memory.sessions.turns("s1"),
        "sessions": memory.sessions.list,
        "session_state": memory.session_state,
        "forgotten": memory.forgotten,
        "lessons": memory.lessons.list,
        "core": lambda: memory.core.read("agent"),
        "working": memory.working.read,
        "semantic": lambda: memory.semantic.read("facts"),
        "notes": memory.notes.list,
        "memory tool view": lambda: _tool(memory, {"command": "view", "path": "/memories"}),
        "memory tool view MEMORY.md": lambda: _tool(
            memory, {"command": "view", "path": "/memories/MEMORY.md"}
        ),
        "tool memory_get MEMORY.md": lambda: _dispatch(memory, "memory_get", {"path": "MEMORY.md"}),
        "tool memory_get notes": lambda: _dispatch(
            memory, "memory_get", {"path": "memory/notes.md"}
        ),
        "tool memory_search": lambda: _dispatch(memory, "memory_search", {"query": "tea"}),
        "tool memory_status": lambda: _dispatch(memory, "memory_status", {}),
    }


def writes(memory: Memory) -> dict[str, Callable[[], Any]]:
    live = memory.list()
    item = live[0] if live else None
    gone = memory.forgotten()
    lessons = memory.lessons.list()
    some = item.id if item else "x"
    return {
        "remember": lambda: memory.remember("a new fact"),
        "supersede": lambda: memory.supersede(some, "a corrected fact"),
        "forget": lambda: memory.forget(some),
        "restore": lambda: memory.restore(gone[0].item.id if gone else "x"),
        "observe": lambda: memory.observe("My name is Aziz"),
        "record_turn": lambda: memory.record_turn("s1", user="hi", assistant="hello"),
        "record_exchange": lambda: memory.record_exchange("hi", "hello"),
        "record_tool_failure": lambda: memory.record_tool_failure("ls", {}, "failed"),
        "forget_lesson": lambda: memory.lessons.forget(lessons[0].id if lessons else "x"),
        "edit_file": lambda: memory.documents.edit_file(
            "memory/notes.md", lambda t: (t or "") + "x\n"
        ),
        "rename_file": lambda: memory.documents.rename_file("memory/notes.md", "memory/moved.md"),
        "memory tool create": lambda: _tool(
            memory, {"command": "create", "path": "/memories/memory/new.md", "file_text": "x"}
        ),
        "memory tool str_replace": lambda: _tool(
            memory,
            {
                "command": "str_replace",
                "path": "/memories/memory/notes.md",
                "old_str": "line one",
                "new_str": "line 1",
            },
        ),
        "memory tool delete": lambda: _tool(
            memory, {"command": "delete", "path": "/memories/memory/notes.md"}
        ),
        "tool memory_write": lambda: _dispatch(memory, "memory_write", {"text": "agent fact"}),
        "flush": memory.flush,
        "compact": memory.compact,
        "set_core": lambda: memory.core.write("agent", "# Agent\nbe brief\n"),
        "working_add": lambda: memory.working.add("priorities", "ship it"),
        "working_progress": lambda: memory.working.progress("did a thing"),
        "semantic_add": lambda: memory.semantic.add("facts", "the sky is blue"),
        "note_create": lambda: memory.notes.create("a new note", "body"),
        "compact_transcript": lambda: memory.sessions.compact("s1", keep=0),
    }


def read_only_round(attack: Attack, ws: Path, source: Path, seed: int, *, flag: bool) -> None:
    """Every read and write on the read-only workspace ``ws`` (files: ``source``)."""
    before = tree(source)
    with attack.attempt("open", seed) as attempt:
        opened = attempt.call(
            "open", lambda: Memory.open(ws, embedder="none", read_only=True if flag else None)
        )
        if opened is not None and not opened.read_only:
            attempt.fail("not_read_only", "Memory.open did not see that it cannot write")
    if opened is None:
        return
    memory: Memory = opened
    try:
        # The CLI cannot be told read_only=True: only through a read-only mount.
        cli_reads = {} if flag else {"cli list": lambda: _cli(ws, "list", "--json")}
        cli_writes = {} if flag else {"cli remember": lambda: _cli(ws, "remember", "a new fact")}
        for name, call in (reads(memory) | cli_reads).items():
            with attack.attempt(f"read: {name}", seed) as attempt:
                try:
                    call()
                except Exception as exc:  # noqa: BLE001 - a finding
                    if "search" in name or "index" in name or "status" in name:
                        attack.counts["search_errors"] += 1
                    attempt.exception(exc, name)
        for name, call in (writes(memory) | cli_writes).items():
            with attack.attempt(f"write: {name}", seed) as attempt:
                try:
                    call()
                    attempt.fail("accepted", f"{name} did not fail")
                except StorageError:
                    pass
                except Exception as exc:  # noqa: BLE001 - a finding
                    if is_raw(exc):
                        attempt.raw(f"{name}: {describe(exc)}")
                    else:
                        attempt.fail("not_storage_error", f"{name}: {describe(exc)}")
    finally:
        with contextlib.suppress(MemstrataError):
            memory.close()
    with attack.attempt("nothing on disk changed", seed) as attempt:
        changed = tree_changes(before, tree(source))
        if changed:
            attempt.fail("changed_on_disk", f"{len(changed)} path(s): {changed[:5]}")


def run_read_only(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 6: a read-only bind mount (root), and ``read_only=True``."""
    del scale  # every call is tried once: more rounds would repeat the same calls
    results = []
    flagged = Attack("readonly/read_only=True", seed=seed_for(seed, "readonly/flag"))
    started = time.perf_counter()
    populate(base / "flagged")
    read_only_round(flagged, base / "flagged", base / "flagged", flagged.seed, flag=True)
    flagged.seconds = time.perf_counter() - started
    results.append(flagged)
    mount = Attack("readonly/bind mount", seed=seed_for(seed, "readonly/mount"))
    started = time.perf_counter()
    mount.skipped = _can_mount()
    if mount.skipped is None:
        source, target = base / "source", base / "ro"
        populate(source)
        with mounted("--bind", str(source), target=target) as failed:
            if failed is None:
                again = _run("mount", "-o", "remount,bind,ro", str(target))
                failed = None if again.returncode == 0 else f"remount failed: {again.stderr}"
            mount.skipped = failed
            if failed is None:
                read_only_round(mount, target, source, mount.seed, flag=False)
    mount.seconds = time.perf_counter() - started
    results.append(mount)
    for attack in results:
        say(f"{attack.name}: {attack.passed}/{attack.tries} passed")
    return results
