"""What each page of the inspector shows, gathered from one ``Memory``.

Invariants:

* **Read-only.** Nothing here writes; the writes are ``app``'s, through
  ``Memory``'s journaled verbs.
* **Bounded work per request** at any size: a list is filtered in one pass
  over the facts in RAM and only one page of it is rendered; the overview's
  counts are computed once per state of the facts (their ``lsn``) and the
  turns per day once per state of each transcript; file reads go through the
  path guard (``storage.access.resolve_rel``).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from datetime import time as dtime
from operator import attrgetter
from typing import Any

from ..errors import InvalidInput, MemstrataError, NotFound
from ..memory import Memory
from ..model import Item, normalize_category, now
from ..storage.access import resolve_rel
from ..storage.workspace import session_stem
from ..stores import transcripts as history

__all__ = ["FactFilter", "Overview", "Pages", "PER_PAGE", "read_guarded"]

PER_PAGE = 50
CHART_DAYS = 30
VALIDITY = ("live", "superseded", "forgotten", "all")
_SUMMARY = re.compile(r"^## Session Compaction (.+?) \(turns (\d+)-(\d+)[^)\n]*\)", re.M)


@dataclass(frozen=True, slots=True)
class FactFilter:
    """The filters of the Facts page (all optional)."""

    q: str = ""
    category: str = ""
    source: str = ""
    session: str = ""
    since: date | None = None
    until: date | None = None
    validity: str = "live"

    @classmethod
    def parse(cls, params: dict[str, str]) -> FactFilter:
        """From a query string's values; ``InvalidInput`` names a bad one."""
        validity = params.get("validity") or "live"
        if validity not in VALIDITY:
            raise InvalidInput(f"validity must be one of {', '.join(VALIDITY)}")
        return cls(
            q=params.get("q", "").strip(),
            category=params.get("category", "").strip(),
            source=params.get("source", "").strip(),
            session=params.get("session", "").strip(),
            since=_day(params.get("since")),
            until=_day(params.get("until")),
            validity=validity,
        )

    def accept(self) -> Callable[[Item], bool]:
        needle = self.q.casefold()
        kind = normalize_category(self.category) if self.category else None

        def accept(item: Item) -> bool:
            if self.validity == "live" and not item.is_live:
                return False
            if self.validity == "superseded" and item.is_live:
                return False
            if kind is not None and item.category != kind:
                return False
            if self.source and item.source.value != self.source:
                return False
            if self.session and item.session != self.session:
                return False
            day = item.created_at.date()
            if (self.since and day < self.since) or (self.until and day > self.until):
                return False
            return not needle or needle in item.text.casefold()

        return accept


def _day(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise InvalidInput(f"not a date (YYYY-MM-DD): {value[:40]!r}") from None


@dataclass
class Overview:
    """The Overview page's numbers."""

    live: int = 0
    superseded: int = 0
    forgotten: int = 0
    by_category: list[tuple[str, int]] = field(default_factory=list)
    by_source: list[tuple[str, int]] = field(default_factory=list)
    days: list[dict[str, Any]] = field(default_factory=list)  # oldest first
    peak: int = 1


class Pages:
    """The data behind each page, with what is worth keeping between requests."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._lock = threading.Lock()
        self._overview: tuple[tuple[int, int, int], Overview] | None = None
        self._facets: tuple[tuple[int, int], dict[str, list[str]]] | None = None
        self._turn_days: dict[str, tuple[int, Counter[date]]] = {}
        self._file: tuple[tuple[str, int, int, int], str, list[str]] | None = None

    # -- facts --------------------------------------------------------------------

    def facts(self, wanted: FactFilter, page: int) -> tuple[list[Item], int]:
        """One page of the facts ``wanted`` takes, newest first, and how many it takes."""
        engine = self.memory.engine
        engine.check_open()
        engine.refresh()
        if wanted.validity == "forgotten":
            accept = wanted.accept()
            with engine.state:
                gone = [f.item for f in engine.store.forgotten.values() if accept(f.item)]
            gone.sort(key=lambda item: (item.created_at, item.id), reverse=True)
            found = gone
        else:
            with engine.state:
                found = engine.store.newest(wanted.accept(), None)
        start = max(page - 1, 0) * PER_PAGE
        return found[start : start + PER_PAGE], len(found)

    def facets(self) -> dict[str, list[str]]:
        """The categories, sources and sessions the facts have (for the filters)."""
        engine = self.memory.engine
        engine.refresh()
        with engine.state:
            key = (engine.store.lsn, len(engine.store.items))
            if self._facets is not None and self._facets[0] == key:
                return self._facets[1]
            items = list(engine.store.items.values())
        categories = sorted({item.category for item in items})
        sources = sorted({item.source.value for item in items})
        sessions = sorted({item.session for item in items if item.session})
        facets = {"category": categories, "source": sources, "session": sessions[:500]}
        self._facets = (key, facets)
        return facets

    def fact(self, item_id: str) -> tuple[Item, str | None]:
        """The item (live, superseded or forgotten) and, when forgotten, when."""
        engine = self.memory.engine
        engine.check_open()
        engine.refresh()
        wanted = item_id.strip().lstrip("^")
        with engine.state:
            item = engine.store.items.get(wanted)
            if item is not None:
                return item, None
            gone = engine.store.forgotten.get(wanted)
        if gone is None:
            raise NotFound(f"no fact with id {item_id[:40]!r}")
        return gone.item, gone.at.strftime("%Y-%m-%d %H:%M")

    def replaced(self, item_id: str) -> list[Item]:
        """The facts ``item_id`` replaced (whose ``superseded_by`` names it)."""
        engine = self.memory.engine
        with engine.state:
            return [i for i in engine.store.items.values() if i.superseded_by == item_id]

    # -- overview -----------------------------------------------------------------

    def overview(self, sessions: list[history.SessionInfo]) -> Overview:
        """Counts and the chart of the last ``CHART_DAYS`` days (cached per state)."""
        engine = self.memory.engine
        engine.check_open()
        engine.refresh()
        with engine.state:
            store = engine.store
            key = (store.lsn, len(store.items), len(store.forgotten))
            cached = self._overview
            if cached is not None and cached[0] == key:
                data = cached[1]
            else:
                data = _count(store.items.values(), [f.at for f in store.forgotten.values()])
                self._overview = (key, data)
        turns = self.turns_per_day(sessions)
        days = [dict(day, turns=turns.get(day["day"], 0)) for day in data.days]
        kinds = ("added", "superseded", "forgotten", "turns")
        peak = max([1, *(d[kind] for d in days for kind in kinds)])
        return Overview(
            data.live, data.superseded, data.forgotten, data.by_category, data.by_source, days, peak
        )

    def turns_per_day(self, infos: list[history.SessionInfo]) -> Counter[date]:
        """Turns recorded per day over every transcript (each read again only when it changed)."""
        total: Counter[date] = Counter()
        for info in infos:
            key = info.size * 1_000_003 + info.archived
            cached = self._turn_days.get(info.session)
            if cached is None or cached[0] != key:
                try:
                    turns = self.memory.sessions.turns(info.session, archived=True)
                except MemstrataError:
                    continue
                cached = (key, Counter(turn.created_at.date() for turn in turns))
                self._turn_days[info.session] = cached
            total.update(cached[1])
        return total

    def summaries(self, limit: int = 10) -> list[dict[str, str]]:
        """The newest compaction summaries (``summaries/*.md``): file and last heading."""
        volume = self.memory.workspace.volume
        found = []
        for rel, stat in volume.list("summaries/"):
            if not rel.endswith(".md"):
                continue
            data = volume.read(rel) or b""
            heads = [m.group(0)[3:] for m in _SUMMARY.finditer(data.decode("utf-8", "replace"))]
            found.append((stat.mtime_ns, rel, heads[-1] if heads else "", len(heads)))
        found.sort(reverse=True)
        chosen = found[:limit]
        return [{"path": rel, "last": head, "count": str(n)} for _, rel, head, n in chosen]

    # -- files --------------------------------------------------------------------

    def file(self, requested: str) -> tuple[str, str, list[str]]:
        """An allowed file's volume path, text and lines (the path guard decides);
        the last one read is kept while it is unchanged (a 7 MB MEMORY.md)."""
        volume = self.memory.workspace.volume
        rel = resolve_rel(volume, requested, write=False)
        stat = volume.stat(rel)
        if stat is None:
            raise NotFound(f"no file {rel}")
        key = (rel, stat.size, stat.mtime_ns, stat.inode)
        cached = self._file
        if cached is not None and cached[0] == key:
            return rel, cached[1], cached[2]
        _, text = read_guarded(self.memory, rel)
        lines = text.splitlines()
        self._file = (key, text, lines)
        return rel, text, lines

    # -- sessions -----------------------------------------------------------------

    def session(self, name: str) -> dict[str, Any]:
        """A session's turns (archived ones too), state, summaries and audit log."""
        memory = self.memory
        turns = memory.sessions.turns(name, archived=True)
        info = next((i for i in memory.sessions.list() if i.session == name), None)
        cut = _cut(info) if info is not None else 0
        summary_rel = f"summaries/{session_stem(name)}.md"
        summary = memory.workspace.volume.read(summary_rel)
        text = summary.decode("utf-8", "replace") if summary else ""
        return {
            "info": info,
            "turns": turns,
            "cut": cut,
            "summarised": {int(m.group(3)): m.group(0)[3:] for m in _SUMMARY.finditer(text)},
            "state": memory.session_state(name),
            "summary": text,
            "summary_path": summary_rel,
            "audit": memory.sessions.audit(name),
        }


def _cut(info: history.SessionInfo) -> int:
    """The last seq a compaction archived (0: none)."""
    return info.last_seq - info.turns if info.archived else 0


_VALID_TO = attrgetter("valid_to")
_CATEGORY = attrgetter("category")
_SOURCE = attrgetter("source")
_CREATED_AT = attrgetter("created_at")


def _count(items: Iterable[Item], forgotten_at: list[datetime]) -> Overview:
    """One pass over the facts (100k at start-up: kept lean); only the days of
    the chart are counted (from a day before its first, whatever the zone)."""
    today = now().astimezone(UTC).date()
    first = today - timedelta(days=CHART_DAYS - 1)
    cut = datetime.combine(first - timedelta(days=1), dtime.min, tzinfo=UTC)
    # by columns, each pass in C (map, attrgetter, Counter): a third of a loop's time
    facts = list(items)
    ends = list(map(_VALID_TO, facts))
    live_facts = [fact for fact, end in zip(facts, ends, strict=True) if end is None]
    live = len(live_facts)
    superseded = len(facts) - live
    categories = Counter(map(_CATEGORY, live_facts))
    sources = Counter(map(_SOURCE, live_facts))
    retired = Counter(end.date() for end in ends if end is not None and end >= cut)
    added = Counter(at.date() for at in map(_CREATED_AT, facts) if at >= cut)
    gone = Counter(at.date() for at in forgotten_at)
    days = [
        {
            "day": day,
            "added": added.get(day, 0),
            "superseded": retired.get(day, 0),
            "forgotten": gone.get(day, 0),
        }
        for day in (first + timedelta(days=n) for n in range(CHART_DAYS))
    ]
    return Overview(
        live,
        superseded,
        len(forgotten_at),
        categories.most_common(),
        [(source.value, n) for source, n in sources.most_common()],
        days,
    )


def read_guarded(memory: Memory, requested: str) -> tuple[str, str]:
    """The volume path and text of an allowed file (the path guard decides)."""
    rel = resolve_rel(memory.workspace.volume, requested, write=False)
    data = memory.workspace.volume.read(rel)
    if data is None:
        raise NotFound(f"no file {rel}")
    return rel, data.decode("utf-8", "replace")
