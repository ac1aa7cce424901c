"""The memory sections of a system prompt, in a fixed order, within a token budget.

Order (each section labelled with where it comes from): core (AGENT.md,
USER.md, SOUL.md), working memory, session state, long-term memory, lessons,
the recent conversation. The budget is shared out in that order:

* **core** is always whole (if it alone passes the budget it is cut, and the
  cut is said in the text);
* **working memory** whole, up to ``WORKING_SHARE`` of what is left;
* **session state**: its newest entries, up to ``STATE_SHARE``;
* **lessons**: the top lessons, up to ``LESSON_SHARE``;
* **recent conversation**: the newest turns, up to ``RECENT_SHARE``;
* **global memory** (the ``global`` group's MEMORY.md, for any other
  group): whole or gated like long-term memory, up to ``GLOBAL_SHARE``,
  in a section of its own labelled with its file;
* **long-term memory** gets the rest: MEMORY.md's live facts whole when they
  fit, else the facts most relevant to the prompt (``gate``), best first,
  then the newest others while room is left, and a visible line saying how
  many were left out — never a silent cut.

Which sections there are follows the layer table (``storage.layers.POLICY``,
read at each call): a layer ``ALWAYS`` or ``GATED`` is injected as above,
one ``ON_DEMAND`` or ``NEVER`` is left out (a tool fetches it), so a layer's
policy is changed in that one place. ``long_term`` is whole when it fits and
gated otherwise under either injected policy (a budget is never passed
silently). The recent conversation is the session's replay, not a layer of
the table (``transcripts`` stay ``NEVER``: never injected as a layer).

A section that is empty is left out. Every count is in tokens of the given
counter; the total never passes the budget by more than the section headers
(a few tokens each).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..model import Item, category_title
from ..storage import layers
from .tokens import TokenCounter

__all__ = [
    "Context",
    "Section",
    "Shared",
    "assemble",
    "render_facts",
    "strip_comments",
]

WORKING_SHARE = 0.25
STATE_SHARE = 0.10
LESSON_SHARE = 0.08
RECENT_SHARE = 0.30
GLOBAL_SHARE = 0.20
GLOBAL_NAME = "Global memory"
_COMMENT = re.compile(r"<!--.*?-->\s*", re.S)


@dataclass(frozen=True, slots=True)
class Section:
    """One labelled part of the context."""

    name: str
    text: str
    tokens: int
    sources: tuple[str, ...]
    left_out: int = 0  # items that did not fit (long-term memory)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tokens": self.tokens,
            "sources": list(self.sources),
            "left_out": self.left_out,
        }


@dataclass(frozen=True, slots=True)
class Context:
    """The assembled memory context: ``text`` for the system prompt."""

    text: str
    sections: tuple[Section, ...]
    tokens: int
    budget: int
    counter: str = "estimate"
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "counter": self.counter,
            "sections": [section.to_dict() for section in self.sections],
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class Shared:
    """The ``global`` group's facts for ``assemble``: how many, every one as
    (heading, line), and the most relevant to the prompt (best first)."""

    source: str
    facts: int
    whole: Callable[[], Sequence[tuple[str, str]]]
    gated: Callable[[int], Iterable[tuple[str, str]]]


def strip_comments(text: str) -> str:
    """``text`` without HTML comments (template guidance a model need not read)."""
    return _COMMENT.sub("", text).strip()


def render_facts(items: Sequence[Item]) -> list[tuple[str, str]]:
    """Live facts as (category heading, "- text") lines, in MEMORY.md's order."""
    by_category: dict[str, list[Item]] = {}
    for item in items:
        if item.is_live:
            by_category.setdefault(item.category, []).append(item)
    out = []
    for category in sorted(by_category, key=lambda key: (key != "name", key)):
        for item in sorted(by_category[category], key=lambda i: (i.created_at, i.id)):
            out.append((category_title(category), f"- {item.text}"))
    return out


def _lines_within(
    lines: Sequence[str], budget: int, counter: TokenCounter, *, newest_last: bool = True
) -> list[str]:
    """As many of ``lines`` as fit in ``budget`` tokens, keeping the newest
    (the end of the list) when ``newest_last``, in their original order."""
    chosen: list[str] = []
    used = 0
    order = reversed(lines) if newest_last else iter(lines)
    for line in order:
        cost = counter.count(line) + 1
        if used + cost > budget:
            break
        chosen.append(line)
        used += cost
    return list(reversed(chosen)) if newest_last else chosen


def _section(name: str, sources: Sequence[str], body: str, counter: TokenCounter) -> Section:
    header = f"## {name} ({', '.join(sources)})" if sources else f"## {name}"
    text = f"{header}\n{body.strip()}\n"
    return Section(name, text, counter.count(text), tuple(sources))


def _injected(layer: str) -> bool:
    """True when the table injects ``layer`` into the prompt (``ALWAYS``, ``GATED``)."""
    return layers.POLICY[layer] in (layers.Policy.ALWAYS, layers.Policy.GATED)


def assemble(
    budget: int,
    counter: TokenCounter,
    *,
    core: Sequence[tuple[str, str]],
    working: tuple[str, str] | None,
    state: tuple[str, Sequence[str]] | None,
    facts: int,
    whole: Callable[[], Sequence[tuple[str, str]]],
    gated: Callable[[int], Iterable[tuple[str, str]]],
    lessons: Sequence[str],
    recent: tuple[str, Sequence[str]] | None,
    shared: Shared | None = None,
) -> Context:
    """The context from its parts (see the module): ``core`` (path, text) pairs;
    ``working`` (path, text); ``state`` (path, entry lines, oldest first);
    ``facts`` how many live facts there are and ``whole()`` every one as
    (heading, line), asked for only when they may fit; ``gated(limit)`` the facts
    most relevant to the prompt, best first; ``lessons`` lines, best first;
    ``recent`` (path, conversation lines, oldest first); ``shared`` the
    ``global`` group's facts, as a section of their own after long-term memory."""
    sections: list[Section] = []
    left = budget

    core = core if _injected("core") else ()
    working = working if _injected("working") else None
    state = state if _injected("session_state") else None
    lessons = lessons if _injected("lessons") else ()
    facts = facts if _injected("long_term") else 0
    core_body = "\n\n".join(strip_comments(text) for _, text in core if strip_comments(text))
    if core_body:
        section = _section("Core", [path for path, _ in core], core_body, counter)
        if section.tokens > budget:  # never silently: the cut is said
            keep = max(budget * 4 - 80, 0)
            cut = core_body[:keep] + "\n[core files cut to fit the budget]"
            section = _section("Core", [path for path, _ in core], cut, counter)
        sections.append(section)
        left -= section.tokens

    if working is not None and left > 0:
        body = strip_comments(working[1])
        lines = [line for line in body.splitlines() if line.strip()]
        has_items = any(line.lstrip().startswith("- ") for line in lines)
        if has_items:
            share = int(left * WORKING_SHARE)
            kept = _lines_within(lines, share, counter, newest_last=False)
            if kept:
                sections.append(_section("Working memory", [working[0]], "\n".join(kept), counter))
                left -= sections[-1].tokens

    fixed_left = left
    if state is not None and state[1] and left > 0:
        kept = _lines_within(list(state[1]), int(fixed_left * STATE_SHARE), counter)
        if kept:
            sections.append(_section("Session state", [state[0]], "\n".join(kept), counter))
            left -= sections[-1].tokens

    lesson_section = None
    if lessons and left > 0:
        kept = _lines_within(
            list(lessons), int(fixed_left * LESSON_SHARE), counter, newest_last=False
        )
        if kept:
            lesson_section = _section("Lessons", ["memory/LESSONS.jsonl"], "\n".join(kept), counter)
            left -= lesson_section.tokens

    recent_section = None
    if recent is not None and recent[1] and left > 0:
        kept = _lines_within(list(recent[1]), int(fixed_left * RECENT_SHARE), counter)
        if kept:
            recent_section = _section("Recent conversation", [recent[0]], "\n".join(kept), counter)
            left -= recent_section.tokens

    shared_section = None
    if shared is not None and shared.facts and _injected("long_term") and left > 0:
        room = int(fixed_left * GLOBAL_SHARE)
        shared_section = _long_term(
            room, counter, shared.facts, shared.whole, shared.gated, GLOBAL_NAME, shared.source
        )
        if shared_section is not None:
            left -= shared_section.tokens
    long_term = _long_term(max(left, 0), counter, facts, whole, gated)
    if long_term is not None:
        sections.append(long_term)
    if shared_section is not None:
        sections.append(shared_section)
    if lesson_section is not None:
        sections.append(lesson_section)
    if recent_section is not None:
        sections.append(recent_section)
    text = "\n".join(section.text for section in sections)
    return Context(text, tuple(sections), counter.count(text), budget, counter.name)


def _long_term(
    budget: int,
    counter: TokenCounter,
    facts: int,
    whole: Callable[[], Sequence[tuple[str, str]]],
    gated: Callable[[int], Iterable[tuple[str, str]]],
    name: str = "Long-term memory",
    source: str = "MEMORY.md",
) -> Section | None:
    if not facts or budget <= 0:
        return None
    if facts * 2 <= budget:  # a fact line is at least 2 tokens: else it cannot fit
        section = _section(name, [source], _grouped(whole()), counter)
        if section.tokens <= budget:
            return section
    # Not whole: the facts most relevant to the prompt, and a line that says so.
    note_room = 24
    chosen: list[tuple[str, str]] = []
    used = counter.count(f"## {name} ({source})\n") + note_room
    for heading, line in gated(facts):
        if budget - used < 8:
            break  # full: no fact is that short
        cost = counter.count(line) + counter.count(heading) // 2 + 1
        if used + cost > budget:
            continue
        chosen.append((heading, line))
        used += cost
    left_out = facts - len(chosen)
    body = _grouped(chosen) if chosen else ""
    body += (
        f"\n({left_out} more fact(s) in {source} not shown: only those relevant to this "
        "message fit; search memory for the rest)"
    )
    gated_section = _section(name, [source], body, counter)
    return Section(
        gated_section.name,
        gated_section.text,
        gated_section.tokens,
        gated_section.sources,
        left_out,
    )


def _grouped(facts: Sequence[tuple[str, str]]) -> str:
    """Lines under their headings; headings in the order they first come."""
    groups: dict[str, list[str]] = {}
    for heading, line in facts:
        groups.setdefault(heading, []).append(line)
    return "\n".join("\n".join([f"### {heading}", *lines]) for heading, lines in groups.items())
