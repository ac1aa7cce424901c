"""The compiled capture rules, cached on disk so that a process does not
compile them again (``cached``): hundreds of regexes and their heads cost a
fraction of a second, which a per-message shell hook cannot pay.

A cache file holds one pickled ``RuleSet``, its regexes as ``re`` compiled them
(the SRE code, kept as 32-bit words and rebuilt by ``_sre.compile`` without
parsing), and is named by the SHA-256 of everything the result depends on:
the packs' TOML text, the scanner's own source (``scan.py``, ``heads.py``,
``headfind.py``) and the exact Python build.

Invariants:

* A cache file is only ever created whole: written to a unique temporary file
  in the cache folder, then renamed over the final name (``os.replace``), so
  concurrent writers race harmlessly and a reader never sees half a file.
* A file is used only if its SHA-256 trailer matches its body and it unpickles
  to a ``RuleSet``; anything else (damage, truncation, an unwritable folder,
  a Python whose ``re`` internals differ) falls back to compiling, and a bad
  file is replaced. The cache never changes what ``scan`` finds: a rebuilt
  pattern is kept only if it compares equal (pattern, flags and code) to the
  one ``re.compile`` made.
* The folder holds at most ``KEEP`` rule files: each write removes the
  oldest beyond them (by modification time), and temporary files a killed
  writer left over an hour ago. Every memstrata version, Python build or set
  of packs has its own file, and nothing else would ever remove them; a few
  versions in use at once (two virtual environments) keep theirs.
* The folder is ``~/.cache/memstrata`` unless ``use_dir`` chose another (or
  None: no cache). The library reads no environment: the command line hands
  in ``dir_from(os.environ)`` (``$MEMSTRATA_CACHE_DIR``, empty for no cache,
  else ``$XDG_CACHE_HOME/memstrata``).
"""

from __future__ import annotations

import array
import hashlib
import importlib
import io
import logging
import os
import pickle
import re
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .scan import RuleSet

__all__ = ["cache_dir", "cached", "default_dir", "dir_from", "use_dir"]

log = logging.getLogger("memstrata")

ENV_CACHE_DIR = "MEMSTRATA_CACHE_DIR"
_FORMAT = b"memstrata-rules-3\n"
_DIGEST = hashlib.sha256().digest_size
_CODE = ("scan.py", "heads.py", "headfind.py")
KEEP = 8  # rule files kept in the folder (see the module)
_STALE_TEMP_S = 3600.0


_UNSET = Path()
_folder: Path | None = _UNSET  # use_dir's choice; _UNSET: the default


def default_dir() -> Path:
    """``~/.cache/memstrata``: where cache files go unless ``use_dir`` chose."""
    return Path.home() / ".cache" / "memstrata"


def dir_from(variables: Mapping[str, str]) -> Path | None:
    """The folder the environment names (the entry points read it and hand it
    to ``use_dir``): ``$MEMSTRATA_CACHE_DIR`` (empty: no cache), else
    ``$XDG_CACHE_HOME/memstrata``, else the default."""
    chosen = variables.get(ENV_CACHE_DIR)
    if chosen is not None:
        return Path(chosen) if chosen else None
    xdg = variables.get("XDG_CACHE_HOME")
    return Path(xdg) / "memstrata" if xdg else default_dir()


def use_dir(folder: Path | None) -> None:
    """Keep cache files in ``folder`` from now on in this process (None: no cache)."""
    global _folder
    _folder = folder


def cache_dir() -> Path | None:
    """Where cache files go (None: caching turned off)."""
    return default_dir() if _folder is _UNSET else _folder


def _key(sources: list[str]) -> str:
    digest = hashlib.sha256(_FORMAT + sys.version.encode() + sys.implementation.name.encode())
    here = Path(__file__).parent
    for name in _CODE:
        try:
            digest.update((here / name).read_bytes())
        except OSError:  # no source beside the module (a zipped install): key on the version
            digest.update(name.encode())
    for source in sources:
        digest.update(len(source).to_bytes(8, "big") + source.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def cached(sources: list[str], build: Callable[[], RuleSet]) -> RuleSet:
    """The rule set ``build`` makes from ``sources`` (the packs' texts), from the
    disk cache when it holds it, else built and stored there."""
    folder = cache_dir()
    if folder is None:
        return build()
    path = folder / f"rules-{_key(sources)}.pickle"
    found = _read(path)
    if found is not None:
        return found
    rules = build()
    _write(path, rules)
    return rules


def _read(path: Path) -> RuleSet | None:
    from .scan import RuleSet

    try:
        data = path.read_bytes()
    except OSError:
        return None
    body, trailer = data[:-_DIGEST], data[-_DIGEST:]
    if not body.startswith(_FORMAT) or hashlib.sha256(body).digest() != trailer:
        log.debug("memstrata: damaged rule cache %s is rebuilt", path)
        return None
    try:
        found = pickle.loads(body[len(_FORMAT) :])
    except Exception as exc:  # anything unpickling can raise: rebuild
        log.debug("memstrata: unreadable rule cache %s is rebuilt: %s", path, exc)
        return None
    return found if isinstance(found, RuleSet) else None


def _write(path: Path, rules: RuleSet) -> None:
    try:
        buffer = io.BytesIO()
        _Pickler(buffer).dump(rules)
        body = _FORMAT + buffer.getvalue()
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temp = tempfile.mkstemp(prefix=".rules-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(body + hashlib.sha256(body).digest())
            os.replace(temp, path)
        except BaseException:
            Path(temp).unlink(missing_ok=True)
            raise
    except Exception as exc:  # a cache that cannot be written is no cache: go on
        log.debug("memstrata: the rule cache %s was not written: %s", path, exc)
        return
    _prune(path.parent, path)


def _prune(folder: Path, written: Path) -> None:
    """Remove the rule files beyond the ``KEEP`` newest (never ``written``) and
    temporary files older than an hour; a file that cannot be read or removed
    (another process's, gone already) is left."""
    now = time.time()
    files: list[tuple[float, Path]] = []
    for entry in folder.iterdir():
        try:
            modified = entry.stat().st_mtime
            if entry.name.startswith(".rules-") and entry.name.endswith(".tmp"):
                if now - modified > _STALE_TEMP_S:
                    entry.unlink()
            elif entry.name.startswith("rules-") and entry.suffix == ".pickle" and entry != written:
                files.append((modified, entry))
        except OSError:
            continue
    files.sort(reverse=True)
    for _, old in files[KEEP - 1 :]:
        try:
            old.unlink()
        except OSError:
            continue


# -- compiled regexes without compiling them again ---------------------------------------


def _sre_arguments(pattern: re.Pattern[str]) -> tuple[Any, ...] | None:
    """What ``re._compiler.compile`` hands ``_sre.compile`` for ``pattern``
    (None when this Python's internals differ or the result would not be equal)."""
    try:
        _sre: Any = importlib.import_module("_sre")
        from re import _compiler, _parser  # type: ignore[attr-defined]

        parsed = _parser.parse(pattern.pattern, pattern.flags)
        code = [int(op) for op in _compiler._code(parsed, pattern.flags)]  # plain ints
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        arguments = (
            pattern.pattern,
            pattern.flags | parsed.state.flags,
            code,
            parsed.state.groups - 1,
            groupindex,
            tuple(indexgroup),
        )
        rebuilt = _sre.compile(*arguments)
    except Exception:
        return None
    return arguments if rebuilt == pattern else None


def _words(code: list[int]) -> bytes | list[int]:
    """The SRE code as 32-bit words (unpickled in C, where a list of ints costs
    a pickle op per int: most of a cache file), or as is if they do not fit."""
    try:
        words = array.array("I", code)
    except OverflowError:
        return code
    return words.tobytes() if words.itemsize == 4 else code


def _rebuild(arguments: tuple[Any, ...]) -> re.Pattern[str]:
    """A pattern from ``_sre_arguments``, its code as ``_words`` (compiled the
    ordinary way if refused)."""
    try:
        _sre: Any = importlib.import_module("_sre")

        code = arguments[2]
        if isinstance(code, bytes):
            words = array.array("I", code)
            if words.itemsize != 4:
                raise ValueError("32-bit words expected")
            code = words.tolist()
        found: re.Pattern[str] = _sre.compile(*arguments[:2], code, *arguments[3:])
    except Exception:
        found = re.compile(arguments[0], arguments[1])
    return found


def _compile(source: str, flags: int) -> re.Pattern[str]:
    return re.compile(source, flags)


class _Pickler(pickle.Pickler):
    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, re.Pattern):
            arguments = _sre_arguments(obj)
            if arguments is None:
                return _compile, (obj.pattern, obj.flags)
            return _rebuild, ((*arguments[:2], _words(arguments[2]), *arguments[3:]),)
        return NotImplemented
