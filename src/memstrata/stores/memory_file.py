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
* The new file goes in by ``Volume.swap``: on disk an atomic exchange of
  names that hands back a save an editor renamed in (or wrote in place into
  the file that lost its name) after the check, as ``Replaced.rescued``, for
  the caller to take in; on a database a compare-and-swap of the row.
* Every content replaced in or taken in is kept in the ``RenderHistory``, the
  merge bases of later saves.
"""

from __future__ import annotations

from ..storage.volume import Swapped, Volume
from .handedit import RenderHistory
from .longterm import Fingerprint

__all__ = ["MemoryFile", "Replaced"]

Replaced = Swapped  # the outcome of ``MemoryFile.replace``


class MemoryFile:
    """MEMORY.md of one workspace (the caller holds the workspace lock)."""

    def __init__(self, volume: Volume, rel: str = "MEMORY.md") -> None:
        self.volume = volume
        self.rel = rel
        self.history = RenderHistory(volume, ".memstrata/rendered/")
        self.known: Fingerprint | None = None
        # Each item's line in the last rendering put in place, with that file's
        # fingerprint: citations read them instead of the file.
        self.lines: tuple[Fingerprint, dict[str, int]] | None = None

    def unchanged(self) -> bool:
        """Whether the file still holds the content the engine last saw."""
        if self.known is None:
            return False
        checked = self.known.check(self.volume, self.rel)
        if checked is not None:
            self.known = checked
        return checked is not None

    def read(self) -> tuple[Fingerprint, bytes] | None:
        """The file's fingerprint and bytes; None when it does not exist."""
        return Fingerprint.read(self.volume, self.rel)

    def replace(
        self, data: bytes, lines: dict[str, int] | None = None, *, keep_durably: bool = False
    ) -> Replaced:
        """Put ``data`` in place unless the file changed since it was ``known``
        (``lines``: each item's line in it, kept as ``lines``; ``keep_durably``:
        its copy in the history is fsynced too)."""
        if self.known is not None and not self.unchanged():
            return Replaced(False)
        expect = self.known.stat if self.known is not None else None
        swapped = self.volume.swap(self.rel, data, expect)
        if swapped.done:
            assert swapped.stat is not None
            self.known = Fingerprint.of(swapped.stat, data)
            self.lines = (self.known, lines) if lines is not None else None
            self.history.add(data, durable=keep_durably)
        return swapped
