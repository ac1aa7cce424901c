"""Self-improvement lessons (MiQi): what went wrong and what to do instead.

A lesson comes from a tool failure or a user's correction. Lessons are
RAM-first like long-term items: every change is a journal record
(``lesson.put`` with the whole lesson, ``lesson.del`` with ids), applied to a
``LessonStore`` in RAM; a checkpoint renders ``memory/LESSONS.jsonl`` (one
lesson per line, oldest first) and appends the records to
``memory/LESSONS_AUDIT.jsonl``.

Both records are idempotent (a put carries the lesson's full state), so the
store needs no position of its own: replaying the journal on top of a
LESSONS.jsonl that is newer than the journal's base gives the same state.

Two lessons are the same when their ``key`` is equal: the tool plus the error
with numbers, quoted values and hex ids blanked, or the normalized text of
what was corrected. A repeated lesson is seen again (``hits`` + 1), not
stored twice.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from ..errors import InvalidInput
from ..model import Source, new_item_id, normalize_text, parse_time
from ..storage.journal import Record

__all__ = [
    "OP_LESSON_DELETE",
    "OP_LESSON_PUT",
    "Lesson",
    "LessonStore",
    "correction_lesson",
    "describe_args",
    "tool_failure_lesson",
]

OP_LESSON_PUT = "lesson.put"
OP_LESSON_DELETE = "lesson.del"
KINDS = ("tool_failure", "correction")
_VARIABLE = re.compile(
    r"0x[0-9a-f]+|\b[0-9a-f]{8,}\b|\d+(?:\.\d+)*|'[^']*'|\"[^\"]*\"|`[^`]*`", re.I
)
_MAX_FIELD = 500


@dataclass(frozen=True, slots=True)
class Lesson:
    """One lesson: ``wrong`` (what happened) and ``instead`` (what to do next time)."""

    id: str
    kind: str
    key: str
    wrong: str
    instead: str
    created_at: datetime
    updated_at: datetime
    tool: str | None = None
    source: Source = Source.AGENT
    session: str | None = None
    hits: int = 1

    @property
    def text(self) -> str:
        """The lesson as one line for a prompt."""
        return f"{self.wrong} -> {self.instead}"

    def seen_again(self, at: datetime, session: str | None) -> Lesson:
        return replace(self, hits=self.hits + 1, updated_at=at, session=session or self.session)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "wrong": self.wrong,
            "instead": self.instead,
            "tool": self.tool,
            "source": self.source.value,
            "session": self.session,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "hits": self.hits,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Lesson:
        """Inverse of ``to_dict``; ``InvalidInput`` on a malformed record."""
        try:
            kind = str(data["kind"])
            if kind not in KINDS:
                raise ValueError(f"unknown lesson kind {kind!r}")
            return cls(
                id=str(data["id"]),
                kind=kind,
                key=str(data["key"]),
                wrong=str(data["wrong"]),
                instead=str(data["instead"]),
                created_at=parse_time(data["created_at"]),
                updated_at=parse_time(data["updated_at"]),
                tool=None if data.get("tool") is None else str(data["tool"]),
                source=Source(data.get("source", "agent")),
                session=data.get("session"),
                hits=int(data.get("hits", 1)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"malformed lesson: {exc!r}") from exc


def _shorten(text: str, limit: int = _MAX_FIELD) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def describe_args(args: Any) -> str:
    """Tool arguments as one line (JSON when they are JSON-like), not shortened:
    redact it first, then ``tool_failure_lesson`` shortens it (a secret cut in
    half would no longer be recognised). Arguments given as a JSON string (as
    OpenAI-style tool calls carry them) are rendered as the JSON they hold, so
    that the redactor sees their keys."""
    if isinstance(args, str) and args.lstrip()[:1] in ("{", "["):
        with contextlib.suppress(ValueError, RecursionError):
            args = json.loads(args)
    try:
        rendered = json.dumps(args, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        rendered = repr(args)
    return " ".join(rendered.split())


def tool_failure_lesson(
    tool: str, args: str, error: str, *, at: datetime, session: str | None
) -> Lesson:
    """The lesson of a failed tool call (``args`` from ``describe_args``; the
    texts must already be free of secrets)."""
    first_line = next((line for line in error.splitlines() if line.strip()), "").strip()
    if not first_line:
        raise InvalidInput("the error of a tool failure is empty")
    error_line = _shorten(first_line, 300)
    return Lesson(
        id="",
        kind="tool_failure",
        key=f"tool:{tool}:{normalize_text(_VARIABLE.sub('#', error_line))}",
        wrong=f"{tool}({_shorten(args, 160)}) failed: {error_line}",
        instead=f"check the arguments and preconditions of {tool} before calling it again",
        created_at=at,
        updated_at=at,
        tool=tool,
        source=Source.TOOL,
        session=session,
    )


def correction_lesson(wrong: str, correction: str, *, at: datetime, session: str | None) -> Lesson:
    """The lesson of a user's correction: ``wrong`` was believed, ``correction`` holds."""
    return Lesson(
        id="",
        kind="correction",
        key=f"correction:{normalize_text(wrong)}",
        wrong=f"believed: {_shorten(wrong)}",
        instead=f"the user corrected it: {_shorten(correction)}",
        created_at=at,
        updated_at=at,
        source=Source.USER,
        session=session,
    )


class LessonStore:
    """Lessons in RAM, by id, in the order they were first recorded."""

    def __init__(self) -> None:
        self.lessons: dict[str, Lesson] = {}
        self._by_key: dict[str, str] = {}

    def reset(self, lessons: Iterable[Lesson]) -> None:
        self.lessons = {}
        self._by_key = {}
        for lesson in lessons:
            self._put(lesson)

    def apply(self, record: Record) -> None:
        """Apply a ``lesson.*`` journal record; other records are not ours."""
        if record.op == OP_LESSON_PUT:
            for data in record.data["lessons"]:
                self._put(Lesson.from_dict(data))
        elif record.op == OP_LESSON_DELETE:
            for lesson_id in record.data["ids"]:
                old = self.lessons.pop(lesson_id, None)
                if old is not None and self._by_key.get(old.key) == lesson_id:
                    del self._by_key[old.key]

    def _put(self, lesson: Lesson) -> None:
        old = self.lessons.get(lesson.id)
        if old is not None and self._by_key.get(old.key) == lesson.id:
            del self._by_key[old.key]
        self.lessons[lesson.id] = lesson
        self._by_key[lesson.key] = lesson.id

    def merge(self, lesson: Lesson) -> Lesson:
        """``lesson`` as it should be stored: the known one seen again, or new with an id."""
        known = self._by_key.get(lesson.key)
        if known is not None:
            return self.lessons[known].seen_again(lesson.updated_at, lesson.session)
        while True:
            lesson_id = "l" + new_item_id()[1:]
            if lesson_id not in self.lessons:
                return replace(lesson, id=lesson_id)

    def top(self, k: int) -> list[Lesson]:
        """The ``k`` lessons to show first: most often seen, then most recent."""
        ranked = sorted(
            self.lessons.values(),
            key=lambda lesson: (lesson.hits, lesson.updated_at, lesson.id),
            reverse=True,
        )
        return ranked[:k]

    def render(self) -> bytes:
        lines = [
            json.dumps(lesson.to_dict(), ensure_ascii=False, separators=(",", ":")) + "\n"
            for lesson in self.lessons.values()
        ]
        return "".join(lines).encode()

    @staticmethod
    def parse(data: bytes) -> tuple[list[Lesson], list[tuple[int, bytes, str]]]:
        """Lessons of a LESSONS.jsonl, and the (line number, bytes, reason) of bad lines."""
        lessons, bad = [], []
        for number, raw in enumerate(data.splitlines(keepends=True), 1):
            if not raw.strip():
                continue
            try:
                lessons.append(Lesson.from_dict(json.loads(raw.decode("utf-8"))))
            except (UnicodeDecodeError, ValueError, InvalidInput) as exc:
                bad.append((number, raw, f"line {number}: {exc}"))
        return lessons, bad
