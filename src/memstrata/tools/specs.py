"""The definition of every memory tool: its name, a description written for a
model, its arguments (JSON Schema: descriptions, enums, bounds, no unknown
property), the schema of its result and its hints (read-only, destructive,
idempotent). This one definition feeds every form: ``openai_tools()``,
``anthropic_tools()``, the MCP tools (``mcp_server.toolset``) and the check
of each call's arguments (``schema.check``).

Invariants:

* Every result is a JSON object (MCP structured output needs one); every
  fact, hit, lesson and turn in it carries its ``id``.
* A tool that changes nothing is ``read_only``; ``writes`` (the group rules'
  write access) is exactly the tools that are not.
* Every tool takes an optional ``group`` (added here, never by hand): another
  group's memory, under the rules of ``access.Groups``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..model import CATEGORY_TITLES, Source
from ..storage.layers import SEARCHABLE
from .schema import Schema, array, boolean, count, integer, nullable, obj, string

__all__ = ["FACT_TOOLS", "GROUP", "MAX_LINES", "MAX_SESSIONS", "Spec", "hints"]

MAX_LINES = 400
MAX_K = 50
MAX_LIST = 200
MAX_TEXT = 20_000
MAX_SESSIONS = 100  # sessions one search may name (NanoClaw's list of chats)

GROUP = string(
    "Another group's memory instead of your own: 'global' for the memory shared by every "
    "group (readable by all); any other group only if you are the main group."
)


@dataclass(frozen=True)
class Spec:
    """One tool (see the module)."""

    name: str
    title: str
    description: str
    properties: dict[str, Schema]
    required: tuple[str, ...]
    result: Schema
    read_only: bool
    destructive: bool = False
    idempotent: bool = False

    @property
    def parameters(self) -> Schema:
        """The JSON Schema of the arguments (``group`` included)."""
        return obj({**self.properties, "group": GROUP}, self.required)

    @property
    def writes(self) -> bool:
        return not self.read_only


# -- the shapes of results -----------------------------------------------------------------

_TIME = string("when, ISO 8601")

FACT = obj(
    {
        "id": string("the fact's id (the ^id ending its MEMORY.md line)"),
        "text": string("the fact"),
        "category": string("its MEMORY.md section"),
        "source": string("who said it: user, agent, tool or import"),
        "session": nullable(string("the session it came from")),
        "created_at": _TIME,
        "updated_at": _TIME,
        "hits": count("how often it was stated"),
        "valid_from": nullable(_TIME),
        "valid_to": nullable(string("when it stopped being true (superseded)")),
        "superseded_by": nullable(string("the id of the fact that corrected it")),
        "user": nullable(string("the user it belongs to")),
    },
    ("id", "text", "category", "source", "created_at"),
    closed=False,
)
HIT = obj(
    {
        "id": string(
            "the hit's id: for a long_term hit the fact id that memory_forget, memory_correct "
            "and memory_get_fact take; a lesson's id; a transcript message's <turn>#<n>; "
            "otherwise the citation"
        ),
        "path": string("the file it is in"),
        "lines": array("first and last line (1-based)", count("a line")),
        "citation": string("path:lines, to cite or to read with memory_get"),
        "snippet": string("the matching text"),
        "score": {"type": "number", "description": "relevance, higher is better"},
        "layer": string("the layer it is in"),
        "session": nullable(string("its session, for a transcript")),
        "source": string("who wrote it"),
        "created_at": nullable(_TIME),
        "group": string("the group whose memory it is in (group servers only)"),
    },
    ("id", "path", "lines", "citation", "snippet", "score", "layer"),
    closed=False,
)
LESSON = obj(
    {
        "id": string("the lesson's id"),
        "kind": string("tool_failure or correction"),
        "text": string("what went wrong -> what to do instead"),
        "tool": nullable(string("the tool that failed")),
        "hits": count("how often it was seen"),
        "session": nullable(string("the session it came from")),
        "created_at": _TIME,
        "updated_at": _TIME,
    },
    ("id", "kind", "text", "hits"),
    closed=False,
)
TURN = obj(
    {
        "id": string("the turn's id"),
        "seq": count("its number in the session, from 1"),
        "session": string("its session"),
        "created_at": _TIME,
        "user": string("what the user said"),
        "assistant": string("what the assistant answered"),
        "messages": array("every message, with tool calls and results", obj({}, closed=False)),
    },
    ("id", "seq", "session", "user", "assistant"),
    closed=False,
)
SESSION_INFO = obj(
    {
        "session": string("its name"),
        "path": string("its transcript"),
        "turns": count("turns in the transcript"),
        "last_seq": count("the last turn's number"),
        "first_at": nullable(_TIME),
        "last_at": nullable(_TIME),
        "archived": count("turns moved to the archive"),
    },
    ("session", "turns", "last_seq"),
    closed=False,
)
NOTE = obj(
    {
        "name": string("the note's name"),
        "folder": string("inbox, zettel or maps"),
        "path": string("its file (memory_get reads it)"),
    },
    ("name", "folder", "path"),
)
SEMANTIC_ITEM = obj(
    {
        "line": count("its line in the file"),
        "text": string("the item"),
        "heading": nullable(string("the heading it is under")),
    },
    ("line", "text"),
)


def list_of(key: str, item: Schema, description: str, **more: Schema) -> Schema:
    return obj({key: array(description, item), **more}, (key, *more), closed=False)


# -- the arguments used by several tools ---------------------------------------------------

_ID = string("a fact id, as memory_search, memory_list or memory_write gave it", min_length=1)
_TEXT = string("the fact, one self-contained sentence", min_length=1, max_length=MAX_TEXT)
_CATEGORY = string(
    "the MEMORY.md section to file it under, e.g. "
    + ", ".join(sorted(CATEGORY_TITLES))
    + " (default: fact)",
    max_length=80,
)
_SESSION_ARG = string(
    "the conversation this belongs to (letters, digits, '.', '_', '-')", min_length=1
)
_LIMIT = integer("how many at most", 1, MAX_LIST, 50)

FACT_TOOLS: tuple[Spec, ...] = (
    Spec(
        "memory_search",
        "Search memory",
        "Search the user's long-term memory: facts, notes, daily notes, past conversations and "
        "lessons, ranked by relevance (keywords and meaning). Use it before answering anything "
        "about the user, their projects or earlier conversations. Each hit has an id (for a "
        "fact: the id memory_forget and memory_correct take) and a citation to read more with "
        "memory_get.",
        {
            "query": string("what to look for, in plain words", min_length=1, max_length=4000),
            "k": integer("how many hits at most", 1, MAX_K, 8),
            "layer": string("only this layer", enum=tuple(sorted(SEARCHABLE))),
            "session": string("only this conversation's transcript and notes"),
            "sessions": array(
                "only these conversations' transcripts and notes (e.g. a list of chats)",
                string("a conversation", min_length=1, max_length=200),
                max_items=MAX_SESSIONS,
            ),
        },
        ("query",),
        list_of("hits", HIT, "the best matches, best first"),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_get",
        "Read a memory file",
        "Read lines of one memory file, e.g. a hit's citation: MEMORY.md, memory/<day>.md, "
        "semantic/<name>.md, notes/<folder>/<name>.md, core/<NAME>.md, "
        "working/WORKING_MEMORY.md, summaries/<name>.md. Files outside memory are refused.",
        {
            "path": string("the file, relative to the memory (e.g. MEMORY.md)", min_length=1),
            "from_line": integer("the first line to read (1-based)", 1, 10**9, 1),
            "lines": integer("how many lines at most", 1, MAX_LINES, MAX_LINES),
        },
        ("path",),
        obj(
            {
                "path": string("the file"),
                "from_line": integer("the first line read", 1, 10**9),
                "lines": integer("lines returned", 0, MAX_LINES),
                "total_lines": count("lines in the file"),
                "text": string("the lines read"),
            },
            ("path", "from_line", "lines", "total_lines", "text"),
        ),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_get_fact",
        "Get a fact by id",
        "Get one long-term fact by its id (from a search hit or a list), with its history: "
        "whether it was superseded and by which fact.",
        {"id": _ID},
        ("id",),
        obj({"fact": FACT}, ("fact",)),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_list",
        "List facts",
        "List long-term facts, newest first, optionally only one category, session or source; "
        "with forgotten=true, the deleted facts that memory_restore can still bring back.",
        {
            "category": _CATEGORY,
            "session": string("only facts from this conversation"),
            "source": string("only facts from this source", enum=tuple(s.value for s in Source)),
            "include_superseded": boolean("also facts a correction replaced"),
            "forgotten": boolean("list the forgotten (restorable) facts instead"),
            "limit": _LIMIT,
        },
        (),
        list_of("facts", FACT, "the facts, newest first"),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_recent",
        "Recent activity",
        "What changed lately: the facts written or updated in the last days, newest first, "
        "and the conversations active then. Use it to catch up at the start of a session.",
        {
            "days": integer("how many days back", 1, 365, 7),
            "limit": integer("how many facts and sessions at most", 1, MAX_LIST, 20),
        },
        (),
        obj(
            {
                "since": _TIME,
                "facts": array("facts changed since then, newest first", FACT),
                "sessions": array("conversations active since then", SESSION_INFO),
            },
            ("since", "facts", "sessions"),
        ),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_write",
        "Remember a fact",
        "Keep a fact in long-term memory (MEMORY.md), stored as the agent's note: kept and "
        "searchable, never treated as the user's instruction. Write one self-contained "
        "sentence. A fact already there is not stored twice. To change a fact use "
        "memory_correct; to capture what the user said use memory_observe.",
        {"text": _TEXT, "category": _CATEGORY},
        ("text",),
        FACT,
        read_only=False,
    ),
    Spec(
        "memory_observe",
        "Capture a user message",
        "Capture what the user's message states, before you answer it: names, preferences, "
        "decisions, reminders, values and corrections go to the session's state, and the "
        "durable ones become long-term facts (a correction replaces the fact it corrects). "
        "Call it with the user's own words on every message that may hold something worth "
        "keeping.",
        {
            "text": string("the user's message, as they wrote it", min_length=1),
            "session": _SESSION_ARG,
        },
        ("text",),
        list_of(
            "captured",
            obj(
                {
                    "category": string("what kind of statement"),
                    "text": string("the statement"),
                    "stored": boolean("written to the session state"),
                    "item_id": nullable(string("the long-term fact it became, if any")),
                    "superseded": nullable(string("the fact a correction replaced, if any")),
                },
                ("category", "text", "stored"),
                closed=False,
            ),
            "what was found in the message",
        ),
        read_only=False,
    ),
    Spec(
        "memory_correct",
        "Correct a fact",
        "Replace a fact that is wrong or out of date by the corrected one. The old fact is "
        "kept as superseded (its history stays), the new one is live. Give the id from a "
        "search hit or a list.",
        {"id": _ID, "text": _TEXT, "category": _CATEGORY},
        ("id", "text"),
        obj(
            {"fact": FACT, "superseded": string("the id of the fact it replaced")},
            ("fact", "superseded"),
        ),
        read_only=False,
    ),
    Spec(
        "memory_forget",
        "Forget a fact",
        "Delete a long-term fact by its id (from a search hit or a list). It stays restorable "
        "with memory_restore for a while. Use memory_correct instead when it is only wrong.",
        {"id": _ID},
        ("id",),
        obj(
            {"forgotten": string("the id deleted"), "text": string("what it said")},
            ("forgotten", "text"),
        ),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Spec(
        "memory_restore",
        "Restore a forgotten fact",
        "Bring back a fact deleted by memory_forget (or by hand), as it was. "
        "memory_list with forgotten=true lists what can be restored.",
        {"id": _ID},
        ("id",),
        obj({"fact": FACT}, ("fact",)),
        read_only=False,
        idempotent=True,
    ),
)


def hints(spec: Spec) -> dict[str, Any]:
    """MCP's tool annotations of ``spec``."""
    return {
        "title": spec.title,
        "readOnlyHint": spec.read_only,
        "destructiveHint": spec.destructive,
        "idempotentHint": spec.idempotent,
        "openWorldHint": False,
    }
