"""The quarantine: bytes set aside, never dropped.

``quarantine_bytes`` keeps every byte it is given in ``.memstrata/quarantine/``
of a workspace's volume (one file each, named by time, a random part and
where it came from) and records why in ``INDEX.jsonl`` there (appended
durably after the file is written: an entry never names a missing file).
"""

from __future__ import annotations

import json
import secrets
from dataclasses import asdict, dataclass
from pathlib import Path

from ..model import now
from .volume import DiskVolume, Volume

__all__ = ["QUARANTINE", "QuarantineEntry", "list_quarantine", "quarantine_bytes"]

QUARANTINE = ".memstrata/quarantine/"


@dataclass(frozen=True, slots=True)
class QuarantineEntry:
    """One thing moved aside: where it came from, where it is, and why."""

    original: str
    stored: str
    reason: str
    at: str
    size: int


def quarantine_bytes(volume: Volume, original: str, data: bytes, reason: str) -> str:
    """Keep ``data`` (from ``original``, workspace-relative) aside with a reason;
    the path of the stored copy."""
    stamp = now().strftime("%Y%m%dT%H%M%S")
    safe = original.replace("/", "__")
    name = f"{stamp}-{secrets.token_hex(3)}-{safe}"
    volume.write(QUARANTINE + name, data)
    entry = QuarantineEntry(
        original=original, stored=name, reason=reason, at=now().isoformat(), size=len(data)
    )
    line = json.dumps(asdict(entry), ensure_ascii=False)
    volume.append(QUARANTINE + "INDEX.jsonl", (line + "\n").encode())
    return QUARANTINE + name


def list_quarantine(where: Volume | Path) -> list[QuarantineEntry]:
    """What the quarantine of a volume (or the quarantine folder at a path)
    holds, oldest first (unreadable index lines are skipped)."""
    if isinstance(where, Path):
        raw = DiskVolume(where).read("INDEX.jsonl")
    else:
        raw = where.read(QUARANTINE + "INDEX.jsonl")
    entries = []
    for line in (raw or b"").decode("utf-8", "replace").splitlines():
        try:
            entries.append(QuarantineEntry(**json.loads(line)))
        except (ValueError, TypeError):
            continue
    return entries
