"""``memstrata demo``: a short scripted conversation through the real engine.

Runs on the embedded default (files in a temporary workspace; no key, no
server). It shows what memstrata keeps, that a hand edit of MEMORY.md is
taken in, and that a write acknowledged just before a kill -9 survives.
Later layers (capture, search, context) extend this script as they land.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.syntax import Syntax

from .errors import InvalidInput
from .memory import Memory

__all__ = ["run_demo"]

# (user message, facts the agent stores with its memory tool: (text, category))
SCRIPT: list[tuple[str, list[tuple[str, str]]]] = [
    (
        "Hi! I'm Sardor, I look after the billing service.",
        [
            ("The user's name is Sardor", "proper_noun"),
            ("Sardor owns the billing service", "project"),
        ],
    ),
    (
        "Please keep answers short, code first.",
        [("Prefers short answers with code first", "preference")],
    ),
    (
        "Remember that the staging database is pg-staging-2.",
        [("The staging database is pg-staging-2", "remember")],
    ),
    (
        "Again: short answers, code first, please.",
        [("prefers short answers with code first.", "preference")],
    ),
]

_CRASHING_WRITER = """
import os, sys
from memstrata import Memory
memory = Memory.open(sys.argv[1])
item = memory.remember("Deploys are frozen on Fridays", category="decision")
print(item.id, flush=True)
os.kill(os.getpid(), 9)
"""


def run_demo(console: Console, keep: Path | None) -> None:
    """Run the scripted conversation in ``keep`` (or a temporary folder)."""
    if keep is not None:
        if keep.exists() and any(keep.iterdir()):
            raise InvalidInput(f"{keep} is not empty; give --keep a new folder")
        _run(console, keep)
        console.print(f"\nThe workspace is kept at [bold]{escape(str(keep))}[/bold].")
        return
    with tempfile.TemporaryDirectory(prefix="memstrata-demo-") as folder:
        _run(console, Path(folder) / "workspace")


def _run(console: Console, path: Path) -> None:
    console.rule("[bold]memstrata demo[/bold]")
    console.print(f"Workspace: {escape(str(path))}\n")
    with Memory.open(path) as memory:
        for message, facts in SCRIPT:
            console.print(f"[bold cyan]user[/bold cyan]  {escape(message)}")
            for text, category in facts:
                item = memory.remember(text, category=category, session="demo")
                seen = f" (duplicate: seen {item.hits + 1}x)" if item.hits else ""
                console.print(
                    f"      [green]remembered[/green] {item.id} {escape(f'[{category}]')}{seen}"
                )
        _correct_and_redact(console, memory)
    _show(console, path / "MEMORY.md", "MEMORY.md after the conversation")

    console.print("\n[bold]A person edits MEMORY.md by hand[/bold] (adds a fact without an id)")
    memory_md = path / "MEMORY.md"
    memory_md.write_text(
        memory_md.read_text(encoding="utf-8").replace(
            "## Preferences\n", "## Preferences\n- Likes tables for comparisons\n"
        ),
        encoding="utf-8",
    )
    with Memory.open(path) as memory:
        for notice in memory.notices:
            console.print(f"      [yellow]on open:[/yellow] {escape(notice)}")
        added = memory.list(category="preference", limit=1)[0]
        console.print(f"      taken in as {added.id}: {escape(added.text)}")

    console.print(
        "\n[bold]A writer is killed with SIGKILL right after a write is acknowledged[/bold]"
    )
    child = subprocess.run(
        [sys.executable, "-c", _CRASHING_WRITER, str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        check=False,
    )
    killed = child.returncode == -signal.SIGKILL
    acknowledged = child.stdout.strip()
    console.print(f"      child acknowledged {acknowledged}, killed by SIGKILL: {killed}")
    with Memory.open(path) as memory:
        survived = memory.get(acknowledged)
        console.print(
            f"      after reopen: {survived.id} {escape(f'[{survived.category}]')} "
            f"{escape(survived.text)}"
        )
        report = memory.status()
    _show(console, memory_md, "MEMORY.md at the end")
    console.print(
        f"\n{report.items} live item(s), journal lsn {report.lsn}, "
        f"{report.quarantined} quarantined; files: MEMORY.md, memory/LTM_SNAPSHOT.json, "
        "memory/LTM_AUDIT.jsonl"
    )


def _correct_and_redact(console: Console, memory: Memory) -> None:
    """A correction supersedes a fact; a secret is redacted before it is written."""
    message = "Actually, staging moved: the staging database is pg-staging-3 now."
    console.print(f"[bold cyan]user[/bold cyan]  {escape(message)}")
    [old] = [i for i in memory.list() if "pg-staging-2" in i.text]
    new = memory.supersede(old.id, "The staging database is pg-staging-3", session="demo")
    console.print(f"      [green]superseded[/green] {old.id} by {new.id} (the old fact is kept)")
    message = "The staging password is Tr0ub4dor&3, keep it handy."
    console.print(f"[bold cyan]user[/bold cyan]  {escape(message)}")
    item = memory.remember("staging password: Tr0ub4dor&3", category="remember", session="demo")
    console.print(f"      [green]remembered[/green] {item.id} as: {escape(item.text)}")


def _show(console: Console, path: Path, title: str) -> None:
    text = path.read_text(encoding="utf-8")
    console.print(Panel(Syntax(text, "markdown", word_wrap=True), title=title, expand=False))
