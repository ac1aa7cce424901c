"""Session summaries for ``/compact`` (seed 001) and automatic compaction
(qracer): a ``Summarizer`` turns a session's turns into Markdown.

* ``ExtractiveSummarizer`` (the default) needs no model: it runs the capture
  scanner over the user's messages and lists, with turn references, the
  decisions, the facts (names, preferences, values, corrections, "remember")
  and the open questions (a user question that is the last message of the
  session, or that the assistant's reply did not answer with text).
* ``ChatSummarizer`` asks a chat model through the official ``openai`` SDK
  (any OpenAI-compatible endpoint, local servers included, via the base URL)
  or the ``anthropic`` SDK; both are optional extras (``pip install
  'memstrata[llm]'``), never required. A client may be handed in (tests pass
  a scripted one); else the SDK makes one (its own variables give the key and
  the base URL: ``OPENAI_API_KEY``, ``OPENAI_BASE_URL``, ``ANTHROPIC_API_KEY``).

``summary_facts(summary)`` reads a summary's bullets back as facts for
MEMORY.md: each bullet's text without its turn reference, with a real
category (``decision`` under a "Decisions" heading, else ``fact``); open
questions (a heading that names questions, or a bullet ending in a question
mark), ``none`` and a bullet whose content is only a redaction are no facts.

``make_summarizer(choice, model)`` picks one from the settings ``summarizer``
(``extractive``, the default, ``openai`` or ``anthropic``) and
``summary_model``; the entry points take them from ``MEMSTRATA_SUMMARIZER``
and ``MEMSTRATA_SUMMARY_MODEL``. Nothing here reads the environment.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..errors import BackendUnavailable, InvalidInput
from ..stores.transcripts import Turn, conversation_lines

__all__ = [
    "ChatSummarizer",
    "ExtractiveSummarizer",
    "Summarizer",
    "SummaryFact",
    "make_summarizer",
    "summary_facts",
]

PROMPT = (
    "Summarize this conversation for the assistant's long-term memory. Use Markdown with "
    "three sections: '## Decisions', '## Facts', '## Open questions', each a list of short "
    "bullets that end with the turn numbers they come from, like '(turn 3)'. Keep names, "
    "numbers and dates exactly. Leave out small talk."
)
_FACTS = ("proper_noun", "preference", "specific_value", "correction", "remember")
_TURN_REF = re.compile(r"\s*\((?:turns?|turn numbers?)\s[^()]*\)\s*$", re.I)
# A list item of any kind ("-", "*", "+", "1.", "1)"), and where prose splits into sentences.
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+(?P<text>.+)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[^\s])")


@runtime_checkable
class Summarizer(Protocol):
    """Turns a session's turns into a Markdown summary."""

    name: str

    def summarize(self, turns: Sequence[Turn]) -> str: ...


def _one_line(text: str, limit: int = 200) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


class ExtractiveSummarizer:
    """Decisions, facts and open questions, with turn references; no model."""

    name = "extractive"

    def summarize(self, turns: Sequence[Turn]) -> str:
        decisions: list[str] = []
        facts: list[str] = []
        questions: list[str] = []
        for index, turn in enumerate(turns):
            said = turn.text_of("user")
            for category, text in _statements(said):
                bullet = f"- {_one_line(text)} (turn {turn.seq})"
                if category == "decision" and bullet not in decisions:
                    decisions.append(bullet)
                elif category in _FACTS and bullet not in facts and bullet not in decisions:
                    facts.append(bullet)
            asked = said.strip()
            answered = turn.text_of("assistant").strip()
            if asked.endswith(("?", "？")) and (index == len(turns) - 1 or not answered):
                questions.append(f"- {_one_line(asked)} (turn {turn.seq})")
        parts = []
        for title, bullets in (
            ("Decisions", decisions),
            ("Facts", facts),
            ("Open questions", questions),
        ):
            parts.append(f"## {title}\n" + ("\n".join(bullets) if bullets else "- none"))
        span = f"turns {turns[0].seq}-{turns[-1].seq}" if turns else "no turns"
        return f"Summary of {span}.\n\n" + "\n\n".join(parts) + "\n"


def _statements(said: str) -> list[tuple[str, str]]:
    """(category, text) of what a user message states, in order: its facts as
    ``observe`` keeps them (a sentence of independent statements cut into its
    clauses, so a bullet says what the MEMORY.md item says), then each
    sentence's decision or value that no fact stands for."""
    # the capture rules: loaded by the first summary, not by every reader of this module
    from ..capture.promote import durable_facts, redaction_only
    from ..capture.scan import scan

    entries = scan(said)
    facts = durable_facts(entries, scan)
    covered = {(fact.span, category) for fact in facts for category in fact.categories}
    out = [(fact.category, fact.text) for fact in facts]
    for entry in entries:
        if (entry.span, entry.category) not in covered and not redaction_only(entry.text):
            out.append((entry.category, entry.text))
    return out


@dataclass(frozen=True, slots=True)
class SummaryFact:
    """A bullet of a summary to keep as a MEMORY.md item."""

    line: str  # the bullet's whole line in the summary
    text: str  # without its "- " and turn reference
    category: str


def summary_facts(summary: str) -> list[SummaryFact]:
    """The bullets of ``summary`` that state facts (see the module)."""
    found = []
    category: str | None = "fact"
    lines = summary.splitlines()
    listed = any(_LIST_ITEM.match(line) for line in lines)
    for line in lines:
        if line.startswith("#"):
            heading = line.lstrip("#").strip().casefold()
            if "question" in heading:
                category = None
            else:
                category = "decision" if "decision" in heading else "fact"
            continue
        if category is None:
            continue
        item = _LIST_ITEM.match(line)
        parts = [(line, item.group("text"))] if item else []
        if not listed and line.strip():  # prose (seed 001's /compact keeps it): its sentences
            parts = [(part, part) for part in _SENTENCE_END.split(line.strip()) if part.strip()]
        for said, raw in parts:
            text = _TURN_REF.sub("", raw).strip()
            if _worth_keeping(text):
                found.append(SummaryFact(said, text, category))
    return found


def _worth_keeping(text: str) -> bool:
    from ..capture.promote import redaction_only

    return (
        bool(text)
        and text.casefold().strip(".") != "none"
        and not text.endswith(("?", "？"))
        and not redaction_only(text)
    )


def transcript_text(turns: Sequence[Turn], limit_chars: int = 60_000) -> str:
    """The turns as plain text for a model, newest kept when it is too long."""
    text = "\n".join(conversation_lines(turns, numbered=True))
    return text if len(text) <= limit_chars else text[-limit_chars:]


class ChatSummarizer:
    """A chat model summarizes (OpenAI-compatible or Anthropic SDK)."""

    def __init__(self, provider: str, model: str, client: Any = None) -> None:
        if provider not in ("openai", "anthropic"):
            raise InvalidInput(f"provider must be openai or anthropic, not {provider!r}")
        if not model:
            raise InvalidInput(
                "a summary model name is needed (setting summary_model, MEMSTRATA_SUMMARY_MODEL)"
            )
        self.provider, self.model = provider, model
        self.name = f"{provider}:{model}"
        self._client = client if client is not None else _client(provider)

    def summarize(self, turns: Sequence[Turn]) -> str:
        conversation = transcript_text(turns)
        try:
            if self.provider == "openai":
                reply = self._client.chat.completions.create(
                    model=self.model,
                    messages=[
                        {"role": "system", "content": PROMPT},
                        {"role": "user", "content": conversation},
                    ],
                )
                text = reply.choices[0].message.content
            else:
                reply = self._client.messages.create(
                    model=self.model,
                    max_tokens=1024,
                    system=PROMPT,
                    messages=[{"role": "user", "content": conversation}],
                )
                text = "".join(getattr(block, "text", "") for block in reply.content)
        except Exception as exc:  # the SDKs raise their own error trees
            raise BackendUnavailable(f"the summary model failed: {exc}") from exc
        if not isinstance(text, str) or not text.strip():
            raise BackendUnavailable("the summary model returned no text")
        return text.strip() + "\n"


def _client(provider: str) -> Any:
    try:
        if provider == "openai":
            import openai

            return openai.OpenAI()  # OPENAI_API_KEY, OPENAI_BASE_URL from the environment
        import anthropic

        return anthropic.Anthropic()
    except ImportError as exc:
        raise BackendUnavailable(
            f"the {provider} summarizer needs its SDK: pip install 'memstrata[llm]'"
        ) from exc


def make_summarizer(choice: str, model: str | None = None) -> Summarizer:
    """The summarizer named by ``choice`` (the setting ``summarizer``) with
    ``model`` (``summary_model``); ``InvalidInput`` for an unknown name or a
    model provider without a model, ``BackendUnavailable`` without its SDK."""
    name = choice.strip().lower()
    if name in ("", "extractive"):
        return ExtractiveSummarizer()
    return ChatSummarizer(name, (model or "").strip())
