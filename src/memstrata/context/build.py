"""The memory sections of a system prompt, in a fixed order, within a token budget.

Order (each section labelled with where it comes from): core (AGENT.md,
USER.md, SOUL.md), working memory, session state, long-term memory, lessons,
the recent conversation. The budget is shared out in that order:

* **core** is always whole (if it alone passes the budget it is cut, and the
  cut is said in the text; if not even that fits, it is left out);
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
counter, and headers count:

* **the budget is a hard ceiling**: ``counter.count(context.text) ==
  context.tokens <= budget`` for every budget >= 1, headers, notes and the
  accounting line included. Each section is first given its share (its
  header counted in it), and room the shares left unused goes to the
  sections that left entries out; if the whole passes the budget, sections give
  up entries (long-term memory first, then the recent conversation, lessons,
  session state, working memory), then the accounting line goes, then the
  core is cut further, then it goes too: a budget too small for anything
  gives an empty context;
* **whatever is left out is counted and named**: ``Context.left_out`` holds
  (section, entries not shown) for every section that did not fit whole,
  those left out entirely included (``Section.left_out`` for the ones
  shown), and the text ends with a line naming them (``[left out to fit the
  budget: Session state 8 of 8 entries; ...]``) when it fits; long-term
  memory says its own count in its section.
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
_CORE_CUT = "\n[core files cut to fit the budget]"


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
    # (section, entries of it not shown) for every section that did not fit
    # whole, those left out entirely included; the text names them too
    left_out: tuple[tuple[str, int], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "tokens": self.tokens,
            "budget": self.budget,
            "counter": self.counter,
            "sections": [section.to_dict() for section in self.sections],
            "left_out": dict(self.left_out),
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


def _header(name: str, sources: Sequence[str]) -> str:
    return f"## {name} ({', '.join(sources)})" if sources else f"## {name}"


def _section(name: str, sources: Sequence[str], body: str, counter: TokenCounter) -> Section:
    text = f"{_header(name, sources)}\n{body.strip()}\n"
    return Section(name, text, counter.count(text), tuple(sources))


def _injected(layer: str) -> bool:
    """True when the table injects ``layer`` into the prompt (``ALWAYS``, ``GATED``)."""
    return layers.POLICY[layer] in (layers.Policy.ALWAYS, layers.Policy.GATED)


@dataclass
class _Draft:
    """A section being fitted: its body lines and how many entries it had.

    ``lines`` are what is shown; an entry is a line (a "- " line when
    ``bullets``: the headings between them are no entries). ``oldest_first``:
    the section gives up its first lines first (the oldest), else its last.
    ``note`` closes the body with the count left out, when there is one."""

    name: str
    sources: tuple[str, ...]
    lines: list[str]
    total: int
    unit: str
    oldest_first: bool = False
    bullets: bool = False
    note: Callable[[int], str] | None = None
    pool: list[str] = field(default_factory=list)  # every entry, to take more from

    @property
    def shown(self) -> int:
        if self.bullets:
            return sum(1 for line in self.lines if line.startswith("- "))
        return len(self.lines)

    @property
    def left_out(self) -> int:
        return max(self.total - self.shown, 0)

    def render(self) -> str:
        if not self.lines:
            return ""
        body = "\n".join(self.lines).strip()
        if self.note is not None and self.left_out:
            body += "\n" + self.note(self.left_out)
        return f"{_header(self.name, self.sources)}\n{body}\n"

    def shrink(self, tokens: int, counter: TokenCounter) -> None:
        """Give up entries worth at least ``tokens`` (at least one entry)."""
        freed = 0
        while self.lines and (freed < tokens or not freed):
            line = self.lines.pop(0 if self.oldest_first else -1)
            freed += counter.count(line) + 1
            while self.bullets and self.lines and not self.lines[-1].startswith("- "):
                self.lines.pop()  # a heading left with no fact under it


def _cut_core(body: str, sources: Sequence[str], limit: int, counter: TokenCounter) -> str | None:
    """The longest head of ``body`` whose section, with the cut said, fits
    ``limit`` tokens (None: not even the header and the cut note fit)."""

    def fits(keep: int) -> bool:
        return _section("Core", sources, body[:keep] + _CORE_CUT, counter).tokens <= limit

    if not fits(0):
        return None
    low, high = 0, len(body)
    while low < high:  # the largest keep that fits
        mid = (low + high + 1) // 2
        if fits(mid):
            low = mid
        else:
            high = mid - 1
    return body[:low] + _CORE_CUT


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
    core = core if _injected("core") else ()
    working = working if _injected("working") else None
    state = state if _injected("session_state") else None
    lessons = lessons if _injected("lessons") else ()
    facts = facts if _injected("long_term") else 0

    drafts: dict[str, _Draft] = {}
    left = budget
    texts = [strip_comments(text) for _, text in core]
    if any(texts):
        drafts["Core"] = _core(tuple(path for path, _ in core), texts, budget, counter)
        left -= counter.count(drafts["Core"].render())

    if working is not None:
        body = strip_comments(working[1])
        lines = [line for line in body.splitlines() if line.strip()]
        if any(line.lstrip().startswith("- ") for line in lines):
            room = int(max(left, 0) * WORKING_SHARE) - _header_cost(
                "Working memory", working[0], counter
            )
            kept = _lines_within(lines, room, counter, newest_last=False)
            drafts["Working memory"] = _Draft(
                "Working memory", (working[0],), kept, len(lines), "line", pool=lines
            )
            left -= counter.count(drafts["Working memory"].render())

    fixed_left = max(left, 0)
    shares = (
        ("Session state", state, STATE_SHARE, True),
        ("Lessons", ("memory/LESSONS.jsonl", lessons) if lessons else None, LESSON_SHARE, False),
        ("Recent conversation", recent, RECENT_SHARE, True),
    )
    for name, part, share, newest_last in shares:
        if part is None or not part[1]:
            continue
        room = int(fixed_left * share) - _header_cost(name, part[0], counter)
        kept = _lines_within(list(part[1]), room, counter, newest_last=newest_last)
        unit = {"Session state": "entry", "Lessons": "lesson"}.get(name, "line")
        drafts[name] = _Draft(
            name, (part[0],), kept, len(part[1]), unit, newest_last, pool=list(part[1])
        )
        left -= counter.count(drafts[name].render())

    if shared is not None and shared.facts and _injected("long_term") and left > 0:
        room = int(fixed_left * GLOBAL_SHARE)
        shared_draft = _long_term(
            room, counter, shared.facts, shared.whole, shared.gated, GLOBAL_NAME, shared.source
        )
        if shared_draft is not None:
            drafts[GLOBAL_NAME] = shared_draft
            left -= counter.count(shared_draft.render())
    long_term = _long_term(max(left, 0), counter, facts, whole, gated)
    if long_term is not None:
        drafts["Long-term memory"] = long_term
    _spend_the_rest(budget, counter, drafts)
    return _fitted(budget, counter, drafts)


def _spend_the_rest(budget: int, counter: TokenCounter, drafts: dict[str, _Draft]) -> None:
    """Room the shares left unused (long-term memory whole, say) goes to the
    sections that left entries out, in the order of the prompt."""
    ordered = [drafts[name] for name in _ORDER if name in drafts]
    spare = budget - counter.count(_text(ordered, True))
    for draft in ordered:
        if spare <= 0:
            return
        if not draft.pool or not draft.left_out:
            continue
        before = counter.count(draft.render())
        room = spare + sum(counter.count(line) + 1 for line in draft.lines)
        if not draft.lines:
            room -= _header_cost(draft.name, draft.sources[0], counter)
        draft.lines = _lines_within(draft.pool, room, counter, newest_last=draft.oldest_first)
        spare -= counter.count(draft.render()) - before


def _core(sources: tuple[str, ...], texts: list[str], budget: int, counter: TokenCounter) -> _Draft:
    """The core files whole (an entry each), else cut to fit the budget and
    saying so (one entry), else nothing (every file left out)."""
    texts = [text for text in texts if text]
    whole = _Draft(
        "Core", sources, [text + "\n" for text in texts[:-1]] + texts[-1:], len(texts), "file"
    )
    if counter.count(whole.render()) <= budget:
        return whole
    cut = _cut_core("\n\n".join(texts), sources, budget, counter)  # never silently: said
    return _Draft("Core", sources, [cut] if cut else [], 1 if cut else len(texts), "file")


def _header_cost(name: str, source: str, counter: TokenCounter) -> int:
    return counter.count(_header(name, [source])) + 1


_ORDER = (
    "Core",
    "Working memory",
    "Session state",
    "Long-term memory",
    GLOBAL_NAME,
    "Lessons",
    "Recent conversation",
)
# Who gives up entries first when the whole passes the budget (core last of all).
_GIVE_UP = (
    GLOBAL_NAME,
    "Long-term memory",
    "Recent conversation",
    "Lessons",
    "Session state",
    "Working memory",
)


def _fitted(budget: int, counter: TokenCounter, drafts: dict[str, _Draft]) -> Context:
    """The context of ``drafts`` within ``budget`` tokens, all told: sections
    give up entries (``_GIVE_UP`` order) until the text with its accounting
    line fits; then the accounting line goes, then the core is cut further,
    then it goes too (an empty context is within any budget)."""
    ordered = [drafts[name] for name in _ORDER if name in drafts]
    accounting, core_cut = True, False
    while True:
        text = _text(ordered, accounting)
        over = counter.count(text) - budget
        if over <= 0:
            break
        victim = next((drafts[n] for n in _GIVE_UP if n in drafts and drafts[n].lines), None)
        if victim is not None:
            victim.shrink(over, counter)
        elif accounting and _accounting(ordered):
            accounting = False
        elif "Core" in drafts and drafts["Core"].lines and not core_cut:
            core, core_cut = drafts["Core"], True  # alone now: cut to the budget, once
            body = "".join(core.lines).removesuffix(_CORE_CUT)
            cut = _cut_core(body, core.sources, budget, counter)
            core.lines, core.total = ([cut], 1) if cut else ([], core.total)
        else:
            text = ""
            break
    sections = []
    for draft in ordered:
        rendered = draft.render()
        if rendered:
            tokens = counter.count(rendered)
            sections.append(Section(draft.name, rendered, tokens, draft.sources, draft.left_out))
    left_out = tuple((d.name, d.left_out) for d in ordered if d.left_out)
    return Context(
        text, tuple(sections), counter.count(text), budget, counter.name, left_out=left_out
    )


def _accounting(drafts: Sequence[_Draft]) -> str:
    """The line that counts and names what is left out, unless a section's
    own note says it already ("" when nothing is left out)."""
    parts = []
    for draft in drafts:
        if draft.left_out and not (draft.note is not None and draft.lines):
            plural = "" if draft.total == 1 else ("ies" if draft.unit == "entry" else "s")
            unit = draft.unit[:-1] if plural == "ies" else draft.unit
            parts.append(f"{draft.name} {draft.left_out} of {draft.total} {unit}{plural}")
    return f"[left out to fit the budget: {'; '.join(parts)}]\n" if parts else ""


def _text(drafts: Sequence[_Draft], accounting: bool) -> str:
    parts = [rendered for rendered in (draft.render() for draft in drafts) if rendered]
    if accounting:
        line = _accounting(drafts)
        if line:
            parts.append(line)
    return "\n".join(parts)


def _long_term(
    budget: int,
    counter: TokenCounter,
    facts: int,
    whole: Callable[[], Sequence[tuple[str, str]]],
    gated: Callable[[int], Iterable[tuple[str, str]]],
    name: str = "Long-term memory",
    source: str = "MEMORY.md",
) -> _Draft | None:
    if not facts:
        return None
    if 0 < facts * 2 <= budget:  # a fact line is at least 2 tokens: else it cannot fit
        lines = _grouped(whole())
        draft = _long_term_draft(lines, facts, name, source)
        if counter.count(draft.render()) <= budget:
            return draft
    # Not whole: the facts most relevant to the prompt, and a line that says so.
    note_room = 24
    chosen: list[tuple[str, str]] = []
    used = counter.count(f"## {name} ({source})\n") + note_room
    if budget - used >= 8:
        for heading, line in gated(facts):
            if budget - used < 8:
                break  # full: no fact is that short
            cost = counter.count(line) + counter.count(heading) // 2 + 1
            if used + cost > budget:
                continue
            chosen.append((heading, line))
            used += cost
    return _long_term_draft(_grouped(chosen), facts, name, source)


def _long_term_draft(lines: list[str], facts: int, name: str, source: str) -> _Draft:
    return _Draft(
        name,
        (source,),
        lines,
        facts,
        "fact",
        bullets=True,
        note=lambda left_out: (
            f"({left_out} more fact(s) in {source} not shown: only those relevant to this "
            "message fit; search memory for the rest)"
        ),
    )


def _grouped(facts: Sequence[tuple[str, str]]) -> list[str]:
    """Lines under their headings; headings in the order they first come."""
    groups: dict[str, list[str]] = {}
    for heading, line in facts:
        groups.setdefault(heading, []).append(line)
    return [out for heading, lines in groups.items() for out in (f"### {heading}", *lines)]
