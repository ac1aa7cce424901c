"""The notebook: notes/inbox (new notes), notes/zettel (kept notes), notes/maps (maps).

A note is ``<folder>/<name>.md``: Markdown opening with a ``# Title`` line.
Notes link to each other with wiki links, ``[[name]]`` (also ``[[name|label]]``
and ``[[name#heading]]``); a map is a note in notes/maps listing such links.

Guarantees:

* Every path stays inside the workspace: a name with ``/``, ``\\``, ``..``,
  NUL or another control character, a leading ``.``, or an absolute path is
  ``InvalidInput``; a note whose real path leaves the workspace (a symlink
  out) is ``AccessDenied``.
* Names are unique across the three folders: ``create`` takes the title's
  slug and adds a short random suffix when that name is taken; it never
  overwrites a file. ``[[name]]`` therefore names one note (matched exactly).
* ``move`` (and ``promote``, inbox to zettel) never overwrites: a note of the
  same name in the target folder is a ``Conflict``. It links the file into
  its new folder, then unlinks the old one; a crash in between leaves the
  same file in both, which the next ``move`` finishes.
* New text (titles, bodies) is redacted; writes are atomic and durable.
* Links are read outside fenced code blocks; ``backlinks`` reads every note.
"""

from __future__ import annotations

import os
import re
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import AccessDenied, Conflict, InvalidInput, NotFound
from ..model import check_document, clean_text, valid_text
from ..storage.files import create_new, fsync_dir, storage_errors
from ..storage.workspace import Workspace
from .text import outside_fences, read_text, redacted, write_text

__all__ = [
    "FOLDERS",
    "Note",
    "backlinks",
    "check_name",
    "create",
    "create_map",
    "find",
    "link",
    "links",
    "list_notes",
    "move",
    "promote",
    "read",
    "slug",
]

FOLDERS = ("inbox", "zettel", "maps")
MAX_NAME_CHARS = 120
_LINK = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|[^\[\]\n]*)?\]\]")
_NOT_WORD = re.compile(r"[\W_]+")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True, slots=True)
class Note:
    """One note: its name (what ``[[name]]`` links to), folder and file."""

    name: str
    folder: str
    path: Path


def check_name(name: str) -> str:
    """``name`` as a note name (a trailing ``.md`` dropped), or ``InvalidInput``."""
    if not isinstance(name, str):
        raise InvalidInput(f"note name must be a string, not {type(name).__name__}")
    bare = valid_text(name).removesuffix(".md")
    bad = (
        not bare.strip()
        or bare != bare.strip()
        or bare.startswith(".")
        or any(mark in bare for mark in ("/", "\\", ".."))
        or _CONTROL.search(bare) is not None
        or os.path.isabs(bare)
        or len(bare) > MAX_NAME_CHARS
    )
    if bad:
        raise InvalidInput(
            f"note name {name!r} is not allowed: use a plain file name (no '/', '\\', '..', "
            f"control characters, leading '.' or surrounding spaces; at most {MAX_NAME_CHARS} "
            "characters)"
        )
    return bare


def slug(title: str) -> str:
    """A file name for ``title``: lower-case words joined by ``-`` (letters of any script)."""
    words = _NOT_WORD.sub("-", unicodedata.normalize("NFKC", title).casefold()).strip("-")
    return words[:60].strip("-") or "note"


def create(workspace: Workspace, title: str, body: str = "", *, folder: str = "inbox") -> Note:
    """A new note ``# title`` (one line) + ``body``, both redacted, in ``folder``.

    Named after the title's slug, with a short random suffix when that name is
    taken in any folder; never overwrites.
    """
    heading = redacted(clean_text(title))
    if not isinstance(body, str):
        raise InvalidInput(f"note body must be a string, not {type(body).__name__}")
    check_document(body, f"the body of note {heading!r}")
    text = f"# {heading}\n" + (f"\n{redacted(body)}" if body.strip() else "")
    if not text.endswith("\n"):
        text += "\n"
    base = slug(heading)
    directory = _folder(workspace, _check_folder(folder))
    with storage_errors(f"create a note in notes/{folder}"):
        directory.mkdir(parents=True, exist_ok=True)
        for attempt in range(100):
            name = base if attempt == 0 else f"{base}-{secrets.token_hex(2)}"
            target = _inside(workspace, directory / f"{name}.md")
            if not _taken(workspace, name) and create_new(target, text.encode("utf-8")):
                fsync_dir(directory)
                return Note(name, folder, target)
    raise Conflict(f"could not find a free name for a note titled {heading!r}")


def create_map(
    workspace: Workspace, title: str, notes: Sequence[str] = (), intro: str = ""
) -> Note:
    """A new map in notes/maps: ``# title``, ``intro``, then ``- [[name]]`` per note."""
    names = [check_name(name) for name in notes]
    lines = "".join(f"- [[{name}]]\n" for name in names)
    body = "\n\n".join(part for part in (intro.strip(), lines.rstrip("\n")) if part)
    return create(workspace, title, body, folder="maps")


def find(workspace: Workspace, name: str) -> Note:
    """The note called ``name`` (looked up in inbox, zettel, maps order); ``NotFound``."""
    bare = check_name(name)
    for folder in FOLDERS:
        target = _inside(workspace, _folder(workspace, folder) / f"{bare}.md")
        if target.is_file():
            return Note(bare, folder, target)
    raise NotFound(f"no note called {bare!r} in notes/inbox, notes/zettel or notes/maps")


def read(workspace: Workspace, name: str) -> str:
    """The text of note ``name``; ``Corrupt`` if it is not valid UTF-8."""
    note = find(workspace, name)
    return read_text(note.path, f"notes/{note.folder}/{note.name}.md")


def list_notes(workspace: Workspace, folder: str | None = None) -> list[Note]:
    """The notes of ``folder`` (all folders when None), by folder then name."""
    folders = FOLDERS if folder is None else (_check_folder(folder),)
    found: list[Note] = []
    for each in folders:
        directory = _folder(workspace, each)
        if not directory.is_dir():
            continue
        for entry in sorted(directory.iterdir()):
            if entry.suffix == ".md" and entry.is_file() and not entry.name.startswith("."):
                found.append(Note(entry.stem, each, entry))
    return found


def move(workspace: Workspace, name: str, folder: str) -> Note:
    """Move note ``name`` to ``folder``; a no-op if it is there already (see module)."""
    directory = _folder(workspace, _check_folder(folder))
    note = find(workspace, name)
    if note.folder == folder:
        return note
    target = _inside(workspace, directory / note.path.name)
    with storage_errors(f"move note {note.name!r} to notes/{folder}"):
        directory.mkdir(parents=True, exist_ok=True)
        if target.exists() and not os.path.samefile(note.path, target):
            raise Conflict(f"notes/{folder}/{target.name} exists already")
        if not target.exists():
            os.link(note.path, target)
            fsync_dir(directory)
        note.path.unlink()
        fsync_dir(note.path.parent)
    return Note(note.name, folder, target)


def promote(workspace: Workspace, name: str) -> Note:
    """Move a note from notes/inbox to notes/zettel (a no-op if it is in zettel)."""
    return move(workspace, name, "zettel")


def links(workspace: Workspace, name: str) -> list[str]:
    """The note names ``name`` links to, in order of first appearance, each once."""
    return _links(read(workspace, name))


def backlinks(workspace: Workspace, name: str) -> list[Note]:
    """The notes that link to ``name`` (which need not exist), by folder then name.

    Reads every note; a note that is not valid UTF-8 is read with its bad bytes
    replaced (it is only searched here, never rewritten).
    """
    bare = check_name(name)
    found: list[Note] = []
    for note in list_notes(workspace):
        with storage_errors(f"read notes/{note.folder}/{note.path.name}"):
            text = note.path.read_bytes().decode("utf-8", "replace")
        if note.name != bare and bare in _links(text):
            found.append(note)
    return found


def link(workspace: Workspace, source: str, target: str) -> bool:
    """Add ``- [[target]]`` at the end of note ``source``; False if it links there already.

    Both notes must exist (``NotFound``); the rest of ``source`` is kept as written.
    """
    note = find(workspace, source)
    wanted = find(workspace, target).name
    what = f"notes/{note.folder}/{note.path.name}"
    text = read_text(note.path, what)
    if wanted in _links(text):
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    last = next((line for line in reversed(text.split("\n")) if line.strip()), "")
    if not _LINK.fullmatch(last.removeprefix("- ").strip()) and not text.endswith("\n\n"):
        text += "\n"
    write_text(_inside(workspace, note.path), f"{text}- [[{wanted}]]\n", what)
    return True


def _links(text: str) -> list[str]:
    lines = text.split("\n")
    found: list[str] = []
    for index in outside_fences(lines):
        for match in _LINK.finditer(lines[index]):
            name = match.group(1).strip().removesuffix(".md")
            if name and name not in found:
                found.append(name)
    return found


def _taken(workspace: Workspace, name: str) -> bool:
    return any((_folder(workspace, folder) / f"{name}.md").exists() for folder in FOLDERS)


def _check_folder(folder: str) -> str:
    if folder not in FOLDERS:
        raise InvalidInput(f"notebook folder must be one of {', '.join(FOLDERS)}, not {folder!r}")
    return folder


def _folder(workspace: Workspace, folder: str) -> Path:
    return workspace.path / "notes" / folder


def _inside(workspace: Workspace, target: Path) -> Path:
    """``target`` unless its real path leaves the workspace (then ``AccessDenied``)."""
    if not target.resolve().is_relative_to(workspace.path.resolve()):
        raise AccessDenied(f"{target} leads outside the workspace {workspace.path}")
    return target
