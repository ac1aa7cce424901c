"""Rendering helpers of the inspector: the Jinja2 environment and Markdown.

Invariants:

* **Everything is escaped**: Jinja2 autoescapes every template; Markdown is
  rendered with raw HTML disabled (a ``<script>`` in a note is shown as text)
  and only ``http(s)``/relative links (markdown-it's own link validation).
* ``[[name]]`` wiki links become links to the note's page, by name; a file's
  headings are shifted one level down (the page's own title is its one h1).
* **Compiled templates are kept between runs** (Jinja2's bytecode cache, in a
  folder of this user's only, mode 0700, checked by Jinja2; each entry keyed
  by the template's path and checked against its source's hash): compiling the
  first page's templates costs 30-50 ms of start-up, loading them 1 ms. A cache
  that cannot be made, read or written is no cache, never an error.
"""

from __future__ import annotations

import re
from contextlib import suppress
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["CACHE_DIR", "environment", "markdown", "page"]

_WIKI = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]+))?\]\]")


@cache
def _parser() -> MarkdownIt:
    from markdown_it import MarkdownIt  # only a file or a note needs it (25 ms to import)

    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown(text: str) -> Markup:
    """``text`` rendered as safe HTML (see the module)."""

    def link(match: re.Match[str]) -> str:
        name, label = match.group(1).strip(), (match.group(2) or match.group(1)).strip()
        label = label.replace("[", "").replace("]", "")
        return f"[{label}](/notes/{quote(name, safe='')})"

    parser = _parser()
    tokens = parser.parse(_WIKI.sub(link, text))
    for token in tokens:  # the page has its own h1: a file's headings go one level down
        if token.type in ("heading_open", "heading_close"):
            token.tag = f"h{min(int(token.tag[1]) + 1, 6)}"
    return Markup(parser.renderer.render(tokens, parser.options, {}))  # noqa: S704 - no html


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value is not None else "–"


# Where compiled templates are kept (None: Jinja2's per-user folder in the
# system's temporary directory).
CACHE_DIR: str | None = None


class _Compiled(jinja2.FileSystemBytecodeCache):
    """Jinja2's bytecode cache, quiet: what it cannot read or write it skips."""

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        try:
            super().load_bytecode(bucket)
        except (OSError, ValueError, EOFError):
            bucket.reset()

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        with suppress(OSError):
            super().dump_bytecode(bucket)


def _compiled() -> jinja2.BytecodeCache | None:
    try:
        return _Compiled(CACHE_DIR)
    except (OSError, RuntimeError):  # no private folder to be had: no cache
        return None


@cache
def environment() -> jinja2.Environment:
    """The templates of ``memstrata.ui`` (package data), autoescaped."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("memstrata.ui", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
        bytecode_cache=_compiled(),
    )
    env.filters["when"] = _when
    env.filters["markdown"] = markdown
    env.filters["q"] = lambda value: quote(str(value), safe="")
    return env


def page(name: str, **context: Any) -> str:
    """Template ``name`` rendered with ``context``."""
    return environment().get_template(name).render(**context)
