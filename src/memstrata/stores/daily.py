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

from collections.abc import Sequence
from datetime import datetime

from ..storage.volume import Volume

__all__ = [
    "NOTE_TEXT_CHARS",
    "Exchange",
    "append_exchange",
    "append_exchanges",
    "note_block",
    "section",
    "shorten",
]

NOTE_TEXT_CHARS = 300
# One exchange to note: (user, agent, session, at), texts already redacted.
Exchange = tuple[str, str, "str | None", datetime]


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
    return _append_blocks(volume, [(block, at)])[0]


def append_exchanges(
    volume: Volume, exchanges: Sequence[Exchange]
) -> list[tuple[str, str, str | None]]:
    """Each exchange's ``note_block`` appended to the daily note of its local
    day, in order, with one append (one fsync) per note file; ``(block, path,
    session)`` of each."""
    blocks = [(note_block(user, agent, at), at) for user, agent, _, at in exchanges]
    paths = _append_blocks(volume, blocks)
    return [
        (block, path, exchange[2])
        for (block, _), path, exchange in zip(blocks, paths, exchanges, strict=True)
    ]


def _append_blocks(volume: Volume, blocks: Sequence[tuple[str, datetime]]) -> list[str]:
    days = [at.astimezone().date().isoformat() for _, at in blocks]
    grouped: dict[str, list[str]] = {}
    for (block, _), day in zip(blocks, days, strict=True):
        grouped.setdefault(day, []).append(block)
    for day, group in grouped.items():
        header = f"# Daily Notes -- {day}\n\n"
        volume.append(f"memory/{day}.md", "".join(group).encode(), header=header.encode())
    return [f"memory/{day}.md" for day in days]
