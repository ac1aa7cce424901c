"""Places of the shared behavioural suite of ``Memory``
(``tests/contracts/test_memory_*``): one workspace on each backend, opened as
often as a test needs (its fixtures: ``tests/contracts/conftest.py``).

``place`` is a workspace that does not exist yet: a folder (``tmp_path/ws``)
or a fresh tenant of the session's PostgreSQL (a skip without one).
``place.open()`` opens it (every call is another ``Memory`` on the SAME
workspace: what a second process, or a reopen, sees), ``place.beside()`` is
another group of the same root or database. ``opened`` is the first
``Memory`` on ``place``. Every ``Memory`` is closed at the end of the test.

The tests read and write only through the public API, and files only through
``memory.workspace.volume`` (the same calls on both backends), never the disk.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import postgres_server
from memstrata import Memory
from memstrata.errors import MemstrataError

MEMORY_BACKENDS = ("folder", "postgres")
# The hash embedder: deterministic and instant, and the vector path still runs.
QUICK: dict[str, Any] = {"embedder": "hash"}


@dataclass
class Place:
    """One workspace of ``backend``: the folder or URL and the group it is opened with."""

    backend: str
    location: Path | str
    group: str | None
    opened: list[Memory] = field(default_factory=list)

    def open(self, **fields: Any) -> Memory:
        """Another ``Memory`` on this workspace (settings: the quick ones, then ``fields``)."""
        memory = Memory.open(self.location, group=self.group, **{**QUICK, **fields})
        self.opened.append(memory)
        return memory

    def beside(self) -> Place:
        """Another group of the same root (a folder's ``groups/``, another tenant)."""
        group = postgres_server.tenant() if self.backend == "postgres" else "beside"
        return Place(self.backend, self.location, group, self.opened)

    def close(self) -> None:
        for memory in reversed(self.opened):
            with contextlib.suppress(MemstrataError):
                memory.close()


@pytest.fixture(params=MEMORY_BACKENDS)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Place]:
    if request.param == "postgres":
        made = Place("postgres", postgres_server.app_url(), postgres_server.tenant())
    else:
        made = Place("folder", tmp_path / "ws", None)
    yield made
    made.close()


@pytest.fixture
def opened(place: Place) -> Memory:
    return place.open()
