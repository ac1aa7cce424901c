"""An OpenAI Agents SDK agent whose conversation history is a memstrata session.

    python examples/openai_agents_session.py                   # a scripted model, no network
    python examples/openai_agents_session.py --workspace ./ws  # keep the workspace to look at

``MemstrataSession`` keeps the SDK's items in sessions/<session>.jsonl (one
transcript turn per save, redacted, durable), so a second run, even in a new
process, continues the conversation; ``capture=True`` also files the user's
durable facts in MEMORY.md. Replace the scripted model by a real one
(``Agent(model="gpt-5-mini")`` with OPENAI_API_KEY set) to talk to OpenAI.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from agents import Agent, RunConfig, Runner, function_tool
from agents.testing import ScriptedModel, assistant_message, function_call

from memstrata import Memory
from memstrata.integrations.openai_agents import MemstrataSession


@function_tool
def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny and 24 C in {city}"


def scripted() -> ScriptedModel:
    """What a model would answer, in order (the SDK's own test double)."""
    return ScriptedModel(
        [
            [assistant_message("Nice to meet you, Ana! Lisbon is lovely.")],
            [function_call("weather", {"city": "Lisbon"}, call_id="call-1")],
            [assistant_message("It is sunny and 24 C in Lisbon today, Ana.")],
        ]
    )


async def chat(memory: Memory) -> None:
    model = scripted()
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[weather])
    session = MemstrataSession("ana-chat", memory, capture=True)
    quiet = RunConfig(tracing_disabled=True)
    for message in ["Hi, I'm Ana and I live in Lisbon.", "What's the weather where I live?"]:
        result = await Runner.run(agent, message, session=session, run_config=quiet)
        print(f"user: {message}\nagent: {result.final_output}")
    seen = len(model.calls[-1].input)
    print(f"the model's last call saw {seen} items of history from memstrata")
    print(f"session items: {len(await session.get_items())}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, help="keep the workspace here")
    args = parser.parse_args()
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="memstrata-agents-")) / "ws"
    with Memory.open(workspace) as memory:
        asyncio.run(chat(memory))
        turns = memory.sessions.turns("ana-chat")
        print(f"transcript: {len(turns)} turns in sessions/ana-chat.jsonl")
        print("captured: " + "; ".join(item.text for item in memory.list()))
    print(f"workspace: {workspace}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
