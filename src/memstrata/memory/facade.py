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
from dataclasses import replace
from types import TracebackType
from typing import Unpack

from ..capture.scan import load_rules
from ..config import Settings, SettingsFields, workspace_location
from ..context.tokens import EstimateCounter, TokenCounter
from ..context.window import ContextWindow, Message, WindowSettings
from ..errors import InvalidInput, NotFound
from ..model import Status, clean_session
from ..storage.files import storage_errors
from ..storage.quarantine import list_quarantine
from ..storage.workspace import Workspace, init_workspace
from .capture import Lessons, Observer
from .context import PromptBuilder
from .documents import Documents
from .engine import Engine
from .events import WriteHook
from .facts import Facts
from .layers import Core, Notes, Semantic, Working, migrate_at_open
from .live import DEFAULT_INTERVAL, LiveFiles
from .search import IndexOpener, Searcher
from .sessions import Sessions
from .shared import GlobalMemory
from .transfer import Transfer, TransferReport

__all__ = ["Memory"]


class Memory:
    """Layered, durable memory of one workspace (use ``Memory.open``)."""

    def __init__(self, engine: Engine, *, open_index: IndexOpener | None = None) -> None:
        self.engine = engine
        self._facts = Facts(engine)
        self._observer = Observer(engine)
        shared = GlobalMemory(engine.workspace)  # read and ranked once for search and context
        self._search = Searcher(engine, open_index, shared)
        self._prompts = PromptBuilder(engine, shared)
        self.sessions = Sessions(engine)
        self.documents = Documents(engine)
        self.lessons = Lessons(engine)
        self.core = Core(engine)
        self.working = Working(engine)
        self.semantic = Semantic(engine)
        self.notes = Notes(engine)
        self._transfer = Transfer(engine)
        self._live: LiveFiles | None = None
        self.export_to = self._transfer.export_to
        # The verbs an agent calls every turn, and the facts' own reads and
        # writes, are the parts' methods themselves: one definition and one
        # signature each, which type checkers and help() read from the part.
        self.observe = self._observer.observe
        self.session_state = self._observer.session_state
        self.record_exchange = self._observer.record_exchange
        self.record_tool_failure = self._observer.record_tool_failure
        self.remember = self._facts.remember
        self.supersede = self._facts.supersede
        self.forget = self._facts.forget
        self.forgotten = self._facts.forgotten
        self.restore = self._facts.restore
        self.accept_edit = self._facts.accept_edit
        self.compact = self._facts.compact
        self.get = self._facts.get
        self.list = self._facts.list
        self.search = self._search.search
        self.reindex = self._search.reindex
        self.index_status = self._search.index_status
        self.gate = self._search.gate
        self.build_context = self._prompts.build_context
        self.recovery_context = self._prompts.recovery_context
        self.compact_session = self._prompts.compact_session
        self.record_turn = self.sessions.record_turn

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
        open_index: IndexOpener | None = None,
        **fields: Unpack[SettingsFields],
    ) -> Memory:
        """Open the workspace at ``path`` (``group``: ``path/groups/<group>``),
        or on the PostgreSQL database at a ``postgresql://`` URL (``group``: the
        tenant; none is ``main``), which needs ``memstrata[postgres]``.

        ``create`` makes the layout when it is missing. ``settings`` (a
        ``memstrata.config.Settings``), or its fields as keyword arguments,
        tune it; ``embedder`` may also be an object implementing the
        ``memstrata.embed.Embedder`` protocol (``name``, ``dim``,
        ``embed(texts)``). Capture rule packs in the workspace's ``rules/`` folder are
        added to the built-in ones. ``read_only`` opens it for reads only (by
        default: when it cannot be written, e.g. on a read-only mount); writes
        then fail with one line. ``open_index`` opens the search index from the
        engine (any ``index.protocol.Index``; default: the workspace's SQLite file).
        """
        if settings is not None and fields:
            raise InvalidInput("give settings= or its fields as keywords, not both")
        chosen = settings if settings is not None else Settings.from_mapping(dict(fields))
        if not isinstance(chosen.embedder, str):  # the caller's object: checked, wrapped
            from ..embed import plugged_embedder

            chosen = replace(chosen, embedder=plugged_embedder(chosen.embedder))
        location = workspace_location(path)
        if isinstance(location, str):
            from ..postgres.workspace import open_workspace  # the driver is an extra

            remote = open_workspace(location, group, chosen)
            workspace, journal, lock = remote.workspace, remote.journal, remote.lock
            open_index = open_index or remote.open_index
            read_only = bool(read_only)
        else:
            remote, journal, lock = None, None, None
            workspace = Workspace.locate(location, group)
            if read_only is None:
                read_only = workspace.exists() and not os.access(workspace.system, os.W_OK)
        try:
            if create and not read_only:
                init_workspace(workspace)
            else:
                workspace.require()
            packs = _rule_packs(workspace)  # none: the built-in rules, compiled once
            rules = load_rules(extra_packs=packs) if packs else None
        except BaseException:
            if remote is not None:
                remote.close()
            raise
        engine = Engine(workspace, chosen, rules, read_only=read_only, journal=journal, lock=lock)
        memory = cls(engine, open_index=open_index)
        if remote is not None:  # after the parts: they let go of it first
            engine.events.on_close(closed=remote.close)
        try:
            if read_only:
                with storage_errors(f"read the workspace at {workspace.where}"):
                    engine.load()
                    memory.sessions.upgrade_at_open()
            else:
                with storage_errors(f"open the workspace at {workspace.where}"), engine.lock:
                    engine.load()
                    memory.sessions.upgrade_at_open()
                    migrate_at_open(engine)
        except BaseException:
            engine.closed = True
            engine.journal.close()
            engine.lock.close()
            if remote is not None:
                remote.close()
            raise
        engine.opened()
        return memory

    def close(self) -> None:
        """Checkpoint what is pending and release the files (idempotent)."""
        self.engine.close()

    def watch_files(self, interval: float = DEFAULT_INTERVAL) -> LiveFiles | None:
        """Take in hand edits of MEMORY.md and the other searchable files while
        open, within ``interval`` seconds (a polling thread, stopped by
        ``close``: see ``memory.live``). Opt-in: for a long-running process
        (``memstrata mcp`` starts it); a short-lived one sees edits at open.
        Idempotent; None (nothing started) on a read-only memory or a database."""
        self.engine.check_open()
        if self._live is not None:
            return self._live
        if self.engine.read_only or self.engine.workspace.volume.local is None:
            return None
        live = self._live = LiveFiles(self.engine, self._search.files_changed, interval)
        self.engine.events.on_close(closing=live.stop)
        live.start()
        return live

    def import_from(
        self, source: str | os.PathLike[str], group: str | None = None, *, dry_run: bool = False
    ) -> TransferReport:
        """Make this workspace's files those of the workspace at ``source`` (a
        folder or a database URL, and its ``group``): what a person reads there
        is then read here (``memory.transfer``). ``dry_run`` only reports."""
        with Memory.open(source, group, create=False, read_only=dry_run or None) as other:
            files = other._transfer.files()
            where = other.workspace.where
        return self._transfer.load(files, where, dry_run=dry_run)

    def __repr__(self) -> str:
        return f"<Memory {self.engine.workspace.where}>"

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
                workspace=self.engine.workspace.where,
                group=self.engine.workspace.group,
                items=live,
                superseded=len(self.engine.store.items) - live,
                lessons=len(self.engine.lessons.lessons),
                lsn=self.engine.store.lsn,
                journal_records=len(self.engine.journal.records),
                journal_bytes=self.engine.journal.size,
                unsynced=self.engine.journal.unsynced,
                quarantined=len(list_quarantine(self.engine.volume)),
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
        user messages about to leave are observed again (their durable facts are
        captured first, but none that was corrected or forgotten since:
        ``Observer.recapture``); after it, the next user message gets recovery context:
        the end of the working buffer, the session state and today's notes."""
        name = clean_session(session)
        if name is None:
            raise InvalidInput("a window needs a session")
        self.engine.check_open()

        def flush(dropped: builtins.list[Message]) -> None:
            for message in dropped:
                if message.role == "user" and message.content.strip():
                    self._observer.recapture(message.content, session=name)

        return ContextWindow(
            limit_tokens,
            counter=counter or EstimateCounter(),
            settings=settings or WindowSettings(),
            buffer=self.engine.volume,
            flush=flush,
            # recovery takes at most ~15 % of the window, so it never causes the next compaction
            recovery=lambda: self._prompts.recovery_context(
                name, chars=max(limit_tokens * 4 * 15 // 100, 200)
            ),
        )


def _rule_packs(workspace: Workspace) -> builtins.list[tuple[str, str]]:
    """The workspace's own capture rule packs: ``rules/*.toml``, by name."""
    packs = []
    for rel, _ in workspace.volume.list("rules/"):
        if rel.count("/") != 1 or not rel.endswith(".toml"):
            continue
        raw = workspace.volume.read(rel) or b""
        try:
            packs.append((f"{workspace.where}/{rel}", raw.decode("utf-8")))
        except UnicodeDecodeError as exc:
            raise InvalidInput(f"capture rules {rel}: cannot read: {exc}") from None
    return packs
