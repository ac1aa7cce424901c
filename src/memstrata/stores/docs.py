"""Journaled changes to the workspace's documents (the files agents edit by name).

A change is one journal record naming its file by workspace-relative path:

* ``doc.put``  ``{"path", "text", "before", "after"}``: the whole new text; the
  sha256 of the bytes it replaces (``None``: the file did not exist) and of the
  bytes it writes;
* ``doc.del``  ``{"path", "before"}``;
* ``doc.mv``   ``{"path", "to", "before"}``: ``before`` is the moved file's sha256.

Every record also has ``at`` (UTC time) and ``source``.

Invariants:

* Files are read and written only through the workspace's volume
  (``storage.volume``), by the record's workspace-relative path.
* **Stage, log, apply.** A writer stages the new bytes (``staged``): on a
  folder (``Volume.local``) in a temporary file beside the target
  (``files.staged_write``: a full disk or a read-only folder fails here,
  before anything is logged), appends the record with fsync (the commit
  point), then renames the staged file into place. A volume that is not a
  folder writes after the record, in the transaction its lock holds (a
  failure undoes both). Nothing is acknowledged before the record is durable.
* **A move never replaces a file.** ``move`` creates the destination
  (``Volume.create``, never overwriting) with the source's bytes, then
  deletes the source: a writer that died in between leaves both (redo then
  leaves them alone: its destination exists).
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
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..storage.files import staged_write
from ..storage.journal import Record
from ..storage.volume import Volume, clean_rel

__all__ = [
    "OP_DOC_DELETE",
    "OP_DOC_PUT",
    "OP_DOC_RENAME",
    "audit_entry",
    "digest",
    "is_doc_op",
    "move",
    "redo",
    "redo_latest",
    "staged",
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


def redo_latest(volume: Volume, records: Iterable[Record]) -> int:
    """``redo`` each document record that no later one in ``records`` touches
    (a rename touches both its names); how many changed a file."""
    last: dict[str, Record] = {}
    for record in records:
        if is_doc_op(record.op):
            for name in _names(record):
                last[name] = record
    latest = {id(record): record for record in last.values()}
    return sum(
        redo(volume, record)
        for record in latest.values()
        if all(last[name] is record for name in _names(record))
    )


def _names(record: Record) -> list[str]:
    names = [str(record.data.get("path"))]
    if record.op == OP_DOC_RENAME:
        names.append(str(record.data.get("to")))
    return names


def redo(volume: Volume, record: Record) -> bool:
    """Apply ``record`` if its file is still as the record found it; whether it did."""
    data = record.data
    target = _inside(volume, data.get("path"))
    if target is None:
        return False
    old = volume.read(target)
    current = digest(old)
    if record.op == OP_DOC_PUT:
        if current != data.get("before") or current == data.get("after"):
            return False
        volume.write(target, str(data["text"]).encode("utf-8"))
        return True
    if record.op == OP_DOC_DELETE:
        if current is None or current != data.get("before"):
            return False
        volume.delete(target)
        return True
    if record.op == OP_DOC_RENAME:
        destination = _inside(volume, data.get("to"))
        if destination is None or old is None or current != data.get("before"):
            return False
        if volume.stat(destination) is not None:
            return False
        return move(volume, target, destination, old)
    return False


@contextmanager
def staged(volume: Volume, rel: str, data: bytes) -> Iterator[None]:
    """Replace ``rel`` with ``data`` once the block (which logs the change) returns;
    on a folder the bytes are staged first, so that failing to store them fails
    before the block runs (see the module)."""
    local = volume.local
    if local is None:
        yield
        volume.write(rel, data)
        return
    target = local / clean_rel(rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    with staged_write(target, data):
        yield


def move(volume: Volume, source: str, destination: str, data: bytes) -> bool:
    """Move ``source`` (which holds ``data``) to ``destination`` durably, never
    replacing anything there (False, and nothing changed, when something is)."""
    if not volume.create(destination, data):
        return False
    volume.delete(source)
    return True


def audit_entry(record: Record) -> dict[str, Any]:
    """The audit line of a document record: everything but the text."""
    entry = {key: value for key, value in record.data.items() if key != "text"}
    if "text" in record.data:
        entry["bytes"] = len(str(record.data["text"]).encode("utf-8"))
    return entry


def _inside(volume: Volume, relative: object) -> str | None:
    """``relative`` when it is a plain relative path that stays inside the workspace.

    Records are written only after the path guard (``access.resolve_rel``)
    accepted the path; this is a second, cheap check against a journal edited
    by hand (on a folder, its real path must stay inside the real folder).
    """
    if not isinstance(relative, str) or not relative or relative.startswith("/"):
        return None
    parts = relative.split("/")
    if any(part in ("", ".", "..") or "\\" in part or "\0" in part for part in parts):
        return None
    local = volume.local
    if local is not None:
        real_root = os.path.realpath(local)
        if not os.path.realpath(local / relative).startswith(real_root + os.sep):
            return None
    return relative
