"""Daily notes: every exchange, shortened, in ``memory/YYYY-MM-DD.md`` (Qanot's format).

::

    # Daily Notes -- 2025-01-15

    ## [10:30:00]
    **User:** Tell me about FastAPI...
    **Agent:** FastAPI is a modern Python web framework...

Day and clock are the local time of the machine (a person reads these
files); each text becomes one line, shortened to ``limit`` characters with
``...`` (the seed's marker). Appends go through the workspace's volume
(``Volume.append``) and are durable on return.
"""

from __future__ import annotations

from datetime import datetime

from ..storage.volume import Volume

__all__ = ["NOTE_TEXT_CHARS", "append_exchange", "note_block", "section", "shorten"]

NOTE_TEXT_CHARS = 300


def shorten(text: str, limit: int = NOTE_TEXT_CHARS) -> str:
    """``text`` on one line, cut to ``limit`` characters with ``...`` when longer."""
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: max(limit - 3, 1)].rstrip() + "..."


def section(lines: list[str], at: datetime, title: str = "") -> str:
    """A daily-note section: ``## [HH:MM:SS] title`` (``at`` in local time) and its lines."""
    clock = at.astimezone().strftime("%H:%M:%S")
    heading = f"## [{clock}] {title}" if title else f"## [{clock}]"
    return heading + "\n" + "".join(f"{line}\n" for line in lines) + "\n"


def note_block(user: str, agent: str, at: datetime, limit: int = NOTE_TEXT_CHARS) -> str:
    """One exchange as a daily-note section (``at`` is shown in local time)."""
    return section([f"**User:** {shorten(user, limit)}", f"**Agent:** {shorten(agent, limit)}"], at)


def append_exchange(volume: Volume, block: str, at: datetime) -> str:
    """Append ``block`` to the daily note of ``at``'s local day (``memory/<day>.md``
    of ``volume``); returns its volume path."""
    day = at.astimezone().date()
    rel = f"memory/{day.isoformat()}.md"
    header = f"# Daily Notes -- {day.isoformat()}\n\n"
    volume.append(rel, block.encode(), header=header.encode())
    return rel
