"""The pages of the inspector: each view takes the query's values and gives a
template and its data; each verb writes through ``Memory`` and names the page
to go to.

Invariants:

* Views only read (``pages``, ``history``, ``Memory``'s reads); verbs call
  ``Memory.supersede``, ``forget`` or ``restore`` (journaled, fsynced before
  they return) and nothing else writes.
* Every number a person types is checked here (``InvalidInput`` names it).
* A file is named by the person (``/file?path=``) and goes through the path
  guard; a note by its name among ``memory.notes.list()``.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import InvalidInput, MemstrataError, NotFound
from ..memory import Memory
from ..storage.layers import SEARCHABLE
from ..stores.core import listed as core_files
from .history import Timeline
from .pages import PER_PAGE, FactFilter, Pages, read_guarded

__all__ = ["Views"]

View = tuple[str, dict[str, Any]]
TURNS_PER_PAGE = 50
AUDIT_LIMIT = 200
MAX_BUDGET = 1_000_000
# A file is shown a window of lines at a time (a 100k-fact MEMORY.md has 100k
# lines); one bigger than RENDER_LIMIT characters is not rendered as Markdown.
WINDOW_LINES = 400
CONTEXT_LINES = 40
RENDER_LIMIT = 256 * 1024
HEALTH_SECONDS = 60.0
WHY_NOT_K = 200
FLUSH_AT_ONCE = 20_000
DEFAULT_LAYERS = ("long_term", "semantic", "notebook", "daily_notes", "lessons", "transcripts")


def _int(params: dict[str, str], name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {raw[:20]!r}") from None
    if not low <= value <= high:
        raise InvalidInput(f"{name} must be between {low} and {high}")
    return value


def _lines(value: str) -> tuple[int, int]:
    if not value:
        return 0, 0
    first, _, last = value.partition("-")
    try:
        start = int(first)
        end = int(last) if last else start
    except ValueError:
        raise InvalidInput(f"lines must be N or N-M, not {value[:20]!r}") from None
    return start, max(start, end)


class Health:
    """``doctor``'s findings, found on a thread at most once a ``HEALTH_SECONDS``
    (it reads every file: seconds at 100k facts), so a page never waits for it.
    A page shows ``latest()``; the app calls ``due()`` once the Overview was
    sent, so the check's process does not slow the page that asked for it."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._lock = threading.Lock()
        self._found: list[dict[str, str]] = []
        self._at: float | None = None
        self._running = False
        self._child: subprocess.Popen[str] | None = None  # the check running now
        self._stopped = False

    def latest(self) -> tuple[list[dict[str, str]], float | None]:
        """The last findings and when they were found (None: not yet)."""
        with self._lock:
            return self._found, self._at

    def due(self) -> None:
        """Start a check on a thread when the findings are older than ``HEALTH_SECONDS``."""
        with self._lock:
            stale = self._at is None or time.monotonic() - self._at > HEALTH_SECONDS
            if stale and not self._running and not self._stopped:
                self._running = True
                thread = threading.Thread(target=self._check, name="memstrata-ui-doctor")
                thread.daemon = True
                thread.start()

    def _check(self) -> None:
        try:
            found = self._doctor()
        except (OSError, ValueError, KeyError, subprocess.SubprocessError) as exc:
            found = [{"level": "error", "check": "doctor", "message": f"failed: {exc}"}]
        with self._lock:
            self._found, self._at, self._running = found, time.monotonic(), False

    def _doctor(self) -> list[dict[str, str]]:
        """``memstrata doctor --json`` in another process: it reads every file, and
        here it would hold the interpreter's lock for seconds at 100k facts."""
        ws = self.memory.workspace
        command = [sys.executable, "-m", "memstrata", "doctor", "--json"]
        package_root = str(Path(__file__).resolve().parents[2])
        path = os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")]))
        env = {**os.environ, "PYTHONPATH": path}
        if ws.url is not None:  # a database: its URL by the environment, never in argv
            env["MEMSTRATA_DATABASE_URL"] = ws.url
        else:
            command += ["-w", str(ws.root)]
        if ws.group:
            command += ["--group", ws.group]
        with self._lock:
            if self._stopped:
                raise OSError("the inspector is stopping")
            child = self._child = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
            )
        try:
            stdout, _ = child.communicate(timeout=600)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise
        finally:
            with self._lock:
                self._child = None
        findings = json.loads(stdout)["findings"]
        return [{k: str(f[k]) for k in ("level", "check", "message")} for f in findings]

    def stop(self) -> None:
        """No more checks; a check still running is ended (the server stops:
        its child must not read every file for seconds after it, beside the
        next process on two cores)."""
        with self._lock:
            self._stopped = True
            child = self._child
        if child is not None and child.poll() is None:
            child.kill()


class Flusher:
    """Renders MEMORY.md soon after a write made here, on a thread, while that is
    cheap (up to ``FLUSH_AT_ONCE`` facts): the write is durable when its verb
    returns; past that, rendering takes seconds (1.9 s at 100k facts) during
    which the pages would crawl, and the engine's next checkpoint does it."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self._wanted = threading.Event()
        self._thread: threading.Thread | None = None

    def soon(self) -> None:
        if len(self.memory.engine.store.items) > FLUSH_AT_ONCE:
            return
        self._wanted.set()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="memstrata-ui-flush")
            self._thread.daemon = True
            self._thread.start()

    def _run(self) -> None:
        while self._wanted.wait():
            self._wanted.clear()
            try:
                self.memory.flush()
            except MemstrataError:
                return  # closed (the server stops): close checkpointed it


class Views:
    """The views and verbs (see the module)."""

    def __init__(self, memory: Memory, pages: Pages, timeline: Timeline) -> None:
        self.memory = memory
        self.pages = pages
        self.timeline = timeline
        self.health = Health(memory)
        self.flusher = Flusher(memory)

    # -- overview -------------------------------------------------------------------

    def overview(self, params: dict[str, str]) -> View:
        memory = self.memory
        status = memory.status()
        sessions = memory.sessions.list()
        stats = self.pages.overview(sessions)
        layers = [
            ("long-term facts (live)", stats.live),
            ("superseded facts", stats.superseded),
            ("forgotten (restorable)", stats.forgotten),
            ("sessions", len(sessions)),
            ("turns", sum(info.turns + info.archived for info in sessions)),
            ("semantic files", len(memory.workspace.volume.list("semantic/"))),
            ("notebook notes", len(memory.notes.list())),
            ("lessons", status.lessons),
        ]
        compactions = [info for info in sessions if info.archived][:10]
        return "overview.html", {
            "title": "Overview",
            "status": status,
            "stats": stats,
            "layers": layers,
            "compactions": compactions,
            "summaries": self.pages.summaries(),
            "health": self._health(),
        }

    def _health(self) -> list[dict[str, str]]:
        found, at = self.health.latest()
        if at is None:
            return [{"level": "info", "check": "doctor", "message": "checking… reload in a moment"}]
        return found

    # -- facts ------------------------------------------------------------------------

    def facts(self, params: dict[str, str]) -> View:
        wanted = FactFilter.parse(params)
        page = _int(params, "page", 1, 1, 10**9)
        items, total = self.pages.facts(wanted, page)
        return "facts.html", {
            "title": "Facts",
            "items": items,
            "total": total,
            "page": page,
            "pages": max(1, math.ceil(total / PER_PAGE)),
            "filter": wanted,
            "facets": self.pages.facets(),
        }

    def fact(self, params: dict[str, str], item_id: str) -> View:
        item, forgotten_at = self.pages.fact(item_id)
        events = self.timeline.of(item.id)
        newer = None
        if item.superseded_by:
            try:
                newer, _ = self.pages.fact(item.superseded_by)
            except NotFound:
                newer = None
        return "fact.html", {
            "title": f"Fact {item.id}",
            "item": item,
            "forgotten_at": forgotten_at,
            "events": events,
            "newer": newer,
            "older": self.pages.replaced(item.id),
            "done": params.get("done", ""),
        }

    def correct(self, form: dict[str, str], item_id: str) -> str:
        text = form.get("text", "").strip()
        if not text:
            raise InvalidInput("the corrected text is empty")
        category = form.get("category", "").strip() or None
        new = self.memory.supersede(item_id, text, category=category)
        self.flusher.soon()  # durable already; MEMORY.md shows it in a moment
        return f"/facts/{quote(new.id, safe='')}?done=corrected"

    def forget(self, form: dict[str, str], item_id: str) -> str:
        item = self.memory.forget(item_id)
        self.flusher.soon()  # durable already; MEMORY.md shows it in a moment
        return f"/facts/{quote(item.id, safe='')}?done=forgotten"

    def restore(self, form: dict[str, str], item_id: str) -> str:
        item = self.memory.restore(item_id)
        self.flusher.soon()  # durable already; MEMORY.md shows it in a moment
        return f"/facts/{quote(item.id, safe='')}?done=restored"

    # -- search -----------------------------------------------------------------------

    def search(self, params: dict[str, str]) -> View:
        query = params.get("q", "").strip()
        k = _int(params, "k", 10, 1, 50)
        chosen = [layer for layer in params.get("layers", "").split(",") if layer]
        unknown = set(chosen) - SEARCHABLE
        if unknown:
            raise InvalidInput(f"unknown layer {', '.join(sorted(unknown))}")
        superseded = params.get("superseded") == "1"
        hits: list[Any] = []
        from ..index.why import Why  # the search machinery: not imported at start-up

        why = Why()
        if query:
            found = self.memory.search(
                query, k=k, layers=chosen or None, include_superseded=superseded, why=why
            )
            hits = [
                {"hit": hit, "why": explained, "link": _citation_link(hit)}
                for hit, explained in zip(found, why.hits, strict=True)
            ]
        expect = params.get("expect", "").strip().lstrip("^")
        verdict = None
        if query and expect:
            options = {"layers": chosen or None, "include_superseded": superseded}
            verdict = self._why_not(query, expect, [h["hit"] for h in hits], options)
        return "search.html", {
            "expect": expect,
            "verdict": verdict,
            "title": "Search",
            "query": query,
            "k": k,
            "hits": hits,
            "layers": sorted(SEARCHABLE - {"session_state"}),
            "chosen": chosen,
            "superseded": superseded,
            "embedder": self.memory.settings.embedder,
        }

    def _why_not(
        self, query: str, expect: str, shown: list[Any], options: dict[str, Any]
    ) -> dict[str, Any]:
        """Where fact ``expect`` stands for ``query``: among the hits shown, lower
        down (a search of ``WHY_NOT_K``), or why it cannot be found at all."""
        item, forgotten_at = self.pages.fact(expect)
        verdict: dict[str, Any] = {"item": item, "rank": None, "why": None, "reason": ""}
        for rank, hit in enumerate(shown, start=1):
            if hit.layer == "long_term" and hit.ref == item.id:
                verdict["rank"] = rank
                verdict["reason"] = f"it is hit {rank} above"
                return verdict
        if forgotten_at:
            verdict["reason"] = f"it was forgotten ({forgotten_at}), and is not searched"
            return verdict
        if not item.is_live and not options["include_superseded"]:
            verdict["reason"] = "it is superseded: only live facts are searched unless asked"
            return verdict
        layers = options["layers"]
        if layers is not None and "long_term" not in layers:
            verdict["reason"] = "its layer, long_term, is not among the layers searched"
            return verdict
        from ..index.why import Why  # the search machinery: not imported at start-up

        why = Why()
        deeper = self.memory.search(query, k=WHY_NOT_K, why=why, **options)
        for rank, (hit, explained) in enumerate(zip(deeper, why.hits, strict=True), start=1):
            if hit.layer == "long_term" and hit.ref == item.id:
                verdict.update(rank=rank, why=explained)
                verdict["reason"] = (
                    f"it ranks {rank} in a search of the best {WHY_NOT_K} (whose wider "
                    "candidate lists can move ranks a little): below the hits shown"
                )
                return verdict
        listed = why.candidates.get(item.id)
        if listed is not None:
            words, meaning = (f"rank {r}" if r else "absent" for r in listed)
            verdict["reason"] = (
                f"it was a candidate (BM25 list: {words}; vector list: {meaning}) but was "
                f"ranked below the best {WHY_NOT_K} once the lists were fused "
                "(or the search found nothing above its relevance floor)"
            )
            return verdict
        verdict["reason"] = (
            "it was not a candidate: no word of the query (as stemmed) is in it, or the "
            "words it shares are in more chunks than a list holds, and it is not among "
            "the nearest by meaning"
        )
        return verdict

    # -- sessions ---------------------------------------------------------------------

    def sessions(self, params: dict[str, str]) -> View:
        found = self.memory.sessions.list()
        page = _int(params, "page", 1, 1, 10**9)
        start = (page - 1) * PER_PAGE
        return "sessions.html", {
            "title": "Sessions",
            "sessions": found[start : start + PER_PAGE],
            "total": len(found),
            "page": page,
            "pages": max(1, math.ceil(len(found) / PER_PAGE)),
        }

    def session(self, params: dict[str, str], session: str) -> View:
        data = self.pages.session(session)
        turns = data["turns"]
        pages = max(1, math.ceil(len(turns) / TURNS_PER_PAGE))
        wanted = params.get("turn", "")
        at = next((n for n, turn in enumerate(turns) if turn.id == wanted), None)
        default = pages if at is None else at // TURNS_PER_PAGE + 1
        page = _int(params, "page", default, 1, pages)
        start = (page - 1) * TURNS_PER_PAGE
        audit = data["audit"]
        return "session.html", {
            "title": f"Session {session}",
            "session": session,
            **data,
            "turns": turns[start : start + TURNS_PER_PAGE],
            "page": page,
            "pages": pages,
            "audit": audit[-AUDIT_LIMIT:],
            "audit_total": len(audit),
            "target": wanted,
        }

    # -- layers and files ---------------------------------------------------------------

    def layers(self, params: dict[str, str]) -> View:
        memory = self.memory
        volume = memory.workspace.volume
        groups = {
            "core": core_files(volume),
            "working": ["working/WORKING_MEMORY.md"],
            "long-term": ["MEMORY.md"],
            "daily notes": [rel for rel, _ in volume.list("memory/") if rel.endswith(".md")][-31:],
            "semantic": [rel for rel, _ in volume.list("semantic/") if rel.endswith(".md")],
            "notebook": [note.rel for note in memory.notes.list()],
            "summaries": [rel for rel, _ in volume.list("summaries/") if rel.endswith(".md")],
        }
        prompt = params.get("prompt", "")
        budget = _int(params, "budget", 2000, 1, MAX_BUDGET)
        context = None
        if "budget" in params:
            session = params.get("session", "").strip() or None
            context = memory.build_context(prompt, session=session, budget_tokens=budget)
        return "layers.html", {
            "title": "Layers",
            "groups": groups,
            "prompt": prompt,
            "budget": budget,
            "context": context,
        }

    def file(self, params: dict[str, str]) -> View:
        rel, text, all_lines = self.pages.file(params.get("path", ""))
        start, end = _lines(params.get("lines", ""))
        big = len(text) > RENDER_LIMIT
        raw = params.get("view") == "raw" or start > 0 or not rel.endswith(".md") or big
        lines = all_lines if raw else []
        first = _int(params, "from", max(start - CONTEXT_LINES, 1), 1, max(len(lines), 1))
        return "file.html", {
            "title": rel,
            "rel": rel,
            "text": "" if raw else text,
            "lines": lines[first - 1 : first - 1 + WINDOW_LINES],
            "first": first,
            "count": len(lines),
            "window": WINDOW_LINES,
            "start": start,
            "end": end,
            "raw": raw,
            "big": big,
            "backlinks": [],
        }

    def note(self, params: dict[str, str], name: str) -> View:
        notes = self.memory.notes.list()
        note = next((n for n in notes if n.name == name), None)
        if note is None:
            slug = "-".join(name.casefold().split())
            note = next((n for n in notes if n.name.casefold() == slug), None)
        if note is None:
            raise NotFound(f"no note named {name[:60]!r}")
        rel, text = read_guarded(self.memory, note.rel)
        return "file.html", {
            "title": note.name,
            "rel": rel,
            "text": text,
            "lines": text.splitlines()[:WINDOW_LINES],
            "first": 1,
            "count": len(text.splitlines()),
            "window": WINDOW_LINES,
            "start": 0,
            "end": 0,
            "raw": params.get("view") == "raw",
            "big": False,
            "backlinks": self.memory.notes.backlinks(note.name),
        }


def _citation_link(hit: Any) -> str:
    """Where a hit opens: the file at its lines, or the session at its turn."""
    if hit.layer == "transcripts" and hit.session:
        turn_id = quote((hit.ref or "").split("#", 1)[0], safe="")  # a ref is "<turn id>#<n>"
        where = f"?turn={turn_id}#turn-{turn_id}" if turn_id else ""
        return f"/sessions/{quote(hit.session, safe='')}{where}"
    lines = f"&lines={hit.line_start}-{hit.line_end}" if hit.line_start else ""
    anchor = f"#L{hit.line_start}" if hit.line_start else ""
    return f"/file?path={quote(hit.path, safe='')}{lines}{anchor}"
