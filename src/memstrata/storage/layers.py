"""The layers of a workspace, and the one table that says which reach the prompt.

Each layer has its own module, each function taking a ``Workspace`` and explicit
arguments (no configuration is read here):

* ``core``     — core/AGENT.md, USER.md, SOUL.md: read and write by name;
* ``working``  — working/WORKING_MEMORY.md: sections of bullet items, bounded;
* ``semantic`` — semantic/facts.md, preferences.md, projects.md: bullet items;
* ``notebook`` — notes/inbox, notes/zettel, notes/maps: notes and their links;
* ``migrate``  — legacy layouts taken in on open (CLAUDE.md, compaction sections).

Invariants shared by every writer here:

* a write replaces its file atomically and durably (``files.atomic_write``): a
  reader sees the old text or the new, and after return the new text survives
  a crash; every text a writer is given is redacted (``capture.secrets``) first,
  and every file written ends in a line break;
* text a person wrote by hand is kept (see each module for where it goes);
* a file that is not valid UTF-8 is never rewritten: reads raise ``Corrupt``;
* writers take no lock: call them under the workspace lock, as ``Memory`` does,
  so that two read-modify-write calls do not interleave.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from types import MappingProxyType

__all__ = ["POLICY", "Policy"]


class Policy(StrEnum):
    """How a layer reaches the model's prompt."""

    ALWAYS = "always"  # injected in full every turn
    GATED = "gated"  # injected whole when it fits, else the items relevant to the prompt
    ON_DEMAND = "on_demand"  # fetched by a tool (memory_search / memory_get) when asked
    NEVER = "never"  # never injected


POLICY: Mapping[str, Policy] = MappingProxyType(
    {
        # core/AGENT.md, USER.md, SOUL.md: who the agent is and who the user is, every turn.
        "core": Policy.ALWAYS,
        # working/WORKING_MEMORY.md: bounded active state (priorities, tasks, threads, progress).
        "working": Policy.ALWAYS,
        # SESSION-STATE.md of the live session: what was captured from it so far.
        "session_state": Policy.ALWAYS,
        # MEMORY.md: whole when it fits the budget, else the relevant items (top-K by score).
        "long_term": Policy.GATED,
        # memory/LESSONS.jsonl: always, but only the top k lessons.
        "lessons": Policy.ALWAYS,
        # semantic/facts.md, preferences.md, projects.md: fetched by a tool when relevant.
        "semantic": Policy.ON_DEMAND,
        # notes/inbox, zettel, maps: searched and read by a tool, never pushed.
        "notebook": Policy.ON_DEMAND,
        # memory/YYYY-MM-DD.md daily notes and summaries/<session>.md: found by search.
        "daily_notes": Policy.ON_DEMAND,
        # sessions/<session>.jsonl (q15's history): searched and replayed, never injected.
        "transcripts": Policy.NEVER,
        # .memstrata/: journal, index, locks, quarantine, audit; system-owned.
        "system": Policy.NEVER,
    }
)
