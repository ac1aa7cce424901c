"""Documents: journaled changes to the workspace's files, named by path.

``edit_file`` and ``rename_file`` are how a caller that names files (the
Anthropic memory-tool handler, an agent's tool) changes them. Each change is
one ``doc.*`` journal record (``store.docs``): staged, logged with fsync,
then applied, so an acknowledged change survives kill -9 and a change whose
writer died after logging is redone by the next holder of the workspace lock.

Invariants:

* Every path passes the path guard (``access.resolve_rel`` with
  ``write=True``): only the allowed memory files, never outside the workspace.
  ``MEMORY.md`` is refused: it is rendered from the long-term store (use
  ``remember``). Files are read and written only through the workspace's
  volume (``storage.volume``), at the path the guard gives.
* Read, edit and write happen under the workspace lock, after catching up
  with the journal, so two writers never lose each other's edits.
* Lines the edit adds or changes are redacted (``capture.secrets``); lines it
  leaves as they were are kept byte for byte. Lone surrogates in the new
  text become U+FFFD (``model.valid_text``); a new text over
  ``model.MAX_DOCUMENT_BYTES`` is refused before anything is journaled.
* Write hooks hear a ``document`` event per changed path (the search index
  re-reads that file).
"""

from __future__ import annotations

from collections.abc import Callable

from ..capture.secrets import redact
from ..errors import Conflict, InvalidInput, NotFound
from ..model import Source, WriteEvent, check_document, now, parse_source, valid_text
from ..storage.access import resolve_rel
from ..stores.docs import OP_DOC_DELETE, OP_DOC_PUT, OP_DOC_RENAME, digest, move, staged
from .engine import Engine

__all__ = ["Documents", "FileEdit", "NotText"]

RENDERED = "MEMORY.md"

# Given the file's text (None when it does not exist), the new text (None: delete it).
FileEdit = Callable[[str | None], str | None]


class NotText(InvalidInput):
    """The file to edit is not UTF-8 text."""


class Documents:
    """Journaled edits, deletes and renames of the workspace's allowed files (a
    part of ``Memory``, as ``memory.documents``)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine

    def edit_file(
        self, path: str, edit: FileEdit, *, source: Source | str = Source.AGENT
    ) -> str | None:
        """Change the file at workspace-relative ``path``; returns the text it now holds.

        ``edit`` gets the current text (``None`` if the file does not exist) and
        returns the new text, or ``None`` to delete the file; an exception it
        raises leaves everything unchanged. Durable when this returns.
        """
        relative, target = self._document(path)
        origin = parse_source(source)
        volume = self.engine.workspace.volume
        with self.engine.transaction(f"change {relative}", catch_up=True):
            data = volume.read(target)
            old = None if data is None else _text(data, relative)
            new = edit(old)
            record = {
                "path": relative,
                "before": digest(data),
                "at": _stamp(),
                "source": origin.value,
            }
            if new is None:
                if data is None:
                    raise NotFound(f"{relative} does not exist")
                self.engine.write(OP_DOC_DELETE, record, sync=True)
                volume.delete(target)
                event = WriteEvent("document", "delete", "", origin, relative)
            else:
                new = _new_text(new, relative)
                new = _redact_changed(old or "", new)
                encoded = new.encode("utf-8")
                record.update(text=new, after=digest(encoded))
                with staged(volume, target, encoded):
                    self.engine.write(OP_DOC_PUT, record, sync=True)
                event = WriteEvent("document", "put", new, origin, relative)
            self.engine.after_write()
        self.engine.events.notify(event)
        return new

    def rename_file(self, old: str, new: str, *, source: Source | str = Source.AGENT) -> None:
        """Rename the file at ``old`` to ``new`` (both workspace-relative); never
        replaces a file at ``new`` (``Conflict``). Durable when this returns."""
        old_relative, source_path = self._document(old)
        new_relative, target = self._document(new)
        origin = parse_source(source)
        volume = self.engine.workspace.volume
        with self.engine.transaction(f"rename {old_relative}", catch_up=True):
            data = volume.read(source_path)
            if data is None:
                raise NotFound(f"{old_relative} does not exist")
            if volume.stat(target) is not None:
                raise Conflict(f"{new_relative} already exists")
            record = {
                "path": old_relative,
                "to": new_relative,
                "before": digest(data),
                "at": _stamp(),
                "source": origin.value,
            }
            self.engine.write(OP_DOC_RENAME, record, sync=True)
            if not move(volume, source_path, target, data):
                # created by hand just now: the record's redo skips it
                raise Conflict(f"{new_relative} already exists")
            self.engine.after_write()
        content = data.decode("utf-8", errors="replace")  # the move is done: only tell
        self.engine.events.notify(
            WriteEvent("document", "delete", "", origin, old_relative),
            WriteEvent("document", "put", content, origin, new_relative),
        )

    def _document(self, path: str) -> tuple[str, str]:
        """``path`` checked by the path guard for writing: (as named, volume path)."""
        target = resolve_rel(self.engine.workspace.volume, path, write=True)
        if path == RENDERED:
            raise InvalidInput(
                "MEMORY.md is rendered from the long-term store and cannot be written as a "
                "file; use remember / supersede / forget"
            )
        return path, target


def _text(data: bytes, relative: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise NotText(f"{relative} is not UTF-8 text; it cannot be edited") from None


def _new_text(new: object, relative: str) -> str:
    """What an edit returned, as text that can be written (valid Unicode, not too big)."""
    if not isinstance(new, str):
        raise InvalidInput(f"an edit must return a string or None, not {type(new).__name__}")
    text = valid_text(new)
    check_document(text, relative)
    return text


def _redact_changed(old: str, new: str) -> str:
    """``new`` with the lines that are not lines of ``old`` redacted, each run of
    such lines as one text (a secret may span lines: a private key's block)."""
    kept = set(old.splitlines())
    out: list[str] = []
    run: list[str] = []
    for line in new.splitlines(keepends=True):
        if line.rstrip("\r\n") in kept:
            if run:
                out.append(redact("".join(run)).text)
                run = []
            out.append(line)
        else:
            run.append(line)
    if run:
        out.append(redact("".join(run)).text)
    return "".join(out)


def _stamp() -> str:
    return now().isoformat()
