"""Optional LLM extractor: ADD / UPDATE / NOOP proposals against the nearest facts (mem0-style).

Never a default: nothing in memstrata builds one unless asked, and the
offline, deterministic rules + scorer (``scan``) stay the capture path. An
``LLMExtractor`` wraps any OpenAI-compatible chat client (``openai.OpenAI``
with a ``base_url``, or any object with ``chat.completions.create``); with no
client it builds ``openai.OpenAI()``, imported lazily (``pip install
'memstrata[llm]'``).

``propose(message, facts)`` sends the message and the ``k`` existing facts
nearest to it (shared words) and asks for JSON
``{"facts": [{"op", "category", "text", "target"}]}``. Guarantees on what it
returns, whatever the model replies:

* every proposal has an ``op`` in ``OPS`` and a ``category`` the rules
  capture (``scorer.RULE_CATEGORIES``); anything else in the reply is dropped;
* an ``UPDATE`` names the id of one of the facts that were sent (``target``);
  one naming any other id becomes an ``ADD``; ``ADD`` and ``NOOP`` have no
  target unless NOOP names a sent fact;
* a reply that is not such JSON yields no proposals (logged), and a client
  error becomes ``BackendUnavailable``; no raw exception reaches the caller.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import BackendUnavailable, InvalidInput
from .scorer import RULE_CATEGORIES, tokens

__all__ = ["INSTALL_HINT", "OPS", "Fact", "LLMExtractor", "Proposal", "nearest"]

INSTALL_HINT = "pip install 'memstrata[llm]'"
OPS = ("ADD", "UPDATE", "NOOP")
_CATEGORIES = frozenset(RULE_CATEGORIES)  # what the rules capture
_LOG = logging.getLogger(__name__)
_SYSTEM = (
    "You extract durable facts a user states about themselves, their world or their wishes "
    "(names, preferences, decisions, corrections, explicit requests to remember, concrete "
    "values). Questions, hypotheticals, other people's words, nostalgia and talk about the "
    "conversation hold no fact. Compare with the existing facts given (id: text). Reply with "
    'JSON only: {"facts": [{"op": "ADD"|"UPDATE"|"NOOP", "category": one of '
    f"{sorted(_CATEGORIES)}, "
    '"text": the fact in the user\'s words, "target": the id an UPDATE supersedes or a NOOP '
    'repeats, else null}]}; {"facts": []} when the message holds none.'
)


@dataclass(frozen=True, slots=True)
class Fact:
    """An existing fact the model may update: its id and text."""

    id: str
    text: str


@dataclass(frozen=True, slots=True)
class Proposal:
    """What the model proposes for one fact of the message."""

    op: str
    category: str
    text: str
    target: str | None = None


def nearest(message: str, facts: Sequence[Fact], k: int) -> list[Fact]:
    """The ``k`` facts sharing most words with ``message`` (ties: given order)."""
    words = set(tokens(message)) - {"^", "$"}
    scored = [(len(words & set(tokens(fact.text))), n) for n, fact in enumerate(facts)]
    best = sorted((item for item in scored if item[0]), key=lambda item: (-item[0], item[1]))
    return [facts[n] for _, n in best[:k]]


class LLMExtractor:
    """Proposals from an OpenAI-compatible chat model (see the module docstring)."""

    def __init__(self, client: Any = None, *, model: str = "gpt-4o-mini", k: int = 5) -> None:
        if k < 0:
            raise InvalidInput("k must be 0 or more")
        self.client = client if client is not None else _default_client()
        self.model, self.k = model, k

    def propose(self, message: str, facts: Sequence[Fact] = ()) -> list[Proposal]:
        """ADD / UPDATE / NOOP proposals for ``message`` against the nearest ``facts``."""
        if not isinstance(message, str) or not message.strip():
            raise InvalidInput("message must be non-empty text")
        sent = nearest(message, facts, self.k)
        known = "\n".join(f"{fact.id}: {fact.text}" for fact in sent) or "(none)"
        prompt = f"Existing facts:\n{known}\n\nUser message:\n{message}"
        try:
            reply = self.client.chat.completions.create(
                model=self.model,
                temperature=0,
                response_format={"type": "json_object"},
                messages=[
                    {"role": "system", "content": _SYSTEM},
                    {"role": "user", "content": prompt},
                ],
            )
            content = reply.choices[0].message.content
        except Exception as error:  # any client's failure, as one error of ours
            raise BackendUnavailable(f"LLM extractor: {type(error).__name__}: {error}") from error
        return _parse(content, {fact.id for fact in sent})


def _default_client() -> Any:
    try:
        import openai
    except ImportError as error:
        raise BackendUnavailable(f"the LLM extractor needs openai: {INSTALL_HINT}") from error
    try:
        return openai.OpenAI()
    except Exception as error:  # e.g. no API key configured
        raise BackendUnavailable(f"LLM extractor: {error}") from error


def _parse(content: Any, ids: set[str]) -> list[Proposal]:
    """The valid proposals in a reply (see the module's guarantees)."""
    try:
        items = json.loads(content)["facts"]
        if not isinstance(items, list):
            raise TypeError("facts is not a list")
    except (TypeError, ValueError, KeyError) as error:
        _LOG.warning("LLM extractor: reply ignored (%s)", error)
        return []
    out = []
    for item in items:
        if not isinstance(item, dict):
            continue
        op, category, text = item.get("op"), item.get("category"), item.get("text")
        target = item.get("target")
        if op not in OPS or category not in _CATEGORIES or not isinstance(text, str):
            continue
        if not text.strip():
            continue
        target = target if isinstance(target, str) and target in ids else None
        if op == "UPDATE" and target is None:
            op = "ADD"
        out.append(Proposal(op, category, text.strip(), None if op == "ADD" else target))
    return out
