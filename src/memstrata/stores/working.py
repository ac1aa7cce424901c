"""Working memory: working/WORKING_MEMORY.md, the bounded active state, always injected.

Format (the template's)::

    # WORKING_MEMORY.md -- Active state        <- preamble, kept as written
    ## Priorities
    - item                                    <- newest last, in every section
    ## Active tasks
    ## Open threads
    ## Recent progress
    - [2026-01-15T10:30:00+00:00] what got done
    ## Pending checks
    ## Temporary context

Guarantees:

* ``render(parse(text)) == text`` for every text ``render`` produced, and
  ``parse(render(m)) == m`` for a memory built by this module.
* Text a person added is kept: a section of their own keeps its lines as
  written; a line of theirs inside one of the managed sections that is not a
  bullet is kept in that section (above its items); an indented line under a
  bullet stays part of that item. Only blank lines are normalised.
* Bounded: after a write the file has at most ``cap`` characters (default
  4000). When a write would pass it, Recent progress items leave oldest first
  (the newest one always stays), then Temporary context items, then Open
  threads items, oldest first. Priorities, Active tasks, Pending checks and
  hand-written text never leave: if they (with
  the newest progress item) exceed the cap, the write raises ``InvalidInput``
  and the file is unchanged. Writers return what left, to be kept elsewhere.
* Writes are atomic and durable; new item text is one line, redacted.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

from ..errors import InvalidInput
from ..model import normalize_text, now
from ..storage.workspace import Workspace
from .text import bullet, headings, item_text, read_text_or_none, write_text

__all__ = [
    "DEFAULT_CAP",
    "REL",
    "SECTIONS",
    "Dropped",
    "Section",
    "WorkingMemory",
    "add_item",
    "add_progress",
    "fit",
    "parse",
    "path",
    "read",
    "render",
    "set_items",
]

DEFAULT_CAP = 4000
SECTIONS = {
    "priorities": "Priorities",
    "active_tasks": "Active tasks",
    "open_threads": "Open threads",
    "recent_progress": "Recent progress",
    "pending_checks": "Pending checks",  # q15's two more
    "temporary_context": "Temporary context",
}
# Added by parse when missing (a file from before the last two keeps its bytes
# until one of them is written).
_ALWAYS = ("priorities", "active_tasks", "open_threads", "recent_progress")
_KEY_OF_TITLE = {title.casefold(): key for key, title in SECTIONS.items()}
REL = "working/WORKING_MEMORY.md"  # its volume path


@dataclass(frozen=True, slots=True)
class Section:
    """One ``## `` section: its bullet items and its other (hand-written) lines.

    ``key`` is the section's name in ``SECTIONS`` when memstrata manages it,
    else None: then ``notes`` holds every line of it as written.
    """

    title: str
    key: str | None = None
    items: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def render(self) -> str:
        body = [*self.notes, *(f"- {item}" for item in self.items)]
        return f"## {self.title}\n" + ("\n" + "".join(f"{line}\n" for line in body) if body else "")


@dataclass(frozen=True, slots=True)
class WorkingMemory:
    """WORKING_MEMORY.md as sections; the first four managed ones are always present."""

    preamble: str
    sections: tuple[Section, ...]

    def items(self, section: str) -> tuple[str, ...]:
        """The items of a managed section (``"priorities"``, ``"Open threads"``...)."""
        return self._section(_key(section)).items

    def with_items(self, section: str, items: Iterable[str]) -> WorkingMemory:
        """A copy in which managed ``section`` holds exactly ``items`` (taken as given)."""
        key = _key(section)
        if not any(s.key == key for s in self.sections):
            return replace(
                self, sections=(*self.sections, Section(SECTIONS[key], key, tuple(items)))
            )
        sections = tuple(
            replace(s, items=tuple(items)) if s.key == key else s for s in self.sections
        )
        return replace(self, sections=sections)

    def _section(self, key: str) -> Section:
        return next((s for s in self.sections if s.key == key), Section(SECTIONS[key], key))


@dataclass(frozen=True, slots=True)
class Dropped:
    """An item a write pushed out of working memory to stay within the cap."""

    section: str
    text: str


def render(memory: WorkingMemory) -> str:
    """The file text of ``memory``."""
    head = memory.preamble
    if head and not head.endswith("\n"):
        head += "\n"
    if head and not head.endswith("\n\n"):
        head += "\n"
    return head + "\n".join(section.render() for section in memory.sections)


def parse(text: str) -> WorkingMemory:
    """``text`` as sections (see the module guarantees); never fails."""
    text = text.replace("\r\n", "\n")
    lines = text.split("\n")
    starts = [(index, title) for index, level, title in headings(lines) if level == 2]
    first = starts[0][0] if starts else len(lines)
    preamble = "".join(f"{line}\n" for line in lines[:first]) if starts else text
    sections: list[Section] = []
    for number, (index, title) in enumerate(starts):
        end = starts[number + 1][0] if number + 1 < len(starts) else len(lines)
        key = _KEY_OF_TITLE.get(title.casefold())
        if key is not None and any(s.key == key for s in sections):
            key = None  # a second "## Priorities" is kept as written, not managed
        sections.append(_parse_section(title, key, lines[index + 1 : end]))
    present = {s.key for s in sections}
    sections += [Section(SECTIONS[key], key) for key in _ALWAYS if key not in present]
    return WorkingMemory(preamble, tuple(sections))


def _parse_section(title: str, key: str | None, body: list[str]) -> Section:
    if key is None:
        return Section(title, None, (), tuple(_strip_blank_ends(body)))
    items: list[str] = []
    notes: list[str] = []
    in_item = False
    for line in body:
        if not line.strip():
            continue
        text = bullet(line)
        if text is not None:
            items.append(text)
            in_item = True
        elif in_item and line[0] in " \t":
            items[-1] += "\n" + line.rstrip()
        else:
            notes.append(line)
            in_item = False
    return Section(title, key, tuple(items), tuple(notes))


def _strip_blank_ends(lines: list[str]) -> list[str]:
    kept = [i for i, line in enumerate(lines) if line.strip()]
    return lines[kept[0] : kept[-1] + 1] if kept else []


def fit(memory: WorkingMemory, cap: int = DEFAULT_CAP) -> tuple[WorkingMemory, list[Dropped]]:
    """``memory`` within ``cap`` characters, and what had to leave (module rules)."""
    _check_cap(cap)
    dropped: list[Dropped] = []
    for key, keep in (("recent_progress", 1), ("temporary_context", 0), ("open_threads", 0)):
        items = list(memory.items(key))
        while len(render(memory)) > cap and len(items) > keep:
            dropped.append(Dropped(SECTIONS[key], items.pop(0)))
            memory = memory.with_items(key, items)
    size = len(render(memory))
    if size > cap:
        raise InvalidInput(
            f"working memory needs {size} characters but the cap is {cap}: Priorities, "
            "Active tasks, the newest Recent progress item and hand-written text are never "
            "dropped to make room; shorten them or raise the cap"
        )
    return memory, dropped


def path(workspace: Workspace) -> Path:
    """Where WORKING_MEMORY.md lives in the workspace folder."""
    return workspace.path / REL


def read(workspace: Workspace) -> WorkingMemory:
    """The working memory (the template's empty sections when the file is missing)."""
    text = read_text_or_none(workspace.volume, REL, REL)
    return parse(_template() if text is None else text)


def set_items(
    workspace: Workspace, section: str, items: Sequence[str], *, cap: int = DEFAULT_CAP
) -> list[Dropped]:
    """Make managed ``section`` hold ``items`` (one line each, redacted), in order.

    Then fits the cap; returns what left. Raises ``InvalidInput`` (file unchanged)
    for a bad section, an empty item, or content that cannot fit.
    """
    if isinstance(items, str):
        raise InvalidInput("items must be a list of strings, not one string")
    cleaned = [item_text(item) for item in items]
    return _save(workspace, read(workspace).with_items(section, cleaned), cap)


def add_item(
    workspace: Workspace, section: str, text: str, *, cap: int = DEFAULT_CAP
) -> list[Dropped]:
    """Append ``text`` (one line, redacted) as the newest item of managed ``section``.

    An item equal to one already there (``normalize_text``) is not added again.
    Then fits the cap; returns what left.
    """
    memory = read(workspace)
    item = item_text(text)
    current = memory.items(section)
    if normalize_text(item) in {normalize_text(existing) for existing in current}:
        return []
    return _save(workspace, memory.with_items(section, [*current, item]), cap)


def add_progress(
    workspace: Workspace, text: str, *, at: datetime | None = None, cap: int = DEFAULT_CAP
) -> list[Dropped]:
    """Append ``[time] text`` as the newest Recent progress item; it is always kept.

    ``at`` defaults to now (UTC). Then fits the cap, older progress leaving
    first; returns what left. Raises ``InvalidInput`` if even this item cannot fit.
    """
    when = (at or now()).astimezone(UTC).isoformat(timespec="seconds")
    item = f"[{when}] {item_text(text)}"
    memory = read(workspace)
    return _save(
        workspace,
        memory.with_items("recent_progress", [*memory.items("recent_progress"), item]),
        cap,
    )


def _save(workspace: Workspace, memory: WorkingMemory, cap: int) -> list[Dropped]:
    memory, dropped = fit(memory, cap)
    write_text(workspace.volume, REL, render(memory), REL)
    return dropped


def _key(section: str) -> str:
    if isinstance(section, str):
        name = section.strip().casefold()
        key = _KEY_OF_TITLE.get(name, name.replace(" ", "_"))
        if key in SECTIONS:
            return key
    allowed = ", ".join(SECTIONS)
    raise InvalidInput(f"working memory section must be one of {allowed}, not {section!r}")


def _check_cap(cap: int) -> None:
    if isinstance(cap, bool) or not isinstance(cap, int) or cap <= 0:
        raise InvalidInput(f"cap must be a positive number of characters, not {cap!r}")


def _template() -> str:
    return (resources.files("memstrata") / "templates" / "WORKING_MEMORY.md").read_text("utf-8")
