"""Long-term memory held in RAM, checkpointed to MEMORY.md and a snapshot.

Files (both written with ``atomic_write``, MEMORY.md first):

* ``MEMORY.md`` -- what a person reads and edits (``store.markdown``).
* ``memory/LTM_SNAPSHOT.json`` -- every item with all its metadata, the
  journal lsn the checkpoint covers, and the fingerprint (size, mtime, inode,
  sha256) of the MEMORY.md rendered from exactly those items.

Invariants:

* RAM is the state; files are checkpoints of it. ``apply`` is the only way a
  journal record changes RAM, and applying the same record twice is harmless
  (puts carry the whole item, deletes are by id).
* A MEMORY.md whose fingerprint differs from the last checkpoint's is read
  against the content it started from (``store.handedit``; one the engine
  rendered between checkpoints is its own base: no change), and the
  difference becomes put/delete changes, journaled like any other write --
  so a hand edit is never overwritten and never applied twice.
* **Nothing forgotten is gone at once.** An item deleted by ``forget`` or by
  hand moves to ``forgotten`` (with when and why), is kept in the snapshot
  for the retention period, and a put of the same id (``restore``) brings it
  back. Deletions for other reasons (``compact``) are final.
* A snapshot that cannot be read is the caller's to quarantine; the items are
  then rebuilt from MEMORY.md (``items_from_markdown``).
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..errors import Corrupt, InvalidInput
from ..model import (
    DEFAULT_CATEGORY,
    KEY_VERSION,
    Item,
    Source,
    dedupe_key,
    format_time_or_none,
    new_item_id,
    normalize_text,
    now,
    parse_time,
    parse_time_or_none,
)
from ..storage.journal import Record
from ..storage.volume import Stat, Volume
from . import markdown

__all__ = [
    "Change",
    "Fingerprint",
    "Forgotten",
    "LongTermStore",
    "Snapshot",
    "items_from_markdown",
    "snapshot_row",
]

SNAPSHOT_FORMAT = 2  # rows are arrays (ROW_FIELDS); format 1 (rows are objects) is still read
# A format-2 row: these fields in this order (null where unset), and
# ``updated_at`` / ``valid_from`` equal to ``created_at`` written as 0.
ROW_FIELDS = (
    "id",
    "text",
    "category",
    "source",
    "created_at",
    "updated_at",
    "valid_from",
    "hits",
    "key",
    "session",
    "valid_to",
    "superseded_by",
    "user",
)
OP_PUT = "ltm.put"
OP_DELETE = "ltm.del"


# A file modified less than this before its stat was recorded may be modified
# again with the same size, mtime (clocks and file systems are coarse) and a
# reused inode number: its stat proves nothing and its content is compared
# (git's "racily clean" rule).
_RACY_NS = 2_500_000_000


@dataclass(frozen=True, slots=True)
class Fingerprint:
    """Identity of one rendered MEMORY.md; a mismatch means a hand edit."""

    size: int
    mtime_ns: int
    inode: int
    sha256: str
    checked_ns: int = 0  # when the stat was taken (0: unknown, never trusted alone)

    @classmethod
    def of(cls, stat: Stat, data: bytes) -> Fingerprint:
        """The fingerprint of a file whose stat is ``stat``, just written with ``data``."""
        sha = hashlib.sha256(data).hexdigest()
        return cls(stat.size, stat.mtime_ns, stat.inode, sha, time.time_ns())

    @classmethod
    def read(cls, volume: Volume, rel: str) -> tuple[Fingerprint, bytes] | None:
        """Read ``rel``; stat first, so a later change never matches the result.
        None when there is no file."""
        checked = time.time_ns()
        st = volume.stat(rel)
        data = volume.read(rel)
        if st is None or data is None:
            return None
        sha = hashlib.sha256(data).hexdigest()
        return cls(st.size, st.mtime_ns, st.inode, sha, checked), data

    def check(self, volume: Volume, rel: str) -> Fingerprint | None:
        """This fingerprint, refreshed, while ``rel`` still holds what it
        describes; None once the file changed (or is gone).

        The stat alone decides only when it was taken well after the file's
        last change; otherwise the content is hashed (and a refreshed
        fingerprint, stat first, lets the next check trust the stat).
        """
        checked = time.time_ns()
        st = volume.stat(rel)
        if st is None:
            return None
        same = (st.size, st.mtime_ns, st.inode) == (self.size, self.mtime_ns, self.inode)
        if same and self.mtime_ns + _RACY_NS < self.checked_ns:
            return self
        if st.size != self.size:
            return None
        data = volume.read(rel)
        if data is None or hashlib.sha256(data).hexdigest() != self.sha256:
            return None
        return Fingerprint(st.size, st.mtime_ns, st.inode, self.sha256, checked)

    def matches(self, volume: Volume, rel: str) -> bool:
        """True when ``rel`` still holds what this fingerprint describes."""
        return self.check(volume, rel) is not None

    @property
    def stat(self) -> Stat:
        return Stat(self.size, self.mtime_ns, self.inode)

    def to_dict(self) -> dict[str, Any]:
        return {
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "inode": self.inode,
            "sha256": self.sha256,
            "checked_ns": self.checked_ns,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Fingerprint | None:
        if not isinstance(data, dict):
            return None
        try:
            return cls(
                int(data["size"]),
                int(data["mtime_ns"]),
                int(data["inode"]),
                str(data["sha256"]),
                int(data.get("checked_ns", 0)),
            )
        except (KeyError, TypeError, ValueError):
            return None


@dataclass(frozen=True, slots=True)
class Snapshot:
    """A loaded LTM_SNAPSHOT.json.

    ``keys`` maps the de-duplication key of each live item to its id, stored so
    that open does not normalize every text again (None when the snapshot was
    written with another ``KEY_VERSION``).
    """

    lsn: int
    markdown: Fingerprint | None
    items: dict[str, Item]
    keys: dict[str, str] | None = None
    forgotten: dict[str, Forgotten] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path) -> Snapshot:
        """Read a snapshot file; ``Corrupt`` if it is not one."""
        return cls.decode(path.read_bytes(), path.name)

    @classmethod
    def decode(cls, raw: bytes, name: str = "LTM_SNAPSHOT.json") -> Snapshot:
        """A snapshot's bytes read; ``Corrupt`` (naming ``name``) if it is not one."""
        try:
            with _gc_paused():  # 100k small objects: collections would only slow this down
                return cls._parse(raw)
        except (ValueError, KeyError, TypeError, InvalidInput) as exc:
            raise Corrupt(f"{name} is not a readable snapshot: {exc}") from exc

    @classmethod
    def _parse(cls, raw: bytes) -> Snapshot:
        data = json.loads(raw)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        form = data.get("format")
        if form not in (1, SNAPSHOT_FORMAT):
            raise ValueError(f"unknown snapshot format {form!r}")
        items: dict[str, Item] = {}
        keys: dict[str, str] | None = {} if data.get("key_version") == KEY_VERSION else None
        rows = data["items"]
        if not isinstance(rows, list):
            raise ValueError("items is not a list")
        if form == SNAPSHOT_FORMAT:
            if data.get("fields") != list(ROW_FIELDS):
                raise ValueError(f"unknown row fields {data.get('fields')!r}")
            _read_rows(rows, items, keys)
            if len(items) != len(rows):
                raise ValueError("an id is there twice")
        else:
            for row in rows:
                item = Item.from_dict(row)
                items[item.id] = item
                if keys is not None and "key" in row:
                    keys[row["key"]] = item.id
        fingerprint = Fingerprint.from_dict(data.get("markdown"))
        forgotten = [Forgotten.from_dict(row) for row in data.get("forgotten", [])]
        gone = {entry.item.id: entry for entry in forgotten if entry.item.id not in items}
        return cls(int(data["lsn"]), fingerprint, items, keys, gone)

    @staticmethod
    def encode(
        lsn: int,
        markdown: Fingerprint,
        rows: Iterable[str],
        forgotten: Iterable[Forgotten] = (),
    ) -> bytes:
        """The file's bytes, from one JSON array text per item (``snapshot_row``)."""
        head = {
            "format": SNAPSHOT_FORMAT,
            "lsn": lsn,
            "markdown": markdown.to_dict(),
            "key_version": KEY_VERSION,
            "forgotten": [entry.to_dict() for entry in forgotten],
            "fields": ROW_FIELDS,
        }
        opening = json.dumps(head, separators=(",", ":"))[:-1]
        return f'{opening},"items":[{",".join(rows)}]}}'.encode()


def snapshot_row(item: Item, key: str | None) -> str:
    """One item's JSON text in the snapshot (``key``: its de-duplication key if
    live): an array of the ``ROW_FIELDS``, a time equal to ``created_at``
    written as 0. Against format 1's objects, at 100k facts: 22 MB, not 35, and
    ``Memory.open`` 0.40 s, not 0.63-0.65 (``make bench``, idle, interleaved)."""
    created = item.created_at.isoformat()
    updated = item.updated_at.isoformat()
    since = format_time_or_none(item.valid_from)
    row: list[Any] = [
        item.id,
        item.text,
        item.category,
        item.source.value,
        created,
        0 if updated == created else updated,  # the same time written the same way
        0 if since == created else since,
        item.hits,
        key,
        item.session,
        format_time_or_none(item.valid_to),
        item.superseded_by,
        item.user,
    ]
    return json.dumps(row, ensure_ascii=False, separators=(",", ":"))


# Item's slots, set directly: a frozen dataclass's __init__ sets each field
# through object.__setattr__, a third slower.
_SET_ORDER = (
    "id",
    "text",
    "category",
    "source",
    "session",
    "created_at",
    "updated_at",
    "hits",
    "valid_from",
    "valid_to",
    "superseded_by",
    "user",
)
# every field is set (a slot left unset would fail only when read): checked at import
if set(_SET_ORDER) != set(Item.__dataclass_fields__):
    raise TypeError("Item's fields changed: _read_rows must set each of them")
_SETTERS = tuple(Item.__dict__[name].__set__ for name in _SET_ORDER)
_SOURCE_OF = {member.value: member for member in Source}


def _read_rows(rows: list[Any], items: dict[str, Item], keys: dict[str, str] | None) -> None:
    """Format-2 rows into ``items`` (and ``keys``); ``ValueError``/``TypeError``/
    ``KeyError`` on a row that is not one (a field of the wrong type included)."""
    (s_id, s_text, s_category, s_source, s_session, s_created, s_updated, s_hits) = _SETTERS[:8]
    (s_valid_from, s_valid_to, s_superseded_by, s_user) = _SETTERS[8:]
    new = object.__new__
    sources = _SOURCE_OF
    text_type = str
    for row in rows:
        if type(row) is not list:
            raise ValueError(f"a row is not an array of the {len(ROW_FIELDS)} fields")
        # exactly the ROW_FIELDS: another length is a ValueError here
        (item_id, text, category, source, created_s, updated, since, hits, key, session, until,
         superseded_by, user) = row  # fmt: skip
        if (
            type(item_id) is not text_type
            or type(text) is not text_type
            or type(category) is not text_type
            or type(hits) is not int
            or (key is not None and type(key) is not text_type)
            or (session is not None and type(session) is not text_type)
            or (superseded_by is not None and type(superseded_by) is not text_type)
            or (user is not None and type(user) is not text_type)
        ):
            raise ValueError(f"row {row[0]!r}: a field has the wrong type")
        created = parse_time(created_s)
        item = new(Item)
        s_id(item, item_id)
        s_text(item, text)
        s_category(item, category or DEFAULT_CATEGORY)
        s_source(item, sources[source])
        s_session(item, session)
        s_created(item, created)
        s_updated(item, created if updated == 0 else parse_time(updated))
        s_hits(item, hits)
        s_valid_from(item, created if since == 0 else None if since is None else parse_time(since))
        s_valid_to(item, None if until is None else parse_time(until))
        s_superseded_by(item, superseded_by)
        s_user(item, user)
        items[item_id] = item
        if keys is not None and key is not None:
            keys[key] = item_id


# Deletions whose items stay restorable (``LongTermStore.forgotten``).
RESTORABLE = frozenset({"forget", "hand_delete"})


@dataclass(frozen=True, slots=True)
class Forgotten:
    """An item deleted by ``forget`` or by hand, restorable until the retention ends."""

    item: Item
    at: datetime
    reason: str

    def to_dict(self) -> dict[str, Any]:
        return {"item": self.item.to_dict(), "at": self.at.isoformat(), "reason": self.reason}

    @classmethod
    def from_dict(cls, data: Any) -> Forgotten:
        if not isinstance(data, dict):
            raise ValueError("a forgotten entry must be an object")
        return cls(Item.from_dict(data["item"]), parse_time(data["at"]), str(data["reason"]))


@dataclass(frozen=True, slots=True)
class Change:
    """One planned mutation: put ``item`` or delete ``delete_id``, and why."""

    reason: str
    item: Item | None = None
    delete_id: str | None = None


@dataclass
class LongTermStore:
    """The RAM state of long-term memory (not thread-safe; the caller locks)."""

    items: dict[str, Item] = field(default_factory=dict)
    lsn: int = 0
    forgotten: dict[str, Forgotten] = field(default_factory=dict)
    _by_key: dict[str, str] = field(default_factory=dict)
    # id -> (item, its snapshot row), valid while that very object is in ``items``
    _rows: dict[str, tuple[Item, str]] = field(default_factory=dict)
    # Whether ``items`` iterates in (created_at, id) order; None: not checked yet.
    _in_order: bool | None = None

    def __post_init__(self) -> None:
        self._reindex()

    def _reindex(self) -> None:
        self._by_key = {item.key: item.id for item in self.items.values() if item.is_live}

    def reset(
        self,
        items: dict[str, Item],
        lsn: int,
        keys: dict[str, str] | None = None,
        forgotten: dict[str, Forgotten] | None = None,
    ) -> None:
        """Replace the whole state (after loading a snapshot); ``keys`` as in ``Snapshot``."""
        self.items = items
        self.lsn = lsn
        self.forgotten = dict(forgotten or {})
        self._in_order = None
        if keys is None:
            self._reindex()
        elif all(map(items.__contains__, keys.values())):  # a snapshot's always are (in C)
            self._by_key = dict(keys)
        else:
            self._by_key = {key: item_id for key, item_id in keys.items() if item_id in items}

    def snapshot_rows(self) -> list[str]:
        """The snapshot row of every item, re-encoding only items that changed."""
        keys = {item_id: key for key, item_id in self._by_key.items()}
        rows: dict[str, tuple[Item, str]] = {}
        for item_id, item in self.items.items():
            cached = self._rows.get(item_id)
            if cached is None or cached[0] is not item:
                cached = (item, snapshot_row(item, keys.get(item_id)))
            rows[item_id] = cached
        self._rows = rows
        return [row for _, row in rows.values()]

    def apply(self, record: Record) -> None:
        """Apply one journal record (ignored unless it is newer than the state)."""
        if record.lsn <= self.lsn:
            return
        self.lsn = record.lsn
        if record.op == OP_PUT:
            for data in record.data["items"]:  # several items change together, atomically
                self._put(Item.from_dict(data))
        elif record.op == OP_DELETE:
            reason = str(record.data.get("reason", ""))
            at = parse_time_or_none(record.data.get("at")) or now()
            for item_id in record.data["ids"]:
                old = self._drop(item_id)
                if old is not None and reason in RESTORABLE:
                    self.forgotten[item_id] = Forgotten(old, at, reason)

    def expire_forgotten(self, before: datetime) -> None:
        """Let go of forgotten items deleted before ``before`` (the retention ended)."""
        self.forgotten = {k: v for k, v in self.forgotten.items() if v.at >= before}

    def _put(self, item: Item) -> None:
        old = self.items.get(item.id)
        if old is not None:
            if self._by_key.get(old.key) == item.id:
                del self._by_key[old.key]
            if old.created_at != item.created_at:
                self._in_order = None
        elif self._in_order and self.items:
            last = self.items[next(reversed(self.items))]
            if (item.created_at, item.id) < (last.created_at, last.id):
                self._in_order = False
        self.items[item.id] = item  # an update keeps its place
        self.forgotten.pop(item.id, None)  # restored (or its id reused)
        if item.is_live:
            self._by_key[item.key] = item.id

    def _drop(self, item_id: str) -> Item | None:
        old = self.items.pop(item_id, None)
        if old is not None and self._by_key.get(old.key) == item_id:
            del self._by_key[old.key]
        return old

    def in_order(self) -> bool:  # whether ``items`` iterates in (created_at, id) order
        if self._in_order is None:
            order = [(item.created_at, item.id) for item in self.items.values()]
            self._in_order = all(a <= b for a, b in zip(order, order[1:], strict=False))
        return self._in_order

    def newest(self, accept: Callable[[Item], bool], limit: int | None) -> list[Item]:
        """Items ``accept`` takes, newest first by (created_at, id), at most ``limit``."""
        if self.in_order():
            found: list[Item] = []
            for item in reversed(self.items.values()):
                if limit is not None and len(found) >= limit:
                    break
                if accept(item):
                    found.append(item)
            return found
        newest_first = sorted(
            filter(accept, self.items.values()),
            key=lambda item: (item.created_at, item.id),
            reverse=True,
        )
        return newest_first if limit is None else newest_first[:limit]

    def find_live(self, text: str, user: str | None = None) -> Item | None:
        """The live item of ``user`` whose normalized text equals that of ``text``."""
        return self.live_by_key(dedupe_key(text, user))

    def live_by_key(self, key: str) -> Item | None:
        """The live item with this de-duplication key (``Item.key``)."""
        item_id = self._by_key.get(key)
        return self.items.get(item_id) if item_id else None

    def unused_id(self) -> str:
        """A fresh id no item (nor a forgotten one) has."""
        while True:
            candidate = _fresh(self.items)
            if candidate not in self.forgotten:
                return candidate

    def render_lines(self) -> tuple[bytes, dict[str, int]]:
        """MEMORY.md's bytes and each item's line in it (``markdown.render_lines``)."""
        text, lines = markdown.render_lines(self.items.values(), in_order=self.in_order())
        return text.encode(), lines


def items_from_markdown(parsed: markdown.ParsedMemory, *, at: datetime) -> dict[str, Item]:
    """Rebuild items from MEMORY.md alone (no snapshot); undecodable lines are the
    caller's to quarantine (``parsed.bad``)."""
    items: dict[str, Item] = {}
    seen: set[str] = set()
    for line in parsed.lines:
        if normalize_text(line.text) in seen and not line.archived:
            continue
        item_id = line.item_id if line.item_id and line.item_id not in items else None
        item = _line_item(line, item_id or _fresh(items), Source.IMPORT, at)
        items[item.id] = item
        if item.is_live:
            seen.add(item.key)
    return items


def replay_audit(data: bytes) -> LongTermStore:
    """The state ``LTM_AUDIT.jsonl`` (every journal record a checkpoint wrote, in
    order) arrives at: what a lost snapshot held, the forgotten items too.
    Lines that are no record (damaged, torn) are skipped: this is salvage."""
    store = LongTermStore()
    for line in data.splitlines():
        try:
            entry = json.loads(line)
            if not isinstance(entry, dict) or type(entry.get("lsn")) is not int:
                continue
            store.apply(Record(entry["lsn"], str(entry.get("op", "")), entry))
        except (ValueError, TypeError, KeyError, AttributeError):
            continue
    return store


def with_history(item: Item, past: Item | None) -> Item:
    """``item`` (rebuilt from a line of MEMORY.md) with the provenance, times and
    hits ``past`` (the same id in the audit's state) had; MEMORY.md's text and
    section win, and its validity when the line moved in or out of the archive."""
    if past is None:
        return item
    same = item.is_live == past.is_live
    return dataclasses.replace(
        past,
        text=item.text,
        category=item.category,
        valid_from=past.valid_from if same else item.valid_from,
        valid_to=past.valid_to if same else item.valid_to,
        superseded_by=past.superseded_by if same else item.superseded_by,
    )


def _fresh(items: dict[str, Item]) -> str:
    while True:
        candidate = new_item_id()
        if candidate not in items:
            return candidate


def _line_item(line: markdown.MemoryLine, item_id: str, source: Source, at: datetime) -> Item:
    """A new item for a line of MEMORY.md that no item stands behind."""
    return Item(
        id=item_id,
        text=line.text,
        category=line.category or DEFAULT_CATEGORY,
        source=source,
        created_at=at,
        updated_at=at,
        valid_from=at,
        valid_to=at if line.archived else None,
    )


@contextmanager
def _gc_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
