"""The bytes of one workspace by relative path: the ``Volume`` seam.

Every store reads and writes a workspace's files through its volume
(``Workspace.volume``), naming them by relative POSIX path
(``"memory/2026-11-24.md"``). ``DiskVolume`` is a folder (the embedded
default, and what ``export`` writes); ``postgres.volume.PostgresVolume``
keeps each file as rows of one tenant. What every volume guarantees
(``tests/contracts/test_volume_contract.py`` runs it on each):

* ``read`` gives the whole file or None when there is none (a folder where
  a file belongs is an error, never "no file"); ``tail(rel, size)`` its end:
  at least its last ``size`` bytes (all of them when it is shorter), and
  whether that is the whole file.
* ``write`` replaces a file atomically (a reader sees the old bytes or the
  new, never a mix), durably on return unless ``durable=False``; folders are
  implicit (a file's parents exist as soon as it does).
* ``append`` is durable on return. On a file that does not end in a line
  break (a writer died mid-line) a line break comes first, so what is
  appended starts a line of its own; a new or empty file gets ``header``
  first.
* ``create`` writes only when there is no file (never overwrites; anything
  standing at the path counts, a folder or a dangling symlink too), durably on
  return, and says whether it did; ``rename`` replaces ``dst`` atomically;
  ``delete`` says whether there was a file.
* ``stat`` gives ``(size, mtime_ns, inode)``; every write changes at least
  one of them (a replace gives a new inode: a ``Stat`` equal to an earlier
  one means the same bytes, short of a same-size write within the clock's
  resolution, which readers of MEMORY.md check by hash).
* ``swap(rel, data, expect)`` replaces a file only while its ``stat`` is
  still ``expect`` (None: only while there is no file), and hands back the
  bytes of a save that raced it (``Swapped.rescued``) rather than lose them.
* ``list(prefix)`` gives every file under a folder prefix (``""``: all,
  ``"memory/"``: that folder), recursively, sorted by path, temporary files
  of writers in flight excluded.
* Paths are checked by ``clean_rel``: relative, ``/``-separated, no ``.`` or
  ``..`` part, no NUL; anything else is ``InvalidInput``.
* ``DiskVolume`` raises ``OSError`` (callers wrap ``storage_errors`` to say
  what they were doing); other volumes raise ``memstrata.errors`` classes.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..errors import InvalidInput
from .files import (
    TEMP_MARK,
    append_durable,
    atomic_write,
    create_new,
    exchange,
    fsync_dir,
    last_json_object,
    last_jsonl_record,
    stage,
)

__all__ = [
    "SETTLE_SECONDS",
    "TAIL_BYTES",
    "DiskVolume",
    "Stat",
    "Swapped",
    "Volume",
    "clean_prefix",
    "clean_rel",
    "cut_torn_tail",
    "last_record",
    "settled",
    "settled_bytes",
]


# How much of a log's end ``last_record`` reads first.
TAIL_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class Stat:
    """What identifies one version of a file without reading it."""

    size: int
    mtime_ns: int
    inode: int


@dataclass(frozen=True, slots=True)
class Swapped:
    """The outcome of ``Volume.swap``."""

    done: bool  # the new bytes are in place
    rescued: bytes | None = None  # a save that landed in what was replaced
    stat: Stat | None = None  # of the new bytes as put in place (when done)


@runtime_checkable
class Volume(Protocol):
    """The files of one workspace."""

    @property
    def where(self) -> str:
        """Where the files are, for messages (a folder, or a URL and tenant)."""
        ...

    @property
    def local(self) -> Path | None:
        """The folder when the files are on this machine's disk, else None."""
        ...

    def read(self, rel: str) -> bytes | None: ...

    def tail(self, rel: str, size: int) -> tuple[bytes, bool] | None: ...

    def stat(self, rel: str) -> Stat | None: ...

    def write(self, rel: str, data: bytes, *, durable: bool = True) -> None: ...

    def append(self, rel: str, data: bytes, *, header: bytes = b"") -> None: ...

    def create(self, rel: str, data: bytes) -> bool: ...

    def rename(self, src: str, dst: str) -> None: ...

    def delete(self, rel: str) -> bool: ...

    def swap(self, rel: str, data: bytes, expect: Stat | None) -> Swapped: ...

    def list(self, prefix: str = "") -> list[tuple[str, Stat]]: ...


def last_record(
    volume: Volume, rel: str, on_torn: Callable[[bytes], object]
) -> dict[str, Any] | None:
    """The last JSON object line of the JSONL file ``rel`` (None: none). Only
    the file's end is read (``tail``, a larger end while no complete line in
    it is an object); a torn last line (a writer died mid-append) is handed
    to ``on_torn`` and cut off."""
    local = volume.local
    if local is not None:  # its end, a torn tail truncated in place
        last = last_jsonl_record(local / clean_rel(rel), on_torn)
        if last is not None:
            return last  # else: the last lines are no objects; look further back
    size = TAIL_BYTES
    while True:
        found = volume.tail(rel, size)
        if found is None:
            return None
        data, whole = found
        if data and not data.endswith(b"\n"):  # torn: cut where a whole read sees it
            return last_json_object(cut_torn_tail(volume, rel, on_torn))
        record = last_json_object(data if whole else data[data.find(b"\n") + 1 :])
        if record is not None or whole:
            return record
        size *= 8


def cut_torn_tail(volume: Volume, rel: str, on_torn: Callable[[bytes], object]) -> bytes:
    """The bytes of file ``rel`` without a torn last line (no line break: a
    writer died mid-append), which is handed to ``on_torn`` and cut off (the
    file rewritten without it), so it is never parsed as a record."""
    data = volume.read(rel) or b""
    end = data.rfind(b"\n") + 1
    if end < len(data):
        on_torn(data[end:])
        data = data[:end]
        volume.write(rel, data)
    return data


def clean_rel(rel: str) -> str:
    """``rel`` checked as a volume path (see the module's rules)."""
    if not isinstance(rel, str) or not rel or "\x00" in rel or "\\" in rel:
        raise InvalidInput(f"not a workspace path: {rel!r}")
    parts = rel.split("/")
    if rel.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise InvalidInput(f"not a workspace path: {rel!r}")
    return rel


def clean_prefix(prefix: str) -> str:
    """A ``list`` prefix: ``""`` or a folder path ending in ``/``."""
    if prefix == "":
        return prefix
    if not prefix.endswith("/"):
        raise InvalidInput(f"a folder prefix ends in '/': {prefix!r}")
    clean_rel(prefix[:-1])
    return prefix


class DiskVolume:
    """A workspace folder on this machine."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __repr__(self) -> str:
        return f"DiskVolume({str(self.root)!r})"

    @property
    def where(self) -> str:
        return str(self.root)

    @property
    def local(self) -> Path:
        return self.root

    def path(self, rel: str) -> Path:
        return self.root / clean_rel(rel)

    def read(self, rel: str) -> bytes | None:
        try:
            return self.path(rel).read_bytes()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def tail(self, rel: str, size: int) -> tuple[bytes, bool] | None:
        try:
            with open(self.path(rel), "rb") as handle:
                start = max(handle.seek(0, os.SEEK_END) - max(size, 0), 0)
                handle.seek(start)
                return handle.read(), start == 0
        except (FileNotFoundError, NotADirectoryError):
            return None

    def stat(self, rel: str) -> Stat | None:
        try:
            st = os.stat(self.path(rel))
        except (FileNotFoundError, NotADirectoryError):
            return None
        if stat.S_ISDIR(st.st_mode):  # where a file belongs: an error, never "missing"
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(self.path(rel)))
        return Stat(st.st_size, st.st_mtime_ns, st.st_ino)

    def write(self, rel: str, data: bytes, *, durable: bool = True) -> None:
        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, data, durable=durable)

    def append(self, rel: str, data: bytes, *, header: bytes = b"") -> None:
        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        append_durable(path, data, header=header)

    def create(self, rel: str, data: bytes) -> bool:
        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        return create_new(path, data)

    def rename(self, src: str, dst: str) -> None:
        target = self.path(dst)
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.path(src), target)
        fsync_dir(target.parent)

    def delete(self, rel: str) -> bool:
        path = self.path(rel)
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        fsync_dir(path.parent)
        return True

    def swap(self, rel: str, data: bytes, expect: Stat | None) -> Swapped:
        """Replace by an atomic exchange of names (``files.exchange``), so that
        whatever stood at ``rel`` at that instant is still at hand: a save an
        editor renamed in after the check comes back as ``rescued``; so does
        what an editor saving in place (truncate, write) wrote into the file
        after it lost its name, once that file has settled (``settled``)."""
        path = self.path(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = stage(path, data)
        try:
            try:
                old = os.open(path, os.O_RDONLY)
            except FileNotFoundError:
                old = None
            try:
                before = os.fstat(old) if old is not None else None
                if _stat_of(before) != expect or _stat_of(_stat_or_none(path)) != expect:
                    return Swapped(False)
                # Taken before the switch: an editor truncating the file the
                # instant after must not be taken for these bytes.
                staged = _stat_of(os.stat(temp))
                displaced = _switch(temp, path, before)
                if displaced is False:
                    return Swapped(False)
                fsync_dir(path.parent)
                if isinstance(displaced, bytes):  # a save renamed in after the check
                    return Swapped(True, displaced, staged)
                if old is not None and before is not None:
                    after = os.fstat(old)
                    if (before.st_size, before.st_mtime_ns) != (after.st_size, after.st_mtime_ns):
                        return Swapped(True, settled_bytes(old), staged)
                return Swapped(True, None, staged)
            finally:
                if old is not None:
                    os.close(old)
        finally:
            temp.unlink(missing_ok=True)

    def list(self, prefix: str = "") -> list[tuple[str, Stat]]:
        base = self.root / clean_prefix(prefix) if prefix else self.root
        found = [
            (path.relative_to(self.root).as_posix(), stat)
            for path, stat in _walk(base)
            if TEMP_MARK not in path.name
        ]
        return sorted(found)


# How long a swap waits for an in-place save it interrupted to finish, and how
# long a file's mtime must lie in the past for the file to count as settled
# (an editor's save in progress is left alone until then).
RESCUE_WAIT_SECONDS = 5.0
SETTLE_SECONDS = 0.5


def settled(modified_ns: int, *, now_ns: int | None = None) -> bool:
    """Whether a file last modified at ``modified_ns`` has been still long enough."""
    current = time.time_ns() if now_ns is None else now_ns
    return current - modified_ns >= SETTLE_SECONDS * 1e9


def settled_bytes(fd: int) -> bytes:
    """The bytes of an open file once its writer has stopped (bounded wait)."""
    deadline = time.monotonic() + RESCUE_WAIT_SECONDS
    last = os.fstat(fd)
    while time.monotonic() < deadline:
        time.sleep(SETTLE_SECONDS / 5)
        st = os.fstat(fd)
        moved = (last.st_size, last.st_mtime_ns) != (st.st_size, st.st_mtime_ns)
        if not moved and settled(st.st_mtime_ns):
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


def _switch(temp: Path, path: Path, before: os.stat_result | None) -> bytes | bool:
    """Give ``temp``'s file the name ``path``: True when done, the bytes of a
    file other than ``before`` that stood there (a save that came in after the
    check), False when a file appeared where there was none (not overwritten)."""
    if before is not None:
        try:
            swapped = exchange(temp, path)
        except FileNotFoundError:
            swapped, before = False, None  # deleted after the check: create it
        if swapped and before is not None:
            if os.stat(temp).st_ino == before.st_ino:
                return True
            return temp.read_bytes()
        if before is not None:
            os.replace(temp, path)
            return True
    try:
        os.link(temp, path)  # never over a file that appeared meanwhile
    except FileExistsError:
        return False
    return True


def _stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def _stat_of(st: os.stat_result | None) -> Stat | None:
    return None if st is None else Stat(st.st_size, st.st_mtime_ns, st.st_ino)


def _walk(base: Path) -> Iterator[tuple[Path, Stat]]:
    try:
        entries = list(os.scandir(base))
    except (FileNotFoundError, NotADirectoryError):
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk(Path(entry.path))
            elif entry.is_file():
                info = entry.stat()
                yield Path(entry.path), Stat(info.st_size, info.st_mtime_ns, info.st_ino)
        except OSError:  # gone meanwhile, or a symlink that leads nowhere (a loop)
            continue
