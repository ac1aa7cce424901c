"""``Memory``: the facade an agent holds for one workspace.

``Memory`` composes one ``Engine`` (RAM state, journal, checkpoints, the
workspace lock and the write events) and parts that each hold the engine and
never import each other: ``Facts`` (long-term facts), ``Observer`` (capture),
``Sessions`` (transcripts), ``Searcher`` (the index), ``PromptBuilder`` (the
prompt context and session summaries), ``Documents`` and the layers. The
verbs an agent calls every turn are flat (``observe``, ``remember``,
``search``, ``build_context``, ``record_turn``), with the facts' reads and
writes; families are sub-objects: ``memory.sessions``, ``memory.core``,
``memory.working``, ``memory.semantic``, ``memory.notes``, ``memory.lessons``,
``memory.documents``.

Invariants (each part's module states its own):

* **Secrets never reach disk.** Every text is passed through
  ``capture.secrets.redact`` before it is written anywhere.
* **Acknowledged means durable**: a write returns after its bytes are
  fsynced (``sync=False`` opts ``remember`` into group commit).
* **Every write is decided on the latest state**, under the workspace lock.
* **Reads are served from RAM** and cost one ``stat`` of the journal.
* **Write hooks** hear of every write once it is durable, outside the lock.
"""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Unpack

from ..capture.scan import load_rules
from ..config import Settings, SettingsFields
from ..context.build import Context
from ..context.summarize import Summarizer
from ..context.tokens import EstimateCounter, TokenCounter
from ..context.window import ContextWindow, Message, WindowSettings
from ..errors import InvalidInput, NotFound
from ..index.hybrid import Hit, Weights
from ..model import Capture, CompactResult, Item, Source, Status, clean_session
from ..storage.files import list_quarantine, storage_errors
from ..storage.workspace import Workspace, init_workspace
from ..stores.lessons import Lesson
from ..stores.longterm import Forgotten
from ..stores.session_state import StateEntry
from ..stores.transcripts import Turn
from .capture import Lessons, Observer
from .context import PromptBuilder, SessionSummary
from .documents import Documents
from .engine import Engine
from .events import WriteHook
from .facts import Facts
from .layers import Core, Notes, Semantic, Working, migrate_at_open
from .search import IndexReport, Progress, Searcher
from .sessions import Sessions

__all__ = ["Memory"]


class Memory:
    """Layered, durable memory of one workspace (use ``Memory.open``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._facts = Facts(engine)
        self._observer = Observer(engine)
        self._search = Searcher(engine)
        self._prompts = PromptBuilder(engine)
        self.sessions = Sessions(engine)
        self.documents = Documents(engine)
        self.lessons = Lessons(engine)
        self.core = Core(engine)
        self.working = Working(engine)
        self.semantic = Semantic(engine)
        self.notes = Notes(engine)

    # -- lifecycle ------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        group: str | None = None,
        *,
        create: bool = True,
        read_only: bool | None = None,
        settings: Settings | None = None,
        **fields: Unpack[SettingsFields],
    ) -> Memory:
        """Open the workspace at ``path`` (``group``: ``path/groups/<group>``).

        ``create`` makes the layout when it is missing. ``settings`` (a
        ``memstrata.config.Settings``), or its fields as keyword arguments,
        tune it. Capture rule packs in the workspace's ``rules/`` folder are
        added to the built-in ones. ``read_only`` opens it for reads only (by
        default: when it cannot be written, e.g. on a read-only mount); writes
        then fail with one line.
        """
        if settings is not None and fields:
            raise InvalidInput("give settings= or its fields as keywords, not both")
        chosen = settings if settings is not None else Settings.from_mapping(dict(fields))
        workspace = Workspace.locate(Path(path).expanduser(), group)
        if read_only is None:
            read_only = workspace.exists() and not os.access(workspace.system, os.W_OK)
        if create and not read_only:
            init_workspace(workspace)
        else:
            workspace.require()
        rules = load_rules(workspace.rules) if workspace.rules.is_dir() else None
        engine = Engine(workspace, chosen, rules, read_only=read_only)
        memory = cls(engine)
        try:
            if read_only:
                with storage_errors(f"read the workspace at {workspace.path}"):
                    engine.load()
                    memory.sessions.upgrade_at_open()
            else:
                with storage_errors(f"open the workspace at {workspace.path}"), engine.lock:
                    engine.load()
                    memory.sessions.upgrade_at_open()
                    migrate_at_open(engine)
        except BaseException:
            engine.closed = True
            engine.journal.close()
            engine.lock.close()
            raise
        engine.opened()
        return memory

    def close(self) -> None:
        """Checkpoint what is pending and release the files (idempotent)."""
        self.engine.close()

    def flush(self) -> None:
        """Make everything durable and render MEMORY.md and the snapshot now."""
        self.engine.flush()

    def __enter__(self) -> Memory:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def workspace(self) -> Workspace:
        """The workspace's layout (its paths)."""
        return self.engine.workspace

    @property
    def settings(self) -> Settings:
        """The settings it was opened with."""
        return self.engine.settings

    @property
    def read_only(self) -> bool:
        """Whether writes are refused (a read-only workspace)."""
        return self.engine.read_only

    @property
    def notices(self) -> tuple[str, ...]:
        """Problems found and handled since open (quarantined files, torn records...)."""
        return tuple(self.engine.notice_log)

    def add_write_hook(self, hook: WriteHook) -> None:
        """Call ``hook(event)`` after every durable write of this ``Memory``."""
        if not callable(hook):
            raise InvalidInput("a write hook must be callable")
        self.engine.events.hooks.append(hook)

    def remove_write_hook(self, hook: WriteHook) -> None:
        """Stop calling ``hook``; ``NotFound`` if it was not added."""
        try:
            self.engine.events.hooks.remove(hook)
        except ValueError:
            raise NotFound("that write hook was not added") from None

    def status(self) -> Status:
        """Counts, journal position and anything open had to report."""
        self.engine.check_open()
        self.engine.refresh()
        with self.engine.state:
            live = sum(1 for item in self.engine.store.items.values() if item.is_live)
            return Status(
                workspace=str(self.engine.workspace.path),
                group=self.engine.workspace.group,
                items=live,
                superseded=len(self.engine.store.items) - live,
                lessons=len(self.engine.lessons.lessons),
                lsn=self.engine.store.lsn,
                journal_records=len(self.engine.journal.records),
                journal_bytes=self.engine.journal.size,
                unsynced=self.engine.journal.unsynced,
                quarantined=len(list_quarantine(self.engine.workspace.quarantine)),
                notices=tuple(self.engine.notice_log),
            )

    def window(
        self,
        session: str,
        limit_tokens: int,
        *,
        counter: TokenCounter | None = None,
        settings: WindowSettings | None = None,
    ) -> ContextWindow:
        """A conversation window for ``session`` wired to this memory: exchanges
        go to ``memory/working-buffer.md`` past 50 %; before a compaction the
        user messages about to leave are observed (their durable facts are
        captured first); after it, the next user message gets recovery context:
        the end of the working buffer, the session state and today's notes."""
        name = clean_session(session)
        if name is None:
            raise InvalidInput("a window needs a session")
        self.engine.check_open()

        def flush(dropped: builtins.list[Message]) -> None:
            for message in dropped:
                if message.role == "user" and message.content.strip():
                    self._observer.observe(message.content, session=name)

        return ContextWindow(
            limit_tokens,
            counter=counter or EstimateCounter(),
            settings=settings or WindowSettings(),
            buffer_path=self.engine.workspace.path / "memory" / "working-buffer.md",
            flush=flush,
            # recovery takes at most ~15 % of the window, so it never causes the next compaction
            recovery=lambda: self._prompts.recovery_context(
                name, chars=max(limit_tokens * 4 * 15 // 100, 200)
            ),
        )

    # -- capture: before the agent answers (capture.py) ---------------------

    def observe(
        self,
        text: str,
        *,
        session: str | None = None,
        user: str | None = None,
        source: Source | str = Source.USER,
    ) -> builtins.list[Capture]:
        """Capture what a message states, before the agent answers it."""
        return self._observer.observe(text, session=session, user=user, source=source)

    def session_state(self, session: str | None = None) -> builtins.list[StateEntry]:
        """The entries of a session's SESSION-STATE.md, oldest first."""
        return self._observer.session_state(session)

    def record_exchange(
        self, user: str, agent: str, *, session: str | None = None, at: datetime | None = None
    ) -> Path:
        """Append one exchange to today's daily note ``memory/YYYY-MM-DD.md``; returns it."""
        return self._observer.record_exchange(user, agent, session=session, at=at)

    def record_tool_failure(
        self, tool: str, args: Any, error: str | BaseException, *, session: str | None = None
    ) -> Lesson:
        """Keep the lesson of a failed tool call (a repeat is counted, not stored twice)."""
        return self._observer.record_tool_failure(tool, args, error, session=session)

    # -- long-term facts (facts.py) -----------------------------------------

    def remember(
        self,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
        user: str | None = None,
        sync: bool = True,
    ) -> Item:
        """Store a long-term fact; durable when this returns (unless ``sync=False``)."""
        return self._facts.remember(
            text, category=category, source=source, session=session, user=user, sync=sync
        )

    def supersede(
        self,
        item_id: str,
        text: str,
        *,
        category: str | None = None,
        source: Source | str = Source.USER,
        session: str | None = None,
        user: str | None = None,
    ) -> Item:
        """Replace a live fact by a corrected one; returns the new (live) item."""
        return self._facts.supersede(
            item_id, text, category=category, source=source, session=session, user=user
        )

    def forget(self, item_id: str) -> Item:
        """Delete an item (durable on return); returns what was deleted."""
        return self._facts.forget(item_id)

    def forgotten(self, limit: int | None = None) -> builtins.list[Forgotten]:
        """Facts deleted by ``forget`` or by hand that can still be restored, newest first."""
        return self._facts.forgotten(limit)

    def restore(self, item_id: str) -> Item:
        """Bring a forgotten fact back as it was (journaled, durable on return)."""
        return self._facts.restore(item_id)

    def accept_edit(self, stored: str | None = None) -> int:
        """Take in a MEMORY.md that was set aside as damage, as the person saved it."""
        return self._facts.accept_edit(stored)

    def compact(self, max_items: int | None = None) -> CompactResult:
        """De-duplicate (newest wins) and keep at most ``max_items`` items, newest first."""
        return self._facts.compact(max_items)

    def get(self, item_id: str) -> Item:
        """The item with this id; ``NotFound`` if there is none."""
        return self._facts.get(item_id)

    def list(
        self,
        *,
        category: str | None = None,
        session: str | None = None,
        source: Source | str | None = None,
        include_superseded: bool = False,
        limit: int | None = None,
    ) -> builtins.list[Item]:
        """Items, newest first, filtered by category, session and source."""
        return self._facts.list(
            category=category,
            session=session,
            source=source,
            include_superseded=include_superseded,
            limit=limit,
        )

    # -- search (search.py) --------------------------------------------------

    def search(
        self,
        query: str,
        *,
        k: int = 10,
        layers: Iterable[str] | None = None,
        session: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        source: str | None = None,
        include_superseded: bool = False,
        weights: Weights | None = None,
    ) -> builtins.list[Hit]:
        """The ``k`` best chunks for ``query`` (BM25 and vectors fused), with citations."""
        return self._search.search(
            query,
            k=k,
            layers=layers,
            session=session,
            since=since,
            until=until,
            source=source,
            include_superseded=include_superseded,
            weights=weights,
        )

    def reindex(
        self, *, full: bool = False, progress: Progress | None = None, warm: bool = False
    ) -> IndexReport:
        """Bring the index up to date with every file now (``full``: rebuild it)."""
        return self._search.reindex(full=full, progress=progress, warm=warm)

    def index_status(self) -> dict[str, Any]:
        """Index size, chunks, vectors, embedder, and files changed since the last sync."""
        return self._search.index_status()

    def gate(self, prompt: str, budget_tokens: int, *, k: int = 20) -> builtins.list[Hit]:
        """The memory chunks most relevant to the prompt's tail, within ``budget_tokens``."""
        return self._search.gate(prompt, budget_tokens, k=k)

    # -- the prompt (context.py) ---------------------------------------------

    def build_context(
        self,
        prompt: str,
        *,
        session: str | None = None,
        budget_tokens: int,
        counter: TokenCounter | None = None,
    ) -> Context:
        """The prompt context for ``prompt``: every layer in order, within ``budget_tokens``."""
        return self._prompts.build_context(
            prompt, session=session, budget_tokens=budget_tokens, counter=counter
        )

    def recovery_context(self, session: str | None = None, *, chars: int = 4000) -> str:
        """What an agent needs after its window was compacted (Qanot)."""
        return self._prompts.recovery_context(session, chars=chars)

    def compact_session(
        self, session: str, *, summarizer: Summarizer | None = None
    ) -> SessionSummary:
        """Summarize the session's turns since its last summary (see the module)."""
        return self._prompts.compact_session(session, summarizer=summarizer)

    # -- transcripts (sessions.py) -------------------------------------------

    def record_turn(
        self,
        session: str,
        *,
        user: str,
        assistant: str,
        reasoning: str | None = None,
        tool_calls: Sequence[Mapping[str, Any]] = (),
        tool_results: Sequence[Mapping[str, Any]] = (),
        meta: Mapping[str, Any] | None = None,
        at: datetime | None = None,
    ) -> Turn:
        """Append one completed turn to the session's transcript; durable on return."""
        return self.sessions.record_turn(
            session,
            user=user,
            assistant=assistant,
            reasoning=reasoning,
            tool_calls=tool_calls,
            tool_results=tool_results,
            meta=meta,
            at=at,
        )
