"""MemstrataSession against the OpenAI Agents SDK's Session contract, and used
by the SDK's own Runner with a scripted model (no network)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agents", reason="needs memstrata[integrations]")

from agents import Agent, RunConfig, Runner, function_tool  # noqa: E402
from agents.memory import Session, SessionABC, SessionSettings  # noqa: E402
from agents.testing import ScriptedModel, assistant_message, function_call  # noqa: E402

from memstrata import Memory  # noqa: E402
from memstrata.errors import InvalidInput  # noqa: E402
from memstrata.integrations.openai_agents import MemstrataSession  # noqa: E402

SECRET = "sk-proj-Zx81kQm2Lr7Tt5Wb9Yc3Nd6Pf0Gh4Jk"
QUIET = RunConfig(tracing_disabled=True)


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _answer(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def test_it_implements_the_sdk_session_protocol(memory: Memory) -> None:
    session = MemstrataSession("s1", memory)
    assert isinstance(session, SessionABC)
    assert isinstance(session, Session)
    assert session.session_id == "s1"
    with pytest.raises(InvalidInput):
        MemstrataSession("  ", memory)


def test_add_get_limit_pop_clear(memory: Memory) -> None:
    session = MemstrataSession("s1", memory)

    async def run() -> None:
        assert await session.get_items() == []
        assert await session.pop_item() is None
        await session.add_items([_user("one"), _answer("two")])
        await session.add_items([_user("three")])
        assert await session.get_items() == [_user("one"), _answer("two"), _user("three")]
        assert await session.get_items(limit=2) == [_answer("two"), _user("three")]
        assert await session.get_items(limit=0) == []
        assert await session.pop_item() == _user("three")
        assert await session.get_items() == [_user("one"), _answer("two")]
        await session.clear_session()
        assert await session.get_items() == []
        await session.add_items([_user("four")])
        assert await session.get_items() == [_user("four")]

    asyncio.run(run())


def test_the_default_limit_comes_from_session_settings(memory: Memory) -> None:
    session = MemstrataSession("s1", memory, session_settings=SessionSettings(limit=1))

    async def run() -> None:
        await session.add_items([_user("one"), _user("two")])
        assert await session.get_items() == [_user("two")]

    asyncio.run(run())


def test_history_is_a_transcript_that_survives_a_reopen(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with Memory.open(ws) as memory:
        asyncio.run(MemstrataSession("s1", memory).add_items([_user("hi"), _answer("hello")]))
        memory.record_turn("s1", user="recorded by hand", assistant="noted")
    with Memory.open(ws) as memory:
        items = asyncio.run(MemstrataSession("s1", memory).get_items())
        turns = memory.sessions.turns("s1")
    assert items == [
        _user("hi"),
        _answer("hello"),
        {"role": "user", "content": "recorded by hand"},
        {"role": "assistant", "content": "noted"},
    ]
    assert turns[0].text_of("user") == "hi" and turns[0].text_of("assistant") == "hello"
    with Memory.open(ws) as memory:
        assert asyncio.run(MemstrataSession("s2", memory).get_items()) == []


def test_secrets_never_reach_disk(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    with Memory.open(ws) as memory:
        session = MemstrataSession("s1", memory)
        asyncio.run(session.add_items([_user(f"my key is {SECRET}")]))
        items = asyncio.run(session.get_items())
    assert SECRET not in json.dumps(items)
    for path in ws.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path


def test_capture_observes_the_users_messages(memory: Memory) -> None:
    session = MemstrataSession("s1", memory, capture=True)
    asyncio.run(session.add_items([_user("Remember that my favourite editor is Helix.")]))
    assert any("Helix" in item.text for item in memory.list())


def test_a_runner_with_a_scripted_model_keeps_its_history_in_memstrata(memory: Memory) -> None:
    @function_tool
    def weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    model = ScriptedModel(
        [
            [assistant_message("Nice to meet you, Ana.")],
            [function_call("weather", {"city": "Lisbon"}, call_id="call-1")],
            [assistant_message("It is sunny in Lisbon, Ana.")],
        ]
    )
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[weather])
    session = MemstrataSession("chat", memory)

    async def run() -> None:
        first = await Runner.run(agent, "Hi, I'm Ana.", session=session, run_config=QUIET)
        assert first.final_output == "Nice to meet you, Ana."
        second = await Runner.run(agent, "Weather in Lisbon?", session=session, run_config=QUIET)
        assert second.final_output == "It is sunny in Lisbon, Ana."

    asyncio.run(run())
    seen = json.dumps(model.calls[1].input)
    assert "Hi, I'm Ana." in seen and "Nice to meet you, Ana." in seen
    items = asyncio.run(session.get_items())
    kinds = [item.get("type", "message") for item in items]
    assert kinds.count("function_call") == 1 and kinds.count("function_call_output") == 1
    assert items[-1]["content"][0]["text"] == "It is sunny in Lisbon, Ana."
    turns = memory.sessions.turns("chat")
    text = json.dumps([turn.to_dict() for turn in turns])
    assert "Sunny in Lisbon" in text and '"name": "weather"' in text


def test_a_session_on_a_postgresql_workspace() -> None:
    import postgres_server

    url, tenant = postgres_server.app_url(), postgres_server.tenant("agents")
    with Memory.open(url, tenant, embedder="none") as memory:
        session = MemstrataSession("s1", memory)

        async def run() -> None:
            await session.add_items([_user("one"), _answer("two")])
            assert await session.pop_item() == _answer("two")
            await session.add_items([_user("three")])
            assert await session.get_items() == [_user("one"), _user("three")]

        asyncio.run(run())
    with Memory.open(url, tenant, embedder="none") as memory:
        assert asyncio.run(MemstrataSession("s1", memory).get_items()) == [
            _user("one"),
            _user("three"),
        ]


def test_items_moved_to_the_archive_by_compaction_are_still_read(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", session_max_turns=2, session_keep_turns=1) as memory:
        session = MemstrataSession("long", memory)

        async def run() -> list[Any]:
            for number in range(6):
                await session.add_items([_user(f"message {number}")])
            await session.pop_item()
            return await session.get_items()

        items = asyncio.run(run())
        assert items == [_user(f"message {number}") for number in range(5)]
        assert (tmp_path / "ws" / "sessions" / "archive" / "long.jsonl").exists()
        assert len(memory.sessions.turns("long")) < 7
