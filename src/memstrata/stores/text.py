"""Reading and writing the Markdown files of the layers.

* Files are named by volume path (``storage.volume``: ``"core/SOUL.md"``) and
  read and written only through the workspace's volume.
* ``read_text`` gives a file's text with ``\\r\\n`` read as ``\\n``; a file that
  is not valid UTF-8 raises ``Corrupt`` (so nothing is ever rewritten from a
  lossy decoding), a missing one ``NotFound`` (``read_text_or_none``: None).
* ``write_text`` replaces a file atomically and durably (``Volume.write``) and
  makes it end in a line break. It does not redact: callers redact the text
  they were given (``redacted``) and keep what was already in the file as it was.
* ``headings`` and ``outside_fences`` skip what is inside fenced code blocks.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence

from ..capture.secrets import redact
from ..errors import Corrupt, NotFound
from ..model import clean_text, valid_text
from ..storage.files import storage_errors
from ..storage.volume import Volume

__all__ = [
    "bullet",
    "headings",
    "item_text",
    "outside_fences",
    "read_text",
    "read_text_or_none",
    "redacted",
    "where",
    "write_text",
]

_HEADING = re.compile(r"(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*")
_FENCE = re.compile(r"[ ]{0,3}(`{3,}|~{3,})")
_BULLET = re.compile(r"[-*+][ \t]+(\S.*)")


def read_text(volume: Volume, rel: str, what: str) -> str:
    """The text of ``rel`` (``what`` names it in errors), line breaks as ``\\n``."""
    text = read_text_or_none(volume, rel, what)
    if text is None:
        raise NotFound(f"{what} does not exist ({where(volume, rel)})")
    return text


def read_text_or_none(volume: Volume, rel: str, what: str) -> str | None:
    """``read_text``, but None when there is no such file."""
    with storage_errors(f"read {what}"):
        data = volume.read(rel)
    if data is None:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise Corrupt(
            f"{what} ({where(volume, rel)}) is not valid UTF-8 at byte {exc.start}; "
            "fix or remove that byte, memstrata will not rewrite the file until then"
        ) from None
    return text.replace("\r\n", "\n")


def write_text(volume: Volume, rel: str, text: str, what: str) -> None:
    """Replace ``rel`` with ``text`` (plus a final line break if it has none)."""
    if text and not text.endswith("\n"):
        text += "\n"
    with storage_errors(f"write {what}"):
        volume.write(rel, text.encode("utf-8"))


def where(volume: Volume, rel: str) -> str:
    """Where file ``rel`` is, for messages: its path on disk, else ``rel`` and the volume."""
    local = volume.local
    return str(local / rel) if local is not None else f"{rel} in {volume.where}"


def redacted(text: str) -> str:
    """``text`` with every recognised secret replaced (``capture.secrets.redact``)
    and every lone surrogate (``model.valid_text``)."""
    return redact(valid_text(text)).text


def item_text(text: str) -> str:
    """A new list item: one line, redacted; ``InvalidInput`` when empty or too long."""
    return redacted(clean_text(text))


def bullet(line: str) -> str | None:
    """The text of a top-level bullet line (``- x``, ``* x``, ``+ x``), else None."""
    match = _BULLET.fullmatch(line.rstrip())
    return match.group(1) if match else None


def headings(lines: Sequence[str]) -> Iterator[tuple[int, int, str]]:
    """``(index, level, title)`` of each ATX heading line outside fenced code blocks."""
    for index in outside_fences(lines):
        match = _HEADING.fullmatch(lines[index])
        if match:
            yield index, len(match.group(1)), match.group(2)


def outside_fences(lines: Sequence[str]) -> Iterator[int]:
    """Indexes of the lines that are neither inside nor delimiting a fenced code block.

    A fence that is never closed is read as an ordinary line (not as a block
    running to the end), so a stray ``` cannot hide the headings after it.
    """
    index = 0
    while index < len(lines):
        mark = _FENCE.match(lines[index])
        close = _closing(lines, index, mark.group(1)) if mark else None
        if close is None:
            yield index
            index += 1
        else:
            index = close + 1


def _closing(lines: Sequence[str], start: int, fence: str) -> int | None:
    """The line that closes the fence opened on line ``start``, if any."""
    for index in range(start + 1, len(lines)):
        mark = _FENCE.match(lines[index])
        if mark and mark.group(1)[0] == fence[0] and len(mark.group(1)) >= len(fence):
            return index
    return None
