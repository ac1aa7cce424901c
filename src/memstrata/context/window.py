"""The live conversation window: Qanot's context management, deterministic.

An agent loop feeds every message through ``ContextWindow.add``; the window
keeps the messages, counts their tokens (``TokenCounter``, the content of
each message) and acts at Qanot's thresholds of ``limit_tokens``:

* **tool results** longer than 8,000 characters are cut on entry to the
  first 70 % and the last 20 % of 8,000 characters, with a marker saying how
  many characters were removed (``truncate_tool_result``);
* at **40 %** old tool results (all but those among the last 4 messages)
  are snipped to a short placeholder (``SNIPPED_TEMPLATE``);
* at **50 %** every completed exchange is also appended, durably, to the
  working buffer ``memory/working-buffer.md`` in the seed's format::

      # Working Buffer (Danger Zone Log)
      **Status:** ACTIVE
      **Started:** 2025-01-15T14:30:00+00:00

      ---

      ## [2025-01-15 14:30:00] Human
      Can you refactor the database module?

      ## [2025-01-15 14:30:00] Agent (summary)
      Refactored the database module to use connection pooling...

* at **60 %**, proactively: when a user message arrives and the tokens now
  plus that message would pass 60 %, the window is compacted before the
  message is added: the first 2 and the last 4 messages stay, the oldest
  messages between them are replaced by one system message carrying the
  seed's marker (``COMPACTION_TEMPLATE``), until the window is at most 35 %
  (or nothing is left between them). ``flush`` receives the messages about
  to leave before any of them leaves;
* **recovery**: the first user message after a compaction, and any user
  message asking where we were (``asks_where_we_were``), get a system
  message with ``recovery()``'s text inserted just before them.

The thresholds read the tokens right after the message is added (before
any snipping). Messages carry no tool-call ids, so the window does not keep
tool calls and their results together when it compacts. Times in the
working buffer are UTC. Nothing here does I/O except the buffer append.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from fractions import Fraction
from typing import Literal

from ..capture.secrets import redact
from ..errors import InvalidInput
from ..model import now, valid_text
from ..storage.files import storage_errors
from ..storage.volume import Volume
from .tokens import ESTIMATE, TokenCounter

__all__ = [
    "BUFFER_AGENT_CHARS",
    "BUFFER_TITLE",
    "BUFFER_USER_CHARS",
    "COMPACTION_TEMPLATE",
    "DEFAULT_SETTINGS",
    "ROLES",
    "SNIPPED_TEMPLATE",
    "TRUNCATION_TEMPLATE",
    "WHERE_WERE_WE",
    "ContextWindow",
    "EventKind",
    "Message",
    "WindowEvent",
    "WindowSettings",
    "asks_where_we_were",
    "buffer_block",
    "buffer_header",
    "compaction_marker",
    "compacted_count",
    "truncate_tool_result",
]

ROLES = ("system", "user", "assistant", "tool")

# The seed's marker, word for word (Qanot, "Proactive Compaction").
COMPACTION_TEMPLATE = (
    "[CONTEXT COMPACTION: {count} earlier messages were removed to free context space.\n"
    "Recent conversation preserved below. Check your workspace files\n"
    "(SESSION-STATE.md, memory/) for any important context from earlier.]"
)
_COMPACTION_RE = re.compile(
    re.escape(COMPACTION_TEMPLATE).replace(re.escape("{count}"), r"(?P<count>\d+)")
)
# The seed asks for "a marker showing how many characters were removed" and
# gives no wording; these are ours.
TRUNCATION_TEMPLATE = "\n\n[... {removed} characters truncated ...]\n\n"
SNIPPED_TEMPLATE = "[old tool result snipped to free context space: {chars} characters]"
_SNIPPED_RE = re.compile(re.escape(SNIPPED_TEMPLATE).replace(re.escape("{chars}"), r"\d+"))

BUFFER = "memory/working-buffer.md"  # in the workspace
BUFFER_TITLE = "# Working Buffer (Danger Zone Log)"
BUFFER_USER_CHARS = 1000
BUFFER_AGENT_CHARS = 300

# Ways of asking "where were we?" (English, Russian, Uzbek), matched on whole
# words of the normalized message (case-folded, ё -> е, apostrophes unified).
WHERE_WERE_WE = (
    "where were we",
    "where did we leave off",
    "where did we stop",
    "what were we doing",
    "what were we talking about",
    "what were we working on",
    "на чем мы остановились",
    "где мы остановились",
    "что мы делали",
    "о чем мы говорили",
    "qayerda qoldik",
    "qayerda qolgan edik",
    "qayerda to'xtadik",
    "qayerda to'xtagan edik",
    "nima qilayotgan edik",
    "nima haqida gaplashayotgan edik",
)
_APOSTROPHES = str.maketrans({"’": "'", "‘": "'", "ʻ": "'", "ʼ": "'", "`": "'", "ё": "е"})
_WHERE_RE = re.compile(
    r"(?<![\w'])(?:" + "|".join(re.escape(p) for p in WHERE_WERE_WE) + r")(?![\w'])"
)

EventKind = Literal["truncated", "snipped", "buffered", "compacted", "recovery"]


@dataclass(frozen=True, slots=True)
class Message:
    """One message of the conversation; ``role`` is one of ``ROLES``."""

    role: str
    content: str
    name: str | None = None

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise InvalidInput(f"message role must be one of {', '.join(ROLES)}, not {self.role!r}")
        if not isinstance(self.content, str):
            raise InvalidInput(f"message content must be text, not {type(self.content).__name__}")


@dataclass(frozen=True, slots=True)
class WindowEvent:
    """Something the window did during one ``add`` (or ``compact``).

    ``count`` is how many: messages truncated (1), tool results snipped,
    buffer entries written, messages dropped by a compaction, recovery
    messages inserted (1). ``tokens_before``/``tokens_after`` are the
    window's tokens around that step; ``detail`` says the rest in words.
    """

    kind: EventKind
    count: int
    tokens_before: int
    tokens_after: int
    detail: str = ""


def _ratio(name: str, value: object) -> Fraction:
    """``value``, a ratio in (0, 1], as the exact decimal it is written as (0.7 is 7/10)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value <= 1:
        raise InvalidInput(f"{name} must be a ratio in (0, 1], not {value!r}")
    return Fraction(str(value))


def _check_count(name: str, value: object, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise InvalidInput(f"{name} must be a whole number >= {minimum}, not {value!r}")


def _cut_ratios(max_chars: object, head: object, tail: object) -> tuple[Fraction, Fraction]:
    """The head and tail ratios of a tool-result cut, checked."""
    _check_count("tool_result_max_chars", max_chars, 1)
    head_ratio = _ratio("truncate_head", head)
    tail_ratio = _ratio("truncate_tail", tail)
    if head_ratio + tail_ratio > 1:
        raise InvalidInput(f"truncate_head + truncate_tail must be at most 1, not {head} + {tail}")
    return head_ratio, tail_ratio


@dataclass(frozen=True, slots=True)
class WindowSettings:
    """Qanot's thresholds (fractions of the window's token limit) and sizes.

    Every ratio is in (0, 1]; ``compact_to < compact_at``;
    ``truncate_head + truncate_tail <= 1``; anything else is ``InvalidInput``.
    """

    snip_tool_results_at: float = 0.40
    working_buffer_at: float = 0.50
    compact_at: float = 0.60
    compact_to: float = 0.35
    keep_first: int = 2
    keep_last: int = 4
    tool_result_max_chars: int = 8000
    truncate_head: float = 0.70
    truncate_tail: float = 0.20

    def __post_init__(self) -> None:
        for name in ("snip_tool_results_at", "working_buffer_at"):
            _ratio(name, getattr(self, name))
        if _ratio("compact_to", self.compact_to) >= _ratio("compact_at", self.compact_at):
            raise InvalidInput(
                f"compact_to ({self.compact_to}) must be below compact_at ({self.compact_at})"
            )
        _check_count("keep_first", self.keep_first, 0)
        _check_count("keep_last", self.keep_last, 0)
        _cut_ratios(self.tool_result_max_chars, self.truncate_head, self.truncate_tail)


DEFAULT_SETTINGS = WindowSettings()


def truncate_tool_result(
    text: str, max_chars: int = 8000, head: float = 0.7, tail: float = 0.2
) -> str:
    """``text`` cut to its head and tail when it is longer than ``max_chars``.

    Over ``max_chars``, the result is the first ``floor(max_chars * head)``
    characters, ``TRUNCATION_TEMPLATE`` with the exact number of characters
    removed, and the last ``floor(max_chars * tail)`` characters (ratios read
    as exact decimals). Text within ``max_chars`` is returned unchanged, and
    so is text the cut would not make shorter (a tiny ``max_chars``).
    """
    head_ratio, tail_ratio = _cut_ratios(max_chars, head, tail)
    if len(text) <= max_chars:
        return text
    keep_head = math.floor(max_chars * head_ratio)
    keep_tail = math.floor(max_chars * tail_ratio)
    removed = len(text) - keep_head - keep_tail
    tail_text = text[len(text) - keep_tail :] if keep_tail else ""
    cut = text[:keep_head] + TRUNCATION_TEMPLATE.format(removed=removed) + tail_text
    return cut if len(cut) < len(text) else text


def compaction_marker(count: int) -> str:
    """The seed's compaction marker for ``count`` removed messages."""
    return COMPACTION_TEMPLATE.format(count=count)


def compacted_count(message: Message) -> int | None:
    """How many messages ``message`` stands for if it is a compaction marker, else None."""
    if message.role != "system":
        return None
    match = _COMPACTION_RE.fullmatch(message.content)
    return int(match["count"]) if match else None


def asks_where_we_were(text: str) -> bool:
    """Whether ``text`` asks where the conversation was ("where were we?", ...)."""
    folded = unicodedata.normalize("NFKC", text).casefold().translate(_APOSTROPHES)
    return _WHERE_RE.search(" ".join(folded.split())) is not None


def _one_line(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: max(limit - 3, 1)].rstrip() + "..."


def buffer_header(at: datetime) -> str:
    """The head of a new working buffer, started at ``at`` (shown in UTC)."""
    started = at.astimezone(UTC).isoformat(timespec="seconds")
    return f"{BUFFER_TITLE}\n**Status:** ACTIVE\n**Started:** {started}\n\n---\n\n"


def buffer_block(speaker: Literal["Human", "Agent (summary)"], text: str, at: datetime) -> str:
    """One working-buffer entry: a user message (``Human``, up to
    ``BUFFER_USER_CHARS``) or a reply (``Agent (summary)``, up to
    ``BUFFER_AGENT_CHARS``), on one line, secrets redacted, shortened with ``...``."""
    limit = BUFFER_USER_CHARS if speaker == "Human" else BUFFER_AGENT_CHARS
    clock = at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")
    safe = redact(valid_text(text)).text  # secrets never reach disk (shortened after)
    return f"## [{clock}] {speaker}\n{_one_line(safe, limit)}\n\n"


class ContextWindow:
    """The messages an agent sends its model, kept under ``limit_tokens``.

    Guarantees (see the module text for the thresholds):

    * a compaction never removes one of the first ``keep_first`` or the last
      ``keep_last`` messages, and ends at most ``compact_to * limit_tokens``
      unless only those and the marker are left;
    * ``flush`` is called with exactly the messages a compaction removes, in
      order, before any is removed; if it raises, the window is unchanged;
    * a working-buffer write that fails raises ``StorageError`` and the
      message is not added;
    * the same inputs (and clock) always give the same window and events.
    """

    def __init__(
        self,
        limit_tokens: int,
        *,
        counter: TokenCounter = ESTIMATE,
        settings: WindowSettings = DEFAULT_SETTINGS,
        buffer: Volume | None = None,
        flush: Callable[[list[Message]], object] | None = None,
        recovery: Callable[[], str] | None = None,
        clock: Callable[[], datetime] = now,
    ) -> None:
        _check_count("limit_tokens", limit_tokens, 1)
        self.limit_tokens = limit_tokens
        self.counter = counter
        self.settings = settings
        self.buffer = buffer  # the working buffer's workspace (BUFFER in it); None: no buffer
        self._flush = flush
        self._recovery = recovery
        self._clock = clock
        self._messages: list[Message] = []
        self._counts: list[int] = []
        self._tokens = 0
        self._events: list[WindowEvent] = []
        self._unbuffered_user: Message | None = None
        self._recover_next = False

    @property
    def messages(self) -> list[Message]:
        """The window's messages, oldest first (a copy)."""
        return list(self._messages)

    @property
    def tokens(self) -> int:
        """The tokens of every message's content, by ``counter``."""
        return self._tokens

    @property
    def ratio(self) -> float:
        """``tokens / limit_tokens``."""
        return self._tokens / self.limit_tokens

    @property
    def events(self) -> list[WindowEvent]:
        """Everything the window did, oldest first (a copy)."""
        return list(self._events)

    def add(self, message: Message) -> list[WindowEvent]:
        """Add ``message`` and apply the thresholds; returns what was done, in order.

        An exception from ``flush``, ``recovery`` or the buffer write stops the
        add there: the message is not added, and the steps already done (a
        compaction, say) stay done and are in ``events``.
        """
        events: list[WindowEvent] = []
        try:
            self._add(message, events)
        finally:
            self._events.extend(events)
        return events

    def _add(self, message: Message, events: list[WindowEvent]) -> None:
        settings = self.settings
        limit = self.limit_tokens
        if message.role == "tool":
            message = self._truncated(message, events)
        size = self.counter.count(message.content)
        if message.role == "user":
            if self._tokens + size > settings.compact_at * limit:
                compacted = self._compact()
                if compacted is not None:
                    events.append(compacted)
            asked = asks_where_we_were(message.content)
            if self._recovery is not None and (self._recover_next or asked):
                events.extend(self._recover("after compaction" if self._recover_next else "asked"))
        after = self._tokens + size
        if message.role == "assistant" and after >= settings.working_buffer_at * limit:
            events.extend(self._buffer(message, after))
        self._append(message, size)
        if message.role == "user":
            self._unbuffered_user = message
        if after >= settings.snip_tool_results_at * limit:
            events.extend(self._snip())

    def compact(self) -> WindowEvent | None:
        """Compact now (to ``compact_to``), whatever the usage; None if nothing could go.

        The next user message gets the recovery text, as after a proactive compaction.
        """
        event = self._compact()
        if event is not None:
            self._events.append(event)
        return event

    # -- steps ---------------------------------------------------------------

    def _append(self, message: Message, size: int) -> None:
        self._messages.append(message)
        self._counts.append(size)
        self._tokens += size

    def _truncated(self, message: Message, events: list[WindowEvent]) -> Message:
        s = self.settings
        text = truncate_tool_result(
            message.content, s.tool_result_max_chars, s.truncate_head, s.truncate_tail
        )
        if text == message.content:
            return message
        before = self.counter.count(message.content)
        after = self.counter.count(text)
        removed = len(message.content) - len(text)
        events.append(
            WindowEvent(
                "truncated",
                1,
                self._tokens + before,
                self._tokens + after,
                f"tool result cut from {len(message.content)} to {len(text)} characters "
                f"({removed} fewer)",
            )
        )
        return replace(message, content=text)

    def _snip(self) -> list[WindowEvent]:
        """Snip tool results outside the last ``keep_last`` messages."""
        before = self._tokens
        snipped = 0
        for index in range(max(0, len(self._messages) - self.settings.keep_last)):
            message = self._messages[index]
            if message.role != "tool" or _SNIPPED_RE.fullmatch(message.content):
                continue
            placeholder = SNIPPED_TEMPLATE.format(chars=len(message.content))
            size = self.counter.count(placeholder)
            if size >= self._counts[index]:
                continue
            self._messages[index] = replace(message, content=placeholder)
            self._tokens += size - self._counts[index]
            self._counts[index] = size
            snipped += 1
        if not snipped:
            return []
        detail = f"{snipped} old tool result{'s' if snipped != 1 else ''} snipped"
        return [WindowEvent("snipped", snipped, before, self._tokens, detail)]

    def _buffer(self, reply: Message, tokens_after: int) -> list[WindowEvent]:
        """Append the completed exchange ending in ``reply`` to the working buffer."""
        if self.buffer is None or not reply.content.strip():
            return []
        at = self._clock()
        blocks = []
        if self._unbuffered_user is not None:
            blocks.append(buffer_block("Human", self._unbuffered_user.content, at))
        blocks.append(buffer_block("Agent (summary)", reply.content, at))
        with storage_errors("append to the working buffer"):
            self.buffer.append(BUFFER, "".join(blocks).encode(), header=buffer_header(at).encode())
        self._unbuffered_user = None
        name = BUFFER.rsplit("/", 1)[-1]
        detail = f"{len(blocks)} entr{'ies' if len(blocks) != 1 else 'y'} appended to {name}"
        return [WindowEvent("buffered", len(blocks), self._tokens, tokens_after, detail)]

    def _plan(self) -> tuple[int, int, int] | None:
        """(start, stop, represented) of the middle run to replace, or None.

        The oldest messages after the first ``keep_first`` go first, until the
        window with the marker fits ``compact_to``; never the last ``keep_last``.
        """
        s = self.settings
        start = min(s.keep_first, len(self._messages))
        end = max(start, len(self._messages) - s.keep_last)
        if end == start:
            return None
        target = s.compact_to * self.limit_tokens
        dropped_tokens = 0
        represented = 0
        after = self._tokens
        stop = start
        while stop < end:
            represented += compacted_count(self._messages[stop]) or 1
            dropped_tokens += self._counts[stop]
            stop += 1
            marker = self.counter.count(compaction_marker(represented))
            after = self._tokens - dropped_tokens + marker
            if after <= target:
                break
        if after >= self._tokens:
            return None
        return start, stop, represented

    def _compact(self) -> WindowEvent | None:
        plan = self._plan()
        if plan is None:
            return None
        start, stop, represented = plan
        dropped = self._messages[start:stop]
        if self._flush is not None:
            self._flush(list(dropped))
        before = self._tokens
        marker = Message("system", compaction_marker(represented))
        size = self.counter.count(marker.content)
        self._messages[start:stop] = [marker]
        self._tokens += size - sum(self._counts[start:stop])
        self._counts[start:stop] = [size]
        self._recover_next = True
        detail = (
            f"{len(dropped)} messages replaced by the compaction marker "
            f"({represented} earlier messages in all)"
        )
        return WindowEvent("compacted", len(dropped), before, self._tokens, detail)

    def _recover(self, why: str) -> list[WindowEvent]:
        assert self._recovery is not None
        text = self._recovery()
        self._recover_next = False
        if not text.strip():
            return []
        before = self._tokens
        self._append(Message("system", text), self.counter.count(text))
        return [WindowEvent("recovery", 1, before, self._tokens, f"recovery context ({why})")]
