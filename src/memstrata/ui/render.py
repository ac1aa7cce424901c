"""Rendering helpers of the inspector: the Jinja2 environment and Markdown.

Invariants:

* **Everything is escaped**: Jinja2 autoescapes every template; Markdown is
  rendered with raw HTML disabled (a ``<script>`` in a note is shown as text)
  and only ``http(s)``/relative links (markdown-it's own link validation).
* ``[[name]]`` wiki links become links to the note's page, by name; a file's
  headings are shifted one level down (the page's own title is its one h1).
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import jinja2
from markupsafe import Markup

if TYPE_CHECKING:
    from markdown_it import MarkdownIt

__all__ = ["environment", "markdown"]

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


@cache
def environment() -> jinja2.Environment:
    """The templates of ``memstrata.ui`` (package data), autoescaped."""
    env = jinja2.Environment(
        loader=jinja2.PackageLoader("memstrata.ui", "templates"),
        autoescape=True,
        trim_blocks=True,
        lstrip_blocks=True,
        undefined=jinja2.StrictUndefined,
    )
    env.filters["when"] = _when
    env.filters["markdown"] = markdown
    env.filters["q"] = lambda value: quote(str(value), safe="")
    return env


def page(name: str, **context: Any) -> str:
    """Template ``name`` rendered with ``context``."""
    return environment().get_template(name).render(**context)
