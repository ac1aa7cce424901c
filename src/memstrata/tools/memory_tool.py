"""The client side of Anthropic's memory tool (``memory_20250818``) over a workspace.

The model sends commands on a ``/memories`` directory; ``MemoryToolHandler.handle``
runs them on the workspace and answers with text. ``/memories/<p>`` is the
workspace file ``<p>``, reached only through ``access.resolve_rel`` and the
workspace's volume (``storage.volume``): only the
allowed memory files (MEMORY.md, memory/, core/, working/, semantic/,
notes/{inbox,zettel,maps}/, summaries/ markdown) can be seen or changed.

Commands and their exact answers (``<path>`` is ``/memories/<p>``):

* ``view`` (path, optional view_range ``[start, end]``, 1-based, inclusive,
  ``end`` -1 = last line): a folder (``/memories`` or one of the allowed
  folders) lists the allowed files that exist below it, one ``<size>\\t<path>``
  line each; a file shows ``Here's the content of <path> with line numbers:``
  then one ``{number:6}\\t{line}`` line per line.
* ``create`` (path, file_text): writes the file, replacing it if it exists:
  ``File created successfully at: <path>`` (``File overwritten successfully at:
  <path>`` when it existed).
* ``str_replace`` (path, old_str, new_str): replaces the one occurrence of
  old_str: ``The memory file <path> has been edited.``
* ``insert`` (path, insert_line, insert_text): inserts after line
  ``insert_line`` (0 = at the top): ``The memory file <path> has been edited.``
* ``delete`` (path): ``Successfully deleted <path>``
* ``rename`` (old_path, new_path): ``Successfully renamed <old> to <new>``;
  never overwrites.

Guarantees:

* ``handle`` never raises for a bad command: every failure is a text answer
  starting with ``Error:``, naming at most the requested path, never the
  content of a file outside the workspace.
* Nothing is read or written outside the allowed set (see ``access``).
* ``/memories/MEMORY.md`` can be viewed but not written, edited, deleted or
  renamed (it is rendered from the journaled store).
* New text (file_text, new_str, insert_text) is redacted
  (``capture.secrets.redact``, on the changed lines, so a secret split
  between old and new text is caught too); when something was redacted the
  answer says which kinds.
* Every change goes through the workspace journal (``Documents.edit_file`` /
  ``rename_file``): read, edit and write under the workspace lock, durable
  (fsynced) before the answer, redone after a crash between logging and
  writing. ``rename`` never overwrites an existing file.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from ..capture.secrets import redact
from ..errors import Conflict, MemstrataError, NotFound
from ..memory import Memory
from ..memory.documents import FileEdit, NotText
from ..model import valid_text
from ..storage.access import allowed, resolve_rel

__all__ = ["PREFIX", "MemoryToolHandler"]

PREFIX = "/memories"
_FOLDERS = (
    "memory",
    "core",
    "working",
    "semantic",
    "notes/inbox",
    "notes/zettel",
    "notes/maps",
    "summaries",
)
_VIEWABLE_FOLDERS = frozenset(("", "notes", *_FOLDERS))
_RENDERED = "MEMORY.md"


class _ToolError(Exception):
    """A failure answered as ``Error: <message>``."""


class MemoryToolHandler:
    """Runs memory-tool commands on the workspace at ``workspace_root`` (see module)."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.root = memory.workspace.path
        self.volume = memory.workspace.volume
        self._commands: dict[str, Callable[[Mapping[str, object]], str]] = {
            "view": self._view,
            "create": self._create,
            "str_replace": self._str_replace,
            "insert": self._insert,
            "delete": self._delete,
            "rename": self._rename,
        }

    def handle(self, command: Mapping[str, object]) -> str:
        """The text answer to ``command``; failures are answers starting ``Error:``."""
        try:
            if not isinstance(command, Mapping):
                raise _ToolError("the command must be an object with a `command` field.")
            name = command.get("command")
            run = self._commands.get(name) if isinstance(name, str) else None
            if run is None:
                raise _ToolError(
                    f"Unknown command {_quote(name)}; use one of {', '.join(self._commands)}."
                )
            return run(command)
        except _ToolError as exc:
            return f"Error: {exc}"
        except MemstrataError as exc:
            return f"Error: {exc}"

    # -- commands ---------------------------------------------------------------

    def _view(self, command: Mapping[str, object]) -> str:
        path = _text_arg(command, "path")
        folder = _folder_of(path)
        if folder is not None:
            return self._listing(folder)
        relative = _relative(path)
        target = resolve_rel(self.volume, relative, write=False)
        text = self._read(target, relative)
        lines = _lines(text)
        start, end = 1, len(lines)
        if command.get("view_range") is not None:
            start, end = _view_range(command["view_range"], len(lines))
        if not lines:
            return f"The file {_show(relative)} is empty."
        numbered = "\n".join(f"{n:6d}\t{lines[n - 1]}" for n in range(start, end + 1))
        return f"Here's the content of {_show(relative)} with line numbers:\n{numbered}"

    def _create(self, command: Mapping[str, object]) -> str:
        path = _text_arg(command, "path")
        file_text = _text_arg(command, "file_text")
        relative = self._writable(path)
        result = redact(file_text)
        existed = False

        def create(old: str | None) -> str:
            nonlocal existed
            existed = old is not None
            return result.text

        self._edit(relative, create)
        verb = "overwritten" if existed else "created"
        return f"File {verb} successfully at: {_show(relative)}" + _redaction_note(result.kinds)

    def _str_replace(self, command: Mapping[str, object]) -> str:
        path = _text_arg(command, "path")
        old = _text_arg(command, "old_str")
        new = _text_arg(command, "new_str", default="")
        relative = self._writable(path)
        kinds: tuple[str, ...] = ()

        def replace(current: str | None) -> str:
            nonlocal kinds
            text = _existing(current, relative)
            starts = _occurrences(text, old) if old else []
            if not starts:
                raise _ToolError(
                    f"No replacement was performed, old_str `{old}` did not appear verbatim "
                    f"in {_show(relative)}."
                )
            if len(starts) > 1:
                numbers = sorted({text.count("\n", 0, start) + 1 for start in starts})
                raise _ToolError(
                    f"No replacement was performed. Multiple occurrences of old_str `{old}` "
                    f"in lines: {numbers}. Please ensure it is unique."
                )
            start = starts[0]
            edited, kinds = _redact_lines(text[:start], new, text[start + len(old) :])
            return edited

        self._edit(relative, replace)
        return f"The memory file {_show(relative)} has been edited." + _redaction_note(kinds)

    def _insert(self, command: Mapping[str, object]) -> str:
        path = _text_arg(command, "path")
        line = command.get("insert_line")
        insert_text = _text_arg(command, "insert_text")
        if line is None:
            raise _ToolError("Missing required parameter `insert_line` for command `insert`.")
        if not isinstance(line, int) or isinstance(line, bool):
            raise _ToolError(f"Parameter `insert_line` must be an integer, not {_quote(line)}.")
        relative = self._writable(path)
        kinds: tuple[str, ...] = ()

        def insert(current: str | None) -> str:
            nonlocal kinds
            text = _existing(current, relative)
            lines = _lines(text)
            if not 0 <= line <= len(lines):
                raise _ToolError(
                    f"Invalid `insert_line` parameter: {line}. It should be within the range "
                    f"of lines of the file: [0, {len(lines)}]."
                )
            before = "".join(f"{each}\n" for each in lines[:line])
            after = "".join(f"{each}\n" for each in lines[line:])
            if after and not text.endswith("\n"):
                after = after[:-1]
            added = insert_text if insert_text.endswith("\n") else insert_text + "\n"
            edited, kinds = _redact_lines(before, added, after)
            return edited

        self._edit(relative, insert)
        return f"The memory file {_show(relative)} has been edited." + _redaction_note(kinds)

    def _delete(self, command: Mapping[str, object]) -> str:
        path = _text_arg(command, "path")
        if _folder_of(path) is not None:
            raise _ToolError(f"{path} is a folder; only files can be deleted.")
        relative = self._writable(path)

        def delete(current: str | None) -> None:
            _existing(current, relative)

        self._edit(relative, delete)
        return f"Successfully deleted {_show(relative)}"

    def _rename(self, command: Mapping[str, object]) -> str:
        old_relative = self._writable(_text_arg(command, "old_path"))
        new_relative = self._writable(_text_arg(command, "new_path"))
        try:
            self.memory.documents.rename_file(old_relative, new_relative)
        except NotFound:
            raise _ToolError(_missing(old_relative)) from None
        except Conflict:
            raise _ToolError(f"The destination {_show(new_relative)} already exists.") from None
        return f"Successfully renamed {_show(old_relative)} to {_show(new_relative)}"

    # -- helpers ----------------------------------------------------------------

    def _writable(self, path: str) -> str:
        """The workspace-relative form of ``path``, refusing the rendered MEMORY.md."""
        relative = _relative(path)
        if relative == _RENDERED:
            raise _ToolError(
                f"{PREFIX}/{_RENDERED} is rendered from memstrata's journaled store and cannot "
                "be changed with the memory tool (a direct write would be overwritten); use "
                "memory_write / remember to add or change long-term memories. It can be viewed."
            )
        return relative

    def _listing(self, folder: str) -> str:
        """The allowed files that exist under ``folder`` ('' = all), with sizes."""
        rows = [
            f"{_size(size)}\t{_show(relative)}"
            for relative, size in self._files()
            if not folder or relative.startswith(folder + "/")
        ]
        where = f"{PREFIX}/{folder}" if folder else PREFIX
        if not rows:
            return f"No memory files in {where}."
        return f"Here are the memory files in {where} (size, path):\n" + "\n".join(rows)

    def _files(self) -> list[tuple[str, int]]:
        """``(relative path, size)`` of every allowed file that exists, sorted."""
        candidates = ["MEMORY.md", "core/AGENT.md", "core/USER.md", "core/SOUL.md"]
        candidates.append("working/WORKING_MEMORY.md")
        for folder in _FOLDERS:
            if folder in ("core", "working"):
                continue
            try:
                listed = self.volume.list(folder + "/")
            except (MemstrataError, OSError):
                continue
            candidates.extend(relative for relative, _ in listed if allowed(relative))
        found: list[tuple[str, int]] = []
        for relative in candidates:
            try:
                info = self.volume.stat(resolve_rel(self.volume, relative, write=False))
            except (MemstrataError, OSError):
                continue
            if info is not None:
                found.append((relative, info.size))
        return sorted(found)

    def _read(self, target: str, relative: str) -> str:
        """The text of volume path ``target``; ``_ToolError`` when missing or not UTF-8."""
        try:
            data = self.volume.read(target)
        except OSError as exc:
            raise _ToolError(f"cannot read {_show(relative)}: {exc.strerror}") from None
        if data is None:
            raise _ToolError(_missing(relative))
        try:
            return data.decode("utf-8").replace("\r\n", "\n")
        except UnicodeDecodeError:
            raise _ToolError(_not_utf8(relative)) from None

    def _edit(self, relative: str, edit: FileEdit) -> None:
        """Change ``relative`` through the journal (``Documents.edit_file``)."""
        try:
            self.memory.documents.edit_file(relative, lambda text: edit(_crlf(text)))
        except NotText:
            raise _ToolError(_not_utf8(relative)) from None


def _text_arg(command: Mapping[str, object], name: str, *, default: str | None = None) -> str:
    """The string parameter ``name`` of ``command`` (``default`` when absent)."""
    value = command.get(name, default)
    if value is None:
        raise _ToolError(
            f"Missing required parameter `{name}` for command `{command.get('command')}`."
        )
    if not isinstance(value, str):
        raise _ToolError(f"Parameter `{name}` must be a string, not {type(value).__name__}.")
    return valid_text(value)


def _relative(path: str) -> str:
    """The workspace-relative part of ``/memories/<p>``; ``_ToolError`` otherwise."""
    if not path.startswith(PREFIX + "/") or path == PREFIX + "/":
        raise _ToolError(
            f"The path {_quote(path)} is not a file under {PREFIX}; "
            f"paths look like {PREFIX}/memory/notes.md."
        )
    return path[len(PREFIX) + 1 :]


def _folder_of(path: str) -> str | None:
    """The viewable folder ``path`` names ('' for /memories itself), else None."""
    if path in (PREFIX, PREFIX + "/"):
        return ""
    if path.startswith(PREFIX + "/"):
        folder = path[len(PREFIX) + 1 :].removesuffix("/")
        if folder in _VIEWABLE_FOLDERS:
            return folder
    return None


def _view_range(value: object, count: int) -> tuple[int, int]:
    """``(start, end)`` lines of a valid ``view_range`` for a file of ``count`` lines."""
    good = (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(isinstance(n, int) and not isinstance(n, bool) for n in value)
    )
    if not good:
        raise _ToolError(
            f"Invalid `view_range` parameter: {_quote(value)}. It should be a list of two "
            "integers [start, end]."
        )
    assert isinstance(value, list | tuple)
    start, end = int(value[0]), int(value[1])
    if end == -1:
        end = count
    if not (1 <= start <= count and start <= end <= count):
        raise _ToolError(
            f"Invalid `view_range` parameter: [{value[0]}, {value[1]}]. Lines are numbered "
            f"from 1; the file has {count} lines, so use 1 <= start <= end <= {count} "
            "(end -1 means the last line)."
        )
    return start, end


def _lines(text: str) -> list[str]:
    """The lines of ``text`` without their line breaks (a final break ends the last line)."""
    if not text:
        return []
    return text.removesuffix("\n").split("\n")


def _occurrences(text: str, needle: str) -> list[int]:
    """Start offsets of every (also overlapping) occurrence of ``needle`` in ``text``."""
    found: list[int] = []
    start = text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def _redact_lines(before: str, new: str, after: str) -> tuple[str, tuple[str, ...]]:
    """``before + new + after`` with the lines touched by ``new`` redacted.

    Redacting whole lines (not just ``new``) catches a secret that the new text
    completes (``password: `` already there, the value added).
    """
    head = before.rfind("\n") + 1
    tail = 0 if new.endswith("\n") else after.find("\n")
    tail = len(after) if tail == -1 else tail
    result = redact(before[head:] + new + after[:tail])
    return before[:head] + result.text + after[tail:], result.kinds


def _redaction_note(kinds: tuple[str, ...]) -> str:
    if not kinds:
        return ""
    return f" Secrets were redacted before writing: {', '.join(sorted(set(kinds)))}."


def _existing(text: str | None, relative: str) -> str:
    """``text`` of a file that must exist."""
    if text is None:
        raise _ToolError(_missing(relative))
    return text


def _crlf(text: str | None) -> str | None:
    return None if text is None else text.replace("\r\n", "\n")


def _not_utf8(relative: str) -> str:
    return f"{_show(relative)} is not valid UTF-8 text; it cannot be shown or edited here."


def _missing(relative: str) -> str:
    return f"The path {_show(relative)} does not exist. Please provide a valid path."


def _show(relative: str) -> str:
    """The ``/memories`` path of a checked workspace-relative path."""
    return f"{PREFIX}/{relative}"


def _size(size: int) -> str:
    """A size in bytes as ``du -h`` would show it (``512B``, ``1.5K``, ``2.0M``)."""
    if size < 1024:
        return f"{size}B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f}K"
    return f"{size / (1024 * 1024):.1f}M"


def _quote(value: object) -> str:
    """``value`` escaped (``ascii``) and cut to a readable length, for error messages."""
    shown = ascii(value)
    return shown if len(shown) <= 120 else shown[:117] + "..."
