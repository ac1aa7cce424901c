"""Journaled changes to the workspace's documents (the files agents edit by name).

A change is one journal record naming its file by workspace-relative path:

* ``doc.put``  ``{"path", "text", "before", "after"}``: the whole new text; the
  sha256 of the bytes it replaces (``None``: the file did not exist) and of the
  bytes it writes;
* ``doc.del``  ``{"path", "before"}``;
* ``doc.mv``   ``{"path", "to", "before"}``: ``before`` is the moved file's sha256.

Every record also has ``at`` (UTC time) and ``source``.

Invariants:

* **Stage, log, apply.** A writer stages the new bytes in a temporary file
  beside the target (``files.staged_write``: a full disk or a read-only folder
  fails here, before anything is logged), appends the record with fsync (the
  commit point), then renames the staged file into place. Nothing is
  acknowledged before the record is durable.
* **Only a file's last record is redone.** A writer's own change is finished
  before it answers, so only a writer that died between logging and renaming
  leaves a record unfinished, and a later change to the same file was made on
  the file as it then was (the dead writer never acknowledged its change).
  ``redo_latest`` redoes the last record of each file (one hash per file, not
  per record): opening does it for the whole journal, a writer for the
  records it catches up on, and a checkpoint before it empties the journal.
* **Redo is safe to repeat.** ``redo`` changes a file only while it is exactly
  as the record found it (its sha256 is ``before``); a file that already holds
  the result, or that has moved on since (a hand edit), is left alone. Limit:
  a hash cannot tell a file re-created by hand, byte for byte, as it was
  before a logged delete; until a checkpoint empties the journal, a redo of
  that delete removes it again.
* Readers without the lock never redo (two redoers could otherwise race).
* The audit keeps what changed, not the text: ``audit_entry`` drops it for a
  sha256 and a size.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..storage.files import atomic_write, fsync_dir
from ..storage.journal import Record

__all__ = [
    "OP_DOC_DELETE",
    "OP_DOC_PUT",
    "OP_DOC_RENAME",
    "audit_entry",
    "digest",
    "is_doc_op",
    "move",
    "read_or_none",
    "redo",
    "redo_latest",
    "remove",
]

OP_DOC_PUT = "doc.put"
OP_DOC_DELETE = "doc.del"
OP_DOC_RENAME = "doc.mv"


def is_doc_op(op: str) -> bool:
    """Whether a journal operation changes a document."""
    return op.startswith("doc.")


def digest(data: bytes | None) -> str | None:
    """The sha256 (hex) of ``data``; ``None`` for a missing file."""
    return None if data is None else hashlib.sha256(data).hexdigest()


def read_or_none(path: Path) -> bytes | None:
    """The bytes of ``path``; ``None`` when it does not exist."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def redo_latest(root: Path, records: Iterable[Record]) -> int:
    """``redo`` each document record that no later one in ``records`` touches
    (a rename touches both its names); how many changed a file."""
    last: dict[str, Record] = {}
    for record in records:
        if is_doc_op(record.op):
            for name in _names(record):
                last[name] = record
    latest = {id(record): record for record in last.values()}
    return sum(
        redo(root, record)
        for record in latest.values()
        if all(last[name] is record for name in _names(record))
    )


def _names(record: Record) -> list[str]:
    names = [str(record.data.get("path"))]
    if record.op == OP_DOC_RENAME:
        names.append(str(record.data.get("to")))
    return names


def redo(root: Path, record: Record) -> bool:
    """Apply ``record`` if its file is still as the record found it; whether it did."""
    data = record.data
    target = _inside(root, data.get("path"))
    if target is None:
        return False
    current = digest(read_or_none(target))
    if record.op == OP_DOC_PUT:
        if current != data.get("before") or current == data.get("after"):
            return False
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, str(data["text"]).encode("utf-8"))
        return True
    if record.op == OP_DOC_DELETE:
        if current is None or current != data.get("before"):
            return False
        remove(target)
        return True
    if record.op == OP_DOC_RENAME:
        destination = _inside(root, data.get("to"))
        if destination is None or current is None or current != data.get("before"):
            return False
        if destination.exists() or destination.is_symlink():
            return False
        move(target, destination)
        return True
    return False


def remove(target: Path) -> None:
    """Delete ``target`` durably (a power loss cannot bring it back)."""
    target.unlink()
    fsync_dir(target.parent)


def move(source: Path, destination: Path) -> None:
    """Rename ``source`` to ``destination`` durably, never replacing a file there."""
    destination.parent.mkdir(parents=True, exist_ok=True)
    os.link(source, destination)  # FileExistsError rather than overwriting
    fsync_dir(destination.parent)
    source.unlink()
    fsync_dir(source.parent)


def audit_entry(record: Record) -> dict[str, Any]:
    """The audit line of a document record: everything but the text."""
    entry = {key: value for key, value in record.data.items() if key != "text"}
    if "text" in record.data:
        entry["bytes"] = len(str(record.data["text"]).encode("utf-8"))
    return entry


def _inside(root: Path, relative: object) -> Path | None:
    """``root / relative`` when it is a plain relative path that stays inside ``root``.

    Records are written only after the path guard (``access.resolve``) accepted
    the path; this is a second, cheap check against a journal edited by hand.
    """
    if not isinstance(relative, str) or not relative or relative.startswith("/"):
        return None
    parts = relative.split("/")
    if any(part in ("", ".", "..") or "\\" in part or "\0" in part for part in parts):
        return None
    target = root / relative
    real_root = os.path.realpath(root)
    if not os.path.realpath(target).startswith(real_root + os.sep):
        return None
    return target
