"""The definitions of the context, session, lesson, layer and status tools
(the fact and search tools are in ``specs``; the same rules hold here)."""

from __future__ import annotations

from ..stores.core import FILES as CORE_FILES
from ..stores.notebook import FOLDERS
from ..stores.semantic import FILES as SEMANTIC_FILES
from ..stores.working import SECTIONS
from .schema import array, boolean, count, integer, nullable, obj, string
from .specs import (
    LESSON,
    MAX_LIST,
    MAX_TEXT,
    NOTE,
    SEMANTIC_ITEM,
    SESSION_INFO,
    TURN,
    Spec,
    list_of,
)

__all__ = ["MORE"]

_SESSION = string("the conversation's name (letters, digits, '.', '_', '-')", min_length=1)
_CORE = string(
    "which core file: agent (how you work), user (who the user is), soul (your character)",
    enum=tuple(CORE_FILES),
)
_SEMANTIC = string("which semantic file", enum=tuple(SEMANTIC_FILES))
_SECTION = string("the working-memory section", enum=tuple(SECTIONS))
_NOTE_NAME = string("the note's name (without .md)", min_length=1, max_length=200)
_WORKING = obj(
    {
        "sections": obj(
            {key: array(title, string("an item")) for key, title in SECTIONS.items()},
            tuple(SECTIONS),
            description="each section's items",
        ),
        "text": string("WORKING_MEMORY.md as it is"),
    },
    ("sections", "text"),
)
_DROPPED = array(
    "items pushed out to stay within the size cap (kept in today's daily note)",
    obj({"section": string("their section"), "text": string("the item")}, ("section", "text")),
)

MORE: tuple[Spec, ...] = (
    Spec(
        "memory_context",
        "Build the memory context",
        "Assemble what memory knows for the next answer, within a token budget: core files, "
        "working memory, the session's state, the facts relevant to the prompt, lessons and "
        "the recent conversation. Put its text in your context before answering.",
        {
            "prompt": string("the user's message you are about to answer", max_length=MAX_TEXT),
            "session": _SESSION,
            "budget_tokens": integer("the most tokens the context may take", 100, 200_000, 4000),
        },
        ("prompt",),
        obj(
            {
                "text": string("the context, ready for a system prompt"),
                "tokens": count("its size in tokens"),
                "budget": count("the budget it was built for"),
                "sections": array(
                    "what went in", obj({"name": string("a section")}, ("name",), closed=False)
                ),
            },
            ("text", "tokens", "budget"),
            closed=False,
        ),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_record_turn",
        "Record a conversation turn",
        "Append one finished exchange (the user's message and your answer, with any tool "
        "calls) to the session's transcript and today's daily note, so later searches find "
        "it. Call it once per turn, after answering.",
        {
            "session": _SESSION,
            "user": string("what the user said", max_length=MAX_TEXT * 5),
            "assistant": string("what you answered", max_length=MAX_TEXT * 5),
            "tool_calls": array(
                "the tool calls you made, each an object such as "
                '{"name": "...", "arguments": {...}}',
                obj({}, closed=False),
                max_items=100,
            ),
        },
        ("session", "user", "assistant"),
        TURN,
        read_only=False,
    ),
    Spec(
        "memory_sessions",
        "List conversations",
        "List the recorded conversations (sessions), the most recently active first.",
        {"limit": integer("how many at most", 1, MAX_LIST, 50)},
        (),
        list_of("sessions", SESSION_INFO, "the sessions, most recent first"),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_session_show",
        "Show a conversation",
        "The turns of one recorded conversation, oldest first (the last ones only, by "
        "default the last 20).",
        {"session": _SESSION, "last": integer("how many of the last turns", 1, MAX_LIST, 20)},
        ("session",),
        list_of("turns", TURN, "the turns, oldest first", session=string("the session")),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_session_compact",
        "Compact a conversation",
        "Shorten a long conversation's transcript: keep its last turns and move the older "
        "ones to the archive, with a summary (nothing is deleted).",
        {"session": _SESSION, "keep": integer("how many of the last turns to keep", 0, 10_000)},
        ("session",),
        obj(
            {
                "session": string("the session"),
                "kept": count("turns kept"),
                "archived": count("turns moved to the archive"),
                "archive": nullable(string("the archive file")),
                "summary": string("a summary of what was archived"),
            },
            ("session", "kept", "archived"),
        ),
        read_only=False,
    ),
    Spec(
        "memory_lessons",
        "List lessons",
        "The lessons learned from failed tool calls and from the user's corrections, the most "
        "often seen first. Read them before a task like one that went wrong before.",
        {"k": integer("how many at most", 1, MAX_LIST, 20)},
        (),
        list_of("lessons", LESSON, "the lessons, most often seen first"),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_lesson_add",
        "Record a lesson",
        "Keep the lesson of a tool call that failed, so it is not repeated: the tool, its "
        "arguments and the error (a repeat is counted, not stored twice).",
        {
            "tool": string("the tool that failed", min_length=1, max_length=200),
            "error": string("the error it gave, or what went wrong", min_length=1),
            "arguments": obj({}, description="the arguments it was called with", closed=False),
            "session": _SESSION,
        },
        ("tool", "error"),
        obj({"lesson": LESSON}, ("lesson",)),
        read_only=False,
    ),
    Spec(
        "memory_core_read",
        "Read a core file",
        "Read one of the core files that shape every answer: agent (how you work), user "
        "(who the user is), soul (your character).",
        {"name": _CORE},
        ("name",),
        obj({"name": string("the core file"), "text": string("its text")}, ("name", "text")),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_core_write",
        "Replace a core file",
        "Replace the whole text of a core file (agent, user or soul). Read it first and write "
        "it back with your change: what you leave out is gone.",
        {"name": _CORE, "text": string("the file's new text", max_length=MAX_TEXT * 5)},
        ("name", "text"),
        obj({"name": string("the core file"), "text": string("what was written")}, ("name",)),
        read_only=False,
        destructive=True,
        idempotent=True,
    ),
    Spec(
        "memory_working_read",
        "Read working memory",
        "Read working memory: the priorities, active tasks, open threads and recent progress "
        "of the work at hand.",
        {},
        (),
        _WORKING,
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_working_write",
        "Update working memory",
        "Change working memory: add an item to a section, note progress (section "
        "recent_progress), or set a section to exactly the items given (set: replaces it). "
        "It has a size cap: the oldest items leave first, into today's daily note.",
        {
            "action": string("add an item, or set the whole section", enum=("add", "set")),
            "section": _SECTION,
            "items": array("the items (one for add)", string("an item"), max_items=100),
        },
        ("action", "section", "items"),
        obj({"dropped": _DROPPED, **_WORKING["properties"]}, ("dropped", "sections")),
        read_only=False,
        destructive=True,
    ),
    Spec(
        "memory_semantic_read",
        "Read a semantic file",
        "Read the items of a semantic file: facts, preferences or projects (stable knowledge "
        "kept by topic).",
        {"name": _SEMANTIC},
        ("name",),
        list_of("items", SEMANTIC_ITEM, "the file's items", name=string("the file")),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_semantic_add",
        "Add to a semantic file",
        "Add an item to a semantic file (facts, preferences or projects); an equal item "
        "already there is not added twice.",
        {"name": _SEMANTIC, "text": string("the item", min_length=1, max_length=MAX_TEXT)},
        ("name", "text"),
        obj(
            {"added": boolean("whether it was new"), "item": nullable(SEMANTIC_ITEM)},
            ("added",),
        ),
        read_only=False,
        idempotent=True,
    ),
    Spec(
        "memory_notes",
        "List notes",
        "List the notebook's notes: inbox (new), zettel (kept), maps (overviews).",
        {"folder": string("only this folder", enum=FOLDERS)},
        (),
        list_of("notes", NOTE, "the notes"),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_note_read",
        "Read a note",
        "Read one note of the notebook by its name, with the notes that link to it.",
        {"name": _NOTE_NAME},
        ("name",),
        obj(
            {
                "name": string("the note"),
                "text": string("its text"),
                "backlinks": array("the notes linking to it", string("a note's name")),
            },
            ("name", "text", "backlinks"),
        ),
        read_only=True,
        idempotent=True,
    ),
    Spec(
        "memory_note_create",
        "Create a note",
        "Write a new note in the notebook (never overwrites: a taken name gets a suffix). "
        "Link other notes with [[their name]] in the body.",
        {
            "title": string("the note's title (its name)", min_length=1, max_length=200),
            "body": string("the note's text (markdown)", max_length=MAX_TEXT * 5),
            "folder": string("where to put it", enum=FOLDERS, default="inbox"),
        },
        ("title",),
        obj({"note": NOTE}, ("note",)),
        read_only=False,
    ),
    Spec(
        "memory_status",
        "Memory status",
        "Counts of the memory (facts, lessons, journal) and the health of its search index.",
        {},
        (),
        obj(
            {
                "items": count("live facts"),
                "lessons": count("lessons"),
                "index": obj({}, description="the search index's state", closed=False),
            },
            ("items", "index"),
            closed=False,
        ),
        read_only=True,
        idempotent=True,
    ),
)
