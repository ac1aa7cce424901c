"""Capture, a part of ``Memory``: ``observe`` (before the agent answers), the
session state, daily-note exchanges, and lessons (``memory.lessons``).

* **Only the user's own words are captured.** ``observe`` with a source other
  than ``user`` (a tool result, a retrieved document, the agent) reports what
  it found and writes nothing.
* **Capture takes bounded time.** ``observe`` scans at most ``SCAN_CHARS``
  characters of a message: a longer one is scanned in its first and last
  ``SCAN_CHARS // 2`` (cut between words; the middle is not scanned), and a
  notice says so. Only what the scan finds is written; the message itself is
  not (``record_turn`` keeps a whole turn).
* **Secrets never reach disk**: every text is redacted before it is written.
* **Durable on return**: the session state, the facts and lessons a message
  held are fsynced before ``observe`` returns.
"""

from __future__ import annotations

import builtins
import re
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..capture.secrets import redact
from ..errors import InvalidInput, NotFound
from ..model import (
    Capture,
    Source,
    WriteEvent,
    aware,
    clean_session,
    clean_text,
    clean_user,
    decoded_text,
    dedupe_key,
    now,
    parse_source,
    plain_line,
    valid_text,
)
from ..storage.files import storage_errors
from ..stores.lessons import (
    OP_LESSON_DELETE,
    Lesson,
    correction_lesson,
    describe_args,
    tool_failure_lesson,
)
from ..stores.protocol import retired_keys
from ..stores.session_state import StateEntry, append_entries, parse_state
from .engine import Engine

if TYPE_CHECKING:
    from ..capture.scan import Entry

__all__ = ["SCAN_CHARS", "Capture", "Lessons", "Observer"]

_MAX_FACT_CHARS = 4000
SCAN_CHARS = 64 * 1024  # of one message, scanned by observe (see the module)
_BOUNDARY = re.compile(r"[\s。！？]")
_NO_FACT: tuple[None, None] = (None, None)


class Observer:
    """What the user says, captured before the agent answers."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

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
        Empty (or whitespace-only) text is ``InvalidInput``, as for ``remember``.
        """
        return self._observe(text, session, user, source, again=False)

    def recapture(self, text: str, *, session: str | None = None) -> builtins.list[Capture]:
        """``observe`` of a user message seen before (the live window's flush of
        the messages a compaction is about to drop): a fact that any item says,
        live, superseded or forgotten, is not written again -- a corrected or
        forgotten fact never comes back to life -- and a session-state line
        already there is not appended twice. A fact no item says is captured."""
        return self._observe(text, session, None, Source.USER, again=True)

    def _observe(
        self,
        text: str,
        session: str | None,
        user: str | None,
        source: Source | str,
        *,
        again: bool,
    ) -> builtins.list[Capture]:
        if not isinstance(text, str):
            raise InvalidInput(f"text must be a string, not {type(text).__name__}")
        if not plain_line(text):
            raise InvalidInput("text is empty")  # as ``remember`` says it
        origin = parse_source(source)
        session, user = clean_session(session), clean_user(user)
        self.engine.check_open()
        at = now()
        safe = redact(valid_text(text)).text  # the whole text: a cut could split a secret
        head, tail = _scanned(safe)
        if tail or len(head) < len(safe):
            self.engine.notice(
                f"observe: a message of {len(safe)} characters was scanned only in its first "
                f"and last {SCAN_CHARS // 2} characters"
            )
        from ..capture.scan import scan  # the rules: not imported by a process that only reads

        entries = scan(f"{head}\n\n{tail}" if tail else head, rules=self.engine.rules)
        if origin is not Source.USER or not entries:
            return [Capture(entry.category, _one_line(entry.text), at) for entry in entries]
        events: builtins.list[WriteEvent] = []
        with self.engine.transaction("record the message", catch_up=True):
            where = self.engine.workspace.session_state_rel(session)
            state = _state_entries(entries, at)
            if again:
                state = self._unseen(where, state)
            if state:
                limit = self.engine.settings.session_state_max_chars
                append_entries(self.engine.workspace.volume, where, state, limit)
                content = "".join(entry.render() for entry in state)
                events.append(WriteEvent("capture", "put", content, origin, where, session))
            facts = self._promote(entries, session, user, at, events, again)
            self.engine.journal.sync()
            self.engine.after_write()
        self.engine.events.notify(*events)
        return [
            Capture(
                e.category, _one_line(e.text), at, True, *facts.get((e.span, e.category), _NO_FACT)
            )
            for e in entries
        ]

    def _unseen(self, rel: str, state: builtins.list[StateEntry]) -> builtins.list[StateEntry]:
        """The entries of ``state`` the session state file ``rel`` does not hold yet."""
        with storage_errors("read the session state"):
            data = self.engine.workspace.volume.read(rel)
        known = (
            set()
            if data is None
            else {(e.category, e.text) for e in parse_state(decoded_text(data))}
        )
        return [entry for entry in state if (entry.category, entry.text) not in known]

    def _promote(
        self,
        entries: builtins.list[Entry],
        session: str | None,
        user: str | None,
        at: datetime,
        events: builtins.list[WriteEvent],
        again: bool = False,
    ) -> dict[tuple[tuple[int, int], str], tuple[str, str | None]]:
        """Durable facts of a message's entries -> (item id, superseded id) by
        sentence and category (``again``: see ``recapture``)."""
        from ..capture.promote import corrected_item, durable_facts
        from ..capture.scan import scan

        done: dict[tuple[tuple[int, int], str], tuple[str, str | None]] = {}
        said_before = retired_keys(self.engine.store) if again else set()
        for fact in durable_facts(entries, lambda clause: scan(clause, rules=self.engine.rules)):
            line = _one_line(fact.text)[:_MAX_FACT_CHARS]
            if again and (
                dedupe_key(line, user) in said_before or self.engine.store.find_live(line, user)
            ):
                continue  # said before: live, or corrected or forgotten since
            item = self.engine.live_or_new(line, fact.category, Source.USER, session, at, user)
            target = None
            if fact.correction and not item.hits:
                target = corrected_item(fact, self.engine.store.items.values(), user)
            if target is None:
                events.append(self.engine.put_items([item], "capture", sync=False))
            else:
                retired = target.evolve(valid_to=at, superseded_by=item.id, updated_at=at)
                events.append(self.engine.put_items([retired, item], "correction", sync=False))
                lesson = correction_lesson(target.text, line, at=at, session=session)
                events.append(self.engine.put_lesson(lesson))
            for category in fact.categories:
                done.setdefault((fact.span, category), (item.id, target.id if target else None))
        return done

    def session_state(self, session: str | None = None) -> builtins.list[StateEntry]:
        """The entries of a session's SESSION-STATE.md, oldest first."""
        self.engine.check_open()
        rel = self.engine.workspace.session_state_rel(clean_session(session))
        with storage_errors("read the session state"):
            data = self.engine.workspace.volume.read(rel)
        return [] if data is None else parse_state(data.decode("utf-8", errors="replace"))

    def record_exchange(
        self, user: str, agent: str, *, session: str | None = None, at: datetime | None = None
    ) -> Path:
        """Append one exchange to today's daily note ``memory/YYYY-MM-DD.md``; returns
        its file (``Workspace.file``: on a database, that path itself).

        ``record_turn`` writes the same note (one code path) and the transcript.
        """
        for name, value in (("user", user), ("agent", agent)):
            if not isinstance(value, str):
                raise InvalidInput(f"{name} must be a string, not {type(value).__name__}")
        session = clean_session(session)
        when = now() if at is None else aware(at)
        with self.engine.transaction("write the daily note"):
            said, answered = redact(valid_text(user)).text, redact(valid_text(agent)).text
            (event,) = self.engine.note_exchanges([(said, answered, session, when)])
        self.engine.events.notify(event)
        return self.engine.workspace.file(event.path)

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
        with self.engine.transaction("write to the journal", catch_up=True):
            event = self.engine.put_lesson(lesson)
            self.engine.journal.sync()
            self.engine.after_write()
        self.engine.events.notify(event)
        return self.engine.lessons.lessons[event.ids[0]]


class Lessons:
    """Lessons from tool failures and corrections (``memory.lessons``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def top(self, k: int = 5) -> builtins.list[Lesson]:
        """The ``k`` lessons for the prompt: most often seen first, then most recent."""
        if isinstance(k, bool) or not isinstance(k, int) or k < 0:
            raise InvalidInput(f"k must be a whole number >= 0, not {k!r}")
        self.engine.check_open()
        self.engine.refresh()
        with self.engine.state:
            return self.engine.lessons.top(k)

    def list(self) -> builtins.list[Lesson]:
        """Every lesson, in the order first recorded."""
        self.engine.check_open()
        self.engine.refresh()
        with self.engine.state:
            return builtins.list(self.engine.lessons.lessons.values())

    def forget(self, lesson_id: str) -> Lesson:
        """Delete a lesson (durable on return); returns what was deleted."""
        with self.engine.transaction("write to the journal", catch_up=True):
            lesson = self.engine.lessons.lessons.get(str(lesson_id).strip())
            if lesson is None:
                raise NotFound(f"no lesson with id {lesson_id!r}")
            self.engine.write(OP_LESSON_DELETE, {"ids": [lesson.id]}, sync=True)
            self.engine.after_write()
        where = "memory/LESSONS.jsonl"
        self.engine.events.notify(
            WriteEvent("lesson", "delete", "", lesson.source, where, ids=(lesson.id,))
        )
        return lesson


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
