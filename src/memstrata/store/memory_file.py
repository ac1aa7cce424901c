"""MEMORY.md as the engine sees it: what it last took in, and a replace that
never overwrites a person's save.

Invariants:

* ``known`` is the fingerprint of the content the engine last rendered or took
  in (a hand edit applied, or damage set aside). A file that does not match
  it holds something the engine has not seen yet.
* ``replace`` renames a new rendering into place only while the file is still
  ``known``: the check is made right before the rename, with the new bytes
  already fsynced beside it. A file that changed after it was read is never
  overwritten; the caller takes it in first.
* An editor that saves in place (truncate, then write) may still write into
  the file it opened after the rename made it nameless. ``replace`` holds that
  file open across the rename; if it changed after the check, its final bytes
  (once settled) come back as ``Replaced.rescued`` for the caller to take in,
  so that save is not lost either. An editor that saves by its own rename in
  the microseconds between the check and ours is the one case left; its save
  then stays in the editor's buffer only.
* Every content replaced in or taken in is kept in the ``RenderHistory``, the
  merge bases of later saves.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..files import staged_write
from .handedit import SETTLE_SECONDS, RenderHistory, settled
from .longterm import Fingerprint

__all__ = ["MemoryFile", "Replaced"]

# How long a replace waits for an in-place save it interrupted to finish.
_RESCUE_WAIT_SECONDS = 5.0


class _Changed(Exception):
    """The file changed after it was read: the rename must not happen."""


@dataclass(frozen=True, slots=True)
class Replaced:
    """The outcome of ``MemoryFile.replace``."""

    done: bool  # the new content is in place
    rescued: bytes | None = None  # a save that landed in the file it replaced


class MemoryFile:
    """MEMORY.md of one workspace (the caller holds the workspace lock)."""

    def __init__(self, path: Path, history: Path) -> None:
        self.path = path
        self.history = RenderHistory(history)
        self.known: Fingerprint | None = None

    def unchanged(self) -> bool:
        """Whether the file still holds the content the engine last saw."""
        return self.known is not None and self.known.matches(self.path)

    def read(self) -> tuple[Fingerprint, bytes] | None:
        """The file's fingerprint and bytes; None when it does not exist."""
        try:
            return Fingerprint.read(self.path)
        except FileNotFoundError:
            return None

    def replace(self, data: bytes) -> Replaced:
        """Put ``data`` in place unless the file changed since it was ``known``."""
        try:
            old = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            old = None
        try:
            before = os.fstat(old) if old is not None else None
            try:
                with staged_write(self.path, data):
                    if not self._still_known(before):
                        raise _Changed
            except _Changed:
                return Replaced(False)
            self.known = Fingerprint.of(self.path, data)
            self.history.add(data)
            if old is not None and before is not None and _moved(before, os.fstat(old)):
                return Replaced(True, _settled_bytes(old))
            return Replaced(True)
        finally:
            if old is not None:
                os.close(old)

    def _still_known(self, before: os.stat_result | None) -> bool:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return before is None and self.known is None
        if before is None or st.st_ino != before.st_ino or _moved(before, st):
            return False
        return self.known is not None and self.known.matches(self.path)


def _moved(before: os.stat_result, after: os.stat_result) -> bool:
    """Whether a file was written between two stats (not ctime: the rename that
    makes it nameless changes that)."""
    return (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns)


def _settled_bytes(fd: int) -> bytes:
    """The bytes of an open file once its writer has stopped (bounded wait)."""
    deadline = time.monotonic() + _RESCUE_WAIT_SECONDS
    last = os.fstat(fd)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_SECONDS / 5)
        st = os.fstat(fd)
        if not _moved(last, st) and settled(st.st_mtime_ns):
            break
        last = st
    size = os.fstat(fd).st_size
    chunks = []
    offset = 0
    while offset < size:
        chunk = os.pread(fd, min(size - offset, 1 << 20), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)
