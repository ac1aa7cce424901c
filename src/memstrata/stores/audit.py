"""The audit logs (``memory/LTM_AUDIT.jsonl``, ``LESSONS_AUDIT.jsonl``,
``DOCS_AUDIT.jsonl``): one JSON line per journal record a checkpoint folded in.

* **Each record once.** ``append_new`` appends only records above the lsn of
  the log's last line: a crash between a checkpoint's audit append and its
  journal reset repeats the checkpoint, never a line.
* **A torn last line** (a writer died mid-append, on disk) is handed to
  ``on_torn`` (the quarantine) and cut off first, so appends start clean;
  only the end of the file is read. A database's appends are whole.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from ..storage.journal import Record
from ..storage.volume import Volume, last_record

__all__ = ["append_new", "last_lsn"]


def append_new(
    volume: Volume,
    rel: str,
    records: Sequence[Record],
    on_torn: Callable[[bytes], object],
    entry: Callable[[Record], dict[str, Any]] = lambda record: record.data,
) -> None:
    """Append the lines of the ``records`` the log at ``rel`` does not have yet."""
    if not records:
        return
    done = last_lsn(volume, rel, on_torn)
    lines = [
        json.dumps(entry(record), ensure_ascii=False, separators=(",", ":")) + "\n"
        for record in records
        if record.lsn > done
    ]
    if lines:
        volume.append(rel, "".join(lines).encode())


def last_lsn(volume: Volume, rel: str, on_torn: Callable[[bytes], object]) -> int:
    """The lsn of the last line of the log at ``rel`` (0: none)."""
    last = last_record(volume, rel, on_torn)
    return int(last.get("lsn", 0)) if last else 0
