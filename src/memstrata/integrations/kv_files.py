"""Namespaced key-value items as markdown files of the workspace (the file
format under ``integrations.langgraph``; no framework is imported here).

One file per namespace, ``semantic/langgraph.<slug>.<hash>.md`` (``<slug>``:
the labels joined by ``.``, characters a file name may not hold as ``_``;
``<hash>``: 10 hex digits of the namespace's SHA-256, so two namespaces never
share a file). The file reads as a person would write it::

    <!-- memstrata-store {"namespace": ["users", "123"]} -->
    # users / 123

    ## prefs
    <!-- memstrata-item {"key": "prefs", "created_at": "…", "updated_at": "…"} -->
    ```json
    {
      "food": "pizza"
    }
    ```

Invariants:

* The comments are the truth (the namespace, each key and its times); the
  headings are for people. Comment JSON escapes ``-``, ``<`` and ``>`` so that
  no key can end the comment.
* Every line of a value's JSON starts with a JSON token, never a fence, so a
  value cannot end its block; the index chunks each block on its own (the
  fences and the headings cut chunks) and names its lines, which map a hit
  back to its key (``Parsed.key_at``).
* ``parse`` never raises on a hand-edited file: an item whose JSON no longer
  parses, or that is not an object, is left out (and named in ``skipped``);
  a file without the header is not a store file (``None``).
* A write renders the whole file from its items: a value edited by hand is
  kept (it is the item), prose a person adds between the items is not.
* ``render(parse(text))`` is stable: writing what was read changes nothing.
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ..errors import InvalidInput
from ..model import parse_time_or_none

__all__ = [
    "FOLDER",
    "PREFIX",
    "Entry",
    "Parsed",
    "file_of",
    "is_store_file",
    "matches_filter",
    "parse",
    "render",
]

FOLDER = "semantic/"
PREFIX = "langgraph."
_HEADER = "<!-- memstrata-store "
_ITEM = "<!-- memstrata-item "
_TAIL = " -->"
_SLUG_CHARS = 80
_UNSAFE = re.compile(r"[^\w-]", re.UNICODE)


@dataclass(frozen=True, slots=True)
class Entry:
    """One item of a namespace: its key, value, times and whether search ranks it."""

    key: str
    value: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    indexed: bool = True


@dataclass(slots=True)
class Parsed:
    """A namespace file read back: its entries in file order, the lines of
    each (1-based, inclusive) and the keys left out as unreadable."""

    namespace: tuple[str, ...]
    entries: dict[str, Entry] = field(default_factory=dict)
    lines: dict[str, tuple[int, int]] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)

    def key_at(self, start: int, end: int) -> str | None:
        """The key whose lines overlap ``start``-``end``, if any."""
        for key, (first, last) in self.lines.items():
            if first <= end and start <= last:
                return key
        return None


def file_of(namespace: tuple[str, ...]) -> str:
    """The workspace-relative file of ``namespace``."""
    slug = ".".join(_UNSAFE.sub("_", unicodedata.normalize("NFKC", label)) for label in namespace)
    slug = slug[:_SLUG_CHARS].strip("._ ") or "ns"
    digest = hashlib.sha256(_dump(list(namespace)).encode("utf-8")).hexdigest()[:10]
    return f"{FOLDER}{PREFIX}{slug}.{digest}.md"


def is_store_file(rel: str) -> bool:
    """True for a path ``file_of`` could have given."""
    name = rel.removeprefix(FOLDER)
    return name != rel and "/" not in name and name.startswith(PREFIX) and name.endswith(".md")


def render(namespace: tuple[str, ...], entries: list[Entry]) -> str:
    """The file text of ``namespace`` holding ``entries`` in order."""
    lines = [
        f"{_HEADER}{_comment({'namespace': list(namespace)})}{_TAIL}",
        f"# {' / '.join(_one_line(label) for label in namespace)}",
    ]
    for entry in entries:
        meta: dict[str, Any] = {
            "key": entry.key,
            "created_at": entry.created_at.isoformat(),
            "updated_at": entry.updated_at.isoformat(),
        }
        if not entry.indexed:
            meta["index"] = False
        body = json.dumps(entry.value, ensure_ascii=False, indent=2, sort_keys=False)
        lines += ["", f"## {_one_line(entry.key) or '(empty key)'}"]
        lines += [f"{_ITEM}{_comment(meta)}{_TAIL}", "```json", body, "```"]
    return "\n".join(lines) + "\n"


def parse(text: str) -> Parsed | None:
    """The namespace and entries of a store file; ``None`` when it has no header."""
    rows = text.split("\n")
    header = next((n for n, row in enumerate(rows) if _namespace(row) is not None), None)
    if header is None:
        return None
    parsed = Parsed(_namespace(rows[header]) or ())
    number = header + 1
    while number < len(rows):
        meta = _meta(rows[number])
        if meta is None:
            number += 1
            continue
        number = _read_entry(rows, number, meta, parsed)
    return parsed


def matches_filter(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    """LangGraph's filter: every field equal, or each ``$eq/$ne/$gt/$gte/$lt/$lte``
    holding (numbers compare as numbers, strings as strings, others never order)."""
    return not wanted or all(_holds(value.get(name), test) for name, test in wanted.items())


# -- internals ----------------------------------------------------------------


def _read_entry(rows: list[str], at: int, meta: dict[str, Any], parsed: Parsed) -> int:
    """Read the item whose comment is row ``at`` (0-based); the row after it."""
    key = meta.get("key")
    start = at  # the heading is the row above the comment: 1-based that is ``at``
    if not isinstance(key, str) or at + 1 >= len(rows) or rows[at + 1].strip() != "```json":
        parsed.skipped.append(str(key))
        return at + 1
    end = at + 2
    while end < len(rows) and rows[end].strip() != "```":
        end += 1
    created = parse_time_or_none(meta.get("created_at"))
    updated = parse_time_or_none(meta.get("updated_at"))
    try:
        value = json.loads("\n".join(rows[at + 2 : end]))
    except ValueError:
        value = None
    if not isinstance(value, dict) or created is None or updated is None:
        parsed.skipped.append(key)
        return end + 1
    parsed.entries.pop(key, None)  # a key written twice by hand: the last one holds
    parsed.entries[key] = Entry(key, value, created, updated, meta.get("index") is not False)
    parsed.lines[key] = (start, end + 1)
    return end + 1


def _namespace(row: str) -> tuple[str, ...] | None:
    data = _comment_data(row, _HEADER)
    labels = data.get("namespace") if data else None
    if not isinstance(labels, list) or not labels or not all(isinstance(x, str) for x in labels):
        return None
    return tuple(labels)


def _meta(row: str) -> dict[str, Any] | None:
    return _comment_data(row, _ITEM)


def _comment_data(row: str, opener: str) -> dict[str, Any] | None:
    row = row.strip()
    if not row.startswith(opener) or not row.endswith(_TAIL):
        return None
    try:
        data = json.loads(row[len(opener) : -len(_TAIL)])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _comment(data: dict[str, Any]) -> str:
    """JSON for an HTML comment: ``-``, ``<`` and ``>`` only as escapes (all
    of them are inside strings here, where an escape means the same)."""
    return _dump(data).replace("-", "\\u002d").replace("<", "\\u003c").replace(">", "\\u003e")


def _dump(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, separators=(", ", ": "))


def _one_line(text: str) -> str:
    return " ".join(text.split())


_ORDER = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _holds(value: Any, test: Any) -> bool:
    if isinstance(test, dict) and test and all(str(name).startswith("$") for name in test):
        return all(_operator(value, name, operand) for name, operand in test.items())
    if isinstance(test, dict):
        return isinstance(value, dict) and all(_holds(value.get(k), v) for k, v in test.items())
    return bool(value == test)


def _operator(value: Any, name: str, operand: Any) -> bool:
    if name == "$eq":
        return bool(value == operand)
    if name == "$ne":
        return bool(value != operand)
    compare = _ORDER.get(name)
    if compare is None:
        raise InvalidInput(f"unsupported filter operator {name!r}; use $eq $ne $gt $gte $lt $lte")
    numbers = all(isinstance(x, int | float) and not isinstance(x, bool) for x in (value, operand))
    strings = isinstance(value, str) and isinstance(operand, str)
    return bool(compare(value, operand)) if numbers or strings else False
