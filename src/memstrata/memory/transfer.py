"""Moving a workspace between places: export to a folder, import from one.

A workspace's files are the same wherever they live (a folder, or a tenant's
rows in PostgreSQL: ``storage.volume``), so a move is a copy of the files
once the journal is folded into them.

Invariants:

* **Files, not RAM.** ``files`` takes the workspace lock, folds the journal
  in (a checkpoint, when there is anything to fold) and reads every file but
  the machine-local ones (``MACHINE_LOCAL``: lock, the SQLite index, the
  journal file, temporary files), so what it gives is what a person would
  read and what ``Memory.open`` loads from.
* **Export never overwrites.** ``export_to`` writes into a folder that has
  no file yet (a new or empty one), each file atomically.
* **Import is idempotent and reported.** ``load`` writes the files whose
  bytes differ (``created``, ``updated``), leaves equal ones (``unchanged``)
  and any file the source does not have (``kept``); ``dry_run`` only reports.
  Under the lock, then the engine starts again from the files loaded (the
  journal's base is raised past what it was, so no process mistakes an
  older lsn for a new record), and the index re-reads everything.
* Round trip: a folder imported then exported gives back the same bytes,
  file for file (``tests/test_transfer.py``).
"""

from __future__ import annotations

import builtins
import dataclasses
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InvalidInput
from ..model import Source, WriteEvent
from ..storage.files import TEMP_MARK, storage_errors
from ..storage.volume import DiskVolume
from .engine import Engine

__all__ = ["MACHINE_LOCAL", "Transfer", "TransferReport", "empty_folder"]

# Files of one machine's copy that are never moved (the .gitignore of .memstrata/).
MACHINE_LOCAL = re.compile(
    r"\.memstrata/(lock|lock\.gate|journal\.wal|index\.sqlite.*|transcripts-verified\.json)"
)


@dataclass(frozen=True, slots=True)
class TransferReport:
    """What an export or import did (or would do: ``dry_run``)."""

    source: str
    target: str
    dry_run: bool = False
    created: builtins.list[str] = field(default_factory=builtins.list)
    updated: builtins.list[str] = field(default_factory=builtins.list)
    unchanged: builtins.list[str] = field(default_factory=builtins.list)
    kept: builtins.list[str] = field(default_factory=builtins.list)
    bytes: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "created": self.created,
            "updated": self.updated,
            "unchanged": self.unchanged,
            "kept": self.kept,
            "bytes": self.bytes,
        }


def movable(rel: str) -> bool:
    """Whether a file travels with the workspace (not machine-local)."""
    return MACHINE_LOCAL.fullmatch(rel) is None and TEMP_MARK not in rel


class Transfer:
    """Export and import of one workspace (a part of ``Memory``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def files(self) -> dict[str, bytes]:
        """Every file that travels, with the journal folded in (see the module)."""
        engine = self.engine
        if engine.read_only:
            if engine.journal.records:
                raise InvalidInput(
                    f"{engine.workspace.where} is read-only and its journal holds "
                    f"{len(engine.journal.records)} record(s) not yet in its files; "
                    "open it writable once to fold them in"
                )
            return self._read_all()
        with engine.transaction("read the workspace's files", catch_up=True):
            engine.flush_locked()
            return self._read_all()

    def _read_all(self) -> dict[str, bytes]:
        volume = self.engine.volume
        found = {}
        for rel, _ in volume.list():
            if movable(rel):
                data = volume.read(rel)
                if data is not None:
                    found[rel] = data
        return found

    def export_to(self, folder: Path) -> TransferReport:
        """Write every file into ``folder``, which must hold no file yet."""
        target = empty_folder(folder)
        with storage_errors(f"export to {target.where}"):
            files = self.files()
            for rel, data in sorted(files.items()):
                target.write(rel, data)
        return TransferReport(
            self.engine.workspace.where,
            target.where,
            created=sorted(files),
            bytes=sum(len(data) for data in files.values()),
        )

    def load(
        self, files: dict[str, bytes], source: str, *, dry_run: bool = False
    ) -> TransferReport:
        """Make this workspace's files those of ``files`` (see the module)."""
        engine = self.engine
        report = TransferReport(source, engine.workspace.where, dry_run)
        with engine.transaction("import a workspace", catch_up=True):
            volume = engine.volume
            for rel in sorted(files):
                if not movable(rel):
                    continue
                old = volume.read(rel)
                if old == files[rel]:
                    report.unchanged.append(rel)
                    continue
                (report.created if old is None else report.updated).append(rel)
                if not dry_run:
                    volume.write(rel, files[rel])
            report.kept.extend(rel for rel, _ in volume.list() if movable(rel) and rel not in files)
            changed = report.created + report.updated
            if changed and not dry_run:
                engine.reload_locked()
        if changed and not dry_run:  # the index and the write hooks hear of each file
            engine.events.notify(
                *(WriteEvent("document", "put", "", Source.IMPORT, rel) for rel in changed)
            )
        return dataclasses.replace(report, bytes=sum(len(files[rel]) for rel in changed))


def empty_folder(folder: Path) -> DiskVolume:
    """The volume of ``folder``, to export into: ``InvalidInput`` unless it is
    new or an empty folder (an export never mixes with files already there)."""
    target = DiskVolume(Path(folder).expanduser())
    with storage_errors(f"export to {target.where}"):
        if target.root.exists() and not target.root.is_dir():
            raise InvalidInput(f"{target.where} exists and is not a folder")
        if target.list():
            raise InvalidInput(
                f"{target.where} already holds files; export into a new or empty folder"
            )
    return target
