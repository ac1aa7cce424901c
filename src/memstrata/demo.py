"""``memstrata demo``: a short scripted conversation through the real engine.

Runs on the embedded default (files in a temporary workspace; no key, no
server). Each user message is captured before the (scripted) agent answers:
what goes to SESSION-STATE.md and MEMORY.md, a correction superseding a fact,
a secret redacted, a question not captured. Then a hand edit of MEMORY.md is
taken in, and a write acknowledged just before a kill -9 survives. Later
layers (search, context) extend this script as they land.
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

# (user message, the scripted agent's answer): every message goes through observe.
SCRIPT: list[tuple[str, str]] = [
    ("Hi! I'm Sardor, I look after the billing service.", "Hi Sardor! How can I help?"),
    ("I prefer short answers with code first.", "Noted: short answers, code first."),
    ("Remember that the staging database is pg-staging-2.", "Got it."),
    ("Let's go with PostgreSQL for the new ledger.", "PostgreSQL it is."),
    ("I prefer short answers with code first!", "Short and code first, as you said."),
    ("Do you prefer tabs or spaces?", "Spaces, four of them."),
    ("Actually, the staging database is pg-staging-3, not pg-staging-2.", "Updated."),
    ("Remember: my staging password is Tr0ub4dor&3", "I will not repeat it."),
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
        for message, answer in SCRIPT:
            _observe(console, memory, message)
            memory.record_turn("demo", user=message, assistant=answer)
        lesson = memory.record_tool_failure(
            "run_sql", {"db": "pg-staging-2"}, "connection refused: pg-staging-2:5432"
        )
        console.print(f"[bold magenta]tool[/bold magenta]  run_sql failed: lesson {lesson.id}")
    state = path / "sessions" / "demo" / "SESSION-STATE.md"
    _show(console, state, "sessions/demo/SESSION-STATE.md (captured before answering)")
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
        console.print("\n[bold]Search[/bold] (BM25 and local vectors, no key, no download)")
        for question in (
            "which database does staging use?",
            "what answer style does the user prefer?",
        ):
            console.print(f"[bold cyan]query[/bold cyan] {escape(question)}")
            for hit in memory.search(question, k=2):
                console.print(
                    f"      {hit.score:.3f}  {escape(hit.citation):<34} {escape(hit.snippet)}"
                )
    _show(console, memory_md, "MEMORY.md at the end")
    console.print(
        f"\n{report.items} live item(s), journal lsn {report.lsn}, "
        f"{report.quarantined} quarantined; files: sessions/demo/SESSION-STATE.md, MEMORY.md, "
        "sessions/demo.jsonl (the transcript) and demo.audit.jsonl, memory/<today>.md (the "
        "daily note), memory/LESSONS.jsonl, memory/LTM_SNAPSHOT.json, memory/LTM_AUDIT.jsonl, "
        ".memstrata/index.sqlite (the search index)"
    )


def _observe(console: Console, memory: Memory, message: str) -> None:
    console.print(f"[bold cyan]user[/bold cyan]  {escape(message)}")
    captures = memory.observe(message, session="demo")
    if not captures:
        console.print("      [dim]nothing captured[/dim]")
    for capture in captures:
        what = f"      [green]{capture.category}[/green]"
        if capture.superseded:
            what += f" supersedes {capture.superseded} with {capture.item_id}"
        elif capture.item_id:
            what += f" -> long-term {capture.item_id}"
        console.print(what)


def _show(console: Console, path: Path, title: str) -> None:
    text = path.read_text(encoding="utf-8")
    console.print(Panel(Syntax(text, "markdown", word_wrap=True), title=title, expand=False))
