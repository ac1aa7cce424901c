"""``Memory.build_context`` and ``Memory.compact_session`` (issue 6): the
memory sections of a system prompt within a token budget, on top of search
(for gating) and the layers; and session summaries (``/compact``).

``compact_session`` summarizes a session's turns (the extractive summarizer
unless one is given), appends the summary to ``summaries/<session>.md``, puts
its decisions and facts into MEMORY.md (``decision`` and ``fact`` items:
list items of any kind, else the sentences of its prose; each without its
turn reference; open questions are no facts; a bullet a live item already
says adds nothing; one a superseded or forgotten item said is struck through
in the summary and not stored: a compaction never restates a corrected fact
as live) and marks
the session so that the next run starts fresh (seed 001's
``nextRunNoContinue``): ``build_context`` then shows no turn from before the
summary. The raw transcript is left untouched. A session whose turns since
the last summary pass ``session_summary_tokens`` (len // 4 of their transcript
lines, tool calls and results included) is summarized automatically
after the turn that passed it (qracer), with the extractive summarizer unless
the setting ``summarizer`` names a model or is a summarizer object (any
``name`` and ``summarize(turns)``). That turn is durable by then, so the
automatic summary never raises: a model that cannot be set up or fails is
replaced by the extractive summarizer, and every failure is a notice
(``status().notices`` and a log warning), never an exception that would make
the caller record the turn a second time.

Reads come from RAM: the long-term facts from the store (rendered once per
change of it) and gated by a BM25 index in RAM (``context.ranking``: no query
embedding, no index file), the layer files and the session's transcript from
a cache that one ``stat`` per file per call keeps honest (a hand edit is seen
at the next call). No file is read while it is unchanged.
"""

from __future__ import annotations

import builtins
import logging
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar, cast

from ..context.build import Context, Shared, assemble, render_facts
from ..context.ranking import FactRanker
from ..context.summarize import (
    ExtractiveSummarizer,
    Summarizer,
    make_summarizer,
    summary_facts,
)
from ..context.tokens import EstimateCounter, TokenCounter
from ..errors import BackendUnavailable, InvalidInput, MemstrataError, NotFound
from ..model import (
    Item,
    Source,
    WriteEvent,
    category_title,
    clean_session,
    decoded_text,
    dedupe_key,
    now,
    valid_text,
)
from ..storage.files import storage_errors
from ..storage.volume import Stat
from ..storage.workspace import session_stem
from ..stores import core as core_layer
from ..stores import transcripts as history
from ..stores.compaction import update_meta
from ..stores.longterm import OP_PUT
from ..stores.protocol import retired_keys
from ..stores.session_state import StateEntry, parse_state
from .engine import Engine
from .shared import SOURCE as GLOBAL_SOURCE
from .shared import GlobalMemory

__all__ = ["PromptBuilder", "SessionSummary"]

_T = TypeVar("_T")
log = logging.getLogger("memstrata")

RECENT_TURNS = 20
LESSONS = 5
_WORKING = "working/WORKING_MEMORY.md"


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """What ``compact_session`` wrote."""

    session: str
    summarizer: str
    path: str  # summaries/<session>.md
    summary: str
    turns: tuple[int, int]  # first and last seq summarized
    items: tuple[str, ...]  # the MEMORY.md items made from its bullets

    def to_dict(self) -> dict[str, object]:
        return {
            "session": self.session,
            "summarizer": self.summarizer,
            "path": self.path,
            "turns": list(self.turns),
            "items": list(self.items),
            "summary": self.summary,
        }


class PromptBuilder:
    """Context building for the prompt, and session summaries (a part of
    ``Memory``: it holds the engine and hears of every turn through it)."""

    def __init__(
        self, engine: Engine, shared: GlobalMemory | None = None, *, listen: bool = True
    ) -> None:
        """``listen=False``: the owner hands each durable turn to ``_after_turn``."""
        self.engine = engine
        # (path, what it was read as) -> (its Stat, the value): one file may be
        # read as text (recovery) and as session-state entries (build_context)
        self._file_cache: dict[tuple[str, str], tuple[Stat, object]] | None = None
        self._gate: FactRanker | None = None
        self._summary_counts: dict[str, int] | None = None
        self._summary_seen: dict[str, int] = {}  # session -> the last seq counted
        self._facts_cache: tuple[tuple[int, int, int], list[tuple[str, str]]] | None = None
        self._retired_cache: tuple[tuple[int, int, int, int], set[str]] | None = None
        self.global_memory = shared or GlobalMemory(engine.workspace)
        if listen:
            engine.events.on_turn(self._after_turn)

    def build_context(
        self,
        prompt: str,
        *,
        session: str | None = None,
        budget_tokens: int,
        counter: TokenCounter | None = None,
    ) -> Context:
        """Core (every file of core/), working memory, session state, long-term
        memory (whole or gated by ``prompt``), the ``global`` group's memory
        (for any other group), lessons and the recent conversation of
        ``session``, in that order, within ``budget_tokens``."""
        if not isinstance(prompt, str):
            raise InvalidInput(f"prompt must be a string, not {type(prompt).__name__}")
        if isinstance(budget_tokens, bool) or not isinstance(budget_tokens, int):
            raise InvalidInput("budget_tokens must be a whole number")
        if budget_tokens < 1:
            raise InvalidInput(f"budget_tokens must be >= 1, not {budget_tokens}")
        name = clean_session(session)
        self.engine.check_open()
        counting = counter or EstimateCounter()
        core = []
        for rel in self._core_files():
            text = self._cached_text(rel)
            if text:
                core.append((rel, text))
        working_text = self._cached_text(_WORKING)
        state_rel = self.engine.workspace.session_state_rel(name)
        entries = self._cached_state(state_rel)
        retired = self._retired_keys() if entries else set()
        state_lines = [
            f"- {entry.category}: ~~{entry.text}~~ (superseded or forgotten since)"
            if dedupe_key(entry.text) in retired
            else f"- {entry.category}: {entry.text}"
            for entry in entries
        ]
        gate = self._fact_ranker()  # also picks up other processes' writes

        def gated(limit: int) -> Iterator[tuple[str, str]]:
            """The facts relevant to the prompt, best first; then the newest others."""
            by_id = self._items_by_id()
            seen = set()
            for item_id in gate.top(prompt, min(limit, 60)):
                item = by_id.get(item_id)
                if item is not None and item.is_live:
                    seen.add(item.id)
                    yield category_title(item.category), f"- {item.text}"
            # at most a few hundred lines fit any budget: no need to walk them all
            with self.engine.state:
                newest = self.engine.store.newest(
                    lambda i: i.is_live, min(limit, budget_tokens // 2)
                )
            for item in newest:
                if item.id not in seen:
                    yield category_title(item.category), f"- {item.text}"

        with self.engine.state:
            lessons = [f"- {lesson.text}" for lesson in self.engine.lessons.top(LESSONS)]
        recent = None
        if name is not None:
            transcript = history.transcript_rel(name)
            lines = self._cached_recent(transcript)
            if lines:
                recent = (transcript, lines)
        return assemble(
            budget_tokens,
            counting,
            core=core,
            working=(_WORKING, working_text) if working_text else None,
            state=(state_rel, state_lines) if state_lines else None,
            facts=gate.live,
            whole=self._live_facts,
            gated=gated,
            lessons=lessons,
            recent=recent,
            shared=self._shared(prompt),
        )

    def _shared(self, prompt: str) -> Shared | None:
        """The ``global`` group's facts (``memory.shared``), labelled with their file."""
        facts = self.global_memory.facts()
        if not facts:
            return None

        def whole() -> builtins.list[tuple[str, str]]:
            return [(fact.heading, f"- {fact.item.text}") for fact in facts]

        def gated(limit: int) -> Iterator[tuple[str, str]]:
            best = self.global_memory.top(prompt, min(limit, 60), fresh=False)  # as facts()
            seen = {fact.item.id for fact in best}
            for fact in best + [f for f in reversed(facts) if f.item.id not in seen]:
                yield fact.heading, f"- {fact.item.text}"

        return Shared(GLOBAL_SOURCE, len(facts), whole, gated)

    def _core_files(self) -> builtins.list[str]:
        """Every core file (q15 injects all of core): AGENT.md, USER.md and
        SOUL.md first, then the other ``core/<name>.md`` by name (``core.listed``)."""
        with storage_errors("list core/"):
            return core_layer.listed(self.engine.workspace.volume)

    # -- RAM caches ------------------------------------------------------------------

    def _fact_ranker(self) -> FactRanker:
        gate = self._gate
        if gate is None:
            gate = self._gate = FactRanker()
        self.engine.refresh()
        with self.engine.state:
            gate.sync(
                self.engine.store.items, self.engine.fact_generation, self.engine.fact_changes
            )
        return gate

    def _items_by_id(self) -> dict[str, Item]:
        with self.engine.state:
            return self.engine.store.items

    def _live_facts(self) -> builtins.list[tuple[str, str]]:
        """Every live fact as (heading, line), rendered once per change of the store."""
        with self.engine.state:
            store = self.engine.store
            version = (id(store.items), store.lsn, len(store.items))
            cached = self._facts_cache
            if cached is not None and cached[0] == version:
                return cached[1]
            facts = render_facts(list(store.items.values()))
        self._facts_cache = (version, facts)
        return facts

    def _retired_keys(self) -> set[str]:
        """The keys of the facts superseded or forgotten (``retired_keys``), found
        again only when the store changed: a session-state line that says one
        is shown struck through, never as a live fact."""
        with self.engine.state:
            store = self.engine.store
            version = (id(store.items), store.lsn, len(store.items), len(store.forgotten))
            cached = self._retired_cache
            if cached is not None and cached[0] == version:
                return cached[1]
            keys = retired_keys(store)
        self._retired_cache = (version, keys)
        return keys

    def _cached(self, rel: str, kind: str, load: Callable[[bytes], _T]) -> _T | None:
        """``load`` of the bytes of file ``rel`` (read through the workspace's
        volume), kept until the file's ``Stat`` changes (None: no file)."""
        cache = self._file_cache
        if cache is None:
            cache = self._file_cache = {}
        volume = self.engine.workspace.volume
        with storage_errors(f"read {rel}"):
            info = volume.stat(rel)
            hit = cache.get((rel, kind))
            if info is not None and hit is not None and hit[0] == info:
                return cast(_T, hit[1])
            data = None if info is None else volume.read(rel)
        if info is None or data is None:
            cache.pop((rel, kind), None)
            return None
        value = load(data)
        cache[rel, kind] = (info, value)
        return value

    def _cached_text(self, rel: str) -> str:
        return self._cached(rel, "text", decoded_text) or ""

    def _cached_state(self, rel: str) -> builtins.list[StateEntry]:
        return self._cached(rel, "state", lambda data: parse_state(decoded_text(data))) or []

    def _cached_recent(self, rel: str) -> builtins.list[str]:
        def load(data: bytes) -> builtins.list[str]:
            return history.conversation_lines(history.fresh_turns(data)[-RECENT_TURNS:])

        return self._cached(rel, "recent", load) or []

    # -- the live window ---------------------------------------------------------------

    def recovery_context(self, session: str | None = None, *, chars: int = 4000) -> str:
        """What an agent needs after its window was compacted (Qanot): the end of
        the working buffer, the session state and today's daily note, each
        labelled, within ``chars`` characters in all."""
        if isinstance(chars, bool) or not isinstance(chars, int) or chars < 1:
            raise InvalidInput(f"chars must be a whole number >= 1, not {chars!r}")
        name = clean_session(session)
        parts = []
        today = now().astimezone().date().isoformat()
        sources = [
            ("Working buffer (memory/working-buffer.md)", "memory/working-buffer.md"),
            ("Session state", self.engine.workspace.session_state_rel(name)),
            (f"Today's notes (memory/{today}.md)", f"memory/{today}.md"),
        ]
        share = max(chars // len(sources), 1)  # text[-0:] would be all of it
        for title, rel in sources:
            text = self._cached_text(rel).strip()
            if text:
                tail = text if len(text) <= share else "…" + text[-share:]
                parts.append(f"## {title}\n{tail}")
        if not parts:
            return "Context was compacted; no working buffer, session state or notes were found."
        return "Context was compacted. What was kept about the conversation so far:\n\n" + (
            "\n\n".join(parts)
        )

    # -- /compact --------------------------------------------------------------------

    def compact_session(
        self, session: str, *, summarizer: Summarizer | None = None
    ) -> SessionSummary:
        """Summarize the session's turns since its last summary (see the module)."""
        name = clean_session(session)
        if name is None:
            raise InvalidInput("compact_session needs a session")
        self.engine.check_open()
        transcript = history.transcript_rel(name)
        with storage_errors("read the transcript"):
            data = self.engine.workspace.volume.read(transcript)
        if data is None:
            raise NotFound(f"no transcript for session {name!r}")
        turns = history.fresh_turns(data)
        if not turns:
            raise InvalidInput(f"session {name!r} has no turn since its last summary")
        chosen = summarizer or self._summarizer()
        summary = valid_text(_summarized(chosen, turns))  # a model may take seconds: no lock
        at = now()
        stamp = at.strftime("%Y-%m-%d %H:%M")
        first, last = turns[0].seq, turns[-1].seq
        events: builtins.list[WriteEvent] = []
        with self.engine.transaction("write the session summary"):
            self.engine.catch_up(repair=True)
            summary, items = self._summary_items(summary, name, at)
            where = f"summaries/{session_stem(name)}.md"
            block = f"## Session Compaction {stamp} (turns {first}-{last}, {chosen.name})\n\n"
            self.engine.workspace.volume.append(
                where,
                (block + summary.strip() + "\n\n").encode(),
                header=f"# Summaries of session {name}\n\n".encode(),
            )
            if items:
                payload = {"items": [item.to_dict() for item in items], "reason": "compaction"}
                self.engine.write(OP_PUT, payload, sync=True)
                self.engine.after_write()
            update_meta(
                self.engine.workspace,
                name,
                {
                    "next_run_no_continue": True,
                    "fresh_after_seq": last,
                    "summarized_at": at.isoformat(),
                },
            )
            self._summary_tokens.pop(name, None)
            events.append(WriteEvent("summary", "put", summary, Source.AGENT, where, name))
            if items:
                ids = tuple(item.id for item in items)
                events.append(
                    WriteEvent("fact", "put", summary, Source.AGENT, "MEMORY.md", name, ids)
                )
        self.engine.events.notify(*events)
        return SessionSummary(
            name, chosen.name, where, summary, (first, last), tuple(i.id for i in items)
        )

    def _summary_items(
        self, summary: str, session: str, at: datetime
    ) -> tuple[str, builtins.list[Item]]:
        """The summary as it is kept, and the new MEMORY.md items of its facts
        (lock held). A bullet that says what a live item says adds nothing; one
        that says what a superseded or forgotten item said is struck through
        and marked, never restated as live."""
        retired = retired_keys(self.engine.store)
        items: builtins.list[Item] = []
        for fact in summary_facts(summary):
            text = fact.text[:4000]
            if dedupe_key(text) in retired:
                marked = fact.line.replace(fact.text, f"~~{fact.text}~~", 1).rstrip()
                summary = summary.replace(fact.line, f"{marked} (superseded)", 1)
                continue
            item = self.engine.live_or_new(text, fact.category, Source.AGENT, session, at)
            if not item.hits and all(item.key != other.key for other in items):
                items.append(item)
        return summary, items

    @property
    def _summary_tokens(self) -> dict[str, int]:
        if self._summary_counts is None:
            self._summary_counts = {}
        return self._summary_counts

    def _after_turn(self, turn: history.Turn) -> None:
        """The automatic summary after a durable turn; never raises (see the module)."""
        limit = self.engine.settings.session_summary_tokens
        if not limit:
            return
        try:
            self._count_and_summarize(turn, limit)
        except MemstrataError as exc:
            self.engine.notice(f"session {turn.session}: the automatic summary failed: {exc}")
            self._summary_tokens[turn.session] = 0
        except Exception as exc:  # a bug must not turn a durable turn into an error
            log.exception("memstrata: the automatic summary of session %s failed", turn.session)
            self.engine.notice(f"session {turn.session}: the automatic summary failed: {exc!r}")
            self._summary_tokens[turn.session] = 0

    def _count_and_summarize(self, turn: history.Turn, limit: int) -> None:
        counts, seen = self._summary_tokens, self._summary_seen
        if turn.session not in counts:
            data = self.engine.workspace.volume.read(history.transcript_rel(turn.session)) or b""
            covered = history.fresh_after(data)
            # up to this turn: a batch (``record_turns``) wrote the later ones too
            turns = history.fresh_turns(data)
            counts[turn.session] = sum(_tokens(t) for t in turns if t.seq <= turn.seq)
            seen[turn.session] = max(turn.seq, covered)
        elif turn.seq > seen.get(turn.session, 0):  # not one a summary already covers
            counts[turn.session] += _tokens(turn)
            seen[turn.session] = turn.seq
        if counts[turn.session] <= limit:
            return

        def fell_back(why: MemstrataError) -> None:
            self.engine.notice(
                f"session {turn.session}: the model summary could not run ({why}); "
                "the extractive summary was written instead"
            )

        done = self.compact_session(turn.session, summarizer=_Fallback(self._summarizer, fell_back))
        # nothing after the summary counted yet: no need to read the transcript again
        counts[turn.session], seen[turn.session] = 0, max(turn.seq, done.turns[1])

    def _summarizer(self) -> Summarizer:
        """The summarizer the settings name or hold (raises if it cannot be set up)."""
        chosen = self.engine.settings.summarizer
        if not isinstance(chosen, str):  # the caller's object
            return cast(Summarizer, chosen)
        return make_summarizer(chosen, self.engine.settings.summary_model)


class _Fallback:
    """The summarizer ``configured`` makes, replaced by the extractive one when
    it cannot be set up or fails (``failed`` is told why)."""

    def __init__(
        self, configured: Callable[[], Summarizer], failed: Callable[[MemstrataError], None]
    ) -> None:
        self._configured = configured
        self._failed = failed
        self.name = "extractive"

    def summarize(self, turns: Sequence[history.Turn]) -> str:
        try:
            chosen = self._configured()
        except MemstrataError as exc:  # e.g. a model provider without a model name
            return self._extractive(turns, exc)
        if isinstance(chosen, ExtractiveSummarizer):
            return chosen.summarize(turns)
        try:
            text = valid_text(_summarized(chosen, turns))
        except MemstrataError as exc:  # the model is down, or said nothing
            return self._extractive(turns, exc)
        self.name = chosen.name
        return text

    def _extractive(self, turns: Sequence[history.Turn], why: MemstrataError) -> str:
        self._failed(why)
        return ExtractiveSummarizer().summarize(turns)


def _summarized(chosen: Summarizer, turns: Sequence[history.Turn]) -> str:
    """``chosen.summarize(turns)``; a failure of a caller's object (any
    exception) is ``BackendUnavailable``."""
    try:
        return chosen.summarize(turns)
    except MemstrataError:
        raise
    except Exception as exc:  # a caller's summarizer or an SDK: never a raw error
        raise BackendUnavailable(f"summarizer {chosen.name!r} failed: {exc!r}") from exc


def _tokens(turn: history.Turn) -> int:
    """qracer's rule: len // 4 of the turn's transcript line, so tool calls and
    their results count as much as what was said."""
    return (len(history.jsonl_lines([turn.to_dict()])) + 3) // 4
