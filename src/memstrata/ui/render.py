"""Rendering helpers of the inspector: the Jinja2 environment and Markdown.

Invariants:

* **Everything is escaped**: Jinja2 autoescapes every template; Markdown is
  rendered with raw HTML disabled (a ``<script>`` in a note is shown as text)
  and only ``http(s)``/relative links (markdown-it's own link validation).
* ``[[name]]`` wiki links become links to the note's page, by name.
"""

from __future__ import annotations

import re
from datetime import datetime
from functools import cache
from typing import Any
from urllib.parse import quote

import jinja2
from markdown_it import MarkdownIt
from markupsafe import Markup

__all__ = ["environment", "markdown"]

_WIKI = re.compile(r"\[\[([^\[\]|#\n]+)(?:#[^\[\]|\n]*)?(?:\|([^\[\]\n]+))?\]\]")


@cache
def _parser() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": False, "linkify": False}).enable("table")


def markdown(text: str) -> Markup:
    """``text`` rendered as safe HTML (see the module)."""

    def link(match: re.Match[str]) -> str:
        name, label = match.group(1).strip(), (match.group(2) or match.group(1)).strip()
        label = label.replace("[", "").replace("]", "")
        return f"[{label}](/notes/{quote(name, safe='')})"

    return Markup(_parser().render(_WIKI.sub(link, text)))  # noqa: S704 - html disabled


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
