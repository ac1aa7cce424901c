"""``doctor``: a read-only health check of a workspace, in plain words.

Nothing here changes a file: it reports what ``Memory.open`` would repair
(torn journal tail, corrupt snapshot, hand edits) and what needs a person
(quarantined bytes, a bad settings file, a missing layout).
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from ..capture.scan import load_rules
from ..config import load_settings
from ..errors import MemstrataError
from ..model import now
from ..storage.files import TEMP_MARK
from ..storage.journal import scan
from ..storage.lock import lock_holder
from ..storage.quarantine import QUARANTINE, list_quarantine
from ..storage.workspace import LESSONS, MEMORY_MD, SNAPSHOT, Workspace
from ..stores import handedit, markdown
from ..stores.handedit import RenderHistory
from ..stores.lessons import LessonStore
from ..stores.longterm import LongTermStore, Snapshot

__all__ = ["Finding", "Level", "diagnose", "diagnose_files"]


class Level(StrEnum):
    OK = "ok"
    INFO = "info"
    WARN = "warn"
    ERROR = "error"


@dataclass(frozen=True, slots=True)
class Finding:
    """One observation: how bad, about what, and what to do."""

    level: Level
    check: str
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"level": self.level.value, "check": self.check, "message": self.message}


def diagnose(workspace: Workspace) -> list[Finding]:
    """Every finding about ``workspace``, most basic first."""
    if not workspace.exists():
        return [
            Finding(
                Level.ERROR,
                "workspace",
                f"no memstrata workspace at {workspace.path}; create it with `memstrata init`",
            )
        ]
    if not os.access(workspace.path, os.R_OK | os.W_OK | os.X_OK):
        return [Finding(Level.ERROR, "workspace", f"{workspace.path} is not readable and writable")]
    return [
        _layout(workspace),
        _settings(workspace),
        _lock(workspace),
        *_journal(workspace),
        *_snapshot_and_markdown(workspace),
        *_lessons(workspace),
        *_capture_rules(workspace),
        *_transcripts(workspace),
        *_search(workspace),
        *_quarantine(workspace),
        *_leftovers(workspace),
    ]


def diagnose_files(workspace: Workspace) -> list[Finding]:
    """The findings about what ``workspace``'s volume holds, on any volume
    (a folder's or a database tenant's): the facts' snapshot and MEMORY.md,
    lessons, transcripts and the quarantine. Reads only."""
    return [
        *_snapshot_and_markdown(workspace),
        *_lessons(workspace),
        *_transcripts(workspace),
        *_quarantine(workspace),
    ]


def _layout(ws: Workspace) -> Finding:
    missing = ws.missing()
    if missing:
        return Finding(
            Level.WARN,
            "layout",
            f"missing {', '.join(missing)}; `memstrata init` creates them and touches nothing else",
        )
    return Finding(Level.OK, "layout", "all layer folders and files are present")


def _settings(ws: Workspace) -> Finding:
    try:
        values = load_settings(ws.path)
    except MemstrataError as exc:
        return Finding(Level.ERROR, "settings", f"{exc}; fix the file or delete it for defaults")
    shown = ", ".join(f"{k}={v}" for k, v in sorted(values.items())) or "defaults"
    return Finding(Level.OK, "settings", f"memstrata.toml is valid ({shown})")


def _lock(ws: Workspace) -> Finding:
    holder = lock_holder(ws.lock)
    if holder is None:
        return Finding(Level.OK, "lock", "no writer holds the workspace")
    return Finding(
        Level.INFO, "lock", f"a writer holds the workspace now (pid {holder}); that is normal"
    )


def _journal(ws: Workspace) -> list[Finding]:
    if not ws.journal.exists():
        return [Finding(Level.OK, "journal", "no journal yet (nothing written since init)")]
    result = scan(ws.journal)
    findings = []
    base = result.header.get("lsn", 0)
    findings.append(
        Finding(
            Level.OK,
            "journal",
            f"{len(result.records)} record(s) after checkpoint lsn {base} wait for the next "
            "checkpoint",
        )
    )
    for problem in result.problems:
        if problem.kind == "torn":
            findings.append(
                Finding(
                    Level.WARN,
                    "journal",
                    f"the last record ({len(problem.data)} bytes at byte {problem.offset}) is "
                    "incomplete: a writer was killed mid-write before acknowledging it; the "
                    "next open moves it to the quarantine",
                )
            )
        else:
            findings.append(
                Finding(
                    Level.ERROR,
                    "journal",
                    f"record at byte {problem.offset} is corrupt ({problem.reason}); it is "
                    "skipped and moved to the quarantine at the next checkpoint",
                )
            )
    return findings


def _snapshot_and_markdown(ws: Workspace) -> list[Finding]:
    findings = []
    snapshot = None
    raw = ws.volume.read(SNAPSHOT)
    if raw is not None:
        try:
            snapshot = Snapshot.decode(raw)
        except MemstrataError as exc:
            findings.append(
                Finding(
                    Level.ERROR,
                    "snapshot",
                    f"{exc}; the next open moves it to the quarantine and rebuilds the items "
                    "from MEMORY.md (metadata such as hits and sessions is lost)",
                )
            )
        else:
            live = sum(1 for item in snapshot.items.values() if item.is_live)
            findings.append(
                Finding(
                    Level.OK,
                    "snapshot",
                    f"{live} live and {len(snapshot.items) - live} superseded item(s) at lsn "
                    f"{snapshot.lsn}",
                )
            )
    data = ws.volume.read(MEMORY_MD)
    if data is None:
        if snapshot is not None and snapshot.items:
            findings.append(
                Finding(
                    Level.WARN,
                    "MEMORY.md",
                    "missing; the next open renders it again from the snapshot",
                )
            )
        return findings
    parsed = markdown.parse(data)
    for bad in parsed.bad:
        findings.append(
            Finding(
                Level.WARN,
                "MEMORY.md",
                f"line {bad.line_no} is not valid UTF-8; the next open moves it to the quarantine",
            )
        )
    if snapshot is not None and snapshot.markdown is not None:
        if snapshot.markdown.matches(ws.volume, MEMORY_MD):
            findings.append(
                Finding(Level.OK, "MEMORY.md", f"{len(parsed.lines)} fact line(s), as rendered")
            )
        else:
            findings.append(_hand_edit(ws, snapshot, data, parsed))
    return findings


def _hand_edit(
    ws: Workspace, snapshot: Snapshot, data: bytes, parsed: markdown.ParsedMemory
) -> Finding:
    """What the next checkpoint will make of a hand-edited MEMORY.md."""
    store = LongTermStore()
    store.reset(dict(snapshot.items), snapshot.lsn, snapshot.keys)
    rendering = markdown.render(snapshot.items.values()).encode()
    base = RenderHistory(ws.volume, ".memstrata/rendered/").base_for(data, lambda: rendering)
    plan = handedit.plan(data, parsed, base, store, at=now())
    if plan.damage is not None:
        return Finding(
            Level.WARN,
            "MEMORY.md",
            f"edited by hand, but it looks damaged ({plan.damage}): the next checkpoint sets it "
            "aside in the quarantine and renders MEMORY.md again; if the change was meant, "
            "run `memstrata accept-edit` after that",
        )
    return Finding(
        Level.INFO,
        "MEMORY.md",
        f"edited by hand since the last checkpoint ({len(plan.changes)} change(s), "
        f"{plan.deleted} deletion(s)); the next checkpoint takes them in",
    )


def _lessons(ws: Workspace) -> list[Finding]:
    try:
        raw = ws.volume.read(LESSONS)
    except (OSError, MemstrataError) as exc:
        return [Finding(Level.ERROR, "lessons", f"cannot read {LESSONS}: {exc}")]
    if raw is None:
        return []
    lessons, bad = LessonStore.parse(raw)
    if bad:
        lines = ", ".join(str(number) for number, _, _ in bad[:5])
        return [
            Finding(
                Level.WARN,
                "lessons",
                f"{LESSONS} has {len(bad)} unreadable line(s) ({lines}); "
                "the next open sets them aside in the quarantine",
            )
        ]
    return [Finding(Level.OK, "lessons", f"{len(lessons)} lesson(s)")]


def _transcripts(ws: Workspace) -> list[Finding]:
    """Transcript lines the next open would upgrade or set aside."""
    from ..stores.transcripts import Turn, transcript_files

    findings = []
    total = 0
    for where, _ in transcript_files(ws):
        bad, old = [], 0
        for number, raw in enumerate((ws.volume.read(where) or b"").splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw.decode("utf-8"))
                if not isinstance(record, dict):
                    raise ValueError("not an object")
                if "schema_version" not in record and "role" in record:
                    old += 1
                elif record.get("kind") != "meta":
                    Turn.from_dict(record)
                    total += 1
            except (UnicodeDecodeError, ValueError):
                bad.append(number)
        if bad:
            lines = ", ".join(map(str, bad[:5]))
            findings.append(
                Finding(
                    Level.WARN,
                    "transcripts",
                    f"{where} has {len(bad)} unreadable line(s) ({lines}); the next open "
                    "moves them to the quarantine",
                )
            )
        if old:
            findings.append(
                Finding(
                    Level.INFO,
                    "transcripts",
                    f"{where} holds {old} version 1 message(s); the next open upgrades them "
                    "(the original is kept in .memstrata/backup/)",
                )
            )
    if ws.volume.list("history/turns/"):
        findings.append(
            Finding(
                Level.INFO,
                "transcripts",
                "history/turns/ holds q15 turn files; each open copies new ones into sessions/ "
                "(q15's files are kept)",
            )
        )
    return findings or [Finding(Level.OK, "transcripts", f"{total} turn(s)")]


def _search(ws: Workspace) -> list[Finding]:
    """Whether search has its embedder, and what the index holds (read-only)."""
    from ..config import Settings, workspace_settings
    from ..embed import load_embedder
    from ..errors import BackendUnavailable

    findings = []
    try:
        settings = Settings.from_mapping(workspace_settings(ws.path, os.environ))
    except MemstrataError:
        settings = Settings()
    if settings.embedder == "none":
        findings.append(Finding(Level.INFO, "search", "embeddings are off by setting: BM25 only"))
    else:
        try:
            model, tokenizer = settings.embed_model, settings.embed_tokenizer
            spec = settings.embedder  # from the files: a name, never an object
            if isinstance(spec, str):
                spec = load_embedder(spec, model=model, tokenizer=tokenizer)
            name = spec.name
            findings.append(Finding(Level.OK, "search", f"hybrid: BM25 and {name} vectors"))
        except (BackendUnavailable, MemstrataError) as exc:
            findings.append(Finding(Level.WARN, "search", f"search runs on BM25 alone: {exc}"))
    index = ws.system / "index.sqlite"
    if not index.exists():
        findings.append(
            Finding(
                Level.INFO,
                "index",
                "no search index yet: the first search builds it (or `memstrata reindex`)",
            )
        )
        return findings
    try:
        with contextlib.closing(sqlite3.connect(f"file:{index}?mode=ro", uri=True)) as db:
            chunks = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
            vectors = db.execute("SELECT count(*) FROM vectors").fetchone()[0]
    except sqlite3.Error as exc:
        return [
            *findings,
            Finding(
                Level.WARN, "index", f"{index} cannot be read ({exc}); the next search rebuilds it"
            ),
        ]
    findings.append(
        Finding(
            Level.OK,
            "index",
            f"{chunks} chunk(s), {vectors} vector(s), {index.stat().st_size} bytes",
        )
    )
    return findings


def _capture_rules(ws: Workspace) -> list[Finding]:
    if not ws.rules.is_dir():
        return []
    packs = sorted(path.name for path in ws.rules.glob("*.toml"))
    try:
        load_rules(ws.rules)
    except MemstrataError as exc:
        return [Finding(Level.ERROR, "capture rules", f"{exc}; `observe` cannot run until fixed")]
    return [Finding(Level.OK, "capture rules", f"workspace packs: {', '.join(packs) or 'none'}")]


def _quarantine(ws: Workspace) -> list[Finding]:
    entries = list_quarantine(ws.volume)
    if not entries:
        return [Finding(Level.OK, "quarantine", "empty")]
    findings = [
        Finding(
            Level.WARN,
            "quarantine",
            f"quarantined: {len(entries)} piece(s) of unreadable data were set aside, "
            f"byte for byte, in {ws.file(QUARANTINE.rstrip('/'))}",
        )
    ]
    for entry in entries:
        if entry.original == "MEMORY.md" and entry.reason.startswith("damaged:"):
            fix = (
                f"if that change was meant, take it in with `memstrata accept-edit {entry.stored}`"
                " (what it deletes stays restorable)"
            )
        else:
            fix = (
                f"to restore, repair the bytes and append them back to {entry.original}, "
                "then delete the quarantined copy"
            )
        findings.append(
            Finding(
                Level.WARN,
                "quarantine",
                f"quarantined {entry.stored} ({entry.size} bytes) from {entry.original}: "
                f"{entry.reason}; {fix}",
            )
        )
    return findings


def _leftovers(ws: Workspace) -> list[Finding]:
    temps = [
        entry.name
        for folder in (ws.path, ws.path / "memory", ws.system)
        if folder.is_dir()
        for entry in folder.iterdir()
        if TEMP_MARK in entry.name
    ]
    if not temps:
        return []
    return [
        Finding(
            Level.INFO,
            "files",
            f"{len(temps)} temporary file(s) from an interrupted write ({', '.join(temps[:3])}); "
            "the next open removes them",
        )
    ]
