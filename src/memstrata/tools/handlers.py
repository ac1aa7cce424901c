"""What each memory tool does: ``HANDLERS[name](memory, arguments)`` with the
arguments already checked against the tool's schema (``schema.check``:
defaults filled in, no unknown one, ``group`` taken out), its result the
JSON object of the tool's result schema (``specs``).

* Reads go through ``Memory``'s reads; every file a caller names goes
  through the path guard (``access.resolve_rel``) and the workspace's volume.
* Writes are ``Memory``'s writes: journaled, durable when the handler returns,
  secrets redacted. An agent's own facts have source ``agent``: kept, never
  promoted to an instruction (``observe`` promotes only the user's words).
* A refusal is a ``MemstrataError`` (``InvalidInput``, ``NotFound``,
  ``Conflict``, ``AccessDenied`` …): the caller says it back to the model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import timedelta
from typing import Any

from ..errors import InvalidInput, NotFound
from ..index.hybrid import Hit
from ..memory import Memory
from ..model import Item, now
from ..storage.access import resolve_rel
from ..storage.files import storage_errors
from ..stores import working as working_store
from ..stores.lessons import Lesson
from ..stores.semantic import SemanticItem
from ..stores.transcripts import Turn

__all__ = ["HANDLERS", "Handler", "fact", "hit"]

Handler = Callable[[Memory, Mapping[str, Any]], dict[str, Any]]


def fact(item: Item) -> dict[str, Any]:
    """A fact as the tools give it (``FACT``)."""
    return {**item.to_dict(), "user": item.user}


def hit(found: Hit) -> dict[str, Any]:
    """A search hit as the tools give it (``HIT``): its id first."""
    return {
        "id": found.ref or found.citation,
        "path": found.path,
        "lines": [found.line_start, found.line_end],
        "citation": found.citation,
        "snippet": found.snippet,
        "score": round(found.score, 4),
        "layer": found.layer,
        "session": found.session,
        "source": found.source,
        "created_at": found.created_at.isoformat() if found.created_at else None,
    }


def _lesson(lesson: Lesson) -> dict[str, Any]:
    return {
        "id": lesson.id,
        "kind": lesson.kind,
        "text": lesson.text,
        "tool": lesson.tool,
        "hits": lesson.hits,
        "session": lesson.session,
        "created_at": lesson.created_at.isoformat(),
        "updated_at": lesson.updated_at.isoformat(),
    }


def _turn(turn: Turn) -> dict[str, Any]:
    data = turn.to_dict()
    return {
        "id": turn.id,
        "seq": turn.seq,
        "session": turn.session,
        "created_at": data["created_at"],
        "user": turn.text_of("user"),
        "assistant": turn.text_of("assistant"),
        "messages": data["messages"],
    }


# -- facts and search ----------------------------------------------------------------------


def _search(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    layers = None if args["layer"] is None else [args["layer"]]
    found = memory.search(
        args["query"],
        k=args["k"],
        layers=layers,
        session=args["session"],
        sessions=args["sessions"],
    )
    return {"hits": [hit(each) for each in found]}


def _get(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    requested = args["path"]
    volume = memory.workspace.volume
    rel = resolve_rel(volume, requested, write=False)
    if rel == "MEMORY.md" and not memory.read_only:
        memory.flush()  # what was just written is in it (a no-op when nothing is pending)
    first, count = args["from_line"], args["lines"]
    with storage_errors(f"read {requested}"):
        data = volume.read(rel)
    if data is None:
        raise NotFound(f"{requested} does not exist")
    every = data.decode("utf-8", "replace").splitlines()
    chosen = every[first - 1 : first - 1 + count]
    return {
        "path": requested,
        "from_line": first,
        "lines": len(chosen),
        "total_lines": len(every),
        "text": "\n".join(chosen),
    }


def _get_fact(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"fact": fact(memory.get(_bare(args["id"])))}


def _bare(item_id: str) -> str:
    """An id as a model may quote it (``^abc123``, with spaces) -> ``abc123``."""
    return item_id.strip().lstrip("^")


def _list(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    limit = args["limit"]
    if args["forgotten"]:
        gone = [{**fact(e.item), "forgotten_at": e.at.isoformat()} for e in memory.forgotten(limit)]
        return {"facts": gone}
    found = memory.list(
        category=args["category"],
        session=args["session"],
        source=args["source"],
        include_superseded=args["include_superseded"],
        limit=limit,
    )
    return {"facts": [fact(item) for item in found]}


def _recent(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    since = now() - timedelta(days=args["days"])
    facts = sorted(
        (item for item in memory.list() if item.updated_at >= since),
        key=lambda item: item.updated_at,
        reverse=True,
    )[: args["limit"]]
    active = [info for info in memory.sessions.list() if info.last_at and info.last_at >= since]
    sessions = active[: args["limit"]]
    return {
        "since": since.isoformat(),
        "facts": [fact(item) for item in facts],
        "sessions": [info.to_dict() for info in sessions],
    }


def _write(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    item = memory.remember(args["text"], category=args["category"], source="agent", sync=True)
    return fact(item)


def _observe(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    captured = memory.observe(args["text"], session=args["session"])
    return {"captured": [capture.to_dict() for capture in captured]}


def _correct(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    old = _bare(args["id"])
    new = memory.supersede(old, args["text"], category=args["category"], source="agent")
    return {"fact": fact(new), "superseded": old}


def _forget(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    item = memory.forget(_bare(args["id"]))
    return {"forgotten": item.id, "text": item.text}


def _restore(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"fact": fact(memory.restore(_bare(args["id"])))}


# -- context, sessions, lessons ------------------------------------------------------------


def _context(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    built = memory.build_context(
        args["prompt"], session=args["session"], budget_tokens=args["budget_tokens"]
    )
    return built.to_dict()


def _record_turn(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    turn = memory.record_turn(
        args["session"],
        user=args["user"],
        assistant=args["assistant"],
        tool_calls=args["tool_calls"] or (),
    )
    return _turn(turn)


def _sessions(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"sessions": [info.to_dict() for info in memory.sessions.list()[: args["limit"]]]}


def _session_show(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    turns = memory.sessions.turns(args["session"], last=args["last"])
    return {"session": args["session"], "turns": [_turn(turn) for turn in turns]}


def _session_compact(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return memory.sessions.compact(args["session"], keep=args["keep"]).to_dict()


def _lessons(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"lessons": [_lesson(lesson) for lesson in memory.lessons.top(args["k"])]}


def _lesson_add(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    lesson = memory.record_tool_failure(
        args["tool"], args["arguments"] or {}, args["error"], session=args["session"]
    )
    return {"lesson": _lesson(lesson)}


# -- the layers and status -----------------------------------------------------------------


def _core_read(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": args["name"], "text": memory.core.read(args["name"])}


def _core_write(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": args["name"], "text": memory.core.write(args["name"], args["text"])}


def _working_state(memory: Memory) -> dict[str, Any]:
    current = memory.working.read()
    sections = {key: list(current.items(key)) for key in working_store.SECTIONS}
    return {"sections": sections, "text": working_store.render(current)}


def _working_read(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    del args
    return _working_state(memory)


def _working_write(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    section, items = args["section"], args["items"]
    if args["action"] == "set":
        dropped = memory.working.set(section, items)
    elif len(items) != 1:
        raise InvalidInput("add takes exactly one item")
    elif section == "recent_progress":
        dropped = memory.working.progress(items[0])
    else:
        dropped = memory.working.add(section, items[0])
    gone = [{"section": each.section, "text": each.text} for each in dropped]
    return {"dropped": gone, **_working_state(memory)}


def _semantic_read(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    found = memory.semantic.read(args["name"])
    return {"name": args["name"], "items": [_semantic_item(each) for each in found]}


def _semantic_item(item: SemanticItem) -> dict[str, Any]:
    return {"line": item.line, "text": item.text, "heading": item.heading}


def _semantic_add(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    added = memory.semantic.add(args["name"], args["text"])
    if added is None:
        return {"added": False, "item": None}
    return {"added": True, "item": _semantic_item(added)}


def _note(note: Any) -> dict[str, Any]:
    return {"name": note.name, "folder": note.folder, "path": note.rel}


def _notes(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"notes": [_note(note) for note in memory.notes.list(args["folder"])]}


def _note_read(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    name = args["name"]
    links = [note.name for note in memory.notes.backlinks(name)]
    return {"name": name, "text": memory.notes.read(name), "backlinks": links}


def _note_create(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    note = memory.notes.create(args["title"], args["body"] or "", folder=args["folder"])
    return {"note": _note(note)}


def _status(memory: Memory, args: Mapping[str, Any]) -> dict[str, Any]:
    del args
    status = memory.status().to_dict()
    return {**status, "notices": list(status["notices"]), "index": memory.index_status()}


HANDLERS: dict[str, Handler] = {
    "memory_search": _search,
    "memory_get": _get,
    "memory_get_fact": _get_fact,
    "memory_list": _list,
    "memory_recent": _recent,
    "memory_write": _write,
    "memory_observe": _observe,
    "memory_correct": _correct,
    "memory_forget": _forget,
    "memory_restore": _restore,
    "memory_context": _context,
    "memory_record_turn": _record_turn,
    "memory_sessions": _sessions,
    "memory_session_show": _session_show,
    "memory_session_compact": _session_compact,
    "memory_lessons": _lessons,
    "memory_lesson_add": _lesson_add,
    "memory_core_read": _core_read,
    "memory_core_write": _core_write,
    "memory_working_read": _working_read,
    "memory_working_write": _working_write,
    "memory_semantic_read": _semantic_read,
    "memory_semantic_add": _semantic_add,
    "memory_notes": _notes,
    "memory_note_read": _note_read,
    "memory_note_create": _note_create,
    "memory_status": _status,
}
