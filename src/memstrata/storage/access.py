"""Who may touch which group, and which files a caller may name: groups and the path guard.

Groups (one root, ``root/groups/<name>/`` per group, plus ``global``):

* a non-main group reads and writes only its own workspace, and reads ``global``;
* the main group may name any group explicitly (its own when it names none);
* only the main group writes ``global``.

``Groups.check`` answers with the group to act on or raises ``AccessDenied``
naming the caller, the target and the rule; a malformed group name is
``InvalidInput`` (the names of ``workspace.GROUP_NAME``).

The path guard, ``resolve(workspace_root, requested, write=...)``: a path a
caller names is accepted only when it is one of the allowed files (the
``named`` globs of ``layers.LAYERS``, the one table of layers and files):

* ``MEMORY.md`` (also named ``memory.md``, seed 001's other spelling)
* ``memory/<name>.md``          daily notes and other memory markdown
* ``core/<name>.md``            AGENT.md, USER.md, SOUL.md and any other (q15)
* ``working/WORKING_MEMORY.md``
* ``semantic/<name>.md``
* ``notes/inbox/<name>.md``  ``notes/zettel/<name>.md``  ``notes/maps/<name>.md``
* ``summaries/<name>.md``

where ``<name>`` starts with a letter or digit (any script) and goes on with
letters, digits, marks, ``.``, ``_``, ``-`` and inner spaces (at most
``MAX_NAME_CHARS``). Everything else is ``AccessDenied`` with the reason:
a non-string is ``InvalidInput``; an empty path, surrounding whitespace,
an absolute path, a backslash, a URL escape (``%xx``), a control character
(NUL included), a form that NFKC normalisation changes (fullwidth ``／``,
one-dot leader ``․`` ...), an empty segment, ``.`` or ``..``, a hidden
segment (leading ``.``), or a path outside the list. The path is then
resolved with ``os.path.realpath``: its real location (symlinks followed,
anywhere on the way) must lie inside the real workspace root and must itself
be an allowed file; an existing target that is not a regular file (a
folder, a FIFO, a device) is refused. Messages quote the requested path
(escaped, shortened), never a file's content.

``resolve_rel(volume, requested, write=...)`` is the guard for a workspace's
volume (``storage.volume``): it gives the volume path of the file to read or
write. On a folder (``Volume.local``) that is ``resolve``'s real path relative
to the real folder (all of the above, symlinks followed on disk); a volume
that is not a folder has no symlinks, so there the shape rules alone decide
and the path is ``requested`` itself.

Limits: the check is done on the path as it is at call time (a folder swapped
for a symlink between ``resolve`` and the write is not caught), and a hard
link to a file outside the workspace cannot be told from an ordinary file.
"""

from __future__ import annotations

import os
import re
import stat
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from ..errors import AccessDenied, InvalidInput
from .layers import LAYERS
from .volume import Volume, clean_rel
from .workspace import GROUP_NAME, Workspace

__all__ = [
    "GLOBAL",
    "MAX_NAME_CHARS",
    "Groups",
    "allowed",
    "check_group",
    "resolve",
    "resolve_rel",
]

GLOBAL = "global"
MAX_NAME_CHARS = 120


def _named() -> tuple[frozenset[tuple[str, ...]], frozenset[tuple[str, ...]]]:
    """The allowed files from ``layers.LAYERS``: exact paths, and folders whose
    ``<name>.md`` files are allowed (a ``named`` glob ``<folder>/*.md``)."""
    fixed, folders = set(), set()
    for layer in LAYERS:
        for glob in layer.named:
            parts = tuple(glob.split("/"))
            if parts[-1] == "*.md" and not any(c in "*?[" for c in glob[:-4]):
                folders.add(parts[:-1])
            elif not any(c in "*?[" for c in glob):
                fixed.add(parts)
            else:  # pragma: no cover - the table is fixed; a new shape needs a rule here
                raise ValueError(f"layer {layer.name}: named glob {glob!r} is not a path or */*.md")
    return frozenset(fixed), frozenset(folders)


_FIXED, _NAMED_FOLDERS = _named()
_ALLOWED_TEXT = ", ".join(
    dict.fromkeys(glob.replace("*", "<name>") for layer in LAYERS for glob in layer.named)
)
_URL_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}")
_NAME_EXTRA = frozenset("._- ")


def check_group(name: object) -> str:
    """``name`` when it is a valid group name, else ``InvalidInput``."""
    if not isinstance(name, str) or not GROUP_NAME.fullmatch(name):
        raise InvalidInput(
            f"group name {_show(name)} is not allowed: use 1-63 of a-z, 0-9, '_' and '-', "
            "starting with a letter or digit"
        )
    return name


@dataclass(frozen=True, slots=True)
class Groups:
    """The groups of ``root`` and the rules between them (see the module).

    ``main`` is the main group's name; it may not be ``global``.
    """

    root: Path
    main: str

    def __post_init__(self) -> None:
        check_group(self.main)
        if self.main == GLOBAL:
            raise InvalidInput(f"the main group cannot be {GLOBAL!r}")

    def check(self, caller: str, target: str | None, *, write: bool) -> str:
        """The group ``caller`` acts on (``target``, or its own when None).

        ``AccessDenied`` when the rules refuse; ``InvalidInput`` for a bad name.
        """
        check_group(caller)
        group = caller if target is None else check_group(target)
        verb = "write" if write else "read"
        if group == GLOBAL and write and caller != self.main:
            raise AccessDenied(
                f"group {caller!r} may not write group {GLOBAL!r}: "
                f"only the main group ({self.main!r}) writes global memory"
            )
        if caller == self.main or group in (caller, GLOBAL):
            return group
        raise AccessDenied(
            f"group {caller!r} may not {verb} group {group!r}: a non-main group reaches only "
            f"its own workspace and reads {GLOBAL!r}; only the main group ({self.main!r}) "
            "may name another group"
        )

    def workspace(self, caller: str, target: str | None = None, *, write: bool) -> Workspace:
        """The workspace of the group ``check`` allows (``root/groups/<group>``)."""
        return Workspace.locate(self.root, self.check(caller, target, write=write))

    def names(self) -> list[str]:
        """The groups that have a folder under ``root/groups``, sorted (valid names only)."""
        folder = self.root / "groups"
        if not folder.is_dir():
            return []
        return sorted(
            entry.name
            for entry in folder.iterdir()
            if GROUP_NAME.fullmatch(entry.name) and entry.is_dir()
        )


# Other names of an allowed file (seed 001 allows ``MEMORY.md / memory.md``).
_ALIASES = {"memory.md": "MEMORY.md"}


def allowed(relative: str) -> bool:
    """True when ``relative`` (``/``-separated) is an allowed file, by its shape alone."""
    parts = tuple(relative.split("/"))
    if parts in _FIXED:
        return True
    return parts[:-1] in _NAMED_FOLDERS and _good_name(parts[-1])


def resolve(workspace_root: Path, requested: str, *, write: bool) -> Path:
    """The absolute real path of allowed file ``requested`` inside ``workspace_root``.

    The file need not exist. ``AccessDenied`` (with the reason) for anything the
    module's rules refuse; ``InvalidInput`` when ``requested`` is not a string.
    """
    if not isinstance(requested, str):
        raise InvalidInput(f"a path must be a string, not {type(requested).__name__}")
    requested = _ALIASES.get(requested, requested)
    verb = "write" if write else "read"
    problem = _shape_problem(requested)
    if problem is not None:
        raise AccessDenied(f"cannot {verb} {_show(requested)}: {problem}")
    real_root = os.path.realpath(workspace_root)
    real = os.path.realpath(os.path.join(real_root, *requested.split("/")))
    relative = os.path.relpath(real, real_root)
    if relative == os.curdir or relative.split(os.sep)[0] == os.pardir or os.path.isabs(relative):
        raise AccessDenied(f"cannot {verb} {_show(requested)}: it leads outside the workspace")
    if os.sep != "/":  # pragma: no cover - POSIX only
        relative = relative.replace(os.sep, "/")
    if not allowed(relative):
        raise AccessDenied(
            f"cannot {verb} {_show(requested)}: a symlink on the way leads to a file "
            "that is not an allowed memory file"
        )
    try:
        mode = os.stat(real).st_mode
    except FileNotFoundError:
        return Path(real)
    except OSError as exc:
        raise AccessDenied(f"cannot {verb} {_show(requested)}: {exc.strerror}") from None
    if not stat.S_ISREG(mode):
        raise AccessDenied(f"cannot {verb} {_show(requested)}: it is not a regular file")
    return Path(real)


def resolve_rel(volume: Volume, requested: str, *, write: bool) -> str:
    """The volume path of allowed file ``requested`` (see the module); the same
    refusals as ``resolve``."""
    local = volume.local
    if local is not None:
        real = resolve(local, requested, write=write)
        return Path(os.path.relpath(real, os.path.realpath(local))).as_posix()
    if not isinstance(requested, str):
        raise InvalidInput(f"a path must be a string, not {type(requested).__name__}")
    requested = _ALIASES.get(requested, requested)
    problem = _shape_problem(requested)
    if problem is not None:
        verb = "write" if write else "read"
        raise AccessDenied(f"cannot {verb} {_show(requested)}: {problem}")
    return clean_rel(requested)


def _shape_problem(requested: str) -> str | None:
    """Why ``requested`` is refused by its characters and shape, or None."""
    if not requested:
        return "the path is empty"
    if requested != requested.strip():
        return "leading or trailing whitespace"
    if any(unicodedata.category(char) in ("Cc", "Cf", "Cs") for char in requested):
        return "control or invisible characters (NUL included) are not allowed"
    if "\\" in requested:
        return "backslashes are not allowed (use '/')"
    if _URL_ESCAPE.search(requested) or "%" in requested:
        return "URL-encoded characters ('%xx') are not allowed"
    if unicodedata.normalize("NFKC", requested) != requested:
        return "look-alike characters (a form Unicode NFKC normalisation changes) are not allowed"
    if requested.startswith("/") or os.path.isabs(requested):
        return "absolute paths are not allowed; name a path inside the workspace"
    parts = requested.split("/")
    if any(part == "" for part in parts):
        return "empty path segments ('//' or a trailing '/') are not allowed"
    if any(part in (".", "..") for part in parts):
        return "'.' and '..' segments are not allowed"
    if any(part.startswith(".") for part in parts):
        return "hidden files and folders (a leading '.') are not allowed"
    if not allowed(requested):
        return f"not an allowed memory file ({_ALLOWED_TEXT})"
    return None


def _good_name(segment: str) -> bool:
    """True for ``<name>.md`` with a name of letters, digits, marks, ``._-`` and inner spaces."""
    stem = segment.removesuffix(".md")
    if stem == segment or not stem or len(stem) > MAX_NAME_CHARS or stem != stem.strip():
        return False
    if unicodedata.category(stem[0])[0] not in "LN":
        return False
    return all(char in _NAME_EXTRA or unicodedata.category(char)[0] in "LMN" for char in stem)


def _show(value: object) -> str:
    """``value`` quoted with escapes (``ascii``), cut to a readable length."""
    shown = ascii(value)
    return shown if len(shown) <= 120 else shown[:117] + "..."
