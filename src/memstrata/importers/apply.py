"""Writing an importer's records into a workspace, through the public ``Memory`` API.

Invariants:

* **The source is only read.** Records come from an importer's ``read``;
  nothing here opens a source file.
* **Public API only**, so an import works on a folder and on PostgreSQL
  alike: facts by ``Memory.remember`` (``source=import``, the original time
  as ``at``), turns by ``Memory.record_turn`` (the original time, the
  source's ids in the turn's ``meta``), files by ``Memory.documents.edit_file``.
  Each of those redacts secrets before anything is written.
* **Idempotent.** A fact whose de-duplication key a live fact already has, a
  turn whose import key a turn of its session already carries
  (``meta["import"]["key"]``, archived turns included) and a file that already
  holds the text are not written again: a second run adds nothing. An
  existing file with other text is never overwritten (skipped, with the reason).
* **Every record is accounted for**: taken (with the id it became) or skipped
  with the reason; an invalid item (empty text, too long...) is a skip, not
  an error. A ``MemstrataError`` of the workspace itself (storage) stops the run.
* **Provenance.** Original ids, times and fields of the facts and files taken
  are appended (secrets redacted) to ``.memstrata/imports.jsonl`` of the
  workspace, one JSON line each, once the run wrote them.
* ``dry_run`` writes nothing and reports what would be taken.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..capture.secrets import redact, redact_value
from ..errors import InvalidInput, NotFound
from ..memory import Memory
from ..model import Source, clean_session, clean_text, dedupe_key, normalize_category, now
from ..storage.access import allowed
from ..storage.workspace import template_bytes
from .base import Document, Fact, Record, Skip, TurnRecord

__all__ = ["LEDGER", "ImportReport", "apply"]

LEDGER = ".memstrata/imports.jsonl"

Opener = Callable[[str | None], Memory | None]
Progress = Callable[[int, int], None]


@dataclass(slots=True)
class ImportReport:
    """What an import took (or would take: ``dry_run``) and what it skipped, and why."""

    kind: str
    source: str
    target: str
    dry_run: bool = False
    taken: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[dict[str, Any]] = field(default_factory=list)
    moved: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """How many facts, turns and documents were taken, and how many items skipped."""
        found = {"fact": 0, "turn": 0, "document": 0}
        for entry in self.taken:
            found[entry["what"]] += 1
        found["skipped"] = len(self.skipped)
        return found

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "source": self.source,
            "target": self.target,
            "dry_run": self.dry_run,
            "counts": self.counts(),
            "taken": self.taken,
            "skipped": self.skipped,
            "moved": self.moved,
        }


class _Exists(Exception):
    """The document is already there (``same``: with the same text)."""

    def __init__(self, same: bool) -> None:
        super().__init__()
        self.same = same


@dataclass
class _Target:
    """One workspace written to (one group), with what it already holds."""

    memory: Memory | None  # None: a dry run into a workspace that does not exist yet
    keys: dict[str, str] = field(default_factory=dict)  # fact key -> item id
    turn_keys: dict[str, set[str]] = field(default_factory=dict)  # session -> import keys
    docs: set[str] = field(default_factory=set)  # documents written by this run
    ledger: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def of(cls, memory: Memory | None) -> _Target:
        target = cls(memory)
        if memory is not None:
            target.keys = {item.key: item.id for item in memory.list()}
        return target

    def session_keys(self, session: str) -> set[str]:
        if session not in self.turn_keys:
            found: set[str] = set()
            if self.memory is not None:
                try:
                    turns = self.memory.sessions.turns(session, archived=True)
                except NotFound:
                    turns = []
                for turn in turns:
                    mark = turn.meta.get("import")
                    if isinstance(mark, dict) and isinstance(mark.get("key"), str):
                        found.add(mark["key"])
            self.turn_keys[session] = found
        return self.turn_keys[session]


def apply(
    records: Iterable[Record],
    report: ImportReport,
    opener: Opener,
    *,
    progress: Progress | None = None,
) -> ImportReport:
    """Write ``records`` (see the module) and fill ``report``; ``opener(group)``
    gives the workspace of a group (None: the target's own)."""
    listed = list(records)
    targets: dict[str | None, _Target] = {}
    try:
        for done, record in enumerate(listed, 1):
            if record.group not in targets:
                targets[record.group] = _Target.of(opener(record.group))
            _one(record, targets[record.group], report)
            if progress is not None:
                progress(done, len(listed))
        if not report.dry_run:
            for target in targets.values():
                _finish(target, report)
    finally:
        for group, target in targets.items():
            if target.memory is not None and group is not None:
                target.memory.close()
    return report


def _one(record: Record, target: _Target, report: ImportReport) -> None:
    where: dict[str, Any] = {"ref": record.ref}
    if record.group:
        where["group"] = record.group
    if isinstance(record, Skip):
        report.skipped.append(where | {"reason": record.reason})
        return
    try:
        if isinstance(record, Fact):
            taken = _fact(record, target, report)
        elif isinstance(record, TurnRecord):
            taken = _turn(record, target, report)
        else:
            taken = _document(record, target, report)
    except InvalidInput as exc:
        report.skipped.append(where | {"reason": str(exc)})
        return
    except _Exists as exc:
        reason = "already there" if exc.same else "a different file is there (kept as it is)"
        report.skipped.append(where | {"reason": f"{reason}: {getattr(record, 'path', '')}"})
        return
    if isinstance(taken, str):  # "skip:<reason>"
        report.skipped.append(where | {"reason": taken.removeprefix("skip:")})
    else:
        report.taken.append(where | taken)


def _fact(record: Fact, target: _Target, report: ImportReport) -> dict[str, Any] | str:
    line = redact(clean_text(record.text)).text
    user = clean_session(record.user)
    session = clean_session(record.session)
    try:
        category = normalize_category(record.category)
    except InvalidInput:
        category = normalize_category(None)
    key = dedupe_key(line, user)
    if key in target.keys:
        return f"skip:already in memory as {target.keys[key]}"
    if target.memory is None or report.dry_run:
        target.keys[key] = "(new)"
        return {"what": "fact"}
    item = target.memory.remember(
        line,
        category=category,
        source=Source.IMPORT,
        session=session,
        user=user,
        at=record.at,
        sync=False,
    )
    target.keys[key] = item.id
    target.ledger.append(
        {"ref": record.ref, "what": "fact", "id": item.id, "original": dict(record.original)}
    )
    return {"what": "fact", "id": item.id}


def _turn(record: TurnRecord, target: _Target, report: ImportReport) -> dict[str, Any] | str:
    session = clean_session(record.session)
    assert session is not None  # noqa: S101 (clean_session of a str is a str)
    keys = target.session_keys(session)
    if record.key in keys:
        return "skip:already imported (a turn of its session carries its key)"
    keys.add(record.key)
    if target.memory is None or report.dry_run:
        return {"what": "turn", "session": session}
    meta = dict(record.meta) | {
        "import": {"kind": report.kind, "key": record.key, "ref": record.ref}
    }
    turn = target.memory.record_turn(
        session,
        user=record.user,
        assistant=record.assistant,
        reasoning=record.reasoning,
        tool_calls=record.tool_calls,
        tool_results=record.tool_results,
        meta=meta,
        at=record.at,
    )
    return {"what": "turn", "session": session, "id": turn.id}


def _document(record: Document, target: _Target, report: ImportReport) -> dict[str, Any] | str:
    if not allowed(record.path):
        return f"skip:{record.path} is not a memory file memstrata keeps"
    if record.path in target.docs:
        return f"skip:{record.path} was already written from another file of this source"
    if target.memory is None:
        target.docs.add(record.path)
        return {"what": "document", "path": record.path}
    if report.dry_run:
        _check_absent(
            record, _existing(record.path, target.memory.workspace.volume.read(record.path))
        )
        target.docs.add(record.path)
        return {"what": "document", "path": record.path}

    def edit(old: str | None) -> str:
        _check_absent(record, _existing(record.path, None if old is None else old.encode()))
        return record.text

    target.memory.documents.edit_file(record.path, edit, source=Source.IMPORT)
    target.docs.add(record.path)
    target.ledger.append({"ref": record.ref, "what": "document", "path": record.path})
    return {"what": "document", "path": record.path}


def _existing(path: str, data: bytes | None) -> bytes | None:
    """The file's bytes, None when it is absent or still the template ``init`` wrote."""
    return None if data is None or data == template_bytes(path) else data


def _check_absent(record: Document, data: bytes | None) -> None:
    """``_Exists`` unless the file is absent; ``same`` when it holds the text
    (or begins with it: a daily note the imported turns of that day went on)."""
    if data is None:
        return
    old = data.decode("utf-8", "replace").replace("\r\n", "\n")
    raise _Exists(any(old.startswith(text) for text in (record.text, redact(record.text).text)))


def _finish(target: _Target, report: ImportReport) -> None:
    """Make the facts durable and keep the provenance (see the module)."""
    memory = target.memory
    if memory is None:
        return
    memory.flush()
    if target.ledger:
        at = now().isoformat()
        lines = [
            json.dumps(
                {"at": at, "kind": report.kind, "source": report.source} | redact_value(entry)[0],
                ensure_ascii=False,
                default=str,
            )
            for entry in target.ledger
        ]
        memory.workspace.volume.append(LEDGER, ("\n".join(lines) + "\n").encode("utf-8"))
