"""The notebook: notes/inbox (new notes), notes/zettel (kept notes), notes/maps (maps).

A note is ``<folder>/<name>.md``: Markdown opening with a ``# Title`` line.
Notes link to each other with wiki links, ``[[name]]`` (also ``[[name|label]]``
and ``[[name#heading]]``); a map is a note in notes/maps listing such links.

Guarantees:

* Notes are read and written only through the workspace's volume
  (``storage.volume``), as ``notes/<folder>/<name>.md`` (``Note.rel``).
* Every path stays inside the workspace: a name with ``/``, ``\\``, ``..``,
  NUL or another control character, a leading ``.``, or an absolute path is
  ``InvalidInput``; on a folder, a note whose real path leaves the workspace
  (a symlink out) is ``AccessDenied``.
* Names are unique across the three folders: ``create`` takes the title's
  slug and adds a short random suffix when that name is taken; it never
  overwrites a file. ``[[name]]`` therefore names one note (matched exactly).
* ``move`` (and ``promote``, inbox to zettel) never overwrites: a note of the
  same name in the target folder is a ``Conflict``. It creates the note in
  its new folder (``Volume.create``), then deletes the old one; a crash in
  between leaves the same bytes in both, which the next ``move`` finishes.
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
from ..storage.files import storage_errors
from ..storage.volume import clean_rel
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
    path: Path  # in the workspace folder (``Workspace.file``: on a database, ``rel``)

    @property
    def rel(self) -> str:
        """Its volume path: ``notes/<folder>/<name>.md``."""
        return _rel(self.folder, self.name)


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
    _check_folder(folder)
    with storage_errors(f"create a note in notes/{folder}"):
        for attempt in range(100):
            name = base if attempt == 0 else f"{base}-{secrets.token_hex(2)}"
            rel = _inside(workspace, _rel(folder, name))
            if not _taken(workspace, name) and workspace.volume.create(rel, text.encode("utf-8")):
                return _note(workspace, folder, name)
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
        rel = _inside(workspace, _rel(folder, bare))
        with storage_errors(f"look for note {bare!r}"):
            if workspace.volume.stat(rel) is not None:
                return _note(workspace, folder, bare)
    raise NotFound(f"no note called {bare!r} in notes/inbox, notes/zettel or notes/maps")


def read(workspace: Workspace, name: str) -> str:
    """The text of note ``name``; ``Corrupt`` if it is not valid UTF-8."""
    note = find(workspace, name)
    return read_text(workspace.volume, note.rel, note.rel)


def list_notes(workspace: Workspace, folder: str | None = None) -> list[Note]:
    """The notes of ``folder`` (all folders when None), by folder then name."""
    folders = FOLDERS if folder is None else (_check_folder(folder),)
    found: list[Note] = []
    for each in folders:
        prefix = f"notes/{each}/"
        with storage_errors(f"list notes/{each}"):
            listed = workspace.volume.list(prefix)
        for rel, _ in listed:
            entry = rel[len(prefix) :]
            if "/" not in entry and entry.endswith(".md") and not entry.startswith("."):
                found.append(_note(workspace, each, entry.removesuffix(".md")))
    return found


def move(workspace: Workspace, name: str, folder: str) -> Note:
    """Move note ``name`` to ``folder``; a no-op if it is there already (see module)."""
    _check_folder(folder)
    note = find(workspace, name)
    if note.folder == folder:
        return note
    volume = workspace.volume
    target = _inside(workspace, _rel(folder, note.name))
    with storage_errors(f"move note {note.name!r} to notes/{folder}"):
        data = volume.read(note.rel)
        if data is None:
            raise NotFound(f"note {note.name!r} is gone from notes/{note.folder}")
        there = volume.read(target)
        if there is None and volume.create(target, data):
            there = data
        if there != data:  # a note of its own (the same bytes: a move that died)
            raise Conflict(f"notes/{folder}/{note.name}.md exists already")
        volume.delete(note.rel)
    return _note(workspace, folder, note.name)


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
        if note.name != bare and bare in _links(_loose_text(workspace, note)):
            found.append(note)
    return found


def link(workspace: Workspace, source: str, target: str) -> bool:
    """Add ``- [[target]]`` at the end of note ``source``; False if it links there already.

    Both notes must exist (``NotFound``); the rest of ``source`` is kept as written.
    """
    note = find(workspace, source)
    wanted = find(workspace, target).name
    text = read_text(workspace.volume, note.rel, note.rel)
    if wanted in _links(text):
        return False
    if text and not text.endswith("\n"):
        text += "\n"
    last = next((line for line in reversed(text.split("\n")) if line.strip()), "")
    if not _LINK.fullmatch(last.removeprefix("- ").strip()) and not text.endswith("\n\n"):
        text += "\n"
    write_text(workspace.volume, _inside(workspace, note.rel), f"{text}- [[{wanted}]]\n", note.rel)
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


def _loose_text(workspace: Workspace, note: Note) -> str:
    """The text of a listed note with bad bytes replaced ("" when it cannot be named
    by a volume path: a file made by hand with a ``\\`` in its name)."""
    try:
        rel = clean_rel(note.rel)
    except InvalidInput:
        return ""
    with storage_errors(f"read {rel}"):
        data = workspace.volume.read(rel) or b""
    return data.decode("utf-8", "replace")


def _taken(workspace: Workspace, name: str) -> bool:
    with storage_errors(f"look for note {name!r}"):
        return any(workspace.volume.stat(_rel(folder, name)) is not None for folder in FOLDERS)


def _check_folder(folder: str) -> str:
    if folder not in FOLDERS:
        raise InvalidInput(f"notebook folder must be one of {', '.join(FOLDERS)}, not {folder!r}")
    return folder


def _rel(folder: str, name: str) -> str:
    return f"notes/{folder}/{name}.md"


def _note(workspace: Workspace, folder: str, name: str) -> Note:
    return Note(name, folder, workspace.file(_rel(folder, name)))


def _inside(workspace: Workspace, rel: str) -> str:
    """``rel`` unless, on a folder, its real path leaves the workspace (then
    ``AccessDenied``); a volume that is not a folder has no symlinks."""
    rel = clean_rel(rel)
    local = workspace.volume.local
    if local is not None:
        target = local / rel
        real = Path(os.path.realpath(target))  # (Path.resolve raises on a symlink loop)
        if not real.is_relative_to(os.path.realpath(local)):
            raise AccessDenied(f"{target} leads outside the workspace {local}")
    return rel
