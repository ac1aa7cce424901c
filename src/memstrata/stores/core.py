"""Core memory: core/AGENT.md (role), USER.md (the user), SOUL.md (voice), and
any other ``core/<name>.md`` (q15 keeps more, e.g. PROJECT.md), always injected.

* ``read`` gives a file's text exactly as stored (line breaks as ``\\n``).
* ``write`` replaces a file atomically and durably with the redacted text,
  ending in a line break; the other core files are untouched.
* A name is ``"agent"``, ``"user"``, ``"soul"`` or their file names
  (``"AGENT.md"``...), in any case; or the file name of another core file,
  exactly as it is spelled, that the path guard allows as ``core/<name>``
  (``storage.access``: one segment ending in ``.md``, no leading dot, at most
  ``MAX_NAME_CHARS`` before ``.md``, no form NFKC changes); anything else is
  ``InvalidInput``. The same size limits hold for every core file
  (``check_document``).
* ``listed`` names the core files: the three named ones first (whether they
  exist or not), then every other allowed ``core/<name>.md`` there is, by name.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

from ..errors import InvalidInput
from ..model import check_document
from ..storage.access import allowed
from ..storage.volume import Volume
from ..storage.workspace import Workspace
from .text import read_text, redacted, write_text

__all__ = ["FILES", "listed", "path", "read", "rel", "write"]

FILES = {"agent": "AGENT.md", "user": "USER.md", "soul": "SOUL.md"}


def rel(name: str) -> str:
    """The volume path of core file ``name`` (``InvalidInput`` for an unknown name)."""
    return f"core/{_file_name(name)}"


def path(workspace: Workspace, name: str) -> Path:
    """Where core file ``name`` lives in the workspace folder."""
    return workspace.path / rel(name)


def read(workspace: Workspace, name: str) -> str:
    """The text of core file ``name``; ``NotFound`` if missing, ``Corrupt`` if not UTF-8."""
    return read_text(workspace.volume, rel(name), rel(name))


def write(workspace: Workspace, name: str, text: str) -> str:
    """Replace core file ``name`` with ``text`` redacted; returns what was written.

    Atomic and durable; the result ends in exactly the text given (secrets
    replaced) plus a line break when it had none.
    """
    if not isinstance(text, str):
        raise InvalidInput(f"core text must be a string, not {type(text).__name__}")
    check_document(text, rel(name))
    safe = redacted(text)
    if safe and not safe.endswith("\n"):
        safe += "\n"
    write_text(workspace.volume, rel(name), safe, rel(name))
    return safe


def listed(volume: Volume) -> list[str]:
    """The volume paths of the core files (see the module)."""
    named = [f"core/{file}" for file in FILES.values()]
    found = sorted(rel for rel, _ in volume.list("core/") if rel not in named and allowed(rel))
    return [*named, *found]


def _file_name(name: str) -> str:
    if isinstance(name, str):
        key = name.strip().casefold()
        key = key.removesuffix(".md")
        if key in FILES:
            return FILES[key]
        if (
            "/" not in name
            and unicodedata.normalize("NFKC", name) == name
            and allowed(f"core/{name}")
        ):
            return name
    known = ", ".join([*FILES, *FILES.values()])
    raise InvalidInput(
        f"core file must be one of {known} or another core/<name>.md "
        f"(a name of letters, digits, '.', '_', '-' and inner spaces), not {name!r}"
    )
