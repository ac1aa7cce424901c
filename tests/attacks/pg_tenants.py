"""The PostgreSQL campaign's isolation: two tenants writing at once, and not
one row of either visible to the other (issue 15's bar).

A writer (``pg_writes.CHILD``, mode ``mix``) runs on each of two fresh
tenants at once, every text holding its tenant's word (``mark``). While they
write, and once more when they are done, the parent looks from each tenant
for the other's word through:

* every API of ``Memory`` (``API``): facts (``list``, ``get`` of the other's
  ids, ``forgotten``), ``search``, sessions (turns, audit, session state),
  notes, core, working and semantic files, lessons, documents by path,
  ``build_context``, ``recovery_context``, ``status`` and, at the end,
  ``export_to`` (every byte of every file exported);
* the tools (``TOOLS``): ``memstrata.tools.answer`` (``memory_search``,
  ``memory_get`` of MEMORY.md and of the other's files, ``memory_forget`` of
  the other's ids, ``memory_status``) and the memory-tool handler (``view``
  of ``/memories``, ``view`` and ``str_replace`` of the other's files): a
  refusal is no leak, an answer holding the other's words or a write that
  touched the other's files is;
* raw SQL as the app's role (``SQL``): with no tenant set, with an empty one,
  and with the tenant set, every tenant table, any row of the other tenant or
  holding its word (the files' bytes too).

Each hit is a leak. So that no zero is vacuous, each tenant must find its OWN
word through the same channels (``blind`` counts those that do not).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from random import Random
from typing import Any

from memstrata import Memory
from memstrata.errors import MemstrataError, NotFound
from memstrata.postgres.schema import TENANT_TABLES
from memstrata.tools import answer
from memstrata.tools.memory_tool import MemoryToolHandler

from .common import Attack, Try, child_env, child_error
from .pg_kills import child_command, new_mark
from .pg_writes import CORE, MODES, OBSERVED, SEMANTIC, SESSION, doc_path

API = "api"
TOOLS = "tools"
SQL = "sql"
_BYTES = {"memstrata_volume": "content", "memstrata_volume_parts": "data"}


class Side:
    """One tenant as the parent sees it: its open Memory, its word, its things."""

    def __init__(self, url: str, tenant: str, mark: str) -> None:
        self.url, self.tenant, self.mark = url, tenant, mark
        self.memory = Memory.open(url, group=tenant, **MODES["mix"])
        self.tool = MemoryToolHandler(self.memory)

    def ids(self) -> list[str]:
        return [item.id for item in self.memory.list()]

    def notes(self) -> list[str]:
        return [note.rel for note in self.memory.notes.list()]


class Probe:
    """One look from ``me`` for ``other``'s word; tallies leaks and sightings."""

    def __init__(self, me: Side, other: Side, attack: Attack, attempt: Try) -> None:
        self.me, self.other = me, other
        self.attack, self.attempt = attack, attempt

    def look(self, channel: str, what: str, text: Any) -> None:
        """``text`` (anything JSON can say) seen by ``me`` through ``what``."""
        said = text if isinstance(text, str) else json.dumps(text, default=str)
        self.attack.counts[f"looks_{channel}"] += 1
        leaked = said.count(self.other.mark)
        self.attempt.leak(leaked, f"{self.me.tenant} sees {self.other.tenant} by {what}")
        if self.me.mark in said:
            self.attack.counts[f"own_{channel}:{what}"] += 1

    def refused(self, channel: str, what: str, run: Callable[[], Any]) -> None:
        """``run`` reaches for the other's data: it must fail (NotFound, or
        a refusal answer), never give anything."""
        self.attack.counts[f"looks_{channel}"] += 1
        try:
            got = run()
        except NotFound:
            return
        if got is None or (isinstance(got, tuple) and got[1]):  # an Answer refused
            return
        if isinstance(got, str) and got.startswith("Error:"):
            return
        self.attempt.leak(1, f"{self.me.tenant} reached {self.other.tenant} by {what}: {got!r:.80}")


def probe_api(probe: Probe, other_ids: list[str], other_notes: list[str]) -> None:
    memory = probe.me.memory
    look = probe.look
    look(API, "list", [i.text for i in memory.list(include_superseded=True)])
    look(API, "forgotten", [e.item.text for e in memory.forgotten()])
    hits = memory.search(probe.other.mark, k=50)
    look(API, "search", [(hit.path, hit.text, hit.snippet) for hit in hits])
    look(API, "search_own", [h.text for h in memory.search(probe.me.mark, k=5)])
    for item_id in other_ids[:20]:
        probe.refused(API, "get", lambda i=item_id: _unless(memory.get(i), probe.other.mark))
    sessions = memory.sessions.list()
    look(API, "sessions", [s.session for s in sessions])
    if any(s.session == SESSION for s in sessions):
        turns = memory.sessions.turns(SESSION, archived=True)
        look(API, "turns", [t.messages for t in turns])
        look(API, "audit", memory.sessions.audit(SESSION))
    look(API, "session_state", [e.text for e in memory.session_state(OBSERVED)])
    look(API, "notes", [n.name for n in memory.notes.list()])
    for rel in other_notes[:5]:
        name = rel.rsplit("/", 1)[-1].removesuffix(".md")
        probe.refused(API, "notes.read", lambda n=name: memory.notes.read(n))
    look(API, "core", memory.core.read(CORE))
    look(API, "working", memory.working.read())
    look(API, "semantic", [i.text for i in memory.semantic.read(SEMANTIC)])
    look(API, "lessons", [lesson.text for lesson in memory.lessons.list()])
    volume = memory.workspace.volume
    look(API, "files", [rel for rel, _ in volume.list()])
    probe.refused(API, "documents", lambda: volume.read(doc_path(probe.other.mark)))
    prompt = f"what do you know about {probe.other.mark} and {probe.me.mark}?"
    context = memory.build_context(prompt, session=SESSION, budget_tokens=8000)
    look(API, "build_context", context.text)
    look(API, "recovery_context", memory.recovery_context(SESSION))
    look(API, "status", memory.status().to_dict())


def probe_tools(probe: Probe, other_ids: list[str], other_notes: list[str]) -> None:
    me, other = probe.me, probe.other
    memory, look = me.memory, probe.look
    for mark in (other.mark, me.mark):
        look(TOOLS, "memory_search", answer(memory, "memory_search", {"query": mark, "k": 50}))
    first = 1
    while True:  # MEMORY.md, page by page
        got = answer(memory, "memory_get", {"path": "MEMORY.md", "from_line": first})
        look(TOOLS, "memory_get", got.text)
        if got.is_error or not json.loads(got.text)["lines"]:
            break
        first += json.loads(got.text)["lines"]
    for rel in [doc_path(other.mark), *other_notes[:5]]:
        probe.refused(TOOLS, "memory_get", lambda r=rel: answer(memory, "memory_get", {"path": r}))
        command = {"command": "view", "path": f"/memories/{rel}"}
        probe.refused(TOOLS, "memory_tool view", lambda c=command: me.tool.handle(c))
    line = f"line {other.mark}"
    edit = {"command": "str_replace", "path": f"/memories/{doc_path(other.mark)}"}
    edit |= {"old_str": line, "new_str": "taken"}
    probe.refused(TOOLS, "memory_tool str_replace", lambda: me.tool.handle(edit))
    for item_id in other_ids[:5]:
        args = {"id": item_id}
        probe.refused(TOOLS, "memory_forget", lambda a=args: answer(memory, "memory_forget", a))
    look(TOOLS, "memory_status", answer(memory, "memory_status", {}))
    look(TOOLS, "memory_tool view", me.tool.handle({"command": "view", "path": "/memories"}))


def _unless(item: Any, mark: str) -> Any:
    """An item found under another's id is a leak only if it is the other's."""
    return None if mark not in item.text else item


def probe_sql(probe: Probe) -> None:
    """Raw queries as the app's role: no tenant, an empty one, and ``me``."""
    import psycopg

    me, other = probe.me, probe.other
    with psycopg.connect(me.url, autocommit=True) as conn:
        for setting in (None, ""):
            with conn.transaction():
                if setting is not None:
                    conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (setting,))
                rows = sum(_count(conn, f"SELECT count(*) FROM {t}") for t in TENANT_TABLES)
                probe.attack.counts[f"looks_{SQL}"] += len(TENANT_TABLES)
                probe.attempt.leak(rows, f"{rows} row(s) seen with tenant {setting!r}")
        for table in TENANT_TABLES:  # row security off: refused, never bypassed
            probe.attack.counts[f"looks_{SQL}"] += 1
            try:
                with conn.transaction():
                    conn.execute("SET LOCAL row_security TO off")
                    rows = _count(conn, f"SELECT count(*) FROM {table}")
            except psycopg.Error:
                continue
            probe.attempt.leak(rows, f"{rows} row(s) of {table} seen with row_security off")
        with conn.transaction():
            conn.execute("SELECT set_config('memstrata.tenant', %s, true)", (me.tenant,))
            for table in TENANT_TABLES:
                probe.attack.counts[f"looks_{SQL}"] += 1
                query = f"SELECT count(*) FROM {table} WHERE tenant <> %s"
                foreign = _count(conn, query, me.tenant)
                probe.attempt.leak(foreign, f"{foreign} row(s) of another tenant in {table}")
                for mark, own in ((other.mark, False), (me.mark, True)):
                    found = _mentions(conn, table, mark)
                    if own:
                        probe.attack.counts["own_sql_rows"] += found
                    else:
                        probe.attempt.leak(found, f"{found} row(s) of {table} say {other.tenant}")


def _count(conn: Any, query: str, *params: Any) -> int:
    row = conn.execute(query.encode(), params).fetchone()
    return int(row[0]) if row is not None else 0


def _mentions(conn: Any, table: str, mark: str) -> int:
    """Rows of ``table`` whose columns (or file bytes) hold ``mark``."""
    found = _count(conn, f"SELECT count(*) FROM {table} t WHERE strpos(t::text, %s) > 0", mark)
    column = _BYTES.get(table)
    if column is not None:
        where = f"position(convert_to(%s, 'UTF8') in {column}) > 0"
        query = f"SELECT count(*) FROM {table} WHERE {where}"
        found += _count(conn, query, mark)
    return found


def probe_export(probe: Probe, folder: Path) -> None:
    """Every byte of every file ``me`` exports."""
    report = probe.me.memory.export_to(folder)
    probe.attack.counts["exported_files"] += len(report.created)
    for rel in report.created:
        data = (folder / rel).read_bytes().decode(errors="replace")
        probe.look(API, "export", data)


def one_pass(sides: tuple[Side, Side], attack: Attack, attempt: Try, export: Path | None) -> None:
    """Each tenant looks for the other through every channel."""
    for me, other in (sides, sides[::-1]):
        probe = Probe(me, other, attack, attempt)
        other_ids, other_notes = other.ids(), other.notes()
        try:
            probe_api(probe, other_ids, other_notes)
            probe_tools(probe, other_ids, other_notes)
            probe_sql(probe)
        except MemstrataError as exc:
            attempt.exception(exc, f"{me.tenant} looking")
        if export is not None:
            probe_export(probe, export / me.tenant)
    attack.counts["passes"] += 1


def run_tenants(url: str, writes: int, seed: int) -> Attack:
    """Two tenants write ``writes`` calls each at once; every channel probed
    while they write and after (see the module)."""
    attack = Attack("postgres/tenants", seed=seed)
    rng = Random(seed)
    run = uuid.uuid4().hex[:8]
    started = time.perf_counter()
    with attack.attempt("two tenants", seed) as attempt, ExitStack() as stack:
        names = (("ann", f"ann-{run}"), ("bob", f"bob-{run}"))
        marks = {tenant: new_mark(short) for short, tenant in names}
        children = []
        for tenant, mark in marks.items():
            command = child_command(url, tenant, "mix", mark, rng.randrange(2**32), writes)
            child = subprocess.Popen(
                command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=child_env()
            )
            stack.enter_context(child)
            children.append(child)
        stack.callback(lambda: [c.kill() for c in children if c.poll() is None])
        sides = tuple(Side(url, tenant, mark) for tenant, mark in marks.items())
        for side in sides:
            stack.callback(side.memory.close)
        assert len(sides) == 2
        while any(child.poll() is None for child in children):
            one_pass((sides[0], sides[1]), attack, attempt, None)
        seconds = time.perf_counter() - started  # the writers' start-up included
        attack.counts["write_seconds"] = round(seconds, 2)  # type: ignore[assignment]
        for child in children:
            out, err = child.communicate()
            if child.returncode != 0:
                attempt.fail("child_error", child_error(err, child.returncode)[0])
            attack.counts["acknowledged"] += out.count(b"\nA ")
        rate = attack.counts["acknowledged"] / seconds
        attack.counts["writes_per_second"] = round(rate, 1)  # type: ignore[assignment]
        with tempfile.TemporaryDirectory(prefix="memstrata-pg-export-") as folder:
            one_pass((sides[0], sides[1]), attack, attempt, Path(folder))
        _not_blind(attack, attempt)
    attack.seconds = time.perf_counter() - started
    return attack


def _not_blind(attack: Attack, attempt: Try) -> None:
    """Each channel that can show a tenant its own words did (else a zero
    found there would prove nothing)."""
    must = ("list", "search_own", "turns", "notes", "core", "build_context", "export")
    blind = [what for what in must if not attack.counts[f"own_{API}:{what}"]]
    tools = ("memory_search", "memory_get")
    blind += [what for what in tools if not attack.counts[f"own_{TOOLS}:{what}"]]
    if not attack.counts["own_sql_rows"]:
        blind.append("sql")
    attack.counts["blind"] = len(blind)
    if blind:
        attempt.fail("blind", f"a tenant does not see its own words by {blind}")
