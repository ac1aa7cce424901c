"""Files cut into chunks a search can return and cite (path and line range).

Which files are searchable, and in which layer (``storage.layers.LAYERS``
owns the table; ``layer_of`` is its, re-exported here):

===================================  ============  ===============================
file                                 layer         one chunk is
===================================  ============  ===============================
MEMORY.md (from the live store)      long_term     one fact (its line, by ``^id``)
memory/YYYY-MM-DD.md                 daily_notes   one ``## [time]`` exchange
summaries/*.md                       daily_notes   a paragraph or bullet
semantic/*.md                        semantic      a bullet or paragraph
notes/{inbox,zettel,maps}/*.md       notebook      a bullet or paragraph
core/*.md, working/*.md              core/working  a bullet or paragraph
SESSION-STATE.md (any session)       session_state one entry line
sessions/*.jsonl, sessions/archive/  transcripts   one message (titled by its speaker's name)
memory/LESSONS.jsonl                 lessons       one lesson
===================================  ============  ===============================

A Markdown paragraph is cut at ``MAX_CHUNK_CHARS``; HTML comments and fenced
code fences themselves are not indexed (the code inside is). A chunk's
``title`` is the heading it sits under.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..model import Item, parse_time_or_none
from ..storage.layers import LAYERS, layer_of
from ..storage.volume import Stat
from ..storage.workspace import Workspace
from .relative_dates import month_of, resolved_dates

__all__ = [
    "MAX_CHUNK_CHARS",
    "Chunk",
    "chunk_file",
    "fact_chunks",
    "layer_of",
    "searchable_files",
]

MAX_CHUNK_CHARS = 1200
_DAILY = re.compile(r"memory/(\d{4}-\d{2}-\d{2})\.md")
_CLOCK = re.compile(r"\[(\d{2}):(\d{2}):(\d{2})\]")
_BULLET = re.compile(r"^\s{0,3}[-*+]\s+(?:\[[ xX]\]\s+)?")
_ID_MARK = re.compile(r"\s+\^m[0-9a-z]{8}\s*$")
# The same mark found in a whole text, from its literal start (the blank
# before it is checked by hand): only blanks, not newlines, after it.
_ID_MARK_IN_TEXT = re.compile(r"\^(m[0-9a-z]{8})[^\S\n]*$", re.MULTILINE)
_T = "transcripts"
_STATE_LINE = re.compile(r"^-\s+\[([^\]]+)\]\s+\*\*([^*]+)\*\*:\s*(.*)$")
_WILD = re.compile(r"[*?\[]")


@dataclass(frozen=True, slots=True)
class Chunk:
    """A searchable piece of a file, with what a hit needs to cite it."""

    path: str  # workspace-relative
    layer: str
    line_start: int  # 1-based, inclusive; 0 for a fact not yet rendered
    line_end: int
    text: str
    title: str = ""
    session: str | None = None
    created_at: datetime | None = None
    source: str = "user"
    ref: str | None = None  # item id, turn id#message, lesson id
    live: bool = True

    @property
    def body(self) -> str:
        """What the embedder reads: the title (context) and the text; a
        transcript message as ``Speaker: text``."""
        if not self.title:
            return self.text
        return (
            f"{self.title}: {self.text}"
            if self.layer == "transcripts"
            else f"{self.title}\n{self.text}"
        )

    @property
    def words(self) -> str:
        """What BM25 reads: ``body``, and for a dated transcript message the
        dates its relative time words name (``relative_dates``: "yesterday"
        said on 8 May 2023 adds "7 May 2023 May 2023") and the month it was
        said in ("May 2023"). Not the embedder's: a static table's mean of
        token rows was diluted by them (docs/search-history.md)."""
        if self.layer == "transcripts" and self.created_at is not None:
            day = self.created_at.date()
            return f"{self.body} ({' '.join([*resolved_dates(self.text, day), month_of(day)])})"
        return self.body


def searchable_files(workspace: Workspace) -> list[tuple[str, Stat]]:
    """Every searchable file of the workspace except MEMORY.md (its facts come
    from the store), with its ``Stat``, in path order: listed through the
    workspace's volume, in the folders the layers' globs name. On a disk a
    symbolic link (to a file or a folder) is not followed: it may point out of
    the workspace."""
    volume = workspace.volume
    found = []
    for root in _scan_roots():
        if _linked(volume.local, root.rstrip("/")):
            continue
        if root.endswith("/"):
            listed = volume.list(root)
        else:
            stat = volume.stat(root)
            listed = [] if stat is None else [(root, stat)]
        found += [
            (rel, stat)
            for rel, stat in listed
            if layer_of(rel) not in (None, "long_term") and not _linked(volume.local, rel)
        ]
    return sorted(found)


@functools.cache
def _scan_roots() -> tuple[str, ...]:
    """Where the searchable layers' files are: the folder each glob starts in
    (``"memory/"``) or the file it names outright (``"SESSION-STATE.md"``);
    what lies in another of these folders is listed with it."""
    roots = set()
    for glob in (glob for layer in LAYERS if layer.name != "long_term" for glob in layer.files):
        parts = glob.split("/")
        fixed = list(itertools.takewhile(lambda part: not _WILD.search(part), parts))
        roots.add(glob if len(fixed) == len(parts) else "".join(f"{part}/" for part in fixed))
    folders = {root for root in roots if root.endswith("/")}
    return tuple(sorted(r for r in roots if not any(r != f and r.startswith(f) for f in folders)))


def _linked(local: Path | None, rel: str) -> bool:
    """Whether ``rel`` is a symbolic link in the folder ``local`` (None: no disk)."""
    return local is not None and os.path.islink(os.path.join(local, rel))


def chunk_file(path: str, data: bytes) -> list[Chunk]:
    """The chunks of file ``path`` (workspace-relative) holding ``data``;
    bytes that are not UTF-8 are replaced."""
    layer = layer_of(path)
    if layer is None:
        return []
    text = data.decode("utf-8", "replace")
    if layer == "transcripts":
        return list(_transcript_chunks(path, text))
    if layer == "lessons":
        return list(_lesson_chunks(path, text))
    if layer == "session_state":
        return list(_state_chunks(path, text))
    day = _DAILY.fullmatch(path)
    return list(_markdown_chunks(path, layer, text, day.group(1) if day else None))


def fact_chunks(items: Iterable[Item], lines: dict[str, int]) -> list[Chunk]:
    """One chunk per long-term item; ``lines`` maps ids to their MEMORY.md line."""
    out = []
    for item in items:
        line = lines.get(item.id, 0)
        out.append(
            Chunk(
                path="MEMORY.md",
                layer="long_term",
                line_start=line,
                line_end=line,
                text=item.text,
                title=item.category,
                session=item.session,
                created_at=item.created_at,
                source=item.source.value,
                ref=item.id,
                live=item.is_live,
            )
        )
    return out


def memory_md_lines(text: str) -> dict[str, int]:
    """Item id -> its 1-based line in MEMORY.md's text (the line's ``_ID_MARK``;
    one scan of the whole text, counting the newlines between marks: a 100k-fact
    file is read on the search after each checkpoint)."""
    lines = {}
    number, seen = 1, 0
    for mark in _ID_MARK_IN_TEXT.finditer(text):
        start = mark.start()
        before = text[start - 1 : start]  # the blank ``_ID_MARK`` wants before the mark
        if before.isspace() and before != "\n":
            number += text.count("\n", seen, start)
            seen = start
            lines[mark.group(1)] = number
    return lines


# -- Markdown ------------------------------------------------------------------------


def _markdown_chunks(path: str, layer: str, text: str, day: str | None) -> Iterator[Chunk]:
    title, when = "", _day_start(day)
    block: list[tuple[int, str]] = []
    in_comment = in_fence = False

    def flush() -> Iterator[Chunk]:
        if block:
            body = "\n".join(line for _, line in block).strip()
            if body:
                yield Chunk(path, layer, block[0][0], block[-1][0], body, title, created_at=when)
            block.clear()

    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.rstrip()
        stripped = line.strip()
        if in_comment:
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
            continue
        if stripped.startswith(("```", "~~~")):
            yield from flush()
            in_fence = not in_fence
            continue
        if not in_fence and stripped.startswith("#"):
            yield from flush()
            title = stripped.lstrip("#").strip()
            if day is not None:
                when = _clock(day, title) or when
            continue
        if not stripped:
            if not in_fence:
                yield from flush()
            continue
        bullet = None if in_fence else _BULLET.match(line)
        if bullet is not None:
            yield from flush()
            line = _ID_MARK.sub("", line[bullet.end() :])
        if sum(len(text) + 1 for _, text in block) + len(line) > MAX_CHUNK_CHARS:
            yield from flush()
        block.append((number, line))
    yield from flush()


def _day_start(day: str | None) -> datetime | None:
    if day is None:
        return None
    try:
        return datetime.fromisoformat(day).replace(tzinfo=UTC)
    except ValueError:
        return None


def _clock(day: str, heading: str) -> datetime | None:
    found = _CLOCK.search(heading)
    if not found:
        return None
    try:
        local = datetime.fromisoformat(f"{day}T{found.group(1)}:{found.group(2)}:{found.group(3)}")
    except ValueError:
        return None
    return local.astimezone(UTC)  # daily notes are written in local time


# -- JSONL ---------------------------------------------------------------------------


def _records(text: str) -> Iterator[tuple[int, dict[str, object]]]:
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield number, record


def _transcript_chunks(path: str, text: str) -> Iterator[Chunk]:
    for number, record in _records(text):
        messages = record.get("messages")
        if record.get("kind") == "meta" or not isinstance(messages, list):
            continue
        meta = record.get("meta") if isinstance(record.get("meta"), dict) else {}
        assert isinstance(meta, dict)
        names = meta.get("speakers") if isinstance(meta.get("speakers"), dict) else {}
        assert isinstance(names, dict)
        raw_session = record.get("session")
        session = raw_session if isinstance(raw_session, str) else None
        when = parse_time_or_none(record.get("created_at"))
        turn_id = str(record.get("id", number))
        for index, message in enumerate(messages):
            if not isinstance(message, dict) or not isinstance(message.get("parts"), list):
                continue
            role = str(message.get("role", ""))
            said, results = [], []
            for part in message["parts"]:
                if not isinstance(part, dict):
                    continue
                if part.get("type") == "text" and part.get("text"):
                    said.append(str(part["text"]))
                elif part.get("type") == "tool_result" and part.get("content") is not None:
                    content = part["content"]
                    results.append(content if isinstance(content, str) else json.dumps(content))
            speaker = str(names.get(role) or "")  # a name the turn's meta gives, if any
            ref = f"{turn_id}#{index}"
            if said:
                body = "\n".join(said)
                source = "agent" if role == "assistant" else "user"
                yield Chunk(
                    path, "transcripts", number, number, body, speaker, session, when, source, ref
                )
            if results:
                body = "\n".join(results)[:MAX_CHUNK_CHARS]
                yield Chunk(
                    path, "transcripts", number, number, body, "", session, when, "tool", ref
                )


def _lesson_chunks(path: str, text: str) -> Iterator[Chunk]:
    for number, record in _records(text):
        wrong, instead = record.get("wrong"), record.get("instead")
        if not isinstance(wrong, str) or not isinstance(instead, str):
            continue
        raw_session = record.get("session")
        yield Chunk(
            path,
            "lessons",
            number,
            number,
            f"{wrong} → {instead}",
            str(record.get("kind", "lesson")),
            raw_session if isinstance(raw_session, str) else None,
            parse_time_or_none(record.get("updated_at")),
            str(record.get("source", "user")),
            str(record.get("id")) if record.get("id") else None,
        )


def _state_chunks(path: str, text: str) -> Iterator[Chunk]:
    for number, line in enumerate(text.split("\n"), start=1):
        found = _STATE_LINE.match(line.strip())
        if found:
            yield Chunk(
                path,
                "session_state",
                number,
                number,
                found.group(3),
                found.group(2),
                created_at=parse_time_or_none(found.group(1)),
            )
