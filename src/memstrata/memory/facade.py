"""``Memory``: the facade an agent holds for one workspace.

Invariants (on top of ``engine``, ``journal`` and the stores):

* **Secrets never reach disk.** Every text is passed through
  ``capture.secrets.redact`` before it is written anywhere: the journal,
  SESSION-STATE.md, daily notes, lessons (and lines a person adds to
  MEMORY.md are redacted when they are taken in).
* **Acknowledged means durable.** ``remember``, ``supersede``, ``forget``,
  ``observe``, ``record_exchange`` and ``record_tool_failure`` return after
  their bytes are fsynced (``sync=False`` opts ``remember`` into group commit).
* **Every write is decided on the latest state**, under the workspace lock,
  so ids are unique and de-duplication holds across processes.
* **Reads are served from RAM.** ``get``, ``list``, ``status``,
  ``top_lessons`` take no lock; they cost one ``stat`` of the journal.
* **Only the user's own words are captured.** ``observe`` with a source
  other than ``user`` (a tool result, a retrieved document, the agent)
  reports what it found and writes nothing: such text never becomes a
  durable fact or an instruction in the prompt.
* **Capture takes bounded time.** ``observe`` scans at most ``SCAN_CHARS``
  characters of a message: a longer one is scanned in its first and last
  ``SCAN_CHARS // 2`` (cut between words; the middle is not scanned), and a
  notice says so. Only what the scan finds is written; the message itself is
  not (``record_turn`` keeps a whole turn).
* **Write hooks** hear of every write (capture entries, facts, notes,
  lessons, deletions) once it is durable, outside the lock.
"""

from __future__ import annotations

import builtins
import os
import re
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from ..capture.promote import corrected_item, durable_facts
from ..capture.scan import Entry, load_rules, scan
from ..capture.secrets import redact
from ..config import Settings
from ..context.tokens import EstimateCounter, TokenCounter
from ..context.window import ContextWindow, Message, WindowSettings
from ..errors import Conflict, InvalidInput, NotFound
from ..model import (
    Capture,
    CompactResult,
    Item,
    Source,
    Status,
    WriteEvent,
    aware,
    clean_session,
    clean_text,
    normalize_category,
    now,
    parse_source,
    valid_text,
)
from ..storage.files import list_quarantine, storage_errors
from ..storage.workspace import Workspace, init_workspace
from ..stores.lessons import (
    OP_LESSON_DELETE,
    OP_LESSON_PUT,
    Lesson,
    correction_lesson,
    describe_args,
    tool_failure_lesson,
)
from ..stores.longterm import OP_PUT, Forgotten
from ..stores.session_state import StateEntry, append_entries, parse_state
from .context import Prompting
from .documents import Documents
from .engine import WriteHook, safe_text
from .layers import Layers
from .sessions import Transcripts

__all__ = ["Memory"]

ItemList = builtins.list[Item]
_MAX_FACT_CHARS = 4000
SCAN_CHARS = 64 * 1024  # of one message, scanned by observe (see the module)
_BOUNDARY = re.compile(r"[\s。！？]")
_NO_FACT: tuple[None, None] = (None, None)


class Memory(Transcripts, Layers, Documents, Prompting):
    """Layered, durable memory of one workspace (use ``Memory.open``)."""

    # -- lifecycle ------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        group: str | None = None,
        *,
        create: bool = True,
        read_only: bool | None = None,
        **settings: Any,
    ) -> Memory:
        """Open the workspace at ``path`` (``group``: ``path/groups/<group>``).

        ``create`` makes the layout when it is missing; ``settings`` are the
        fields of ``memstrata.config.Settings``. Capture rule packs in the
        workspace's ``rules/`` folder are added to the built-in ones.
        ``read_only`` opens it for reads only (by default: when it cannot be
        written, e.g. on a read-only mount); writes then fail with one line.
        """
        workspace = Workspace.locate(Path(path).expanduser(), group)
        if read_only is None:
            read_only = workspace.exists() and not os.access(workspace.system, os.W_OK)
        if create and not read_only:
            init_workspace(workspace)
        else:
            workspace.require()
        rules = load_rules(workspace.rules) if workspace.rules.is_dir() else None
        memory = cls(workspace, Settings.from_mapping(settings), rules, read_only=read_only)
        try:
            if read_only:
                with storage_errors(f"read the workspace at {workspace.path}"):
                    memory._load()
                    memory._upgrade_history()
            else:
                with storage_errors(f"open the workspace at {workspace.path}"), memory._lock:
                    memory._load()
                    memory._upgrade_history()
                    memory._migrate_layers()
        except BaseException:
            memory._closed = True
            memory._journal.close()
            memory._lock.close()
            raise
        memory._opened()
        return memory

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- writes ---------------------------------------------------------------

    def remember(
        self,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
        user: str | None = None,
        sync: bool = True,
    ) -> Item:
        """Store a long-term fact; durable when this returns (unless ``sync=False``).

        A fact whose normalized text equals a live one is not stored twice:
        the existing item is returned with ``hits`` + 1.
        """
        line = safe_text(text)
        kind = normalize_category(category)
        origin = parse_source(source)
        session, user = clean_session(session), _clean_user(user)
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            item = self._live_or_new(line, kind, origin, session, now(), user)
            event = self._put_items([item], "duplicate" if item.hits else "remember", sync)
            self._after_write()
        self._notify(event)
        return item

    def supersede(
        self,
        item_id: str,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
        user: str | None = None,
    ) -> Item:
        """Replace a live fact by a corrected one; returns the new (live) item.

        The old item stays, retired: ``valid_to`` is set and ``superseded_by``
        names the new item (MEMORY.md moves it to its Superseded section). Both
        changes are one journal record, fsynced before return, so a crash keeps
        both or neither. If a live fact already says ``text``, it is the new item.
        """
        line = safe_text(text)
        origin = parse_source(source)
        session, user = clean_session(session), _clean_user(user)
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            old = self._require(item_id)
            if not old.is_live:
                raise Conflict(f"item {old.id} is already superseded by {old.superseded_by}")
            at = now()
            kind = normalize_category(category) if category else old.category
            new = self._live_or_new(line, kind, origin, session, at, user)
            if new.id == old.id:
                raise InvalidInput(f"the correction says what item {old.id} already says")
            retired = old.evolve(valid_to=at, superseded_by=new.id, updated_at=at)
            event = self._put_items([retired, new], "supersede", True)
            self._after_write()
        self._notify(event)
        return new

    def _put_items(self, items: builtins.list[Item], reason: str, sync: bool) -> WriteEvent:
        payload = {"items": [item.to_dict() for item in items], "reason": reason}
        self._write(OP_PUT, payload, sync=sync)
        live = items[-1]
        ids = tuple(item.id for item in items)
        return WriteEvent("fact", "put", live.text, live.source, "MEMORY.md", live.session, ids)

    def forget(self, item_id: str) -> Item:
        """Delete an item (durable on return); returns what was deleted.

        It stays restorable for ``forgotten_retention_days`` (``forgotten``,
        ``restore``).
        """
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            item = self._require(item_id)
            self._delete([item.id], "forget", sync=True)
            self._after_write()
        self._notify(WriteEvent("fact", "delete", "", item.source, "MEMORY.md", ids=(item.id,)))
        return item

    def forgotten(self, limit: int | None = None) -> builtins.list[Forgotten]:
        """Facts deleted by ``forget`` or by hand that can still be restored, newest first."""
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise InvalidInput(f"limit must be a whole number >= 0, not {limit!r}")
        self._check_open()
        self._refresh()
        with self._state:
            gone = sorted(self._store.forgotten.values(), key=lambda f: (f.at, f.item.id))
        gone.reverse()
        return gone if limit is None else gone[:limit]

    def restore(self, item_id: str) -> Item:
        """Bring a forgotten fact back as it was (journaled, durable on return)."""
        if not isinstance(item_id, str) or not item_id.strip():
            raise InvalidInput("an item id is required")
        wanted = item_id.strip().lstrip("^")
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            entry = self._store.forgotten.get(wanted)
            if entry is None:
                if wanted in self._store.items:
                    raise Conflict(f"item {wanted} is not forgotten")
                raise NotFound(f"no forgotten item with id {item_id!r} (or its retention ended)")
            same = self._store.find_live(entry.item.text, entry.item.user)
            if entry.item.is_live and same is not None:
                raise Conflict(f"a live fact already says this: {same.id}")
            item = entry.item.evolve(updated_at=now())
            event = self._put_items([item], "restore", sync=True)
            self._after_write()
        self._notify(event)
        return item

    def accept_edit(self, stored: str | None = None) -> int:
        """Take in a MEMORY.md that was set aside as damage, as the person saved it.

        ``stored`` names the quarantined file (``list_quarantine``); by default
        the newest MEMORY.md there. Its changes are applied relative to the
        content it started from, without the damage checks; what it deletes
        stays restorable. Returns the number of changes taken in.
        """
        self._check_open()
        entries = [
            e
            for e in list_quarantine(self.workspace.quarantine)
            if e.original == "MEMORY.md" and e.reason.startswith("damaged:")
        ]
        if stored is not None:
            entries = [e for e in entries if e.stored == stored]
        if not entries:
            which = f" named {stored!r}" if stored else ""
            raise NotFound(f"no damaged MEMORY.md{which} in the quarantine")
        data = (self.workspace.quarantine / entries[-1].stored).read_bytes()
        with storage_errors("take the edit in"), self._lock:
            self._catch_up(repair=True)
            plan = self._propose(data, None, check=False)
            self._checkpoint()
        return len(plan.changes) if plan is not None else 0

    # -- capture (issue 4: before the agent answers) ---------------------------

    def observe(
        self,
        text: str,
        *,
        session: str | None = None,
        user: str | None = None,
        source: Source | str = Source.USER,
    ) -> builtins.list[Capture]:
        """Capture what a message states, before the agent answers it.

        The scanner's entries are appended to the session's SESSION-STATE.md;
        names, preferences, reminders and corrections also become long-term
        items (a correction supersedes the fact it corrects, and leaves a
        lesson). Durable on return. With a ``source`` other than ``user``
        nothing is written: the entries come back with ``stored=False``.
        """
        if not isinstance(text, str):
            raise InvalidInput(f"text must be a string, not {type(text).__name__}")
        origin = parse_source(source)
        session, user = clean_session(session), _clean_user(user)
        self._check_open()
        at = now()
        safe = redact(valid_text(text)).text  # the whole text: a cut could split a secret
        head, tail = _scanned(safe)
        if tail or len(head) < len(safe):
            self._notice(
                f"observe: a message of {len(safe)} characters was scanned only in its first "
                f"and last {SCAN_CHARS // 2} characters"
            )
        entries = scan(f"{head}\n\n{tail}" if tail else head, rules=self._rules)
        if origin is not Source.USER or not entries:
            return [Capture(entry.category, _one_line(entry.text), at) for entry in entries]
        events: builtins.list[WriteEvent] = []
        with storage_errors("record the message"), self._lock:
            self._catch_up(repair=True)
            state = _state_entries(entries, at)
            path = self.workspace.session_state(session)
            append_entries(path, state, self.settings.session_state_max_chars)
            where = path.relative_to(self.workspace.path).as_posix()
            content = "".join(entry.render() for entry in state)
            events.append(WriteEvent("capture", "put", content, origin, where, session))
            facts = self._promote(entries, session, user, at, events)
            self._journal.sync()
            self._after_write()
        self._notify(*events)
        return [
            Capture(
                e.category, _one_line(e.text), at, True, *facts.get((e.span, e.category), _NO_FACT)
            )
            for e in entries
        ]

    def _promote(
        self,
        entries: builtins.list[Entry],
        session: str | None,
        user: str | None,
        at: datetime,
        events: builtins.list[WriteEvent],
    ) -> dict[tuple[tuple[int, int], str], tuple[str, str | None]]:
        """Durable facts of a message's entries -> (item id, superseded id) by
        sentence and category."""
        done: dict[tuple[tuple[int, int], str], tuple[str, str | None]] = {}
        for fact in durable_facts(entries, lambda clause: scan(clause, rules=self._rules)):
            line = _one_line(fact.text)[:_MAX_FACT_CHARS]
            item = self._live_or_new(line, fact.category, Source.USER, session, at, user)
            target = None
            if fact.correction and not item.hits:
                target = corrected_item(fact, self._store.items.values(), user)
            if target is None:
                events.append(self._put_items([item], "capture", sync=False))
            else:
                retired = target.evolve(valid_to=at, superseded_by=item.id, updated_at=at)
                events.append(self._put_items([retired, item], "correction", sync=False))
                lesson = correction_lesson(target.text, line, at=at, session=session)
                events.append(self._put_lesson(lesson))
            for category in fact.categories:
                done.setdefault((fact.span, category), (item.id, target.id if target else None))
        return done

    def session_state(self, session: str | None = None) -> builtins.list[StateEntry]:
        """The entries of a session's SESSION-STATE.md, oldest first."""
        self._check_open()
        path = self.workspace.session_state(clean_session(session))
        try:
            return parse_state(path.read_text(encoding="utf-8", errors="replace"))
        except FileNotFoundError:
            return []

    def record_exchange(
        self, user: str, agent: str, *, session: str | None = None, at: datetime | None = None
    ) -> Path:
        """Append one exchange to today's daily note ``memory/YYYY-MM-DD.md``; returns it.

        ``record_turn`` writes the same note (one code path) and the transcript.
        """
        for name, value in (("user", user), ("agent", agent)):
            if not isinstance(value, str):
                raise InvalidInput(f"{name} must be a string, not {type(value).__name__}")
        session = clean_session(session)
        when = now() if at is None else aware(at)
        self._check_open()
        with storage_errors("write the daily note"), self._lock:
            event = self._note(
                redact(valid_text(user)).text, redact(valid_text(agent)).text, session, when
            )
        self._notify(event)
        return self.workspace.path / event.path

    # -- the live window (issue 6) --------------------------------------------

    def window(
        self,
        session: str,
        limit_tokens: int,
        *,
        counter: TokenCounter | None = None,
        settings: WindowSettings | None = None,
    ) -> ContextWindow:
        """A conversation window for ``session`` wired to this memory: exchanges
        go to ``memory/working-buffer.md`` past 50 %; before a compaction the
        user messages about to leave are observed (their durable facts are
        captured first); after it, the next user message gets recovery context:
        the end of the working buffer, the session state and today's notes."""
        name = clean_session(session)
        if name is None:
            raise InvalidInput("a window needs a session")
        self._check_open()

        def flush(dropped: builtins.list[Message]) -> None:
            for message in dropped:
                if message.role == "user" and message.content.strip():
                    self.observe(message.content, session=name)

        return ContextWindow(
            limit_tokens,
            counter=counter or EstimateCounter(),
            settings=settings or WindowSettings(),
            buffer_path=self.workspace.path / "memory" / "working-buffer.md",
            flush=flush,
            # recovery takes at most ~15 % of the window, so it never causes the next compaction
            recovery=lambda: self.recovery_context(
                name, chars=max(limit_tokens * 4 * 15 // 100, 200)
            ),
        )

    # -- lessons --------------------------------------------------------------

    def record_tool_failure(
        self, tool: str, args: Any, error: str | BaseException, *, session: str | None = None
    ) -> Lesson:
        """Keep the lesson of a failed tool call (a repeat is counted, not stored twice)."""
        if not isinstance(tool, str) or not tool.strip():
            raise InvalidInput("tool must be a non-empty string")
        name = clean_text(tool)
        message = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else error
        if not isinstance(message, str):
            raise InvalidInput(f"error must be a string or an exception, not {message!r}")
        lesson = tool_failure_lesson(
            redact(name).text,
            redact(valid_text(describe_args(args))).text,
            redact(valid_text(message)).text,
            at=now(),
            session=clean_session(session),
        )
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            event = self._put_lesson(lesson)
            self._journal.sync()
            self._after_write()
        self._notify(event)
        return self._lessons.lessons[event.ids[0]]

    def _put_lesson(self, lesson: Lesson) -> WriteEvent:
        stored = self._lessons.merge(lesson)
        self._write(OP_LESSON_PUT, {"lessons": [stored.to_dict()]}, sync=False)
        where = "memory/LESSONS.jsonl"
        return WriteEvent(
            "lesson", "put", stored.text, stored.source, where, stored.session, (stored.id,)
        )

    def top_lessons(self, k: int = 5) -> builtins.list[Lesson]:
        """The ``k`` lessons for the prompt: most often seen first, then most recent."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidInput(f"k must be a whole number >= 0, not {k!r}")
        self._check_open()
        self._refresh()
        with self._state:
            return self._lessons.top(k)

    def lessons(self) -> builtins.list[Lesson]:
        """Every lesson, in the order first recorded."""
        self._check_open()
        self._refresh()
        with self._state:
            return builtins.list(self._lessons.lessons.values())

    def forget_lesson(self, lesson_id: str) -> Lesson:
        """Delete a lesson (durable on return); returns what was deleted."""
        self._check_open()
        with storage_errors("write to the journal"), self._lock:
            self._catch_up(repair=True)
            lesson = self._lessons.lessons.get(str(lesson_id).strip())
            if lesson is None:
                raise NotFound(f"no lesson with id {lesson_id!r}")
            self._write(OP_LESSON_DELETE, {"ids": [lesson.id]}, sync=True)
            self._after_write()
        where = "memory/LESSONS.jsonl"
        self._notify(WriteEvent("lesson", "delete", "", lesson.source, where, ids=(lesson.id,)))
        return lesson

    # -- write hooks ------------------------------------------------------------

    def add_write_hook(self, hook: WriteHook) -> None:
        """Call ``hook(event)`` after every durable write of this ``Memory``."""
        if not callable(hook):
            raise InvalidInput("a write hook must be callable")
        self._hooks.append(hook)

    def remove_write_hook(self, hook: WriteHook) -> None:
        """Stop calling ``hook``; ``NotFound`` if it was not added."""
        try:
            self._hooks.remove(hook)
        except ValueError:
            raise NotFound("that write hook was not added") from None

    def compact(self, max_items: int | None = None) -> CompactResult:
        """De-duplicate (newest wins) and keep at most ``max_items`` items, newest first.

        Live items are kept before superseded ones. ``max_items`` defaults to the
        ``max_items`` setting; 0 or None there means no cap (de-duplicate only).
        """
        if max_items is not None and (isinstance(max_items, bool) or max_items < 0):
            raise InvalidInput(f"max_items must be a whole number >= 0, not {max_items!r}")
        cap = self.settings.max_items if max_items is None else max_items
        self._check_open()
        with storage_errors("compact the workspace"), self._lock:
            self._catch_up(repair=True)
            removed = self._compact_locked(cap)
            self._checkpoint()
        return CompactResult(removed=removed, kept=len(self._store.items))

    # -- reads ----------------------------------------------------------------

    def get(self, item_id: str) -> Item:
        """The item with this id; ``NotFound`` if there is none."""
        self._check_open()
        self._refresh()
        with self._state:
            return self._require(item_id)

    def list(
        self,
        *,
        category: str | None = None,
        session: str | None = None,
        source: Source | str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
    ) -> ItemList:
        """Items, newest first, filtered by category, session and source."""
        if limit is not None and (isinstance(limit, bool) or limit < 0):
            raise InvalidInput(f"limit must be a whole number >= 0, not {limit!r}")
        kind = normalize_category(category) if category is not None else None
        origin = parse_source(source) if source is not None else None
        self._check_open()
        self._refresh()

        def accept(item: Item) -> bool:
            return (
                (include_superseded or item.is_live)
                and (kind is None or item.category == kind)
                and (session is None or item.session == session)
                and (origin is None or item.source == origin)
            )

        with self._state:
            return self._store.newest(accept, limit)

    def status(self) -> Status:
        """Counts, journal position and anything open had to report."""
        self._check_open()
        self._refresh()
        with self._state:
            live = sum(1 for item in self._store.items.values() if item.is_live)
            return Status(
                workspace=str(self.workspace.path),
                group=self.workspace.group,
                items=live,
                superseded=len(self._store.items) - live,
                lessons=len(self._lessons.lessons),
                lsn=self._store.lsn,
                journal_records=len(self._journal.records),
                journal_bytes=self._journal.size,
                unsynced=self._journal.unsynced,
                quarantined=len(list_quarantine(self.workspace.quarantine)),
                notices=tuple(self._notices),
            )

    @property
    def notices(self) -> tuple[str, ...]:
        """Problems found and handled since open (quarantined files, torn records...)."""
        return tuple(self._notices)


def _state_entries(entries: builtins.list[Entry], at: datetime) -> builtins.list[StateEntry]:
    """One SESSION-STATE.md line per sentence, naming every category it holds."""
    by_sentence: dict[tuple[int, int], builtins.list[Entry]] = {}
    for entry in entries:
        by_sentence.setdefault(entry.span, []).append(entry)
    return [
        StateEntry(at, ", ".join(e.category for e in group), _one_line(group[0].text))
        for group in by_sentence.values()
    ]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _scanned(text: str) -> tuple[str, str]:
    """What ``observe`` scans of ``text``: all of it (and ``""``), or, when it is
    longer than ``SCAN_CHARS``, its first and last ``SCAN_CHARS // 2``
    characters, each cut at a space or a sentence end (never inside a word;
    a part with no place to cut is left out)."""
    if len(text) <= SCAN_CHARS:
        return text, ""
    half = SCAN_CHARS // 2
    head, tail = text[:half], text[-half:]
    if not (_BOUNDARY.match(text, half) or _BOUNDARY.match(head, half - 1)):
        found = _BOUNDARY.search(head[::-1])
        head = head[: half - found.start()] if found else ""
    start = len(text) - half
    if not (_BOUNDARY.match(text, start - 1) or _BOUNDARY.match(tail)):
        found = _BOUNDARY.search(tail)
        tail = tail[found.start() :] if found else ""
    return head.strip(), tail.strip()


def _clean_user(user: str | None) -> str | None:
    """A user id as stored (the same rules as a session id)."""
    try:
        return clean_session(user)
    except InvalidInput as exc:
        raise InvalidInput(str(exc).replace("session", "user")) from None
