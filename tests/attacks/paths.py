"""Class 7: hostile paths through every entry point.

The workspace sits a few folders deep under the attack's folder, next to an
``outside`` folder holding a canary file; inside the workspace, symlinks point
out (``memory/link.md`` and ``semantic/evil.md`` to the canary,
``memory/dangling.md`` to a file outside that does not exist yet,
``summaries/`` to a folder outside). Every hostile path (``..``, absolute,
``memory/../../x``, the symlinks, NUL and other control characters, lone
surrogates, look-alikes, URL escapes, very long names, ``MEMORY.md`` where it
may not be written, non-strings) goes through the memory tool (view, create,
str_replace, insert, delete, rename both ways), ``Memory.edit_file`` and
``rename_file``, ``tools.dispatch("memory_get")``, session and note names,
groups (``Memory.open(root, group=...)``, ``GroupTools``) and the CLI
(``--group``, ``notes show``, ``core show``, ``session show``).

Counted as ``leaked``: a file created, changed or removed outside the
workspace, or the canary's content (or /etc/passwd's) in an answer. Counted
as a raw error: any exception that is not a ``MemstrataError`` (the memory
tool and ``dispatch`` must not raise at all). A hostile write that is
accepted is ``accepted``.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memstrata import Memory
from memstrata.errors import MemstrataError
from memstrata.tools import GroupTools, dispatch
from memstrata.tools.memory_tool import MemoryToolHandler

from .common import Attack, Progress, Try, child_env, describe, python, seed_for, tree, tree_changes

CANARY = "OUTSIDE-CANARY-7f3a9c"
PASSWD = "root:x:0:0"
CLI = "import sys; from memstrata.cli import main; sys.argv[0] = 'memstrata'; sys.exit(main())"

HOSTILE: list[object] = [
    "../../etc/passwd",
    "/etc/passwd",
    "//etc/passwd",
    "../outside/canary.md",
    "../../../../outside/canary.md",
    "memory/../../x.md",
    "memory/../../../../outside/canary.md",
    "memory/../MEMORY.md",
    "./MEMORY.md",
    "MEMORY.md",
    "core/../MEMORY.md",
    "memory/link.md",
    "semantic/evil.md",
    "memory/dangling.md",
    "summaries/x.md",
    "summaries/../../../../outside/canary.md",
    "memory/x\x00.md",
    "memory/\x00/../../x.md",
    "memory/x\n.md",
    "memory/x.md\n",
    "memory/\u202ex.md",
    "memory/\udc80.md",
    "memory/\ud800x.md",
    "memory/" + "a" * 300 + ".md",
    "memory/" + "a" * 5000 + ".md",
    "memory/" + "é" * 130 + ".md",
    "memory\\..\\..\\outside\\canary.md",
    "memory/%2e%2e/%2e%2e/outside/canary.md",
    "memory/\uff0e\uff0e/x.md",
    "memory/\u2024\u2024/x.md",
    "memory/.hidden.md",
    "",
    " ",
    "memory",
    "memory/",
    "memory//x.md",
    "~/x.md",
    "memory/x.txt",
    "sessions/s1.jsonl",
    ".memstrata/journal.wal",
    "memstrata.toml",
    None,
    5,
    b"memory/x.md",
    ["memory/x.md"],
]

GROUPS: list[object] = [
    "../x",
    "..",
    ".",
    "a/b",
    "/tmp/x",
    "x\x00",
    "x\n",
    "\udc80",
    "A",
    "a" * 64,
    "global/../x",
    "",
    " ",
    5,
]

SESSIONS: list[object] = ["../../outside/pwn", "/tmp/pwn", "..", "a/../../../b", "\x00", "\udc80"]


class Setup:
    """The workspace, the folder outside it and what must stay as it is."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.root = base / "a" / "b" / "c"
        self.ws = self.root / "ws"
        self.outside = base / "outside"
        self.outside.mkdir(parents=True)
        (self.outside / "canary.md").write_text(f"# canary\n{CANARY}\n")
        (self.outside / "folder").mkdir()
        with Memory.open(self.ws, embedder="none") as memory:
            memory.remember("a fact to search")
            memory.documents.edit_file("memory/notes.md", lambda _: "# notes\nx marks the spot\n")
            memory.record_turn("s1", user="hello", assistant="hi")
        (self.ws / "memory" / "link.md").symlink_to(self.outside / "canary.md")
        (self.ws / "semantic" / "evil.md").symlink_to(self.outside / "canary.md")
        (self.ws / "memory" / "dangling.md").symlink_to(self.outside / "created.md")
        (self.ws / "summaries").rmdir()
        (self.ws / "summaries").symlink_to(self.outside / "folder")
        self.before = self.watch()

    def watch(self) -> dict[str, tuple[int, str]]:
        """Every file under the attack's folder but the workspace's own."""
        return tree(self.base, skip=("a/b/c/ws/", "a/b/c/groups/"))


def _tool_path(path: object) -> object:
    return "/memories/" + path if isinstance(path, str) else path


def entry_points(memory: Memory, handler: MemoryToolHandler) -> dict[str, Callable[[Any], Any]]:
    """``name -> call(path)`` for every entry point that takes a path."""

    def tool(command: str, **fields: object) -> Callable[[Any], Any]:
        return lambda path: handler.handle({"command": command, **fields, "path": _tool_path(path)})

    return {
        "tool view": tool("view"),
        "tool create": tool("create", file_text="pwned\n"),
        "tool str_replace": tool("str_replace", old_str="x", new_str="pwned"),
        "tool insert": tool("insert", insert_line=0, insert_text="pwned"),
        "tool delete": tool("delete"),
        "tool rename from": lambda path: handler.handle(
            {
                "command": "rename",
                "old_path": _tool_path(path),
                "new_path": "/memories/memory/ok.md",
            }
        ),
        "tool rename to": lambda path: handler.handle(
            {
                "command": "rename",
                "old_path": "/memories/memory/notes.md",
                "new_path": _tool_path(path),
            }
        ),
        "tool raw path": lambda path: handler.handle(
            {"command": "create", "path": path, "file_text": "pwned\n"}
        ),
        "edit_file": lambda path: memory.documents.edit_file(path, lambda _: "pwned\n"),
        "rename_file from": lambda path: memory.documents.rename_file(path, "memory/ok.md"),
        "rename_file to": lambda path: memory.documents.rename_file("memory/notes.md", path),
        "memory_get": lambda path: dispatch(memory, "memory_get", {"path": path}),
        "note": lambda path: memory.notes.read(path),
        "note_create title": lambda path: memory.notes.create(path, "pwned"),
        "note_create folder": lambda path: memory.notes.create("pwned", "pwned", folder=path),
        "core": lambda path: memory.core.read(path),
        "semantic": lambda path: memory.semantic.read(path),
        "semantic_add": lambda path: memory.semantic.add(path, "pwned"),
    }


def _answer_problem(answer: object, write: bool) -> tuple[str, str] | None:
    """(kind, what) when an answer leaks outside content or a write accepts a hostile path."""
    shown = repr(answer)
    if CANARY in shown or PASSWD in shown:
        return "leaked", shown[:160]
    if not write or isinstance(answer, str) and answer.startswith("Error"):
        return None
    return "accepted", shown[:160]


READS = ("tool view", "memory_get", "note", "core", "semantic")


def attack_once(
    setup: Setup,
    attempt: Try,
    call: Callable[[Any], Any],
    path: object,
    *,
    tool: bool,
    write: bool = True,
) -> None:
    """Run one hostile call; what it answered and what changed outside (a read of
    an allowed file inside the workspace is fine)."""
    try:
        answer = call(path)
    except MemstrataError as exc:
        if tool:  # the memory tool and dispatch answer, they never raise
            attempt.fail("raised", describe(exc))
        answer = f"Error: {exc}"
    except Exception as exc:  # noqa: BLE001 - a finding
        attempt.raw(describe(exc))
        answer = "Error: (raw)"
    problem = _answer_problem(answer, write)
    if problem is not None:
        kind, what = problem
        if kind == "leaked":
            attempt.leak(1, f"outside content in the answer: {what}")
        else:
            attempt.fail("accepted", what)
    outside_unchanged(setup, attempt)


def outside_unchanged(setup: Setup, attempt: Try) -> None:
    """Count every file created, changed or removed outside the workspace as leaked."""
    changed = tree_changes(setup.before, setup.watch())
    if changed:
        attempt.leak(len(changed), f"changed outside the workspace: {changed[:3]}")
        setup.before = setup.watch()


def _names(memory: Memory) -> dict[str, Callable[[Any], Any]]:
    return {
        "record_turn session": lambda s: memory.record_turn(s, user="pwned", assistant="ok"),
        "observe session": lambda s: memory.observe("Remember that I am careful", session=s),
        "session_state": lambda s: memory.session_state(s),
        "turns": lambda s: memory.sessions.turns(s),
        "compact_transcript": lambda s: memory.sessions.compact(s),
    }


def _cli(args: list[str]) -> str:
    done = subprocess.run(
        [python(), "-c", CLI, *args], capture_output=True, text=True, env=child_env(), check=False
    )
    if "Traceback" in done.stderr:
        raise RuntimeError(done.stderr.strip().splitlines()[-1])
    return done.stdout + done.stderr


def run(base: Path, scale: float, seed: int, say: Progress) -> list[Attack]:
    """Class 7: every hostile path through every entry point, once each."""
    del scale  # every combination is tried once
    attack = Attack("paths/hostile paths", seed=seed_for(seed, "paths"))
    started = time.perf_counter()
    setup = Setup(base)
    memory = Memory.open(setup.ws, embedder="none")
    handler = MemoryToolHandler(memory)
    try:
        for name, call in entry_points(memory, handler).items():
            tool = name.startswith("tool") or name == "memory_get"
            for path in HOSTILE:
                with attack.attempt(f"{name} {ascii(path)[:60]}", attack.seed) as attempt:
                    # The allowed shapes some of these calls take are not hostile there.
                    if not tool and name.startswith(("note", "core", "semantic")):
                        _named(setup, attempt, call, path)
                    else:
                        write = name not in READS
                        attack_once(setup, attempt, call, path, tool=tool, write=write)
        for name, call in _names(memory).items():
            for session in SESSIONS:
                with attack.attempt(f"{name} {ascii(session)}", attack.seed) as attempt:
                    _named(setup, attempt, call, session)
    finally:
        memory.close()
    _groups(setup, attack)
    _cli_paths(setup, attack)
    attack.seconds = time.perf_counter() - started
    say(f"{attack.name}: {attack.passed}/{attack.tries} passed, {attack.leaked} leaked")
    return [attack]


def _named(setup: Setup, attempt: Try, call: Callable[[Any], Any], name: object) -> None:
    """A call that takes a name (session, note, core file): refusing or staying
    inside the workspace are both fine; leaking or a raw exception are not."""
    try:
        answer = call(name)
    except MemstrataError:
        answer = None
    except Exception as exc:  # noqa: BLE001 - a finding
        attempt.raw(describe(exc))
        answer = None
    shown = repr(answer)
    if CANARY in shown or PASSWD in shown:
        attempt.leak(1, f"outside content: {shown[:160]}")
    outside_unchanged(setup, attempt)


def _groups(setup: Setup, attack: Attack) -> None:
    tools = GroupTools(setup.root, "main", embedder="none")
    try:
        for group in GROUPS:
            with attack.attempt(f"Memory.open group {ascii(group)}", attack.seed) as attempt:
                try:
                    Memory.open(setup.root, group, embedder="none").close()  # type: ignore[arg-type]
                    attempt.fail("accepted", f"group {ascii(group)} was opened")
                except MemstrataError:
                    pass
                except Exception as exc:  # noqa: BLE001 - a finding
                    attempt.raw(describe(exc))
                outside_unchanged(setup, attempt)
            for how, call in (
                (
                    "target",
                    lambda g: tools.dispatch(
                        "memory_get", {"path": "MEMORY.md", "group": g}, group="main"
                    ),
                ),
                ("caller", lambda g: tools.dispatch("memory_get", {"path": "MEMORY.md"}, group=g)),
            ):
                with attack.attempt(f"GroupTools {how} {ascii(group)}", attack.seed) as attempt:
                    attack_once(setup, attempt, call, group, tool=True)
    finally:
        tools.close()


def _cli_paths(setup: Setup, attack: Attack) -> None:
    ws = str(setup.root)
    commands = [
        ["list", "-w", ws, "--group", "../x"],
        ["remember", "pwned", "-w", ws, "--group", "../../outside"],
        ["list", "-w", ws, "--group", "/tmp/x"],
        ["notes", "show", "../../../../outside/canary", "-w", str(setup.ws)],
        ["core", "show", "../../../../outside/canary.md", "-w", str(setup.ws)],
        ["session", "show", "../../../../outside/canary", "-w", str(setup.ws)],
        ["notes", "show", "\udc80", "-w", str(setup.ws)],
    ]
    for command in commands:
        with attack.attempt(
            f"cli {' '.join(ascii(c) for c in command[:3])}", attack.seed
        ) as attempt:
            try:
                output = _cli(command)
            except RuntimeError as exc:
                attempt.raw(f"memstrata {command[0]}: {exc}")
                output = ""
            if CANARY in output or PASSWD in output:
                attempt.leak(1, f"outside content in the output of {command[:3]}")
            outside_unchanged(setup, attempt)
