"""The workspace: one folder of human-readable memory per group.

Layout (DESIGN.md, "Layers")::

    <workspace>/
      core/AGENT.md  core/USER.md  core/SOUL.md      always in the prompt
      working/WORKING_MEMORY.md                      bounded active state
      MEMORY.md                                      long-term facts (stable ids)
      memory/          daily notes, LTM_SNAPSHOT.json, LTM_AUDIT.jsonl, lessons
      semantic/        facts.md  preferences.md  projects.md
      notes/inbox/  notes/zettel/  notes/maps/       the notebook
      sessions/        transcripts (JSONL)
      summaries/       session summaries
      memstrata.toml   settings (read by the CLI and servers only)
      .memstrata/      journal, lock, quarantine, indexes (system-owned)
      groups/<name>/   other groups' workspaces under the same root

``init`` creates what is missing and never overwrites a file.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from ..errors import InvalidInput, NotFound
from .files import create_new, storage_errors
from .volume import DiskVolume, Volume

__all__ = ["GROUP_NAME", "Workspace", "init_workspace", "session_stem", "template_bytes"]

# The engine's files, by their path in a workspace's volume.
MEMORY_MD = "MEMORY.md"
SNAPSHOT = "memory/LTM_SNAPSHOT.json"
LTM_AUDIT = "memory/LTM_AUDIT.jsonl"
LESSONS = "memory/LESSONS.jsonl"
LESSONS_AUDIT = "memory/LESSONS_AUDIT.jsonl"
DOCS_AUDIT = "memory/DOCS_AUDIT.jsonl"  # what journaled file changes did, without their text

GROUP_NAME = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")

_TEMPLATES = {
    "core/AGENT.md": "AGENT.md",
    "core/USER.md": "USER.md",
    "core/SOUL.md": "SOUL.md",
    "working/WORKING_MEMORY.md": "WORKING_MEMORY.md",
    "semantic/facts.md": "facts.md",
    "semantic/preferences.md": "preferences.md",
    "semantic/projects.md": "projects.md",
    "memstrata.toml": "memstrata.toml",
}
_DIRECTORIES = (
    "core",
    "working",
    "memory",
    "semantic",
    "notes/inbox",
    "notes/zettel",
    "notes/maps",
    "sessions",
    "summaries",
    ".memstrata/quarantine",
)
_MARKER = ".memstrata/.gitignore"  # written by init, last
_URL_END = re.compile(r"#|, tenant ")  # what follows a database URL in ``Volume.where``
_SAFE_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,79}")
_UNSAFE_CHARS = re.compile(r"[^A-Za-z0-9._-]+")
_SYSTEM_GITIGNORE = (
    "# machine-local files of memstrata\nlock\nlock.gate\n*.tmp-*\nindex.sqlite*\n"
    "transcripts-verified.json\n"
)


@dataclass(frozen=True, slots=True)
class Workspace:
    """Paths of one group's workspace, and its files (``volume``: the folder
    ``path`` unless another volume is given)."""

    root: Path
    path: Path
    group: str | None
    volume: Volume = field(default=None, compare=False, repr=False)  # type: ignore[assignment]
    url: str | None = field(default=None, compare=False, repr=False)  # a database's (secret)

    def __post_init__(self) -> None:
        if getattr(self, "volume", None) is None:  # not given: the folder
            object.__setattr__(self, "volume", DiskVolume(self.path))

    @classmethod
    def locate(cls, root: Path, group: str | None = None) -> Workspace:
        """The workspace of ``group`` under ``root`` (``None``: the root's own)."""
        if group is None:
            return cls(root, root, None)
        if not isinstance(group, str) or not GROUP_NAME.fullmatch(group):
            raise InvalidInput(
                f"group name {group!r} is not allowed: use 1-63 of a-z, 0-9, '_' and '-', "
                "starting with a letter or digit"
            )
        return cls(root, root / "groups" / group, group)

    @property
    def memory_md(self) -> Path:
        return self.path / MEMORY_MD

    @property
    def system(self) -> Path:
        return self.path / ".memstrata"

    @property
    def journal(self) -> Path:
        return self.system / "journal.wal"

    @property
    def lock(self) -> Path:
        return self.system / "lock"

    @property
    def quarantine(self) -> Path:
        return self.system / "quarantine"

    @property
    def snapshot(self) -> Path:
        return self.path / SNAPSHOT

    @property
    def lessons(self) -> Path:
        return self.path / LESSONS

    @property
    def rules(self) -> Path:
        """Workspace capture rule packs (``*.toml``), added to the built-in ones."""
        return self.path / "rules"

    @staticmethod
    def session_state_rel(session: str | None) -> str:
        """``session_state`` as a volume path (relative to the workspace)."""
        if session is None:
            return "SESSION-STATE.md"
        return f"sessions/{session_stem(session)}/SESSION-STATE.md"

    @classmethod
    def on(cls, volume: Volume, group: str | None, url: str | None = None) -> Workspace:
        """The workspace of ``group`` whose files are ``volume`` (not a folder:
        a database). ``path`` is then a place no file can be made (``/dev/null``
        is not a folder), so that code reaching for the folder fails loudly."""
        nowhere = Path("/dev/null") / "memstrata" / (group or "main")
        return cls(nowhere, nowhere, group, volume, url)

    @property
    def location(self) -> Path | str:
        """What opens the workspaces of this one's root again: the root folder,
        or the database URL (with its password: never print it)."""
        return self.url if self.url is not None else self.root

    def file(self, rel: str) -> Path:
        """File ``rel`` (a volume path) as the API gives it to a caller: in the
        folder, or, on a workspace with no folder here (a database), ``rel``
        itself: the path by which the volume, documents and search name it."""
        return self.path / rel if self.volume.local is not None else Path(rel)

    @property
    def where(self) -> str:
        """The workspace's place for messages: its folder, or a URL and tenant."""
        return self.volume.where

    def exists(self) -> bool:
        """True when the workspace has been initialised."""
        if self.volume.local is None:
            return self.volume.stat(_MARKER) is not None
        return self.system.is_dir()

    def require(self) -> None:
        """Raise ``NotFound`` unless the workspace has been initialised."""
        if not self.exists():
            hint = f" --group {self.group}" if self.group else ""
            # a database's place is "URL, tenant 'G'" (``PostgresLock.where``): init takes the URL
            where = self.root if self.volume.local is not None else _URL_END.split(self.where)[0]
            raise NotFound(
                f"no memstrata workspace at {self.where} (create it with "
                f"`memstrata init --workspace {where}{hint}`)"
            )

    def missing(self) -> list[str]:
        """Layout entries (relative paths) that are not there."""
        if self.volume.local is None:  # folders are implicit in a database
            return [name for name in _TEMPLATES if self.volume.stat(name) is None]
        wanted = list(_DIRECTORIES) + list(_TEMPLATES)
        return [name for name in wanted if not (self.path / name).exists()]


def template_bytes(rel: str) -> bytes | None:
    """The bytes ``init`` writes at ``rel`` (None: no template file there)."""
    name = _TEMPLATES.get(rel)
    return (
        None if name is None else (resources.files("memstrata") / "templates" / name).read_bytes()
    )


def init_workspace(workspace: Workspace) -> list[str]:
    """Create whatever of the layout is missing; returns what was created."""
    if workspace.volume.local is None:
        return _init_files(workspace.volume)
    if workspace.path.exists() and not workspace.path.is_dir():
        raise InvalidInput(f"{workspace.path} exists and is not a folder")
    created: list[str] = []
    templates = resources.files("memstrata") / "templates"
    with storage_errors(f"create the workspace at {workspace.path}"):
        workspace.path.mkdir(parents=True, exist_ok=True)
        for name in _DIRECTORIES:
            target = workspace.path / name
            if not target.is_dir():
                target.mkdir(parents=True, exist_ok=True)
                created.append(name + "/")
        for name, template in _TEMPLATES.items():
            target = workspace.path / name
            if not target.exists() and create_new(target, (templates / template).read_bytes()):
                created.append(name)
        ignore = workspace.system / ".gitignore"
        if not ignore.exists():
            create_new(ignore, _SYSTEM_GITIGNORE.encode())
        elif not (workspace.system / "lock.gate").exists():  # from before the lock's turnstile
            known = ignore.read_text(encoding="utf-8", errors="replace")
            if "lock.gate" not in known.split():
                with ignore.open("a", encoding="utf-8") as out:
                    out.write(("" if known.endswith("\n") or not known else "\n") + "lock.gate\n")
    return created


def _init_files(volume: Volume) -> list[str]:
    """``init`` on a volume that is not a folder: the template files only."""
    templates = resources.files("memstrata") / "templates"
    created = [
        name
        for name, template in _TEMPLATES.items()
        if volume.create(name, (templates / template).read_bytes())
    ]
    volume.create(_MARKER, _SYSTEM_GITIGNORE.encode())  # last: the workspace exists now
    return created


def session_stem(session: str) -> str:
    """A file name for a session id: the id itself when it is a plain name,
    else a readable slug plus a hash of the id (so two ids never share a file)."""
    if _SAFE_STEM.fullmatch(session) and not session.endswith("."):
        return session
    slug = _UNSAFE_CHARS.sub("-", session).strip("-.")[:40] or "session"
    digest = hashlib.sha256(session.encode()).hexdigest()[:10]
    return f"{slug}-{digest}"
