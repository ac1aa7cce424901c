"""MEMORY.md as the engine sees it: what it last took in, and a replace that
never overwrites a person's save.

Invariants:

* ``known`` is the fingerprint of the content the engine last rendered or took
  in (a hand edit applied, or damage set aside). A file that does not match
  it holds something the engine has not seen yet.
* ``replace`` puts a new rendering in place only while the file is still
  ``known``: the check is made right before, with the new bytes already
  fsynced beside it. A file that changed after it was read is never
  overwritten; the caller takes it in first.
* The new file goes in by an atomic exchange of the two names
  (``files.exchange``), so whatever stood at MEMORY.md at that instant is
  still at hand afterwards: if an editor renamed its save in after the check,
  that save comes back as ``Replaced.rescued`` for the caller to take in.
  (Where the system has no exchange, a plain rename is used and a save
  landing in the microseconds between check and rename is the one case left.)
* An editor that saves in place (truncate, then write) may still write into
  the file it opened after the new one took its name. ``replace`` holds that
  file open across the switch; if it changed after the check, its final bytes
  (once settled) come back as ``Replaced.rescued`` too.
* Every content replaced in or taken in is kept in the ``RenderHistory``, the
  merge bases of later saves.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from ..storage.files import exchange, fsync_dir, stage
from .handedit import SETTLE_SECONDS, RenderHistory, settled
from .longterm import Fingerprint

__all__ = ["MemoryFile", "Replaced"]

# How long a replace waits for an in-place save it interrupted to finish.
_RESCUE_WAIT_SECONDS = 5.0


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
        if self.known is None:
            return False
        checked = self.known.check(self.path)
        if checked is not None:
            self.known = checked
        return checked is not None

    def read(self) -> tuple[Fingerprint, bytes] | None:
        """The file's fingerprint and bytes; None when it does not exist."""
        try:
            return Fingerprint.read(self.path)
        except FileNotFoundError:
            return None

    def replace(self, data: bytes) -> Replaced:
        """Put ``data`` in place unless the file changed since it was ``known``."""
        temp = stage(self.path, data)
        try:
            old = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            old = None
        try:
            before = os.fstat(old) if old is not None else None
            if not self._still_known(before):
                return Replaced(False)
            # Fingerprinted before the switch: an editor truncating the file the
            # instant after must not be taken for this rendering.
            staged = Fingerprint.of(temp, data)
            displaced = self._switch(temp, before)
            if displaced is False:
                return Replaced(False)
            fsync_dir(self.path.parent)
            self.known = staged
            self.history.add(data)
            if isinstance(displaced, bytes):  # a save renamed in after the check
                return Replaced(True, displaced)
            if old is not None and before is not None and _moved(before, os.fstat(old)):
                return Replaced(True, _settled_bytes(old))
            return Replaced(True)
        finally:
            if old is not None:
                os.close(old)
            temp.unlink(missing_ok=True)

    def _switch(self, temp: Path, before: os.stat_result | None) -> bytes | bool:
        """Give ``temp``'s file the name; True when done, the bytes of a file other
        than ``before`` that stood there (a save that came in after the check),
        False when a file appeared where there was none (not overwritten)."""
        if before is not None:
            try:
                swapped = exchange(temp, self.path)
            except FileNotFoundError:
                swapped, before = False, None  # deleted after the check: create it
            if swapped and before is not None:
                if os.stat(temp).st_ino == before.st_ino:
                    return True
                return temp.read_bytes()
            if before is not None:
                os.replace(temp, self.path)
                return True
        try:
            os.link(temp, self.path)  # never over a file that appeared meanwhile
        except FileExistsError:
            return False
        return True

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
