"""Exporters: leaving memstrata as easily as arriving (``memstrata export KIND DEST``).

* ``jsonl``: the live facts, one JSON object a line, ``{"text", "category",
  "created_at", "session"?, "user"?}``, oldest first (then by text, user...), into a
  new file; ``import jsonl`` of it, then ``export jsonl`` again, gives the same
  bytes (the ids are this workspace's own, so they are not written);
* ``openclaw`` / ``markdown``: OpenClaw's layout in a new or empty folder:
  ``MEMORY.md`` as memstrata renders it (after a flush) and every
  ``memory/*.md`` file, byte for byte.

Both only read the workspace, and never overwrite anything at ``DEST``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..memory import Memory
from ..memory.transfer import empty_folder
from ..model import Item
from ..storage.files import storage_errors
from ..storage.volume import DiskVolume

__all__ = ["EXPORT_KINDS", "export_jsonl", "export_markdown"]

EXPORT_KINDS = ("jsonl", "openclaw", "markdown")


def fact_line(item: Item) -> dict[str, Any]:
    """One fact as the generic JSONL writes it."""
    data: dict[str, Any] = {
        "text": item.text,
        "category": item.category,
        "created_at": item.created_at.isoformat(),
    }
    if item.session is not None:
        data["session"] = item.session
    if item.user is not None:
        data["user"] = item.user
    return data


def _order(item: Item) -> tuple[Any, ...]:
    """Oldest first, then by what a line says (never by id: ids are per workspace)."""
    return (item.created_at, item.text, item.user or "", item.category, item.session or "")


def export_jsonl(memory: Memory, dest: Path) -> list[str]:
    """Write the live facts to the new file ``dest``; the lines written."""
    items = sorted(memory.list(), key=_order)
    lines = [json.dumps(fact_line(item), ensure_ascii=False) for item in items]
    data = "".join(line + "\n" for line in lines).encode("utf-8")
    target = DiskVolume(dest.expanduser().parent)
    with storage_errors(f"export to {dest}"):
        if dest.exists():
            raise InvalidInput(f"{dest} already exists; export into a new file")
        target.write(dest.name, data)
    return lines


def export_markdown(memory: Memory, dest: Path) -> list[str]:
    """Write ``MEMORY.md`` and ``memory/*.md`` into the new or empty folder ``dest``."""
    if not memory.read_only:
        memory.flush()
    volume = memory.workspace.volume
    names = ["MEMORY.md"] + sorted(
        rel for rel, _ in volume.list("memory/") if rel.count("/") == 1 and rel.endswith(".md")
    )
    target = empty_folder(dest)
    with storage_errors(f"export to {target.where}"):
        written = []
        for rel in names:
            data = volume.read(rel)
            if data is not None:
                target.write(rel, data)
                written.append(rel)
    return written
