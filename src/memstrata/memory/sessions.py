"""The transcript calls of ``Memory`` (issue 7): ``record_turn`` and the
sessions it builds, on top of ``history`` (the files) and ``Engine`` (the lock,
hooks, quarantine).

* ``record_turn`` redacts every text and every tool argument and result,
  takes the next seq under the workspace lock, appends the turn to
  ``sessions/<session>.jsonl`` and its events to the audit log (both fsynced
  before return), appends the exchange to today's daily note through the
  same code path as ``record_exchange``, and compacts the transcript when it
  passed ``session_max_turns`` or ``session_max_bytes``.
* The transcript line is the durable point: once it is written, nothing
  ``record_turn`` does after it (the daily note, the compaction, the
  automatic summary) raises. A failure there is a notice (``status().notices``
  and a log warning), so a caller never records the same turn twice.
* Lone surrogates in any text, tool argument or result become U+FFFD
  (``model.valid_text``) before redaction.
* A session's last seq is kept in RAM with the size and mtime of its file; a
  file another process (or a person) changed is read again.
* Every file is read and written through ``workspace.volume`` by relative path.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from ..capture.secrets import redact, redact_value
from ..errors import InvalidInput, MemstrataError, NotFound
from ..migrations import transcripts as migrate
from ..model import Source, WriteEvent, aware, clean_session, now, valid_text
from ..storage.files import storage_errors
from ..storage.volume import Volume
from ..stores import transcripts as history
from ..stores.compaction import Compaction, compact
from ..stores.transcripts import SessionInfo, Turn
from .engine import Engine

__all__ = ["Sessions"]

# The transcripts known good at the last close (a cache of ``migrations.transcripts``).
_VERIFIED = ".memstrata/transcripts-verified.json"
_MOVED = "older turn(s) moved to"


class Sessions:
    """Transcripts, audit logs, daily notes and session compaction (a part of
    ``Memory``, as ``memory.sessions``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self._heads: dict[str, tuple[int, int, int, int]] = {}  # session -> (seq, turns, ...)
        self._verified: migrate.Verified = {}  # transcripts known good: path -> (size, mtime_ns)
        self._verified_dirty = False
        engine.events.on_close(closing=self._save_verified_at_close)

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
        """Append one completed turn to the session's transcript, its events to
        the audit log and the exchange to today's daily note; durable on return."""
        pending = _pending(session, user, assistant, reasoning, tool_calls, tool_results, meta, at)
        return self._record([pending])[0]

    def record_turns(self, turns: Sequence[Mapping[str, Any]]) -> builtins.list[Turn]:
        """``record_turn`` for many turns at once (group commit): each mapping
        holds ``record_turn``'s arguments (``session``, ``user``, ``assistant``,
        and optionally ``reasoning``, ``tool_calls``, ``tool_results``, ``meta``,
        ``at``). Every turn is checked before anything is written; then each
        session's audit lines and transcript lines go in one append each, and
        each daily note's sections in one, so a batch costs one fsync per file
        it touches instead of three per turn. Durable on return, in order;
        compaction, if due, runs once per session after the batch. If it
        raises, no turn is acknowledged, but the turns of sessions written
        before the failure are in their transcripts (as after a kill)."""
        if isinstance(turns, (str, bytes, Mapping)) or not isinstance(turns, Sequence):
            raise InvalidInput("record_turns takes a list of mappings")
        pending = []
        for number, given in enumerate(turns):
            if not isinstance(given, Mapping):
                raise InvalidInput(f"turn {number} must be a mapping")
            unknown = set(given) - _TURN_KEYS
            if unknown or not set(given) >= _REQUIRED:
                raise InvalidInput(
                    f"turn {number} needs {', '.join(sorted(_REQUIRED))}"
                    + (f", and takes no {', '.join(sorted(map(str, unknown)))}" if unknown else "")
                )
            pending.append(_pending(**given))
        return self._record(pending) if pending else []

    def _record(self, pending: Sequence[_Pending]) -> builtins.list[Turn]:
        """Write the checked turns (see ``record_turns``): the transcript line is
        the durable point, each session's after its audit lines."""
        self.engine.check_open()
        events: builtins.list[WriteEvent] = []
        written: builtins.list[Turn] = []
        try:
            with self.engine.transaction("record the turn"):
                heads: dict[str, tuple[int, int]] = {}
                by_session: dict[str, builtins.list[Turn]] = {}
                ordered: builtins.list[Turn] = []
                for name, when, fields in pending:
                    last, count = heads[name] if name in heads else self._head(name)
                    heads[name] = (last + 1, count + 1)
                    turn = history.build_turn(name, last + 1, when, **fields)
                    by_session.setdefault(name, []).append(turn)
                    ordered.append(turn)
                volume = self.engine.workspace.volume
                for name, group in by_session.items():
                    where = history.transcript_rel(name)
                    good = self._verified.get(where) == _stat_key(volume, where)  # None: new
                    transcript, _audit = history.append_turns(self.engine.workspace, group)
                    written += group  # durable: announced even if a later session fails
                    seq, count = heads[name]
                    key = self._remember_head(name, seq, count, transcript)
                    if good and key is not None:  # a known-good file plus turns written here
                        self._verified[where] = key
                        self._verified_dirty = True
                    for turn in group:
                        text = f"{turn.text_of('user')}\n{turn.text_of('assistant')}"
                        events.append(
                            WriteEvent("turn", "put", text, Source.USER, where, name, (turn.id,))
                        )
                written = ordered  # all of them, in the caller's order
                events += self._after_append(written, builtins.list(by_session))
        finally:
            if events:
                self.engine.events.notify(*events)
            for turn in written:
                self.engine.events.turn_recorded(turn)
        return written

    def _after_append(
        self, turns: Sequence[Turn], sessions: Sequence[str]
    ) -> builtins.list[WriteEvent]:
        """The daily notes and the compaction of durable turns (lock held): a
        failure is a notice, never an exception (see the module)."""
        events = []
        try:
            with storage_errors("write the daily note"):
                exchanges = [
                    (turn.text_of("user"), turn.text_of("assistant"), turn.session, turn.created_at)
                    for turn in turns
                ]
                events += self.engine.note_exchanges(exchanges)
        except MemstrataError as exc:
            for turn in turns:
                self.engine.notice(
                    f"session {turn.session}: turn {turn.seq} is not in the daily note: {exc}"
                )
        for session in sessions:
            try:
                with storage_errors("compact the transcript"):
                    self._maybe_compact(session)
            except MemstrataError as exc:
                self.engine.notice(f"session {session}: the transcript was not compacted: {exc}")
        return events

    def _head(self, session: str) -> tuple[int, int]:
        """The session's last seq and number of turns (lock held): from RAM
        while the file is as this process left it, else read again."""
        key = _stat_key(self.engine.workspace.volume, history.transcript_rel(session))
        if key is None:
            self._heads.pop(session, None)
            return 0, 0
        cached = self._heads.get(session)
        if cached is not None and cached[2:] == key:
            return cached[0], cached[1]
        seq = history.last_seq(self.engine.workspace, session, self.engine.quarantine)
        return seq, len(history.read_turns(self.engine.workspace, session))

    def _remember_head(
        self, session: str, seq: int, count: int, rel: str
    ) -> tuple[int, int] | None:
        key = _stat_key(self.engine.workspace.volume, rel)
        if key is None:  # gone already (a person deleted it): read again next time
            self._heads.pop(session, None)
        else:
            self._heads[session] = (seq, count, *key)
        return key

    def _maybe_compact(self, session: str) -> None:
        limits = self.engine.settings
        head = self._heads.get(session)
        if head is None:
            return
        _, turns, size, _ = head
        too_long = bool(limits.session_max_turns) and turns > limits.session_max_turns
        too_big = bool(limits.session_max_bytes) and size > limits.session_max_bytes
        if too_long or too_big:
            done = compact(
                self.engine.workspace,
                session,
                limits.session_keep_turns,
                limits.session_max_bytes,
            )
            self._heads.pop(session, None)
            if done.archived:
                said = f"session {session}: "
                log = self.engine.notice_log  # one compaction notice per session: the last
                log[:] = [n for n in log if not (n.startswith(said) and _MOVED in n)]
                self.engine.notice(f"{said}{done.archived} {_MOVED} {done.archive}")

    # -- reads and maintenance ---------------------------------------------------

    def list(self) -> builtins.list[SessionInfo]:
        """Every session with a transcript, the most recently active first."""
        self.engine.check_open()
        with storage_errors("list the transcripts"):
            return history.list_sessions(self.engine.workspace)

    def turns(
        self, session: str, *, last: int | None = None, archived: bool = False
    ) -> builtins.list[Turn]:
        """The session's turns in order (``last``: only the last N; ``archived``:
        with the ones compactions moved to ``sessions/archive/``, each once);
        ``NotFound`` for a session without a transcript."""
        if last is not None and (isinstance(last, bool) or not isinstance(last, int) or last < 0):
            raise InvalidInput(f"last must be a whole number >= 0, not {last!r}")
        name = _session(session)
        self.engine.check_open()
        if not self._has_transcript(name):
            raise NotFound(f"no transcript for session {name!r}")
        with storage_errors("read the transcript"):
            found = history.read_turns(self.engine.workspace, name, archived=archived)
        return found[-last:] if last else ([] if last == 0 else found)

    def audit(self, session: str) -> builtins.list[dict[str, Any]]:
        """The session's audit events, in order."""
        name = _session(session)
        self.engine.check_open()
        with storage_errors("read the audit log"):
            return history.read_audit(self.engine.workspace, name)

    def compact(self, session: str, *, keep: int | None = None) -> Compaction:
        """Keep the last ``keep`` turns (default: the ``session_keep_turns``
        setting) of the session's transcript; the older ones move to
        ``sessions/archive/`` and are summarised in its metadata record."""
        name = _session(session)
        self.engine.check_open()
        if not self._has_transcript(name):
            raise NotFound(f"no transcript for session {name!r}")
        keep_last = self.engine.settings.session_keep_turns if keep is None else keep
        with self.engine.transaction("compact the transcript"):
            done = compact(self.engine.workspace, name, keep_last)
            self._heads.pop(name, None)
        return done

    def _has_transcript(self, session: str) -> bool:
        rel = history.transcript_rel(session)
        with storage_errors("read the transcript"):
            return self.engine.workspace.volume.stat(rel) is not None

    def compact_all(self, *, keep: int | None = None) -> builtins.list[Compaction]:
        """``compact_transcript`` for every session."""
        return [self.compact(info.session, keep=keep) for info in self.list()]

    def upgrade_at_open(self) -> None:
        """Version 1 transcripts and q15 turn files upgraded at open (lock held);
        transcripts known good since the last close are not read again."""
        self._heads = {}
        self._verified = _load_verified(self.engine.workspace.volume)
        self._verified_dirty = False
        if self.engine.read_only:  # read as they are: nothing upgraded, set aside or cached
            return
        before = dict(self._verified)
        for notice in migrate.upgrade(
            self.engine.workspace, self.engine.quarantine, self._verified
        ):
            self.engine.notice(notice)
        self._verified_dirty = self._verified != before
        self._save_verified()

    def _save_verified_at_close(self) -> None:
        if not self.engine.closed and self._verified_dirty and not self.engine.read_only:
            with contextlib.suppress(OSError, MemstrataError):
                self._save_verified()

    def _save_verified(self) -> None:
        """Keep the known-good transcripts for the next open (a cache: losing it
        only means reading them again)."""
        if self._verified_dirty:
            data = json.dumps({k: list(v) for k, v in sorted(self._verified.items())})
            self.engine.workspace.volume.write(_VERIFIED, data.encode(), durable=False)
            self._verified_dirty = False


# A turn checked and redacted, not yet written: session, time, and the
# keyword arguments of ``history.build_turn``.
_Pending = tuple[str, datetime, dict[str, Any]]


def _pending(
    session: str,
    user: str,
    assistant: str,
    reasoning: str | None = None,
    tool_calls: Sequence[Mapping[str, Any]] = (),
    tool_results: Sequence[Mapping[str, Any]] = (),
    meta: Mapping[str, Any] | None = None,
    at: datetime | None = None,
) -> _Pending:
    """One turn's arguments checked, its texts made valid and redacted."""
    name = clean_session(session)
    if name is None:
        raise InvalidInput("record_turn needs a session")
    when = now() if at is None else aware(at)
    safe_calls = [_redacted(call) for call in _sequence(tool_calls, "tool_calls")]
    safe_results = [_redacted(result) for result in _sequence(tool_results, "tool_results")]
    for label, value in (("user", user), ("assistant", assistant)):
        if not isinstance(value, str):
            raise InvalidInput(f"{label} must be a string, not {type(value).__name__}")
    fields = {
        "user": _safe(user),
        "assistant": _safe(assistant),
        "reasoning": _safe(reasoning) if isinstance(reasoning, str) else reasoning,
        "tool_calls": safe_calls,
        "tool_results": safe_results,
        "meta": _redacted(meta) if meta is not None else None,
    }
    return name, when, fields


# record_turns' keys: ``_pending``'s (``record_turn``'s) parameters
_PARAMETERS = inspect.signature(_pending).parameters
_TURN_KEYS = frozenset(_PARAMETERS)
_REQUIRED = frozenset(k for k, v in _PARAMETERS.items() if v.default is inspect.Parameter.empty)


def _stat_key(volume: Volume, rel: str) -> tuple[int, int] | None:
    """What identifies a version of file ``rel`` here: (size, mtime_ns), None for no file."""
    stat = volume.stat(rel)
    return None if stat is None else (stat.size, stat.mtime_ns)


def _load_verified(volume: Volume) -> migrate.Verified:
    try:
        data = json.loads(volume.read(_VERIFIED) or b"{}")
        return {str(k): (int(v[0]), int(v[1])) for k, v in data.items()}
    except (OSError, ValueError, TypeError, IndexError, AttributeError):
        return {}


def _session(session: str) -> str:
    name = clean_session(session)
    if name is None:
        raise InvalidInput("a session is needed")
    return name


def _sequence(value: Any, name: str) -> Sequence[Mapping[str, Any]]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInput(f"{name} must be a list of mappings")
    return value


def _safe(text: str) -> str:
    """``text`` as it may be stored: valid Unicode, secrets redacted."""
    return redact(valid_text(text)).text


def _redacted(value: Any) -> Any:
    """``value`` as JSON data with secrets redacted in every string, keys and values
    alike, and under credential-named keys; its shape is kept (a mapping stays a
    mapping with the same keys, a JSON string stays JSON): redaction never makes a
    turn invalid. The value is walked, never redacted as serialized text."""
    try:
        # (lone surrogates replaced: ``json.dumps`` keeps them as they are)
        data = json.loads(valid_text(json.dumps(value, ensure_ascii=False, default=str)))
    except (TypeError, ValueError, RecursionError) as exc:
        raise InvalidInput(f"cannot be stored as JSON: {exc}") from exc
    return redact_value(data)[0]
