"""``MemstrataSession``: an OpenAI Agents SDK ``Session`` over memstrata transcripts.

Install with ``pip install 'memstrata[integrations]'`` (it needs ``openai-agents``).

    from agents import Agent, Runner
    from memstrata import Memory
    from memstrata.integrations.openai_agents import MemstrataSession

    memory = Memory.open("~/agent-memory")
    session = MemstrataSession("support-42", memory)
    await Runner.run(agent, "Hi, I'm Ana", session=session)

How the SDK's model maps onto memstrata:

* the SDK's **session** is a memstrata session: its history lives in
  ``sessions/<session>.jsonl``, one transcript turn per ``add_items`` call.
  The turn holds the SDK's items verbatim in ``meta["agents_sdk"]["items"]``
  and, for people, search and the daily note, their text as the turn's
  messages (user text, assistant text, function calls and their outputs).
* Transcripts are append-only, so ``pop_item`` and ``clear_session`` are
  turns too, markers that ``get_items`` replays (``{"pop": item}``,
  ``{"clear": true}``): nothing is ever erased, a cleared conversation is
  still in the transcript for an audit, and ``get_items`` answers what the
  SDK expects. Turns recorded without the SDK (``Memory.record_turn``,
  ``memstrata record-turn``) read as a user and an assistant message.
* Every write is durable (fsynced) before the awaited call returns and
  redacted first (``capture.secrets``): the items read back hold the
  redaction marks, never the secret. Compaction moves old turns to
  ``sessions/archive/`` and ``get_items`` still reads them.
* ``capture=True`` also runs ``Memory.observe`` on each user message, so the
  durable facts in it land in MEMORY.md as memstrata's own agents do.
* The blocking file work runs on a worker thread, one call at a time per
  session object. Two processes popping the same session at once each
  remove one item, but each is told the item it saw last.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from ..errors import InvalidInput, NotFound
from ..memory import Memory
from ..model import clean_session
from . import require

require("agents.memory")

from agents.memory import SessionABC, SessionSettings  # noqa: E402

__all__ = ["MemstrataSession"]

_KEY = "agents_sdk"
_POP_TEXT = "(agents-sdk: the last item was removed from the session)"
_CLEAR_TEXT = "(agents-sdk: the session was cleared)"

Items = list[Any]  # the SDK's TResponseInputItem: JSON-ready dicts


class MemstrataSession(SessionABC):
    """The SDK's session protocol on the transcript of ``session_id`` (see the module)."""

    def __init__(
        self,
        session_id: str,
        memory: Memory,
        *,
        capture: bool = False,
        session_settings: SessionSettings | None = None,
    ) -> None:
        name = clean_session(session_id)
        if name is None:
            raise InvalidInput("a session needs a non-empty id")
        self.session_id = name
        self.memory = memory
        self.capture = capture
        self.session_settings = session_settings or SessionSettings()
        self._lock = threading.Lock()

    async def get_items(self, limit: int | None = None) -> Items:
        """The history, oldest first; ``limit``: only the latest N."""
        if limit is None and self.session_settings is not None:
            limit = self.session_settings.limit
        items: Items = await self._call(self._items)
        if limit is None:
            return items
        return items[-limit:] if limit > 0 else []

    async def add_items(self, items: Items) -> None:
        """Append ``items`` as one transcript turn (durable on return)."""
        if items:
            await self._call(self._add, list(items))

    async def pop_item(self) -> Any | None:
        """Remove and return the latest item (None when the history is empty)."""
        return await self._call(self._pop)

    async def clear_session(self) -> None:
        """Empty the history (the transcript keeps it, behind a clear marker)."""
        await self._call(self._clear)

    # -- blocking work, on a worker thread ----------------------------------------------

    async def _call(self, work: Any, *args: Any) -> Any:
        def locked() -> Any:
            with self._lock:
                return work(*args)

        return await asyncio.to_thread(locked)

    def _items(self) -> Items:
        try:
            turns = self.memory.sessions.turns(self.session_id, archived=True)
        except NotFound:
            return []
        items: Items = []
        for turn in turns:
            marker = turn.meta.get(_KEY)
            if not isinstance(marker, Mapping):
                items += _plain_items(turn.text_of("user"), turn.text_of("assistant"))
            elif marker.get("clear"):
                items = []
            elif "pop" in marker:
                if items:
                    items.pop()
            else:
                items += list(marker.get("items") or [])
        return items

    def _add(self, items: Items) -> None:
        data = json.loads(json.dumps(items, default=str))
        users = [text for item in data if _role(item) == "user" for text in _texts(item)]
        answers = [text for item in data if _role(item) == "assistant" for text in _texts(item)]
        calls = [_call_of(item) for item in data if _kind(item) == "function_call"]
        results = [_result_of(item) for item in data if _kind(item) == "function_call_output"]
        self.memory.record_turn(
            self.session_id,
            user="\n".join(users),
            assistant="\n".join(answers),
            tool_calls=calls,
            tool_results=results,
            meta={_KEY: {"items": data}},
        )
        if self.capture:
            for text in users:
                self.memory.observe(text, session=self.session_id)

    def _pop(self) -> Any | None:
        items = self._items()
        if not items:
            return None
        last = items[-1]
        self.memory.record_turn(
            self.session_id, user="", assistant=_POP_TEXT, meta={_KEY: {"pop": last}}
        )
        return last

    def _clear(self) -> None:
        if self._items():
            self.memory.record_turn(
                self.session_id, user="", assistant=_CLEAR_TEXT, meta={_KEY: {"clear": True}}
            )


def _plain_items(user: str, assistant: str) -> Items:
    out: Items = []
    if user:
        out.append({"role": "user", "content": user})
    if assistant:
        out.append({"role": "assistant", "content": assistant})
    return out


def _kind(item: Any) -> str | None:
    return item.get("type") if isinstance(item, Mapping) else None


def _role(item: Any) -> str | None:
    if not isinstance(item, Mapping) or _kind(item) not in (None, "message"):
        return None
    role = item.get("role")
    return role if isinstance(role, str) else None


def _texts(item: Mapping[str, Any]) -> list[str]:
    content = item.get("content")
    if isinstance(content, str):
        return [content] if content else []
    if not isinstance(content, Sequence):
        return []
    return [
        part["text"]
        for part in content
        if isinstance(part, Mapping) and isinstance(part.get("text"), str) and part["text"]
    ]


def _call_of(item: Mapping[str, Any]) -> dict[str, Any]:
    arguments = item.get("arguments", "")
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) and arguments else {}
    except ValueError:
        parsed = arguments
    return {"name": str(item.get("name") or "tool"), "arguments": parsed, "id": item.get("call_id")}


def _result_of(item: Mapping[str, Any]) -> dict[str, Any]:
    output = item.get("output")
    return {"content": output if output is not None else "", "tool_call_id": item.get("call_id")}
