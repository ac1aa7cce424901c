"""A complete agent loop on memstrata: capture before answering, a context
within a budget, a live window that compacts, transcripts, and a summary.

    python examples/agent_loop.py                 # a scripted model, no network
    OPENAI_BASE_URL=http://localhost:8000/v1 OPENAI_API_KEY=x OPENAI_MODEL=my-model \\
        python examples/agent_loop.py --real      # any OpenAI-compatible endpoint

Each turn: ``observe`` the user's message (facts, corrections, secrets
redacted) -> ``build_context`` for the system prompt -> the window gets the
message (it snips, buffers, compacts and recovers as it fills) -> the model
answers -> the window gets the answer -> ``record_turn`` keeps the turn. At
the end, ``compact_session`` writes the session's summary.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from memstrata import Memory
from memstrata.context import Message

USER_SAYS = [
    "Hi! I'm Sardor and I run the billing team.",
    "I prefer short answers with code first.",
    "Remember that the staging database is pg-staging-2.",
    "Let's go with PostgreSQL 16 for the new ledger.",
    "Actually, the staging database is pg-staging-3, not pg-staging-2.",
    "My API key is sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk, use it for the deploy.",
    "Which database does staging use?",
    "Where were we?",
]


class ScriptedModel:
    """A stand-in for a model: answers from the context it is given, so the
    loop can run (and be tested) without a network."""

    name = "scripted"

    def reply(self, system: str, messages: Sequence[Message]) -> str:
        asked = messages[-1].content.lower()
        if "staging" in asked and "?" in asked:
            line = next((ln for ln in system.splitlines() if "pg-staging-3" in ln), "")
            return f"From memory: {line.lstrip('- ').strip() or 'I do not know.'}"
        if "where were we" in asked:
            return "We were setting up the ledger on PostgreSQL 16; staging is pg-staging-3."
        return "Noted."


class OpenAIModel:
    """Any OpenAI-compatible endpoint through the official SDK (pip install openai)."""

    def __init__(self) -> None:
        import openai

        self.client = openai.OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment
        self.name = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")

    def reply(self, system: str, messages: Sequence[Message]) -> str:
        chat = [{"role": "system", "content": system}] + [
            {"role": "system" if m.role == "tool" else m.role, "content": m.content}
            for m in messages
        ]
        answer = self.client.chat.completions.create(model=self.name, messages=chat)
        return answer.choices[0].message.content or ""


def run(workspace: Path, model: ScriptedModel | OpenAIModel, window_tokens: int) -> None:
    session = "example"
    with Memory.open(workspace) as memory:
        window = memory.window(session, limit_tokens=window_tokens)
        for said in USER_SAYS:
            print(f"user      {said}")
            for capture in memory.observe(said, session=session):
                extra = f" (supersedes {capture.superseded})" if capture.superseded else ""
                print(f"  capture {capture.category}{extra}")
            context = memory.build_context(said, session=session, budget_tokens=800)
            events = window.add(Message("user", said))
            answer = model.reply(context.text, window.messages)
            events += window.add(Message("assistant", answer))
            for event in events:
                print(f"  window  {event.kind}")
            memory.record_turn(session, user=said, assistant=answer, meta={"model": model.name})
            print(f"{model.name:<9} {answer}")
        summary = memory.compact_session(session)
        print(f"\nsummary of turns {summary.turns[0]}-{summary.turns[1]} -> {summary.path}")
        print(summary.summary)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--real", action="store_true", help="use OPENAI_BASE_URL / OPENAI_API_KEY")
    parser.add_argument("--workspace", type=Path, help="keep the workspace here")
    parser.add_argument("--window", type=int, default=160, help="window size in tokens")
    args = parser.parse_args()
    if args.real and not os.environ.get("OPENAI_API_KEY"):
        print("--real needs OPENAI_API_KEY (and OPENAI_BASE_URL for a local server)")
        return 2
    model = OpenAIModel() if args.real else ScriptedModel()
    if args.workspace:
        run(args.workspace, model, args.window)
    else:
        with tempfile.TemporaryDirectory() as folder:
            run(Path(folder) / "ws", model, args.window)
    return 0


if __name__ == "__main__":
    sys.exit(main())
