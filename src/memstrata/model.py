"""Value types shared by every layer: long-term items, sources, categories.

Values are frozen dataclasses; a change makes a new value (``replace``).
Text rules live here so that every writer (API, CLI, a hand edit of
MEMORY.md) agrees on what one fact is:

* text is valid Unicode: a lone surrogate (``"\\ud800"`` from a JSON escape,
  a byte that is not UTF-8 decoded with ``surrogateescape``) cannot be written
  as UTF-8, so every public call that takes text turns each one into U+FFFD
  where the text enters (``valid_text``; ``clean_text``, ``clean_session`` and
  ``normalize_category`` do it too). Replacing rather than refusing keeps an
  agent running and never loses a captured or recorded message for one bad
  character; a split surrogate pair is joined into its character;
* a fact is one line: line breaks and control characters become spaces,
  and the ends are stripped (``clean_text``);
* two facts are duplicates when their ``normalize_text`` forms are equal
  (Unicode NFKC, case-folded, whitespace collapsed, trailing punctuation and
  surrounding quotes dropped);
* a file a caller gives whole (``Memory.edit_file``, the memory tool's
  ``create``, a core file, a note) is at most ``MAX_DOCUMENT_BYTES`` of UTF-8
  (``check_document``): larger is an ``InvalidInput``, before anything is
  written or journaled;
* a category is a short one-line label; the known ones have a fixed key and
  a display title, so that MEMORY.md section headings map back to the same
  category (``normalize_category``).
"""

from __future__ import annotations

import re
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from .errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

__all__ = [
    "ARCHIVE_TITLE",
    "CATEGORY_TITLES",
    "Capture",
    "CompactResult",
    "DEFAULT_CATEGORY",
    "Embedder",
    "Item",
    "Source",
    "Status",
    "SummarizerLike",
    "category_title",
    "check_document",
    "clean_session",
    "clean_text",
    "clean_user",
    "decoded_text",
    "dedupe_key",
    "new_item_id",
    "normalize_category",
    "normalize_text",
    "now",
    "parse_source",
    "format_time_or_none",
    "parse_time",
    "valid_text",
    "WriteEvent",
]

MAX_TEXT_CHARS = 4000
MAX_DOCUMENT_BYTES = 1024 * 1024
MAX_CATEGORY_CHARS = 64
ID_PATTERN = re.compile(r"m[0-9a-z]{8}")
_ID_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case


class Source(StrEnum):
    """Who a memory came from; decides how far it is trusted."""

    USER = "user"
    AGENT = "agent"
    TOOL = "tool"
    IMPORT = "import"


DEFAULT_CATEGORY = "fact"

# Known categories in the order MEMORY.md shows them: key -> section title.
CATEGORY_TITLES: dict[str, str] = {
    "proper_noun": "Names",
    "preference": "Preferences",
    "decision": "Decisions",
    "fact": "Facts",
    "remember": "Reminders",
    "specific_value": "Dates and values",
    "correction": "Corrections",
    "project": "Projects",
    "lesson": "Lessons",
}
ARCHIVE_TITLE = "Superseded"
_TITLE_TO_KEY = {title.casefold(): key for key, title in CATEGORY_TITLES.items()}
_RESERVED = {ARCHIVE_TITLE.casefold(), "archive"}

# Everything str.splitlines() treats as a line break, plus other C0/C1 controls.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]+")
_SPACES = re.compile(r"\s+")
_HEADING_MARKS = re.compile(r"^[#\s]+|[#\s]+$")
_TRAILING = re.compile(r"[\s.!?;:,…。！？]+$")
_QUOTES = "\"'`«»“”‘’「」"


def now() -> datetime:
    """The current time, timezone-aware UTC (every stored time is UTC)."""
    return datetime.now(UTC)


def aware(at: datetime) -> datetime:
    """``at`` with a time zone (a naive time is the machine's local time)."""
    if not isinstance(at, datetime):
        raise InvalidInput(f"at must be a datetime, not {type(at).__name__}")
    return at if at.tzinfo is not None else at.astimezone()


def valid_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD (a pair is joined):
    text that can always be encoded as UTF-8. The same string when it was."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def decoded_text(data: bytes) -> str:
    """A file's bytes as text, as a file opened in text mode reads them: bytes
    that are not UTF-8 replaced, ``\\r\\n`` and a lone ``\\r`` read as ``\\n``."""
    return data.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")


def plain_line(text: str) -> str:
    """``text`` as one line: each run of control characters (and line or
    paragraph separators) a space, stripped; what every stored fact text is."""
    return _CONTROL.sub(" ", valid_text(text)).strip()


def _one_line(text: str, what: str) -> str:
    if not isinstance(text, str):
        raise InvalidInput(f"{what} must be a string, not {type(text).__name__}")
    line = plain_line(text)
    if not line:
        raise InvalidInput(f"{what} is empty")
    return line


def clean_text(text: str) -> str:
    """Make ``text`` one storable line, or raise ``InvalidInput``."""
    line = _one_line(text, "text")
    if len(line) > MAX_TEXT_CHARS:
        raise InvalidInput(f"text is {len(line)} characters; the limit is {MAX_TEXT_CHARS}")
    return line


def check_document(text: str, what: str) -> None:
    """``InvalidInput`` when ``text`` is more than ``MAX_DOCUMENT_BYTES`` of
    UTF-8 (a lone surrogate counted as its U+FFFD); ``what`` names the file."""
    if len(text) > MAX_DOCUMENT_BYTES:  # at least one byte a character: no need to encode
        size = len(text)
    else:
        size = len(text.encode("utf-8", "surrogatepass"))
    if size > MAX_DOCUMENT_BYTES:
        raise InvalidInput(
            f"{what} would be {size} bytes or more; the limit for a memory file written "
            f"whole is {MAX_DOCUMENT_BYTES} bytes (1 MiB)"
        )


# Bump when normalize_text changes: stored de-duplication keys are then recomputed.
KEY_VERSION = 1


def normalize_text(text: str) -> str:
    """The form two facts are compared in for de-duplication."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    folded = _SPACES.sub(" ", _CONTROL.sub(" ", folded)).strip()
    folded = _TRAILING.sub("", folded).strip(_QUOTES + " ")
    return folded


def dedupe_key(text: str, user: str | None = None) -> str:
    """Two live facts with equal keys are one fact (the same words from the same person)."""
    key = normalize_text(text)
    return key if user is None else f"{key}\x1f{user}"


def parse_source(source: Source | str) -> Source:
    """``source`` as a ``Source``, or ``InvalidInput`` naming the allowed values."""
    try:
        return Source(source)
    except ValueError:
        allowed = ", ".join(member.value for member in Source)
        raise InvalidInput(f"source must be one of {allowed}, not {source!r}") from None


def clean_session(session: str | None) -> str | None:
    """A session id as stored: one line of at most 200 characters, or None."""
    if session is None:
        return None
    value = _one_line(session, "session")
    if len(value) > 200:
        raise InvalidInput("session id is longer than 200 characters")
    return value


def clean_user(user: str | None) -> str | None:
    """A user id as stored (the same rules as a session id)."""
    try:
        return clean_session(user)
    except InvalidInput as exc:
        raise InvalidInput(str(exc).replace("session", "user")) from None


def normalize_category(category: str | None) -> str:
    """Canonical key of a category name or section title."""
    if category is None:
        return DEFAULT_CATEGORY
    if not isinstance(category, str):
        raise InvalidInput(f"category must be a string, not {type(category).__name__}")
    name = _HEADING_MARKS.sub("", _SPACES.sub(" ", _CONTROL.sub(" ", valid_text(category))))
    if not name:
        return DEFAULT_CATEGORY
    if len(name) > MAX_CATEGORY_CHARS:
        raise InvalidInput(f"category is longer than {MAX_CATEGORY_CHARS} characters")
    folded = name.casefold()
    if folded in _RESERVED:
        raise InvalidInput(f"category {name!r} is reserved for superseded items")
    if folded in CATEGORY_TITLES:
        return folded
    return _TITLE_TO_KEY.get(folded, name)


def category_title(category: str) -> str:
    """The MEMORY.md section title of a category key."""
    return CATEGORY_TITLES.get(category, category)


def new_item_id() -> str:
    """A short random id (``m`` + 8 base32 characters, 40 random bits)."""
    bits = int.from_bytes(secrets.token_bytes(5))
    return "m" + "".join(_ID_ALPHABET[(bits >> shift) & 31] for shift in range(35, -1, -5))


@dataclass(frozen=True, slots=True)
class Item:
    """One long-term memory: a fact with a stable id, provenance and validity."""

    id: str
    text: str
    category: str = DEFAULT_CATEGORY
    source: Source = Source.USER
    session: str | None = None
    created_at: datetime = datetime.min.replace(tzinfo=UTC)
    updated_at: datetime = datetime.min.replace(tzinfo=UTC)
    hits: int = 0
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    superseded_by: str | None = None
    user: str | None = None  # who said it, when an agent serves several people

    @property
    def is_live(self) -> bool:
        """True while the item is valid (not superseded or expired)."""
        return self.valid_to is None

    @property
    def key(self) -> str:
        """The de-duplication key: the normalized text, per user when one is set."""
        return dedupe_key(self.text, self.user)

    def evolve(self, **changes: Any) -> Item:
        """A copy with ``changes`` applied."""
        return replace(self, **changes)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (times as ISO 8601 strings; ``user`` only when set)."""
        data = {
            "id": self.id,
            "text": self.text,
            "category": self.category,
            "source": self.source.value,
            "session": self.session,
            "created_at": self.created_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "hits": self.hits,
            "valid_from": format_time_or_none(self.valid_from),
            "valid_to": format_time_or_none(self.valid_to),
            "superseded_by": self.superseded_by,
        }
        if self.user is not None:
            data["user"] = self.user
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Item:
        """Inverse of ``to_dict``; raises ``InvalidInput`` on a malformed record."""
        try:
            # the three times are most often one string: parsed once (a 100k
            # snapshot is read at every open)
            stamp = data["created_at"]
            created = parse_time(stamp)
            updated = data["updated_at"]
            valid_from = data.get("valid_from")
            return cls(
                str(data["id"]),
                str(data["text"]),
                str(data.get("category") or DEFAULT_CATEGORY),
                _SOURCES[data.get("source", "user")],
                data.get("session"),
                created,
                created if updated == stamp else parse_time(updated),
                int(data.get("hits", 0)),
                created if valid_from == stamp else _parse_optional_time(valid_from),
                _parse_optional_time(data.get("valid_to")),
                data.get("superseded_by"),
                data.get("user"),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidInput(f"malformed memory item: {exc!r}") from exc


_SOURCES = {member.value: member for member in Source}


def parse_time(value: Any) -> datetime:
    """An ISO 8601 time as stored; a time without zone is UTC."""
    parsed = datetime.fromisoformat(value)
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def parse_time_or_none(value: Any) -> datetime | None:
    """A stored ISO time, or None where ``value`` is no string or no ISO time."""
    if not isinstance(value, str):
        return None
    try:
        return parse_time(value)
    except ValueError:
        return None


def _parse_optional_time(value: Any) -> datetime | None:
    return None if value is None else parse_time(value)


def format_time_or_none(value: datetime | None) -> str | None:
    """A time as stored (ISO 8601), or None."""
    return None if value is None else value.isoformat()


@dataclass(frozen=True, slots=True)
class Capture:
    """One entry ``Memory.observe`` found: what it became, if anything."""

    category: str
    text: str
    at: datetime
    stored: bool = False  # written to SESSION-STATE.md (only the user's own words are)
    item_id: str | None = None  # the long-term item it became or confirmed
    superseded: str | None = None  # the item a correction closed

    def to_dict(self) -> dict[str, Any]:
        data = {name: getattr(self, name) for name in self.__slots__}
        data["at"] = self.at.isoformat()
        return data


@dataclass(frozen=True, slots=True)
class WriteEvent:
    """What a write hook is told: one durable change to memory."""

    kind: str  # "capture", "fact", "note", "lesson", "turn", "layer" or "document"
    op: str  # "put" or "delete"
    content: str  # the text as written (secrets redacted); "" for a delete
    source: Source
    path: str  # the workspace-relative file the change shows up in
    session: str | None = None
    ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Status:
    """What ``Memory.status()`` reports."""

    workspace: str  # its folder, or its database URL and tenant (``Workspace.where``)
    group: str | None
    items: int
    superseded: int
    lessons: int
    lsn: int
    journal_records: int
    journal_bytes: int
    unsynced: int
    quarantined: int
    notices: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}


@dataclass(frozen=True, slots=True)
class CompactResult:
    """What ``Memory.compact()`` did."""

    removed: int
    kept: int


@runtime_checkable
class Embedder(Protocol):
    """Texts to unit vectors (``memstrata.embed`` states the guarantees): a
    value type here so that settings can hold one (``Memory.open(...,
    embedder=MyEmbedder())``)."""

    name: str
    dim: int

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Float32 ``(len(texts), dim)``, rows L2-normalised, in input order."""
        ...


@runtime_checkable
class SummarizerLike(Protocol):
    """Turns a session's turns into a Markdown summary (``context.summarize``'s
    ``Summarizer``; a value type here so that settings can hold one:
    ``Memory.open(..., summarizer=MySummarizer())``)."""

    name: str

    def summarize(self, turns: Sequence[Any]) -> str: ...
