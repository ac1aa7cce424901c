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
``memory.documents``. The index side (``Searcher``, ``PromptBuilder`` and the
``GlobalMemory`` they share) is built on first use: a process that only
captures (``memstrata observe``) does not import the index; its close and
the turn hook are registered at construction (before a database's own close).

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
import threading
from collections.abc import Callable
from dataclasses import replace
from operator import attrgetter
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, Unpack, overload

from ..config import Settings, SettingsFields, workspace_location
from ..errors import InvalidInput, NotFound
from ..model import Status, clean_session
from ..storage.files import storage_errors
from ..storage.quarantine import list_quarantine
from ..storage.workspace import Workspace, init_workspace
from .capture import Lessons, Observer
from .documents import Documents
from .engine import Engine
from .events import WriteHook
from .facts import Facts
from .layers import Core, Notes, Semantic, Working, migrate_at_open
from .live import DEFAULT_INTERVAL, LiveFiles
from .sessions import Sessions
from .transfer import Transfer, TransferReport

if TYPE_CHECKING:
    from ..context.tokens import TokenCounter
    from ..context.window import ContextWindow, WindowSettings
    from ..stores.transcripts import Turn
    from .context import PromptBuilder
    from .search import IndexOpener, Searcher

__all__ = ["Memory"]

P = ParamSpec("P")
R = TypeVar("R")


class _Verb(Generic[P, R]):
    """``memory.<verb>``: the method ``method`` of the part ``part`` (built on
    first use: ``Memory._index_parts``), looked up once per ``Memory`` (then
    it is the instance's own attribute, the part's bound method)."""

    def __init__(self, part: str, method: Callable[Concatenate[Any, P], R] | str) -> None:
        self.part = part
        self.method = method if isinstance(method, str) else method.__name__

    @overload
    def __get__(self, obj: None, owner: type[Any] | None = None) -> _Verb[P, R]: ...

    @overload
    def __get__(self, obj: Memory, owner: type[Any] | None = None) -> Callable[P, R]: ...

    def __get__(
        self, obj: Memory | None, owner: type[Any] | None = None
    ) -> _Verb[P, R] | Callable[P, R]:
        if obj is None:
            return self
        bound: Callable[P, R] = getattr(getattr(obj, self.part), self.method)
        obj.__dict__[self.method] = bound
        return bound


_VALID_TO = attrgetter("valid_to")


class Memory:
    """Layered, durable memory of one workspace (use ``Memory.open``)."""

    # The index side (search, the prompt context, global memory) is built on
    # first use (``_index_parts``): a process that only captures (``observe``,
    # a shell hook) does not import it. Its verbs are ``_Verb``s.
    if TYPE_CHECKING:
        search = _Verb("_search", Searcher.search)
        reindex = _Verb("_search", Searcher.reindex)
        index_status = _Verb("_search", Searcher.index_status)
        gate = _Verb("_search", Searcher.gate)
        build_context = _Verb("_prompts", PromptBuilder.build_context)
        recovery_context = _Verb("_prompts", PromptBuilder.recovery_context)
        compact_session = _Verb("_prompts", PromptBuilder.compact_session)
    else:
        search = _Verb("_search", "search")
        reindex = _Verb("_search", "reindex")
        index_status = _Verb("_search", "index_status")
        gate = _Verb("_search", "gate")
        build_context = _Verb("_prompts", "build_context")
        recovery_context = _Verb("_prompts", "recovery_context")
        compact_session = _Verb("_prompts", "compact_session")

    def __init__(self, engine: Engine, *, open_index: IndexOpener | None = None) -> None:
        self.engine = engine
        self._open_index = open_index
        self._index_lock = threading.Lock()
        self._index: tuple[Searcher, PromptBuilder] | None = None
        # registered now, in the order the parts used to: before a database's own close
        engine.events.on_close(closed=self._close_index)
        engine.events.on_turn(self._after_turn)
        self._facts = Facts(engine)
        self._observer = Observer(engine)
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
        self.record_turn = self.sessions.record_turn
        self.record_turns = self.sessions.record_turns

    def _index_parts(self) -> tuple[Searcher, PromptBuilder]:
        """The searcher and the prompt builder, built on first use; one
        ``GlobalMemory``, read and ranked once for both."""
        parts = self._index
        if parts is None:
            with self._index_lock:
                parts = self._index
                if parts is None:
                    from .context import PromptBuilder
                    from .search import Searcher
                    from .shared import GlobalMemory

                    shared = GlobalMemory(self.engine.workspace)
                    searcher = Searcher(self.engine, self._open_index, shared)
                    parts = self._index = (
                        searcher,
                        PromptBuilder(self.engine, shared, listen=False),
                    )
        return parts

    @property
    def _search(self) -> Searcher:
        return self._index_parts()[0]

    @property
    def _prompts(self) -> PromptBuilder:
        return self._index_parts()[1]

    def _after_turn(self, turn: Turn) -> None:
        """The prompt builder's automatic session summary (``PromptBuilder``)."""
        self._prompts._after_turn(turn)  # noqa: SLF001 - its hook, registered here

    def _close_index(self) -> None:
        parts = self._index
        if parts is not None:
            parts[0].close()

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
            if packs:
                from ..capture.scan import load_rules

                rules = load_rules(extra_packs=packs)
            else:
                rules = None
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
            # is_live is valid_to is None; counted in C (100k facts: 3 ms, not 20)
            live = list(map(_VALID_TO, self.engine.store.items.values())).count(None)
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
        from ..context.tokens import EstimateCounter
        from ..context.window import ContextWindow, Message, WindowSettings

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
