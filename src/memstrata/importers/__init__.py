"""Importers: memory an agent already has, taken in (``memstrata import KIND SOURCE``).

One module per source reads it into records (``importers.base``; the source
is only read); ``importers.apply`` writes them through the public ``Memory``
API, so an import works into a folder and into PostgreSQL alike, is
idempotent, and reports what it took and what it skipped, and why. See
docs/importers.md.

``KINDS`` maps each kind to its reader. ``memstrata`` (a whole memstrata
workspace, copied file for file) is ``Memory.import_from``, not a reader.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

from ..errors import InvalidInput, NotFound
from ..memory import Memory
from .apply import ImportReport, Progress, apply
from .base import Record

__all__ = ["KINDS", "ImportReport", "import_source", "read_source"]

Reader = Callable[[Path], Iterator[Record]]


def _kinds() -> dict[str, Reader]:
    from . import jsonl, markdown, miqi, nanoclaw, q15, qanot, qracer

    return {
        "miqi": miqi.read,
        "qracer": qracer.read,
        "q15": q15.read,
        "qanot": qanot.read,
        "nanoclaw": nanoclaw.read,
        "openclaw": markdown.read_markdown,
        "markdown": markdown.read_markdown,
        "jsonl": jsonl.read_jsonl,
        "mem0": jsonl.read_mem0,
    }


KINDS = ("miqi", "qracer", "q15", "qanot", "nanoclaw", "openclaw", "markdown", "jsonl", "mem0")


_FOLDER_KINDS = ("miqi", "qracer", "q15", "qanot", "nanoclaw")


def read_source(kind: str, source: str | os.PathLike[str]) -> list[Record]:
    """Every record of ``source`` read as ``kind`` (``InvalidInput`` for an unknown
    kind, ``NotFound`` for a source that is not there). Reads only."""
    readers = _kinds()
    if kind not in readers:
        raise InvalidInput(f"unknown import kind {kind!r}; one of: memstrata, {', '.join(KINDS)}")
    path = Path(source).expanduser()
    if not path.exists():
        raise NotFound(f"no such file or folder: {path}")
    if kind in _FOLDER_KINDS and not path.is_dir():
        raise InvalidInput(f"{kind} reads a folder (its workspace), and {path} is a file")
    try:
        return list(readers[kind](path))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from None


def import_source(
    kind: str,
    source: str | os.PathLike[str],
    memory: Memory | None,
    *,
    dry_run: bool = False,
    move: bool = False,
    open_group: Callable[[str], Memory | None] | None = None,
    progress: Progress | None = None,
) -> ImportReport:
    """Import ``source``, read as ``kind``, into ``memory`` (see the module).

    ``open_group(name)`` opens another group of the same place, for a source
    with several (NanoClaw's ``groups/<folder>/``; default: refused with a
    skip). ``move`` (q15 only) removes q15's turn files once their turns are
    in memory; nothing else ever changes the source. ``memory`` None: a dry
    run into a workspace that does not exist yet."""
    if memory is None and not dry_run:
        raise InvalidInput("an import that writes needs a workspace")
    if move and kind != "q15":
        raise InvalidInput("--move is only for q15 (its history/turns files)")
    records = read_source(kind, source)
    where = memory.workspace.where if memory is not None else "(a new workspace)"
    report = ImportReport(kind, str(Path(source).expanduser()), where, dry_run)

    def opener(group: str | None) -> Memory | None:
        if group is None:
            return memory
        if open_group is None or memory is None:
            raise InvalidInput(f"{source} has a group {group!r}; open_group is needed for it")
        return open_group(group)

    apply(records, report, opener, progress=progress)
    if move and not dry_run:
        from .q15 import remove_taken

        report.moved.extend(remove_taken(Path(source).expanduser(), report))
    return report
