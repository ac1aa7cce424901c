"""Every memory tool through the official MCP client (issue 18, item 1): in
this process (``mcp.Client`` on the server object), over stdio and over
streamable HTTP. Each tool is listed with a description, parameter
descriptions and hints; called with valid input it succeeds with structured
content that matches its output schema; called with bad input it is an error
result (``isError``). A search hit's id goes to forget, restore and correct.
The schema of the tools is kept in a committed snapshot
(``tests/data/mcp_tools.json``; ``MEMSTRATA_UPDATE_SNAPSHOT=1`` rewrites it).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

mcp = pytest.importorskip("mcp", reason="the mcp extra is not installed")
jsonschema = pytest.importorskip("jsonschema", reason="the mcp SDK's jsonschema is missing")

from mcp import Client  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from memstrata import Memory, __version__  # noqa: E402
from memstrata.mcp_server import build_server  # noqa: E402
from memstrata.tools import (  # noqa: E402
    SPECS,
    TOOL_NAMES,
    WRITES,
    anthropic_tools,
    dispatch,
    openai_tools,
)
from memstrata.tools.schema import check  # noqa: E402
from memstrata.tools.specs import MAX_SESSIONS  # noqa: E402
from test_mcp import _free_port, _start_http, _text, server_env  # noqa: E402

SNAPSHOT = Path(__file__).parent / "data" / "mcp_tools.json"

# (tool, valid arguments, bad arguments); "{name}" is filled from what earlier calls returned.
CALLS: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("memory_write", {"text": "The staging database listens on port 5433"}, {"text": ""}),
    ("memory_search", {"query": "staging database port", "k": 5}, {"query": "x", "from": 1}),
    ("memory_get", {"path": "MEMORY.md", "from_line": 1, "lines": 50}, {"path": "/etc/passwd"}),
    ("memory_get_fact", {"id": "{fact}"}, {"id": "no-such-id"}),
    ("memory_list", {"limit": 10}, {"limit": 0}),
    ("memory_recent", {"days": 2}, {"days": 0}),
    (
        "memory_observe",
        {"text": "My name is Ada and I prefer tea over coffee.", "session": "s1"},
        {"text": 5},
    ),
    (
        "memory_correct",
        {"id": "{fact}", "text": "The staging database listens on port 6543"},
        {"id": "no-such-id", "text": "x is y"},
    ),
    ("memory_context", {"prompt": "which port?", "session": "s1"}, {"prompt": "x", "k": 1}),
    (
        "memory_record_turn",
        {
            "session": "s1",
            "user": "Which port does staging use?",
            "assistant": "Port 6543.",
            "tool_calls": [{"name": "memory_search", "arguments": {"query": "staging port"}}],
        },
        {"session": "s1", "user": "hi"},
    ),
    ("memory_sessions", {}, {"limit": "many"}),
    ("memory_session_show", {"session": "s1", "last": 5}, {"session": "never-recorded"}),
    ("memory_session_compact", {"session": "s1", "keep": 1}, {"session": "../etc"}),
    (
        "memory_lesson_add",
        {"tool": "deploy", "error": "timeout after 30 s", "arguments": {"env": "prod"}},
        {"tool": "deploy"},
    ),
    ("memory_lessons", {"k": 5}, {"k": 0}),
    ("memory_core_read", {"name": "user"}, {"name": "passwd"}),
    ("memory_core_write", {"name": "user", "text": "# User\n\nAda. Prefers tea.\n"}, {"name": 1}),
    ("memory_working_read", {}, {"section": "priorities"}),
    (
        "memory_working_write",
        {"action": "add", "section": "priorities", "items": ["ship v1"]},
        {"action": "add", "section": "priorities", "items": ["a", "b"]},
    ),
    ("memory_semantic_read", {"name": "preferences"}, {"name": "secrets"}),
    ("memory_semantic_add", {"name": "preferences", "text": "tea over coffee"}, {"name": "x"}),
    ("memory_note_create", {"title": "Deploys", "body": "See [[Staging]]."}, {"title": ""}),
    ("memory_notes", {"folder": "inbox"}, {"folder": "attic"}),
    ("memory_note_read", {"name": "{note}"}, {"name": "../MEMORY"}),
    ("memory_status", {}, {"group": "global"}),  # a memory without groups refuses one
]


def _filled(arguments: dict[str, Any], seen: dict[str, str]) -> dict[str, Any]:
    return {
        key: seen[value[1:-1]] if isinstance(value, str) and value[1:-1] in seen else value
        for key, value in arguments.items()
    }


async def _exercise(session: Any) -> dict[str, Any]:
    """List the tools, make every call of ``CALLS`` (valid, then bad), then
    search -> correct -> forget -> restore by a hit's id; what was seen."""
    listed = (await session.list_tools()).tools
    seen: dict[str, str] = {}
    valid: dict[str, Any] = {}
    bad: dict[str, Any] = {}
    for name, good, wrong in CALLS:
        result = await session.call_tool(name, _filled(good, seen))
        valid[name] = (result.is_error, _text(result), result.structured_content)
        if name == "memory_write" and not result.is_error:
            seen["fact"] = result.structured_content["id"]
        if name == "memory_note_create" and not result.is_error:
            seen["note"] = result.structured_content["note"]["name"]
        refused = await session.call_tool(name, _filled(wrong, seen))
        bad[name] = (refused.is_error, _text(refused))
    return {"tools": listed, "valid": valid, "bad": bad, "by_id": await _by_hit_id(session)}


async def _by_hit_id(session: Any) -> list[tuple[bool, Any]]:
    """A fact found by search, then corrected, forgotten and restored by the hit's id."""
    steps: list[tuple[bool, Any]] = []

    async def step(name: str, arguments: dict[str, Any]) -> Any:
        result = await session.call_tool(name, arguments)
        steps.append((result.is_error, result.structured_content or _text(result)))
        return result.structured_content

    await step("memory_write", {"text": "The release train leaves on Thursdays"})
    found = await step("memory_search", {"query": "release train Thursdays", "layer": "long_term"})
    hit = found["hits"][0]
    corrected = await step("memory_correct", {"id": hit["id"], "text": "Releases go on Fridays"})
    again = await step("memory_search", {"query": "releases Fridays", "layer": "long_term"})
    new_id = again["hits"][0]["id"]
    steps.append((new_id != corrected["fact"]["id"], new_id))
    await step("memory_forget", {"id": new_id})
    gone = await step("memory_search", {"query": "releases Fridays", "layer": "long_term"})
    steps.append((any(h["id"] == new_id for h in gone["hits"]), "still found after forget"))
    await step("memory_restore", {"id": new_id})
    back = await step("memory_get_fact", {"id": new_id})
    steps.append((back["fact"]["text"] != "Releases go on Fridays", back))
    return steps


def _check(seen: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in seen["tools"]}
    assert len(tools) >= 15 and set(tools) == set(TOOL_NAMES)
    for tool in tools.values():
        assert tool.description and len(tool.description) > 40, tool.name
        properties = tool.input_schema["properties"]
        assert tool.input_schema.get("additionalProperties") is False, tool.name
        for parameter, schema in properties.items():
            assert schema.get("description"), (tool.name, parameter)
        hints = tool.annotations
        assert hints is not None and hints.read_only_hint == (tool.name not in WRITES)
        assert hints.destructive_hint is not None and hints.idempotent_hint is not None
        assert tool.output_schema and tool.output_schema["type"] == "object", tool.name
    for name, (is_error, text, data) in seen["valid"].items():
        assert is_error is False, (name, text)
        assert isinstance(data, dict) and json.loads(text) == data, name
        jsonschema.validate(data, tools[name].output_schema)
    for name, (is_error, text) in seen["bad"].items():
        assert is_error is True, (name, text)
        assert text.startswith("Error") and "Traceback" not in text, (name, text)
    for failed, what in seen["by_id"]:
        assert failed is False, what
    hits = seen["valid"]["memory_search"][2]["hits"]
    assert hits and hits[0]["id"] == seen["valid"]["memory_write"][2]["id"]


# -- in this process -----------------------------------------------------------------------


def _in_process(ws: Path, run: Callable[[Any], Any]) -> Any:
    import anyio

    async def go() -> Any:
        with Memory.open(ws, embedder="none") as memory:
            async with Client(build_server(memory)) as client:
                return await run(client)

    return anyio.run(go)


def test_every_tool_lists_succeeds_and_refuses_through_the_client(tmp_path: Path) -> None:
    _check(_in_process(tmp_path / "ws", _exercise))


def test_the_server_names_its_version_and_offers_prompts_and_resources(tmp_path: Path) -> None:
    async def run(client: Any) -> dict[str, Any]:
        await client.call_tool("memory_write", {"text": "Ada prefers green tea"})
        await client.call_tool(
            "memory_record_turn", {"session": "s1", "user": "hi there", "assistant": "hello"}
        )
        prompts = (await client.list_prompts()).prompts
        recall = await client.get_prompt("recall", {"topic": "tea"})
        save = await client.get_prompt("save_conversation", {"session": "s1"})
        resources = sorted(str(r.uri) for r in (await client.list_resources()).resources)
        memory_md = await client.read_resource("memstrata://MEMORY.md")
        today = await client.read_resource("memstrata://daily/today")
        return {
            "version": client.server_info.version,
            "prompts": sorted(prompt.name for prompt in prompts),
            "recall": recall.messages[0].content.text,
            "save": save.messages[0].content.text,
            "resources": resources,
            "memory_md": memory_md.contents[0].text,
            "today": today.contents[0].text,
        }

    seen = _in_process(tmp_path / "ws", run)
    assert seen["version"] == __version__
    assert seen["prompts"] == ["recall", "save_conversation"]
    assert "memory_search" in seen["recall"] and "tea" in seen["recall"]
    assert "memory_record_turn" in seen["save"] and "s1" in seen["save"]
    assert seen["resources"] == [
        "memstrata://MEMORY.md",
        "memstrata://core/AGENT.md",
        "memstrata://core/SOUL.md",
        "memstrata://core/USER.md",
        "memstrata://daily/today",
    ]
    assert "Ada prefers green tea" in seen["memory_md"]
    assert "hi there" in seen["today"]


# -- one definition, three forms -----------------------------------------------------------


def _mcp_tools(tmp_path: Path) -> list[dict[str, Any]]:
    async def run(client: Any) -> list[dict[str, Any]]:
        listed = (await client.list_tools()).tools
        return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in listed]

    return _in_process(tmp_path / "ws", run)


def test_the_mcp_openai_and_anthropic_forms_come_from_one_definition(tmp_path: Path) -> None:
    listed = _mcp_tools(tmp_path)
    forms = [
        [(t["name"], t["description"], t["inputSchema"]) for t in listed],
        [
            (t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
            for t in openai_tools()
        ],
        [(t["name"], t["description"], t["input_schema"]) for t in anthropic_tools()],
    ]
    assert forms[0] == forms[1] == forms[2]
    assert [name for name, _, _ in forms[0]] == [spec.name for spec in SPECS]


def test_the_tool_schemas_match_the_committed_snapshot(tmp_path: Path) -> None:
    listed = _mcp_tools(tmp_path)
    current = json.dumps(listed, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
    if os.environ.get("MEMSTRATA_UPDATE_SNAPSHOT") == "1":
        SNAPSHOT.write_text(current, encoding="utf-8")
    assert SNAPSHOT.read_text(encoding="utf-8") == current, (
        "the MCP tool schemas changed: if that is meant, run this test with "
        "MEMSTRATA_UPDATE_SNAPSHOT=1 and commit tests/data/mcp_tools.json"
    )


def test_unknown_and_ill_typed_arguments_are_refused_by_every_interface(tmp_path: Path) -> None:
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        refused = dispatch(memory, "memory_get", {"path": "MEMORY.md", "from": 2})
        assert refused.startswith("Error: unknown argument 'from'")
        assert "from_line" in refused  # the model learns the right name
        assert dispatch(memory, "memory_search", {"query": "x", "layer": "attic"}).startswith(
            "Error: layer must be one of"
        )
        assert dispatch(memory, "memory_search", {"query": "x", "k": True}).startswith("Error:")
        turn = dispatch(
            memory,
            "memory_record_turn",
            {"session": "s", "user": "u", "assistant": "a", "tool_calls": '[{"name": "t"}]'},
        )  # an array sent as a JSON string (some clients do) is parsed
        assert json.loads(turn)["seq"] == 1


def test_check_fills_defaults_and_names_what_is_wrong() -> None:
    spec = next(spec for spec in SPECS if spec.name == "memory_search")
    assert check(spec.parameters, {"query": "tea"}) == {
        "query": "tea",
        "k": 8,
        "layer": None,
        "session": None,
        "sessions": None,
        "group": None,
    }
    for arguments, message in (
        ({}, "query is required"),
        ({"query": "   "}, "query must not be empty"),
        ({"query": "x", "k": 51}, "k must be a whole number from 1 to 50"),
        ({"query": "x", "session": 3}, "session must be a string"),
    ):
        with pytest.raises(Exception, match=message):
            check(spec.parameters, arguments)


# -- over the wire -------------------------------------------------------------------------


def _workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    with Memory.open(ws, embedder="none"):
        pass
    (ws / "memstrata.toml").write_text('[memory]\nembedder = "none"\n')
    return ws


@pytest.mark.slow
def test_every_tool_over_stdio(tmp_path: Path) -> None:
    import anyio

    ws = _workspace(tmp_path)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from memstrata.cli import main; main()", "mcp", "-w", str(ws)],
        env=server_env(ws),
    )

    async def run() -> dict[str, Any]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            started = await session.initialize()
            assert started.server_info.version == __version__
            return await _exercise(session)

    _check(anyio.run(run))


@pytest.mark.slow
def test_every_tool_over_streamable_http(tmp_path: Path) -> None:
    import anyio
    from mcp.client.streamable_http import streamable_http_client

    ws = _workspace(tmp_path)
    port = _free_port()
    proc = _start_http(ws, port)

    async def run() -> dict[str, Any]:
        url = f"http://127.0.0.1:{port}/mcp"
        async with (
            streamable_http_client(url) as (read, write, *_),
            ClientSession(read, write) as session,
        ):
            started = await session.initialize()
            assert started.server_info.version == __version__
            return await _exercise(session)

    try:
        _check(anyio.run(run))
    finally:
        proc.terminate()
        proc.communicate(timeout=30)


# -- groups and hostile arguments ----------------------------------------------------------


def test_every_write_tool_is_refused_on_global_for_a_non_main_group(tmp_path: Path) -> None:
    from memstrata.tools import GroupTools

    root = tmp_path / "root"
    for group in ("a", "global"):
        with Memory.open(root, group, embedder="none"):
            pass
    tools = GroupTools(root, "main", embedder="none")
    try:
        for name, good, _ in CALLS:
            arguments = {**_filled(good, {"fact": "x", "note": "x"}), "group": "global"}
            text = tools.dispatch(name, arguments, group="a")
            if name in WRITES:
                assert text.startswith("Error: group 'a' may not write group 'global'"), name
            else:
                assert "may not" not in text, (name, text)
    finally:
        tools.close()


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**40), 2**40) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=6,
)


@st.composite
def _arguments(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    spec = draw(st.sampled_from(SPECS))
    keys = [*spec.properties, "from", ""]
    chosen = draw(st.lists(st.sampled_from(keys), max_size=4, unique=True))
    return spec.name, {key: draw(_json) for key in chosen}


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(call=_arguments())
def test_any_arguments_are_an_answer_never_an_exception(tmp_path: Path, call: Any) -> None:
    from memstrata.tools import answer

    name, arguments = call
    with Memory.open(tmp_path / "ws", embedder="none") as memory:
        outcome = answer(memory, name, arguments)
    assert outcome.text.startswith("Error: ") == outcome.is_error
    assert outcome.is_error or isinstance(outcome.data, dict)


def test_memory_search_takes_a_list_of_sessions_in_every_form(tmp_path: Path) -> None:
    """NanoClaw searches a list of chats: ``sessions`` reaches ``Memory.search``
    through the official client, and the OpenAI and Anthropic forms offer it."""
    for parameters in (
        next(
            t["function"]["parameters"]
            for t in openai_tools()
            if t["function"]["name"] == "memory_search"
        ),
        next(t["input_schema"] for t in anthropic_tools() if t["name"] == "memory_search"),
    ):
        sessions = parameters["properties"]["sessions"]
        assert sessions["type"] == "array" and sessions["items"]["type"] == "string"
        assert sessions["maxItems"] == MAX_SESSIONS

    async def run(client: Any) -> tuple[set[str], bool, str]:
        for chat in ("chat-a", "chat-b", "chat-c"):
            await client.call_tool(
                "memory_record_turn",
                {"session": chat, "user": f"the lighthouse keeper of {chat}", "assistant": "ok"},
            )
        found = await client.call_tool(
            "memory_search", {"query": "lighthouse keeper", "sessions": ["chat-a", "chat-c"]}
        )
        too_many = await client.call_tool(
            "memory_search",
            {"query": "lighthouse", "sessions": [f"s{n}" for n in range(MAX_SESSIONS + 1)]},
        )
        hits = json.loads(_text(found))["hits"]
        return {hit["session"] for hit in hits}, too_many.is_error, _text(too_many)

    sessions, refused, message = _in_process(tmp_path / "ws", run)
    assert sessions == {"chat-a", "chat-c"}
    assert refused and f"at most {MAX_SESSIONS}" in message
