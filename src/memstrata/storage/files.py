"""Durable file primitives: atomic replace, durable append.

Invariants:

* ``atomic_write`` never leaves a half-written file at ``path``: the bytes go
  to a unique temporary file in the same directory, which is fsynced, renamed
  over ``path`` and followed by an fsync of the directory. A reader sees the
  old content or the new, never a mix; after return the new content survives
  a crash. A crash before the rename leaves only a ``.tmp-*`` file, which
  ``sweep_temp_files`` removes on the next open.
"""

from __future__ import annotations

import ctypes
import errno
import functools
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import StorageError

__all__ = [
    "append_durable",
    "atomic_write",
    "create_new",
    "exchange",
    "fsync_dir",
    "last_json_object",
    "last_jsonl_record",
    "stage",
    "staged_write",
    "storage_errors",
    "sweep_temp_files",
]

TEMP_MARK = ".tmp-"


@contextmanager
def storage_errors(what: str) -> Iterator[None]:
    """Turn an ``OSError`` inside the block into a one-line ``StorageError``."""
    try:
        yield
    except StorageError:
        raise
    except OSError as exc:
        reason = exc.strerror or str(exc)
        target = f" {exc.filename}" if exc.filename else ""
        raise StorageError(f"cannot {what}:{target}: {reason}") from exc


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file inside ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Replace ``path`` with ``data`` atomically (see the module invariants)."""
    with staged_write(path, data, durable=durable):
        pass


@contextmanager
def staged_write(path: Path, data: bytes, *, durable: bool = True) -> Iterator[None]:
    """``atomic_write`` in two steps: the block runs once ``data`` is safely in a
    temporary file beside ``path``; ``path`` is replaced only if the block returns.

    A writer that must log its intent first (the journal) stages here, so a full
    disk or a read-only folder fails before anything is logged.
    """
    temp = stage(path, data, durable=durable)
    try:
        yield
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    if durable:
        fsync_dir(path.parent)


def stage(path: Path, data: bytes, *, durable: bool = True) -> Path:
    """A new temporary file beside ``path`` holding ``data`` (fsynced if ``durable``)."""
    temp = _temp_path(path)
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        view = memoryview(data)
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if durable:
            os.fsync(fd)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    finally:
        os.close(fd)
    return temp


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@functools.cache
def _renameat2() -> Any:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.renameat2
    except (OSError, AttributeError):
        return None


def exchange(a: Path, b: Path) -> bool:
    """Swap the files named ``a`` and ``b`` in one atomic step (Linux
    ``renameat2(RENAME_EXCHANGE)``); False where the system cannot."""
    call = _renameat2()
    if call is None:
        return False
    if call(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def append_durable(path: Path, data: bytes, *, header: bytes = b"") -> None:
    """Append ``data`` to ``path`` and fsync it (and the folder, for a new file).

    A new or empty file gets ``header`` first. If the file does not end in a
    line break (a writer died mid-line), one is added first, so ``data``
    starts on a line of its own.
    """
    with open(path, "ab+") as handle:
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            data = header + data
        else:
            handle.seek(size - 1)
            if handle.read(1) != b"\n":
                data = b"\n" + data
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    if size == 0:
        fsync_dir(path.parent)


def last_jsonl_record(path: Path, on_torn: Callable[[bytes], object]) -> dict[str, Any] | None:
    """The last complete JSON object line of ``path`` (None if there is none).

    A torn last line (no newline: a writer died mid-append) is handed to
    ``on_torn`` and cut off, so the next append starts on a line of its own.
    Only the end of the file is read, however long its last line is.
    """
    try:
        with open(path, "rb+") as handle:
            tail, start = _tail(handle, handle.seek(0, os.SEEK_END))
            end = tail.rfind(b"\n") + 1
            if end < len(tail):
                on_torn(tail[end:])
                handle.truncate(start + end)
    except FileNotFoundError:
        return None
    return last_json_object(tail[:end])


def last_json_object(data: bytes) -> dict[str, Any] | None:
    """The last line of ``data`` that is a JSON object (None if there is none)."""
    for line in reversed(data.splitlines()):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            return record
    return None


def _tail(handle: BinaryIO, size: int) -> tuple[bytes, int]:
    """The end of a file holding at least one whole line, and its offset."""
    chunk = 65536
    while True:
        start = max(0, size - chunk)
        handle.seek(start)
        tail = handle.read()
        if start == 0 or b"\n" in tail[: tail.rfind(b"\n")]:
            return tail, start
        chunk *= 4


def create_new(path: Path, data: bytes) -> bool:
    """Create ``path`` with ``data`` unless it exists; atomic, never overwrites.

    The bytes go to a temporary file, fsynced, that is hard-linked into place
    (then the folder is fsynced), so another process sees no file or the whole
    file, and the name never shows bytes not yet on disk. Returns False if
    ``path`` existed.
    """
    temp = stage(path, data)
    try:
        try:
            os.link(temp, path)
        except FileExistsError:
            return False
    finally:
        temp.unlink(missing_ok=True)
    fsync_dir(path.parent)
    return True


def sweep_temp_files(directory: Path) -> list[Path]:
    """Remove temporary files that writers which have since died left in ``directory``.

    A temporary file's name carries its writer's pid; a file whose writer is still
    running is in flight (another process may be creating it right now) and is kept.
    """
    removed = []
    if directory.is_dir():
        for entry in directory.iterdir():
            if TEMP_MARK in entry.name and entry.is_file() and not _writer_alive(entry.name):
                entry.unlink(missing_ok=True)
                removed.append(entry)
    return removed


def _temp_path(path: Path) -> Path:
    """A unique temporary name beside ``path``: ``<name>.tmp-<pid>-<random>``."""
    return path.with_name(f"{path.name}{TEMP_MARK}{os.getpid()}-{secrets.token_hex(4)}")


def _writer_alive(name: str) -> bool:
    """Whether the process that made temporary file ``name`` (``_temp_path``) still runs."""
    pid_text = name.rsplit(TEMP_MARK, 1)[1].split("-", 1)[0]
    if not pid_text.isdigit():
        return False
    try:
        os.kill(int(pid_text), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True
