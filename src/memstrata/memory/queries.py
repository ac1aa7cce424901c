"""What a search is asked: the tail of a prompt without chat-log noise (for
``gate``), and a list of sessions checked (``search(sessions=[...])``); and
what it answers: one hit per fact (``distinct``). Pure functions of their
input (``distinct`` calls the search it is given)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from ..errors import InvalidInput
from ..index.hybrid import Hit
from ..index.why import Why

__all__ = ["distinct", "prompt_tail", "session_list"]

_CLOCK = re.compile(r"^\[?\d{1,2}:\d{2}(?::\d{2})?\]?\s*")
_WORD = re.compile(r"\w")
_TAG = re.compile(r"</?messages?\b[^>]*>", re.I)  # NanoClaw's chat log
_SPEAKER = re.compile(r"^(?:\*\*)?[A-Z][\w.'-]{0,30}(?: [A-Z][\w.'-]{0,30}){0,2}(?:\*\*)?:\s+")
_NOISE = (
    "user:", "assistant:", "agent:", "system:", "**user:**", "**agent:**", "human:", "ai:",
)  # fmt: skip


def session_list(sessions: Iterable[str] | None) -> frozenset[str] | None:
    """``sessions`` checked (a list of session names; one string is refused)."""
    if sessions is None:
        return None
    if isinstance(sessions, str):
        raise InvalidInput("sessions must be a list of session names, not one string")
    try:
        names = list(sessions)
    except TypeError:
        raise InvalidInput("sessions must be a list of session names") from None
    if not all(isinstance(name, str) and name.strip() for name in names):
        raise InvalidInput("every session name in sessions must be a non-empty string")
    return frozenset(name.strip() for name in names)


def prompt_tail(prompt: str, chars: int = 600) -> str:
    """The last ``chars`` characters of a prompt with chat-log noise removed:
    speaker labels (``user:``, a name such as ``Alice:``), timestamps in
    brackets, NanoClaw's ``<message sender=… time=…>`` tags (their text is
    kept), and lines of markup only."""
    lines = []
    for line in _TAG.sub("\n", prompt).splitlines():
        text = _SPEAKER.sub("", _CLOCK.sub("", line.strip()))
        lowered = text.lower()
        for label in _NOISE:
            if lowered.startswith(label):
                text = text[len(label) :].strip()
                break
        if text and _WORD.search(text):
            lines.append(text)
    joined = " ".join(lines)
    return joined[-chars:]


def distinct(run: Callable[[int], list[Hit]], k: int, why: Why | None = None) -> list[Hit]:
    """The first ``k`` hits of ``run(n)`` (a search for ``n`` hits, filling
    ``why``) without the session state's copy of a fact that is among them:
    a capture writes the same sentence to ``SESSION-STATE.md`` and
    ``MEMORY.md``, and two equal lines would take two of ``k`` places; the
    long-term one stays (its ``ref`` is the fact's id, for forget and
    correct). Asks again for as many more as were dropped, until ``k`` are
    left or the search has no more; ``why.hits`` keeps matching the hits."""
    asked = k
    while True:
        hits = run(asked)
        facts = {_plain(hit.text) for hit in hits if hit.layer == "long_term"}
        kept = [
            place
            for place, hit in enumerate(hits)
            if hit.layer != "session_state" or _plain(hit.text) not in facts
        ]
        if len(kept) >= k or len(hits) < asked:
            kept = kept[:k]
            if why is not None and len(why.hits) == len(hits):
                why.hits = [why.hits[place] for place in kept]
            return [hits[place] for place in kept]
        asked += k - len(kept)


def _plain(text: str) -> str:
    return " ".join(text.split()).casefold()
