"""``memstrata import KIND SOURCE`` and ``memstrata export KIND DEST``: the
importers and exporters (``memstrata.importers``), behind ``cli.transfer``'s
commands (KIND ``memstrata``, or a bare directory, is the whole-workspace copy).

Imported lazily: nothing here is loaded at CLI start-up.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import Progress as Bar

from ..config import resolve_root, settings_from_env, workspace_settings
from ..errors import NotFound
from ..importers import ImportReport, import_source
from ..importers.export import export_jsonl, export_markdown
from ..memory import Memory
from ..storage.workspace import Workspace
from .base import console, open_memory, print_json

__all__ = ["export_kind", "import_kind"]

_BAR_FROM = 100  # records: a progress bar for sources at least this large


def _settings(root: Path | str, group: str | None) -> dict[str, Any]:
    if isinstance(root, str):
        return settings_from_env(os.environ)
    return workspace_settings(Workspace.locate(root, group).path, os.environ)


def _open(root: Path | str, group: str | None, dry_run: bool) -> Memory | None:
    """The target (a dry run opens it read-only, and a missing one is None)."""
    settings = _settings(root, group)
    if not dry_run:
        return Memory.open(root, group, **settings)
    try:
        return Memory.open(root, group, create=False, read_only=True, **settings)
    except NotFound:
        return None


@contextmanager
def _progress(as_json: bool) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on stderr, only on a terminal (and for a large source)."""
    if as_json or not sys.stderr.isatty():
        yield None
        return
    with Bar(console=Console(stderr=True), transient=True) as bar:
        task = None

        def advance(done: int, total: int) -> None:
            nonlocal task
            if total < _BAR_FROM:
                return
            if task is None:
                task = bar.add_task("importing", total=total)
            bar.update(task, completed=done)

        yield advance


def import_kind(
    kind: str,
    source: str,
    into: str | None,
    group: str | None,
    *,
    dry_run: bool,
    move: bool,
    as_json: bool,
) -> None:
    """``memstrata import KIND SOURCE`` (see ``memstrata.importers``)."""
    root = resolve_root(into, os.environ)
    memory = _open(root, group, dry_run)

    def open_group(name: str) -> Memory | None:
        return _open(root, name, dry_run)

    try:
        with _progress(as_json) as progress:
            report = import_source(
                kind,
                source,
                memory,
                dry_run=dry_run,
                move=move,
                open_group=open_group,
                progress=progress,
            )
    finally:
        if memory is not None:
            memory.close()
    _show_import(report, as_json)


def _show_import(report: ImportReport, as_json: bool) -> None:
    if as_json:
        print_json(report.to_dict())
        return
    counts = report.counts()
    verb = "would take" if report.dry_run else "took"
    console.print(
        f"{report.kind} {report.source} -> {report.target}: {verb} {counts['fact']} fact(s), "
        f"{counts['turn']} turn(s), {counts['document']} document(s); "
        f"skipped {counts['skipped']}",
        markup=False,
        highlight=False,
    )
    reasons = Counter(entry["reason"] for entry in report.skipped)
    for reason, count in reasons.most_common():
        first = next(entry["ref"] for entry in report.skipped if entry["reason"] == reason)
        console.print(f"  skipped {count}: {reason} (e.g. {first})", markup=False, highlight=False)
    if report.moved:
        console.print(f"  removed {len(report.moved)} q15 turn file(s) (--move)")


def export_kind(
    kind: str, dest: str, workspace: str | None, group: str | None, as_json: bool
) -> None:
    """``memstrata export jsonl FILE`` / ``export openclaw|markdown DIR``."""
    target = Path(dest).expanduser()
    with open_memory(workspace, group) as memory:
        written = (export_jsonl if kind == "jsonl" else export_markdown)(memory, target)
        where = memory.workspace.where
    if as_json:
        key = "lines" if kind == "jsonl" else "files"
        print_json({"kind": kind, "source": where, "target": str(target), key: len(written)})
    else:
        what = "fact(s)" if kind == "jsonl" else "file(s)"
        console.print(f"{where} -> {target}: exported {len(written)} {what} ({kind})", markup=False)
