"""A person's edit of MEMORY.md is a proposal, checked before it is applied.

MEMORY.md is both the engine's rendering and a file a person edits. A saved
file is never read as the whole truth; it is compared with the rendering it
started from, and only the person's changes relative to that are applied (a
three-way merge, as version control does).

* **Base.** ``RenderHistory`` keeps the last few contents MEMORY.md had --
  the engine's renderings and the hand edits it took in -- in
  ``.memstrata/rendered/<sha256>.md``. An editor often saves a copy it read
  before the engine's last checkpoint; the base of a saved file is the kept
  content closest to it (fewest differing lines, newest on a tie), so facts
  the engine added since that copy was read are not taken as deleted. The
  history is a hint, not canonical data: a lost or altered entry (its name
  is its hash) only makes the merge fall back to the snapshot's rendering.
* **Plan.** ``plan`` turns the difference between the file and its base into
  put/delete changes against the current state. A line equal to its base
  form was not touched and changes nothing; a line the person changed while
  the engine changed it too is a conflict: both are kept and it is reported.
* **Damage.** A file that is empty, lost its title, holds bytes that are not
  UTF-8, ends in the middle of a line the base had, or would delete more than
  ``MASS_DELETE_COUNT`` facts and more than ``MASS_DELETE_SHARE`` of the live
  ones at once is damage, not an edit: the caller keeps it in the quarantine
  byte for byte and renders MEMORY.md again; ``accept`` takes it in anyway.
* **Settling.** A save in progress (an editor truncates, then writes) can
  only look like deletions or damage: such a file changed less than
  ``SETTLE_SECONDS`` ago is left alone until it has settled.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from ..errors import MemstrataError
from ..model import DEFAULT_CATEGORY, ID_PATTERN, MAX_TEXT_CHARS, Item, Source, dedupe_key
from ..storage.volume import SETTLE_SECONDS, Volume, settled
from . import markdown
from .longterm import Change, LongTermStore

__all__ = [
    "MASS_DELETE_COUNT",
    "MASS_DELETE_SHARE",
    "SETTLE_SECONDS",
    "Base",
    "Plan",
    "RenderHistory",
    "plan",
    "settled",
]

MASS_DELETE_COUNT = 5
MASS_DELETE_SHARE = 0.20
HISTORY_KEEP = 6
_SUFFIX = ".md"


@dataclass(frozen=True, slots=True)
class Base:
    """A content MEMORY.md had: its non-blank lines and its fact lines by id."""

    lines: frozenset[str]
    by_id: Mapping[str, markdown.MemoryLine]

    @classmethod
    def of(cls, data: bytes) -> Base:
        text = data.decode("utf-8", "replace")
        parsed = markdown.parse(data)
        by_id = {line.item_id: line for line in parsed.lines if line.item_id}
        return cls(_content_lines(text), by_id)


def _content_lines(text: str) -> frozenset[str]:
    return frozenset(line.rstrip("\r") for line in text.split("\n") if line.strip())


_LINE_ID = re.compile(r"\^(" + ID_PATTERN.pattern + r")\s*$")


def _ids(lines: frozenset[str]) -> set[str]:
    return {found.group(1) for line in lines if (found := _LINE_ID.search(line))}


class RenderHistory:
    """The last ``HISTORY_KEEP`` contents of MEMORY.md, kept as merge bases in
    the folder ``prefix`` of a volume (each under the hash of its bytes)."""

    def __init__(self, volume: Volume, prefix: str) -> None:
        self.volume = volume
        self.prefix = prefix  # ".memstrata/rendered/"

    def add(self, data: bytes, *, durable: bool = False) -> None:
        """Keep ``data`` (by default not fsynced: after a checkpoint, losing it
        only weakens a later merge); one kept already becomes the newest again."""
        rel = self.prefix + hashlib.sha256(data).hexdigest() + _SUFFIX
        try:
            self.volume.write(rel, data, durable=durable)
            for old in self._entries()[HISTORY_KEEP:]:
                self.volume.delete(old)
        except (OSError, MemstrataError):
            pass  # a hint only; the snapshot's rendering remains the fallback base

    def _entries(self) -> list[str]:
        """Kept contents, newest first."""
        try:
            found = self.volume.list(self.prefix)
        except (OSError, MemstrataError):
            return []
        stamped = [(st.mtime_ns, rel) for rel, st in found if rel.endswith(_SUFFIX)]
        return [rel for _, rel in sorted(stamped, reverse=True)]

    def contents(self) -> list[bytes]:
        """Every kept content whose bytes still hash to its name, newest first."""
        out = []
        for rel in self._entries():
            try:
                data = self.volume.read(rel)
            except (OSError, MemstrataError):
                continue
            name = rel.rsplit("/", 1)[-1]
            if data is not None and hashlib.sha256(data).hexdigest() + _SUFFIX == name:
                out.append(data)
        return out

    def base_for(self, data: bytes, fallback: Callable[[], bytes]) -> Base:
        """The kept content ``data`` most likely started from (``fallback()``
        when nothing is kept: the rendering of the snapshot).

        An older content is a candidate only if it shares a fact (an id) with
        the saved file: a file that shows no id was written from scratch or
        emptied, and is read against the newest content. Among candidates, a
        base knows every id the file shows (ids come from renderings), then
        differs from it by the fewest lines; the newest wins a tie.
        """
        kept = self.contents()
        if not kept:
            return Base.of(fallback())
        saved = _content_lines(data.decode("utf-8", "replace"))
        saved_ids = _ids(saved)
        best: tuple[int, int, int] | None = None
        chosen = kept[0]
        for age, content in enumerate(kept):
            lines = _content_lines(content.decode("utf-8", "replace"))
            ids = _ids(lines)
            if not saved_ids & ids:
                continue
            rank = (len(saved_ids - ids), len(saved ^ lines), age)
            if best is None or rank < best:
                best, chosen = rank, content
        return Base.of(chosen)


@dataclass(slots=True)
class Plan:
    """What a saved MEMORY.md would change, and whether it is damage instead."""

    changes: list[Change] = field(default_factory=list)
    deleted: int = 0
    conflicts: list[str] = field(default_factory=list)
    too_long: list[markdown.MemoryLine] = field(default_factory=list)
    damage: str | None = None


def plan(
    data: bytes,
    parsed: markdown.ParsedMemory,
    base: Base,
    current: LongTermStore,
    *,
    at: datetime,
    check: bool = True,
) -> Plan:
    """The changes that carry the saved ``data`` into ``current``, relative to ``base``.

    With ``check`` (the default) a file that looks damaged gets ``damage`` set
    and no changes; ``check=False`` is a person accepting the file as it is.
    """
    if check:
        damage = _damaged(data, parsed, base)
        if damage is not None:
            return Plan(damage=damage)
    result = _merge(parsed, base, current, at)
    live = sum(1 for item in current.items.values() if item.is_live)
    if check and result.deleted > MASS_DELETE_COUNT and result.deleted > MASS_DELETE_SHARE * live:
        result.damage = f"it would delete {result.deleted} of {live} live facts at once"
        result.changes = []
    return result


def _damaged(data: bytes, parsed: markdown.ParsedMemory, base: Base) -> str | None:
    if not data.strip():
        return "it is empty"
    if parsed.bad:
        return (
            f"{len(parsed.bad)} line(s) are not valid UTF-8 (first: line {parsed.bad[0].line_no})"
        )
    text = data.decode("utf-8")
    if not any(line.startswith(markdown.TITLE_MARK) for line in text.split("\n", 20)[:20]):
        return f"it lost its title line ({markdown.TITLE})"
    if not text.endswith("\n"):
        last = text.rsplit("\n", 1)[-1].rstrip("\r")
        if last.strip() and any(
            len(line) > len(last) and line.startswith(last) for line in base.lines
        ):
            return "it ends in the middle of a line (truncated)"
    return None


def _merge(parsed: markdown.ParsedMemory, base: Base, current: LongTermStore, at: datetime) -> Plan:
    result = Plan()
    seen_ids: set[str] = {bad.item_id for bad in parsed.bad if bad.item_id}
    new_keys: set[str] = set()
    for line in parsed.lines:
        item_id = line.item_id if line.item_id not in seen_ids else None
        if item_id:
            seen_ids.add(item_id)
        was = base.by_id.get(item_id) if item_id else None
        existing = current.items.get(item_id) if item_id else None
        if was is not None and _same(line, was):
            continue  # untouched by the person: whatever the engine did since stands
        if len(line.text) > MAX_TEXT_CHARS:
            result.too_long.append(line)
            continue
        if existing is None:
            if was is not None:
                result.conflicts.append(f"{item_id} was deleted but edited by hand; kept both")
            _add_line(result, line, item_id, current, new_keys, at)
            continue
        edited = _edit(existing, was, line, at)
        if edited is None:
            continue
        if isinstance(edited, str):
            result.conflicts.append(edited)
            _add_line(result, line, None, current, new_keys, at)
        else:
            result.changes.append(Change("hand_edit", item=edited))
    for item_id in base.by_id.keys() - seen_ids:
        if item_id in current.items:
            result.changes.append(Change("hand_delete", delete_id=item_id))
            result.deleted += 1
    return result


def _same(line: markdown.MemoryLine, was: markdown.MemoryLine) -> bool:
    return (line.text, line.archived, line.category) == (was.text, was.archived, was.category)


def _add_line(
    result: Plan,
    line: markdown.MemoryLine,
    item_id: str | None,
    current: LongTermStore,
    new_keys: set[str],
    at: datetime,
) -> None:
    """A line no item stands behind becomes a new fact (source user)."""
    key = dedupe_key(line.text)
    if line.archived or key in new_keys or current.live_by_key(key) is not None:
        return
    new_keys.add(key)
    usable = item_id and ID_PATTERN.fullmatch(item_id) and item_id not in current.items
    item = Item(
        id=item_id if usable and item_id else current.unused_id(),
        text=line.text,
        category=line.category or DEFAULT_CATEGORY,
        source=Source.USER,
        created_at=at,
        updated_at=at,
        valid_from=at,
    )
    result.changes.append(Change("hand_edit", item=item))


def _edit(
    existing: Item, was: markdown.MemoryLine | None, line: markdown.MemoryLine, at: datetime
) -> Item | str | None:
    """The item as the person's line changes it; a conflict message when the
    person and the engine both changed the text since the base."""
    base_text = was.text if was is not None else existing.text
    base_category = was.category if was is not None else existing.category
    base_archived = was.archived if was is not None else not existing.is_live
    changes: dict[str, object] = {}
    if line.text != base_text and line.text != existing.text:
        if existing.text != base_text or (
            was is not None and not existing.is_live and not base_archived
        ):
            return f"{existing.id} was changed both by hand and by the agent; kept both"
        changes["text"] = line.text
    if not line.archived and line.category != base_category and line.category != existing.category:
        changes["category"] = line.category
    if line.archived != base_archived and line.archived == existing.is_live:
        changes["valid_to"] = at if line.archived else None
        if not line.archived:
            changes["superseded_by"] = None
    if not changes:
        return None
    return existing.evolve(updated_at=at, **changes)
