"""The layers of a workspace: the one table of their names, their files and
how each reaches the prompt (``LAYERS``; ``POLICY`` is its name -> policy view).

Everything that names a layer or its files derives from ``LAYERS``: the
index's ``layer_of`` and searchable files (``index.chunks``), the path guard's
allowed files (``storage.access``), search's layer names (``memory.search``)
and the sections ``build_context`` injects (``context.build``). A file's layer
is the first in the table with a glob that matches it (``*`` and ``[0-9]``
within one path segment) and no ``exclude`` glob that does.

Each layer has its own module, each function taking a ``Workspace`` and explicit
arguments (no configuration is read here):

* ``core``     — core/AGENT.md, USER.md, SOUL.md (and any other core/<name>.md,
  as q15 keeps): read and write by name;
* ``working``  — working/WORKING_MEMORY.md: sections of bullet items, bounded;
* ``semantic`` — semantic/facts.md, preferences.md, projects.md: bullet items;
* ``notebook`` — notes/inbox, notes/zettel, notes/maps: notes and their links;
* ``migrate``  — legacy layouts taken in on open (CLAUDE.md, compaction sections).

Invariants shared by every writer here:

* a write replaces its file atomically and durably (``Volume.write``): a
  reader sees the old text or the new, and after return the new text survives
  a crash; every text a writer is given is redacted (``capture.secrets``) first,
  and every file written ends in a line break;
* text a person wrote by hand is kept (see each module for where it goes);
* a file that is not valid UTF-8 is never rewritten: reads raise ``Corrupt``;
* writers take no lock: call them under the workspace lock, as ``Memory`` does,
  so that two read-modify-write calls do not interleave.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType

__all__ = ["LAYERS", "POLICY", "SEARCHABLE", "Layer", "Policy", "layer_of"]


class Policy(StrEnum):
    """How a layer reaches the model's prompt."""

    ALWAYS = "always"  # injected in full every turn
    GATED = "gated"  # injected whole when it fits, else the items relevant to the prompt
    ON_DEMAND = "on_demand"  # fetched by a tool (memory_search / memory_get) when asked
    NEVER = "never"  # never injected


@dataclass(frozen=True, slots=True)
class Layer:
    """One layer: its name, how it reaches the prompt, and its files as
    workspace-relative globs: ``files`` (what belongs to it and is searchable),
    ``named`` (those a caller may name through the path guard: an exact path,
    or ``<folder>/*.md`` for any good ``<name>.md``) and ``exclude``."""

    name: str
    policy: Policy
    files: tuple[str, ...] = ()
    named: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()


_DAY = "[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]"

LAYERS: tuple[Layer, ...] = (
    # core/AGENT.md, USER.md, SOUL.md (and any other core/<name>.md, as q15 keeps):
    # who the agent is and who the user is, every turn.
    Layer("core", Policy.ALWAYS, ("core/*.md",), ("core/*.md",)),
    # working/WORKING_MEMORY.md: bounded active state (priorities, tasks, threads, progress).
    Layer("working", Policy.ALWAYS, ("working/*.md",), ("working/WORKING_MEMORY.md",)),
    # SESSION-STATE.md of the live session: what was captured from it so far.
    Layer("session_state", Policy.ALWAYS, ("SESSION-STATE.md", "sessions/*/SESSION-STATE.md")),
    # MEMORY.md: whole when it fits the budget, else the relevant items (top-K by score).
    Layer("long_term", Policy.GATED, ("MEMORY.md",), ("MEMORY.md",)),
    # memory/LESSONS.jsonl: always, but only the top k lessons.
    Layer("lessons", Policy.ALWAYS, ("memory/LESSONS.jsonl",)),
    # memory/YYYY-MM-DD.md daily notes and summaries/<session>.md: found by search.
    # (Before ``semantic``: a daily note is also a memory/*.md.)
    Layer(
        "daily_notes",
        Policy.ON_DEMAND,
        (f"memory/{_DAY}.md", "summaries/*.md"),
        ("memory/*.md", "summaries/*.md"),
    ),
    # semantic/facts.md, preferences.md, projects.md (and other memory/<topic>.md):
    # fetched by a tool when relevant.
    Layer(
        "semantic",
        Policy.ON_DEMAND,
        ("memory/*.md", "semantic/*.md"),
        ("memory/*.md", "semantic/*.md"),
    ),
    # notes/inbox, zettel, maps: searched and read by a tool, never pushed.
    Layer(
        "notebook",
        Policy.ON_DEMAND,
        ("notes/*/*.md",),
        ("notes/inbox/*.md", "notes/zettel/*.md", "notes/maps/*.md"),
    ),
    # sessions/<session>.jsonl (q15's history): searched and replayed, never injected.
    Layer(
        "transcripts",
        Policy.NEVER,
        ("sessions/*.jsonl", "sessions/archive/*.jsonl"),
        exclude=("sessions/*.audit.jsonl", "sessions/archive/*.audit.jsonl"),
    ),
    # .memstrata/: journal, index, locks, quarantine, audit; system-owned.
    Layer("system", Policy.NEVER),
)

POLICY: Mapping[str, Policy] = MappingProxyType({layer.name: layer.policy for layer in LAYERS})

# The layers a search can look in: those with files.
SEARCHABLE = frozenset(layer.name for layer in LAYERS if layer.files)


def matches(path: str, pattern: str) -> bool:
    """True when ``path`` matches glob ``pattern`` segment by segment."""
    return _compiled((pattern,)).fullmatch(path) is not None


def _compiled(globs: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for ``globs``, segment by segment: ``*`` and ``?`` never
    cross a ``/``; ``[...]`` is a character class; all else is literal."""
    alternatives = []
    for glob in globs:
        pieces = []
        for piece in re.split(r"(\*|\?|\[[^\]/]+\])", glob):
            if piece == "*":
                pieces.append("[^/]*")
            elif piece == "?":
                pieces.append("[^/]")
            elif piece.startswith("[") and piece.endswith("]") and len(piece) > 2:
                pieces.append(piece)
            else:
                pieces.append(re.escape(piece))
        alternatives.append("".join(pieces))
    return re.compile("|".join(alternatives) or r"(?!)")


# Each layer's files and exclusions, compiled once: ``layer_of`` runs for
# every file of every index scan.
_MATCHERS = tuple(
    (layer.name, _compiled(layer.files), _compiled(layer.exclude)) for layer in LAYERS
)


def layer_of(path: str) -> str | None:
    """The layer of a workspace-relative path, None if it is not searchable."""
    for name, files, exclude in _MATCHERS:
        if files.fullmatch(path) and not exclude.fullmatch(path):
            return name
    return None
