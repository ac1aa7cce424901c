"""``DictVolume``: a ``storage.volume.Volume`` in a plain dict of bytes.

Written from the Volume's guarantees alone (no files, no code shared with
``DiskVolume``), so that a store that runs on it reads and writes only through
its workspace's volume: one that still opened ``workspace.path / ...`` would
find nothing there. ``local`` is None, as for a database volume.

A file's ``Stat`` is its size, a clock that moves forward at every change,
and an inode number that is new for every replace (``write``, ``rename``,
``swap``) and kept by ``append``. Folders are implicit: a path is refused
(``Conflict``) where a file would have to be a folder too, as on a disk.
"""

from __future__ import annotations

import threading
import time

from memstrata.errors import Conflict, NotFound
from memstrata.storage.volume import Stat, Swapped, clean_prefix, clean_rel

__all__ = ["DictVolume"]


class DictVolume:
    """The files of one workspace, in RAM."""

    def __init__(self, name: str = "dict") -> None:
        self.name = name
        self.files: dict[str, tuple[bytes, Stat]] = {}
        self._lock = threading.Lock()
        self._clock = 0
        self._inodes = 0

    def __repr__(self) -> str:
        return f"DictVolume({self.name!r}, {len(self.files)} files)"

    @property
    def where(self) -> str:
        return f"memory:{self.name}"

    @property
    def local(self) -> None:
        return None

    # -- reads -----------------------------------------------------------------------

    def read(self, rel: str) -> bytes | None:
        with self._lock:
            found = self.files.get(clean_rel(rel))
            return None if found is None else found[0]

    def stat(self, rel: str) -> Stat | None:
        with self._lock:
            found = self.files.get(clean_rel(rel))
            return None if found is None else found[1]

    def list(self, prefix: str = "") -> list[tuple[str, Stat]]:
        clean_prefix(prefix)
        with self._lock:
            return sorted(
                (rel, stat) for rel, (_, stat) in self.files.items() if rel.startswith(prefix)
            )

    # -- writes ----------------------------------------------------------------------

    def write(self, rel: str, data: bytes, *, durable: bool = True) -> None:
        with self._lock:
            self._put(clean_rel(rel), bytes(data), new_inode=True)

    def append(self, rel: str, data: bytes, *, header: bytes = b"") -> None:
        rel = clean_rel(rel)
        with self._lock:
            found = self.files.get(rel)
            old = b"" if found is None else found[0]
            if not old:
                data = header + data
            elif not old.endswith(b"\n"):
                data = b"\n" + data
            self._put(rel, old + bytes(data), new_inode=found is None)

    def create(self, rel: str, data: bytes) -> bool:
        rel = clean_rel(rel)
        with self._lock:
            if rel in self.files:
                return False
            self._put(rel, bytes(data), new_inode=True)
            return True

    def rename(self, src: str, dst: str) -> None:
        src, dst = clean_rel(src), clean_rel(dst)
        with self._lock:
            found = self.files.get(src)
            if found is None:
                raise NotFound(f"no file {src} in {self.where}")
            self._check_place(dst)
            del self.files[src]
            self.files[dst] = found

    def delete(self, rel: str) -> bool:
        with self._lock:
            return self.files.pop(clean_rel(rel), None) is not None

    def swap(self, rel: str, data: bytes, expect: Stat | None) -> Swapped:
        rel = clean_rel(rel)
        with self._lock:
            found = self.files.get(rel)
            if (None if found is None else found[1]) != expect:
                return Swapped(False)
            self._put(rel, bytes(data), new_inode=True)
            return Swapped(True)

    # -- internals -------------------------------------------------------------------

    def _put(self, rel: str, data: bytes, *, new_inode: bool) -> None:
        """Store ``data`` at ``rel`` (lock held) with a fresh ``Stat``."""
        self._check_place(rel)
        found = self.files.get(rel)
        if new_inode or found is None:
            self._inodes += 1
            inode = self._inodes
        else:
            inode = found[1].inode
        self._clock = max(time.time_ns(), self._clock + 1)
        self.files[rel] = (data, Stat(len(data), self._clock, inode))

    def _check_place(self, rel: str) -> None:
        """``Conflict`` where a file would also be a folder (lock held)."""
        parts = rel.split("/")
        for depth in range(1, len(parts)):
            if "/".join(parts[:depth]) in self.files:
                raise Conflict(f"{'/'.join(parts[:depth])} is a file in {self.where}, not a folder")
        if any(other.startswith(rel + "/") for other in self.files):
            raise Conflict(f"{rel} is a folder in {self.where}, not a file")
