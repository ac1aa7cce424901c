"""Text that is not valid Unicode (lone surrogates) entering through any public call.

The policy (``model.valid_text``): a lone surrogate becomes U+FFFD where text
enters, so nothing that reaches disk or a tokenizer can fail to encode; no
call lets a ``UnicodeError`` or ``TypeError`` out.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memstrata import Memory, MemstrataError
from memstrata.tools import dispatch
from memstrata.tools.memory_tool import MemoryToolHandler

BAD = "a\ud800 b"  # a lone high surrogate, as json.loads('"\\ud800"') makes
ESCAPED = "my name is \udcff Bob"  # what Python makes of the byte 0xff in argv


def test_valid_text_replaces_lone_surrogates_and_joins_pairs() -> None:
    from memstrata.model import clean_text, valid_text

    assert valid_text("plain") == "plain"
    assert valid_text(BAD) == "a\ufffd b"
    assert valid_text("\udcff") == "\ufffd"
    assert valid_text("\ud83d\ude00") == "\U0001f600"  # a pair left split is one character
    assert valid_text("x\ude00\ud83d") == "x\ufffd\ufffd"  # a pair in the wrong order is not
    assert clean_text(BAD) == "a\ufffd b"


def _on_disk_is_utf8(ws: Path) -> None:
    for path in ws.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".jsonl", ".json"):
            path.read_bytes().decode("utf-8")  # strict


def test_remember_stores_a_lone_surrogate_as_a_replacement_character(memory: Memory) -> None:
    item = memory.remember(BAD, category="c\ud800", session="s\ud800", user="u\ud800")
    assert item.text == "a\ufffd b"
    assert item.category == "c\ufffd" and item.session == "s\ufffd" and item.user == "u\ufffd"
    assert memory.get(item.id).text == "a\ufffd b"
    memory.flush()
    _on_disk_is_utf8(memory.workspace.path)
    new = memory.supersede(item.id, "b\udfff")
    assert new.text == "b\ufffd"


def test_observe_and_record_exchange_take_a_lone_surrogate(memory: Memory) -> None:
    captured = memory.observe("My name is Bob\ud800. I prefer tea.")
    assert captured and all("\ud800" not in c.text for c in captured)
    memory.record_exchange(BAD, ESCAPED)
    _on_disk_is_utf8(memory.workspace.path)


def test_record_turn_takes_a_lone_surrogate_in_every_part(memory: Memory) -> None:
    turn = memory.record_turn(
        "s\ud800",
        user=BAD,
        assistant=ESCAPED,
        reasoning="think \ud800",
        tool_calls=[{"name": "t\ud800", "arguments": {"k\ud800": BAD}}],
        tool_results=[{"content": BAD}, {"content": {"nested": [BAD]}}],
        meta={"m": BAD},
    )
    assert turn.text_of("user") == "a\ufffd b"
    assert "\ud800" not in json.dumps(turn.to_dict(), ensure_ascii=False)
    [again] = memory.sessions.turns("s\ud800")
    assert again.id == turn.id
    _on_disk_is_utf8(memory.workspace.path)


def test_search_with_a_lone_surrogate_is_a_search(ws: Path) -> None:
    with Memory.open(ws) as memory:  # the default embedder: its tokenizer refused the query
        memory.remember("the blue bicycle")
        assert memory.search("blue \ud800 bicycle")[0].text == "the blue bicycle"
        answer = dispatch(memory, "memory_search", {"query": "bicycle \udcff"})
        assert not answer.startswith("Error"), answer


def test_lessons_layers_and_notes_take_a_lone_surrogate(memory: Memory) -> None:
    memory.record_tool_failure("tool\ud800", {"arg": BAD}, ValueError(BAD))
    memory.working.add("priorities", BAD)
    memory.working.progress(BAD)
    memory.semantic.add("facts", BAD)
    memory.core.write("user", BAD)
    memory.notes.create("title \ud800", BAD)
    _on_disk_is_utf8(memory.workspace.path)


def test_the_memory_tool_writes_a_lone_surrogate_as_a_replacement_character(
    memory: Memory,
) -> None:
    tool = MemoryToolHandler(memory)
    answer = tool.handle({"command": "create", "path": "/memories/memory/x.md", "file_text": BAD})
    assert answer.startswith("File created"), answer
    assert (memory.workspace.path / "memory" / "x.md").read_text() == "a\ufffd b"
    answer = tool.handle(
        {"command": "str_replace", "path": "/memories/memory/x.md", "old_str": "a", "new_str": BAD}
    )
    assert answer.startswith("The memory file"), answer
    answer = tool.handle(
        {"command": "insert", "path": "/memories/memory/x.md", "insert_line": 0, "insert_text": BAD}
    )
    assert answer.startswith("The memory file"), answer
    assert tool.handle({"command": "view", "path": "/memories/memory/x\ud800.md"}).startswith(
        "Error:"
    )
    memory.documents.edit_file("memory/y.md", lambda _: BAD)
    assert (memory.workspace.path / "memory" / "y.md").read_text() == "a\ufffd b"


# Any character at all, surrogates included: st.text() leaves them out by default,
# and even with every category allowed they are rare, so pieces of any text are
# mixed with lone surrogates (st.text(a | b) would merge b's range away).
ANY_CHAR = st.characters(codec=None, exclude_categories=())
SURROGATE = st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF, exclude_categories=())
ANY_TEXT = st.lists(st.text(ANY_CHAR, max_size=12) | SURROGATE, max_size=8).map("".join)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(text=ANY_TEXT, session=ANY_TEXT)
def test_any_text_through_the_public_calls_raises_only_memstrata_errors(
    tmp_path_factory: pytest.TempPathFactory, text: str, session: str
) -> None:
    ws = tmp_path_factory.mktemp("any")
    with Memory.open(ws, embedder="none") as memory:
        calls = [
            lambda: memory.remember(text),
            lambda: memory.remember("x", session=session, category=text),
            lambda: memory.observe(text, session=session),
            lambda: memory.record_turn(session, user=text, assistant=text),
            lambda: memory.record_turn(
                "s", user="u", assistant="a", tool_calls=[{"name": "t", "arguments": {text: text}}]
            ),
            lambda: memory.search(text),
            lambda: memory.build_context(text, session=session, budget_tokens=200),
        ]
        for call in calls:
            with contextlib.suppress(MemstrataError):
                call()
        _on_disk_is_utf8(ws)
